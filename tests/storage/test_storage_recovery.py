"""Crash recovery: torn and corrupt tails, damaged or missing indexes, temporary files.

The property test uses a write-order crash model: a crash point (segment, byte) is chosen, that
`.log` is cut there (or a CRC-covered byte is flipped, which must cut the log at that batch), and
everything written later -- later segments -- is lost. Index files are then damaged at random.
After reopening without a clean-shutdown marker, exactly the batches that ended before the crash
point must be served, byte for byte.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from storage_helpers import (
    BASE_TS,
    append,
    append_follower,
    batch,
    read_all,
    segment_files,
    small_config,
    with_offset,
)

from zkafka.records.batch import read_header, validate_batches
from zkafka.storage.log import Log


@dataclass
class Written:
    base: int  # segment base offset
    position: int
    data: bytes
    first_offset: int
    next_offset: int


def write_log(dir_path: Path, specs: list[tuple[int, int]], config) -> tuple[Log, list[Written]]:
    log = Log(dir_path, config)
    written = []
    for i, (n, size) in enumerate(specs):
        info = append(log, batch(n, ts=BASE_TS + i, value_size=size), leader_epoch=i // 4)
        seg = log.active_segment
        pos = seg.size - info.size
        written.append(Written(seg.base_offset, pos, b"", info.first_offset, info.last_offset + 1))
    stored = read_all(log)
    cursor = 0
    for w in written:
        size = read_header(stored, cursor).size
        w.data = stored[cursor : cursor + size]
        cursor += size
    return log, written


def seg_path(dir_path: Path, base: int, ext: str) -> Path:
    return dir_path / f"{base:020d}{ext}"


def damage_index(path: Path, how: int, rnd: int) -> None:
    if not path.exists():
        return
    if how == 1:
        path.unlink()
    elif how == 2:
        data = path.read_bytes()
        path.write_bytes(data[: rnd % (len(data) + 1)])
    elif how == 3:
        path.write_bytes(bytes((rnd + i * 31) % 256 for i in range(rnd % 40)))


batch_specs = st.lists(st.tuples(st.integers(1, 4), st.integers(0, 100)), min_size=1, max_size=30)


@given(
    specs=batch_specs,
    segment_bytes=st.integers(600, 2000),  # every batch (<= ~520 bytes) fits
    interval=st.integers(0, 400),
    crash=st.tuples(st.integers(0, 10**6), st.integers(0, 10**6)),
    corrupt=st.booleans(),
    index_damage=st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3), st.integers(0, 10**6)), max_size=4),
    trusted=st.integers(0, 10**6),
    clean_close=st.booleans(),
)
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_recovery_keeps_exactly_the_intact_prefix(
    tmp_path_factory: pytest.TempPathFactory,
    specs: list[tuple[int, int]],
    segment_bytes: int,
    interval: int,
    crash: tuple[int, int],
    corrupt: bool,
    index_damage: list[tuple[int, int, int]],
    trusted: int,
    clean_close: bool,
) -> None:
    dir_path = tmp_path_factory.mktemp("crash") / "t-0"
    config = small_config(segment_bytes=segment_bytes, index_interval_bytes=interval)
    log, written = write_log(dir_path, specs, config)
    bases = log.segment_bases()
    if clean_close:
        log.close()  # indexes complete on disk
    else:
        log.close_without_flush()  # pending index entries lost, as in a crash
    # the crash point: a segment and a byte position in it
    crashed = bases[crash[0] % len(bases)]
    log_file = seg_path(dir_path, crashed, ".log")
    size = log_file.stat().st_size
    point = crash[1] % (size + 1)
    if corrupt and point < size:
        # flip a byte covered by the CRC or framing (baseOffset and leader epoch are not covered,
        # in Kafka either)
        holder = next(
            w for w in written if w.base == crashed and w.position <= point < w.position + len(w.data)
        )
        rel = point - holder.position
        if rel < 8 or 12 <= rel < 16:
            point = holder.position + 8 + (rel % 4)
        raw = bytearray(log_file.read_bytes())
        raw[point] ^= 0xFF
        log_file.write_bytes(bytes(raw))
    else:
        os.truncate(log_file, point)
        # write-order crash model: whatever was written after the crash point is lost -- later
        # segments either never reached the disk or are empty files
        for later in bases[bases.index(crashed) + 1 :]:
            for ext in (".log", ".index", ".timeindex"):
                path = seg_path(dir_path, later, ext)
                if not path.exists():  # a segment's index files come with its first entries
                    continue
                if crash[0] % 2:
                    path.unlink()
                else:
                    os.truncate(path, 0)
    for seg_pick, how, rnd in index_damage:
        base = bases[seg_pick % len(bases)]
        damage_index(seg_path(dir_path, base, (".index", ".timeindex")[rnd % 2]), how, rnd)
    # segments strictly before the crashed one may be trusted (fsynced before the crash)
    trusted_bases = [b for b in bases if b <= crashed]
    recovery_point = trusted_bases[trusted % len(trusted_bases)]

    reopened = Log(dir_path, config, recovery_point=recovery_point)
    survivors = [
        w for w in written if w.base < crashed or (w.base == crashed and w.position + len(w.data) <= point)
    ]
    expected_end = survivors[-1].next_offset if survivors else bases[0]
    assert reopened.log_end_offset == expected_end
    stored = read_all(reopened)
    assert stored == b"".join(w.data for w in survivors)
    if stored:
        validate_batches(stored)
    # random reads agree with what was written
    for w in survivors[:: max(1, len(survivors) // 5)]:
        chunk = reopened.read(w.first_offset, 1)
        assert chunk.read_bytes() == w.data
    # the log keeps working after recovery
    info = append(reopened, batch(2))
    assert info.first_offset == expected_end
    assert reopened.read(expected_end, 1 << 20).read_bytes().endswith(read_all(reopened)[-info.size :])
    assert reopened.epochs.latest_entry is None or reopened.epochs.latest_entry[1] <= expected_end
    reopened.close()


def test_torn_tail_is_cut_and_later_segments_dropped(tmp_path: Path) -> None:
    config = small_config(segment_bytes=300)
    log, written = write_log(tmp_path / "t-0", [(2, 40)] * 12, config)
    bases = log.segment_bases()
    log.close_without_flush()
    victim = bases[1]
    first = next(w for w in written if w.base == victim)
    os.truncate(seg_path(tmp_path / "t-0", victim, ".log"), len(first.data) + 10)  # inside batch 2
    reopened = Log(tmp_path / "t-0", config)
    assert reopened.segment_bases() == [bases[0], victim]
    assert reopened.log_end_offset == first.next_offset
    assert not any(n.startswith(f"{bases[2]:020d}") for n in segment_files(tmp_path / "t-0"))
    reopened.close()


def test_clean_shutdown_skips_recovery(tmp_path: Path) -> None:
    config = small_config(segment_bytes=1 << 20)
    log, _written = write_log(tmp_path / "t-0", [(2, 40)] * 5, config)
    log.close()
    log_file = seg_path(tmp_path / "t-0", 0, ".log")
    raw = bytearray(log_file.read_bytes())
    raw[-1] ^= 0xFF  # a corrupt last batch
    log_file.write_bytes(bytes(raw))
    trusting = Log(tmp_path / "t-0", config, had_clean_shutdown=True)
    assert trusting.log_end_offset == 10 and trusting.recovery_point == 10  # nothing validated
    trusting.close()
    checking = Log(tmp_path / "t-0", config, had_clean_shutdown=False, recovery_point=0)
    assert checking.log_end_offset == 8 and checking.recovery_point == 0
    checking.close()


def test_recovery_point_bounds_the_validation(tmp_path: Path) -> None:
    config = small_config(segment_bytes=300)
    log, _written = write_log(tmp_path / "t-0", [(2, 40)] * 12, config)
    bases = log.segment_bases()
    log.close_without_flush()
    first = seg_path(tmp_path / "t-0", bases[0], ".log")
    raw = bytearray(first.read_bytes())
    raw[-1] ^= 0xFF  # corruption below the recovery point is trusted (it was fsynced)
    first.write_bytes(bytes(raw))
    reopened = Log(tmp_path / "t-0", config, recovery_point=bases[1])
    assert reopened.segment_bases() == bases and reopened.recovery_point == bases[1]
    reopened.close()


def test_missing_and_corrupt_indexes_are_rebuilt(tmp_path: Path) -> None:
    config = small_config(segment_bytes=600, index_interval_bytes=50)
    log, written = write_log(tmp_path / "t-0", [(1, 30)] * 30, config)
    bases = log.segment_bases()
    expected = read_all(log)
    log.close()
    d = tmp_path / "t-0"
    seg_path(d, bases[0], ".index").unlink()
    seg_path(d, bases[1], ".timeindex").unlink()
    seg_path(d, bases[2], ".index").write_bytes(b"\x00\x00\x00\x05\x7f\xff\xff\xff")  # beyond the log
    reopened = Log(d, config, had_clean_shutdown=True)
    assert read_all(reopened) == expected
    for w in written:
        assert reopened.read(w.first_offset, 1).read_bytes() == w.data
    assert reopened.offset_for_timestamp(BASE_TS + 7) is not None
    reopened.close()
    assert seg_path(d, bases[0], ".index").stat().st_size > 0
    assert seg_path(d, bases[1], ".timeindex").exists()


def test_index_pointing_at_the_wrong_batch_is_detected(tmp_path: Path) -> None:
    config = small_config(segment_bytes=1 << 20, index_interval_bytes=50)
    log, written = write_log(tmp_path / "t-0", [(1, 30)] * 20, config)
    log.close()
    idx = seg_path(tmp_path / "t-0", 0, ".index")
    data = bytearray(idx.read_bytes())
    assert len(data) >= 16
    # swap the positions of two entries' neighbours: still increasing, but wrong
    data[4:8] = (int.from_bytes(data[4:8], "big") + written[1].position - written[0].position).to_bytes(
        4, "big"
    )
    idx.write_bytes(bytes(data))
    reopened = Log(tmp_path / "t-0", config, had_clean_shutdown=True)
    for w in written:
        assert reopened.read(w.first_offset, 1).read_bytes() == w.data
    reopened.close()


def test_temporary_and_orphan_files_are_removed(tmp_path: Path) -> None:
    config = small_config(segment_bytes=1 << 20)
    log, _ = write_log(tmp_path / "t-0", [(2, 10)] * 3, config)
    log.close()
    d = tmp_path / "t-0"
    junk = [
        "00000000000000000000.log.deleted",
        "00000000000000000000.index.deleted",
        "00000000000000000007.log.cleaned",
        "00000000000000000007.timeindex.cleaned",
        "00000000000000000099.index",  # orphan: no .log
        "00000000000000000099.timeindex",
        "00000000000000000003.index.swap",  # an index swap without its log swap
        "leader-epoch-checkpoint.tmp",
    ]
    for name in junk:
        (d / name).write_bytes(b"x" * 8)
    (d / "00000000000000000099.snapshot").write_bytes(b"")  # producer state: not ours to delete
    reopened = Log(d, config, had_clean_shutdown=True)
    names = segment_files(d)
    assert not set(junk) & set(names)
    assert "00000000000000000099.snapshot" in names
    assert reopened.log_end_offset == 6
    reopened.close()


def test_corrupt_leader_epoch_checkpoint_is_rebuilt_from_batches(tmp_path: Path) -> None:
    config = small_config(segment_bytes=300)
    log, _ = write_log(tmp_path / "t-0", [(2, 40)] * 12, config)  # epochs 0,1,2 every 4 batches
    entries = log.epochs.entries()
    assert entries == [(0, 0), (1, 8), (2, 16)]
    log.close()
    (tmp_path / "t-0" / "leader-epoch-checkpoint").write_text("0\n5\ngarbage\n")
    reopened = Log(tmp_path / "t-0", config, had_clean_shutdown=True)
    assert reopened.epochs.entries() == entries
    reopened.close()
    (tmp_path / "t-0" / "leader-epoch-checkpoint").unlink()
    reopened = Log(tmp_path / "t-0", config, had_clean_shutdown=True, log_start_offset=9)
    assert reopened.epochs.entries() == [(1, 9), (2, 16)]
    reopened.close()
    assert (tmp_path / "t-0" / "leader-epoch-checkpoint").read_text() == "0\n2\n1 9\n2 16\n"


def test_log_end_below_log_start_empties_the_log(tmp_path: Path) -> None:
    config = small_config()
    log, _ = write_log(tmp_path / "t-0", [(2, 10)] * 3, config)
    log.close()
    reopened = Log(tmp_path / "t-0", config, log_start_offset=50, had_clean_shutdown=True)
    assert (reopened.log_start_offset, reopened.log_end_offset, reopened.segment_bases()) == (50, 50, [50])
    reopened.close()


def test_recovery_assigns_only_epochs_above_the_latest(tmp_path: Path) -> None:
    """Kafka's `LogSegment.recover` assigns a batch's leader epoch only when it is above the
    cache's latest epoch; a lower one (a batch of an older leader, kept by the log) changes
    nothing, where a live `assign` would have dropped the higher entries. The checkpoint after
    recovery says the same."""
    d = tmp_path / "t-0"
    config = small_config()
    log = Log(d, config)
    for base, epoch in ((0, 0), (2, 2), (4, 1), (6, 3)):
        append_follower(log, with_offset(batch(2), base, epoch))
    log.close()
    (d / "leader-epoch-checkpoint").write_text("0\n1\n0 0\n")  # written before the later batches
    reopened = Log(d, config, recovery_point=0, had_clean_shutdown=False)
    assert reopened.log_end_offset == 8
    assert reopened.epochs.entries() == [(0, 0), (2, 2), (3, 6)]
    reopened.close()
    assert (d / "leader-epoch-checkpoint").read_text() == "0\n3\n0 0\n2 2\n3 6\n"
