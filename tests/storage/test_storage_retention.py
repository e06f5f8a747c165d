"""Retention (Kafka §4): by time and size, whole segments, bounded by the high watermark."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from storage_helpers import BASE_TS, append, batch, read_all, segment_files, small_config

from zkafka.storage.log import Log
from zkafka.storage.retention import (
    deletable_prefix,
    log_start_offset_breached,
    retention_ms_breached,
    retention_size_breached,
)

DAY = 86_400_000


@dataclass
class Seg:
    base_offset: int
    size: int
    largest_timestamp: int = 0


def test_deletable_prefix_rules() -> None:
    segs = [Seg(0, 100, 10), Seg(10, 100, 20), Seg(20, 100, 30)]
    always = lambda s, n: True  # noqa: E731
    assert deletable_prefix(segs, 30, 30, always) == 3
    assert deletable_prefix(segs, 30, 29, always) == 2  # HW below the last upper bound
    assert deletable_prefix(segs, 30, 10, always) == 1
    assert deletable_prefix(segs, 30, 9, always) == 0
    assert deletable_prefix([*segs[:2], Seg(20, 0)], 20, 20, always) == 2  # an empty last never goes
    assert deletable_prefix(segs, 30, 30, retention_ms_breached(100, 75)) == 2
    mixed = [Seg(0, 100, 10), Seg(10, 100, 50), Seg(20, 100, 5), Seg(30, 100, 99)]
    assert deletable_prefix(mixed, 40, 40, retention_ms_breached(100, 75)) == 1  # stops at the first keeper
    assert deletable_prefix(segs, 30, 30, retention_size_breached(300, 150)) == 1
    assert deletable_prefix(segs, 30, 30, retention_size_breached(300, 100)) == 2
    assert deletable_prefix(segs, 30, 30, retention_size_breached(300, 301)) == 0
    assert deletable_prefix(segs, 30, 30, log_start_offset_breached(19)) == 1
    assert deletable_prefix(segs, 30, 30, log_start_offset_breached(20)) == 2
    assert (
        deletable_prefix(segs, 30, 30, log_start_offset_breached(10**9)) == 2
    )  # never the last by this rule


def make_log(tmp_path: Path, **config: object) -> tuple[Log, list[int]]:
    log = Log(tmp_path / "t-0", small_config(segment_bytes=400, **config))
    for i in range(30):
        append(log, batch(2, ts=BASE_TS + i * 1000, value_size=30))
    return log, log.segment_bases()


def test_retention_by_time(tmp_path: Path) -> None:
    log, bases = make_log(tmp_path, retention_ms=DAY)
    assert len(bases) > 4
    assert log.delete_old_segments(BASE_TS + DAY) == 0
    third = log.segments()[2]
    now = third.largest_timestamp + DAY + 1  # the first three segments are too old
    assert log.delete_old_segments(now) == 3
    assert log.segment_bases() == bases[3:]
    assert log.log_start_offset == bases[3]
    assert read_all(log)[:8] == (bases[3]).to_bytes(8, "big")
    names = segment_files(tmp_path / "t-0")
    assert not any(n.startswith(f"{bases[0]:020d}") for n in names)  # file.delete.delay.ms = 0
    log.close()


def test_retention_by_size(tmp_path: Path) -> None:
    log, _bases = make_log(tmp_path, retention_bytes=1000, retention_ms=-1)
    total = log.size
    assert log.delete_old_segments(BASE_TS) > 0
    assert log.size >= 1000 > log.size - log.segments()[0].size
    assert log.log_start_offset == log.segment_bases()[0]
    assert total > log.size
    log.close()


def test_high_watermark_bounds_retention(tmp_path: Path) -> None:
    log, bases = make_log(tmp_path, retention_ms=0)
    assert log.delete_old_segments(BASE_TS + DAY, high_watermark=bases[2]) == 2
    assert log.segment_bases() == bases[2:]
    assert log.delete_old_segments(BASE_TS + DAY, high_watermark=bases[2]) == 0
    log.close()


def test_everything_expired_rolls_first(tmp_path: Path) -> None:
    log, bases = make_log(tmp_path, retention_ms=0)
    end = log.log_end_offset
    assert log.delete_old_segments(BASE_TS + DAY) == len(bases)
    assert log.segment_bases() == [end] and log.log_start_offset == end == log.log_end_offset
    assert read_all(log) == b""
    assert append(log, batch(1)).first_offset == end
    log.close()


def test_delete_delay_keeps_deleted_files(tmp_path: Path) -> None:
    log, bases = make_log(tmp_path, retention_ms=0, file_delete_delay_ms=60_000)
    now = BASE_TS + DAY
    log.delete_old_segments(now, high_watermark=bases[1])
    names = segment_files(tmp_path / "t-0")
    assert f"{bases[0]:020d}.log.deleted" in names and f"{bases[0]:020d}.index.deleted" in names
    assert log.delete_expired_files(now + 59_999) == 0
    assert log.delete_expired_files(now + 60_000) == 1
    assert not any(n.endswith(".deleted") for n in segment_files(tmp_path / "t-0"))
    log.close()


def test_log_start_offset_rule_applies_to_compacted_topics(tmp_path: Path) -> None:
    log, bases = make_log(tmp_path, cleanup_policy=frozenset({"compact"}), retention_ms=0)
    assert log.delete_old_segments(BASE_TS + DAY) == 0  # no time/size retention without "delete"
    log.increment_log_start_offset(bases[2] + 1)
    assert log.delete_old_segments(BASE_TS + DAY) == 2
    assert log.segment_bases() == bases[2:] and log.log_start_offset == bases[2] + 1
    log.close()


def test_time_retention_without_timestamps_uses_mtime(tmp_path: Path) -> None:
    import os

    from storage_helpers import records_batch

    log = Log(tmp_path / "t-0", small_config(segment_bytes=200, retention_ms=1000))
    for _ in range(6):
        append(log, records_batch([-1, -1]))
    first = log.segments()[0]
    assert first.max_timestamp_so_far == -1
    os.utime(first.log_path, ns=(0, 5_000 * 1_000_000))
    assert first.largest_timestamp == 5_000
    assert log.delete_old_segments(6_001) == 1
    log.close()
