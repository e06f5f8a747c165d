"""`storage.power_loss`, the `power-loss` fault's emulation of a lost page cache: a stopped
broker's replica is cut to its checkpointed recovery point, and the log reopened after it (an
unclean shutdown: recovery from the recovery point) ends exactly there, with the batches below it
intact and nothing above it."""

from __future__ import annotations

from pathlib import Path

import pytest
from storage_helpers import BASE_TS, append, batch, headers_of, read_all, small_config

from zkafka.storage.checkpoint import RECOVERY_POINT_CHECKPOINT, OffsetCheckpointFile
from zkafka.storage.log import Log
from zkafka.storage.naming import TopicPartition
from zkafka.storage.power_loss import lose_unflushed


def written_log(log_dir: Path) -> tuple[Log, bytes]:
    log = Log(log_dir / "t-0", small_config(segment_bytes=300))
    for i in range(12):
        append(log, batch(2, ts=BASE_TS + i, value_size=20))
    assert len(log.segment_bases()) > 3
    return log, read_all(log)


@pytest.mark.parametrize("point", ["middle of a segment", "a segment base", "zero"])
def test_the_replica_is_cut_to_its_recovery_point(tmp_path: Path, point: str) -> None:
    log, before = written_log(tmp_path)
    bases = log.segment_bases()
    recovery_point = {"middle of a segment": bases[1] + 2, "a segment base": bases[2], "zero": 0}[point]
    assert bases[1] + 2 < bases[2]  # two batches or more per segment
    OffsetCheckpointFile(tmp_path / RECOVERY_POINT_CHECKPOINT).write({TopicPartition("t", 0): recovery_point})
    log_end = log.log_end_offset
    log.close_without_flush()

    cut = lose_unflushed([tmp_path / "other", tmp_path], "t", 0)
    assert (cut.recovery_point, cut.log_end, cut.records) == (
        recovery_point,
        log_end,
        log_end - recovery_point,
    )

    reopened = Log(tmp_path / "t-0", small_config(segment_bytes=300), recovery_point=recovery_point)
    try:
        assert reopened.log_end_offset == recovery_point
        kept = headers_of(read_all(reopened)) if recovery_point else []
        assert kept == [h for h in headers_of(before) if h.base_offset < recovery_point]
    finally:
        reopened.close()


def test_a_replica_that_is_not_there_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        lose_unflushed([tmp_path], "t", 0)
