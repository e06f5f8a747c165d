"""Log: append/read round trips across rolls, fetch slices, offsets by timestamp, truncation."""

from __future__ import annotations

import gc
import os
from pathlib import Path

import pytest
from storage_helpers import (
    BASE_TS,
    all_records,
    append,
    append_follower,
    batch,
    headers_of,
    read_all,
    records_batch,
    segment_files,
    small_config,
    with_offset,
)

from zkafka.records.batch import is_crc_valid, read_header, validate_batches
from zkafka.storage.config import LogConfig
from zkafka.storage.errors import (
    OffsetOutOfRangeError,
    RecordBatchTooLargeError,
    RecordTooLargeError,
    UnexpectedAppendOffsetError,
)
from zkafka.storage.file_cache import FileCache
from zkafka.storage.log import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, MAX_TIMESTAMP, Log
from zkafka.storage.segment import TimestampOffset


class FakeClock:
    def __init__(self, ms: int = BASE_TS) -> None:
        self.ms = ms

    def __call__(self) -> float:
        return self.ms / 1000


def test_append_assigns_offsets_and_epoch_in_place(tmp_path: Path) -> None:
    log = Log(tmp_path / "t-0", LogConfig())
    buf = bytearray(batch(3) + batch(2))
    headers = validate_batches(buf)
    info = log.append(buf, headers, leader_epoch=7)
    assert (info.first_offset, info.last_offset, info.size) == (0, 4, len(buf))
    stored = read_all(log)
    assert stored == bytes(buf)  # the request buffer was patched and written as is
    hs = headers_of(stored)
    assert [(h.base_offset, h.partition_leader_epoch) for h in hs] == [(0, 7), (3, 7)]
    assert all(is_crc_valid(stored, h) for h in hs)
    assert log.log_end_offset == 5
    assert log.epochs.entries() == [(7, 0)]
    info = append(log, batch(1), leader_epoch=8)
    assert info.first_offset == 5 and log.epochs.entries() == [(7, 0), (8, 5)]
    log.close()


def test_round_trip_across_rolls_and_reopen(tmp_path: Path) -> None:
    config = small_config()
    log = Log(tmp_path / "t-0", config)
    written = []
    for i in range(60):
        data = batch(1 + i % 4, ts=BASE_TS + i, value_size=20 + i)
        append(log, data)
        written.append(data)
    assert log.num_segments > 5
    stored = read_all(log)
    assert [r.key for r in all_records(log)] == [
        f"k{j}".encode() for i in range(60) for j in range(1 + i % 4)
    ]
    assert len(stored) == sum(len(d) for d in written)
    for seg in log.segments()[:-1]:
        assert seg.size <= config.segment_bytes
    bases = log.segment_bases()
    log.close()
    reopened = Log(tmp_path / "t-0", config, had_clean_shutdown=True)
    assert reopened.segment_bases() == bases
    assert reopened.log_end_offset == log.log_end_offset
    assert read_all(reopened) == stored
    reopened.close()
    names = segment_files(tmp_path / "t-0")
    for base in bases:
        for ext in (".log", ".index", ".timeindex"):
            assert f"{base:020d}{ext}" in names


def test_fetch_slices_are_sendfile_ranges(tmp_path: Path) -> None:
    log = Log(tmp_path / "t-0", small_config(segment_bytes=4096))
    for i in range(40):
        append(log, batch(2, ts=BASE_TS + i, value_size=30))
    out = tmp_path / "sent"
    for offset in range(0, log.log_end_offset, 3):
        chunk = log.read(offset, 700)
        data = chunk.read_bytes()
        assert len(data) == chunk.size and chunk.size <= 700
        headers = validate_batches(data)  # whole, valid batches only
        assert headers[0].base_offset <= offset <= headers[0].last_offset
        with open(chunk.path, "rb") as f:  # type: ignore[arg-type]
            f.seek(chunk.position)
            assert f.read(chunk.size) == data
        fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            assert os.sendfile(fd, chunk.fd, chunk.position, chunk.size) == chunk.size
        finally:
            os.close(fd)
        assert out.read_bytes() == data
    log.close()


def test_read_cuts_at_batch_boundaries_and_min_one_batch(tmp_path: Path) -> None:
    log = Log(tmp_path / "t-0", LogConfig(index_interval_bytes=100))
    sizes = []
    for i in range(10):
        sizes.append(append(log, batch(1, value_size=100 * (i + 1))).size)
    chunk = log.read(0, sizes[0] + sizes[1] + sizes[2] - 1)
    assert chunk.size == sizes[0] + sizes[1]
    chunk = log.read(0, sizes[0] + sizes[1] + sizes[2])
    assert chunk.size == sum(sizes[:3])
    big = log.read(9, 10)  # KIP-74: the first batch even if larger than max_bytes
    assert big.size == sizes[9]
    assert log.read(9, 10, min_one_batch=False).is_empty
    assert log.read(9, sizes[9], min_one_batch=False).size == sizes[9]
    assert log.read(10, 1000).is_empty  # at the log end: empty, not an error
    assert log.read(0, 1 << 30).size == sum(sizes)
    log.close()


def test_read_respects_max_offset_batch_wise(tmp_path: Path) -> None:
    log = Log(tmp_path / "t-0", small_config(segment_bytes=1 << 20))
    for _ in range(5):
        append(log, batch(3))  # offsets 0-2, 3-5, ...
    assert [h.base_offset for h in validate_batches(log.read(0, 1 << 20, max_offset=6).read_bytes())] == [
        0,
        3,
    ]
    assert [h.base_offset for h in validate_batches(log.read(0, 1 << 20, max_offset=8).read_bytes())] == [
        0,
        3,
    ]
    assert log.read(4, 1 << 20, max_offset=5).is_empty  # the batch holding 4 ends past the HW
    assert log.read(6, 1 << 20, max_offset=6).is_empty
    assert log.read(0, 1 << 20, max_offset=0).is_empty
    assert validate_batches(log.read(7, 1 << 20, max_offset=15).read_bytes())[0].base_offset == 6
    log.close()


def test_read_max_offset_in_later_segment(tmp_path: Path) -> None:
    log = Log(tmp_path / "t-0", small_config(segment_bytes=300))
    for _ in range(12):
        append(log, batch(2, value_size=40))
    assert log.num_segments > 3
    hw = log.segment_bases()[2] + 1
    seen = []
    offset = 0
    while True:
        chunk = log.read(offset, 1 << 20, max_offset=hw)
        if chunk.is_empty:
            break
        hs = validate_batches(chunk.read_bytes())
        seen += [h.base_offset for h in hs]
        offset = hs[-1].next_offset
    assert seen and all(b + 1 < hw for b in seen)
    assert seen[-1] + 2 == log.segment_bases()[2]
    log.close()


def test_out_of_range(tmp_path: Path) -> None:
    log = Log(tmp_path / "t-0", LogConfig())
    append(log, batch(5))
    with pytest.raises(OffsetOutOfRangeError) as err:
        log.read(6, 100)
    assert err.value.log_end_offset == 5 and err.value.log_start_offset == 0
    with pytest.raises(OffsetOutOfRangeError):
        log.read(-1, 100)
    log.increment_log_start_offset(3)
    with pytest.raises(OffsetOutOfRangeError):
        log.read(2, 100)
    assert validate_batches(log.read(3, 100).read_bytes())[0].base_offset == 0  # the batch holding 3
    with pytest.raises(OffsetOutOfRangeError):
        log.increment_log_start_offset(6)
    assert not log.increment_log_start_offset(2)
    log.close()


def test_offset_for_timestamp(tmp_path: Path) -> None:
    log = Log(tmp_path / "t-0", small_config(segment_bytes=400, index_interval_bytes=50))
    # batches with increasing, then one decreasing, record timestamps
    stamps = [[100, 105, 110], [120, 121], [90, 130], [140], [150, 160, 170]]
    for ts in stamps:
        append(log, records_batch(ts), leader_epoch=2)
    flat = [t for ts in stamps for t in ts]
    assert log.num_segments > 1
    for target in [0, 100, 101, 110, 111, 121, 125, 130, 131, 140, 155, 170]:
        got = log.offset_for_timestamp(target)
        expected = next(i for i, t in enumerate(flat) if t >= target)
        assert got is not None and got.offset == expected and got.timestamp == flat[expected], target
        assert got.leader_epoch == 2
    assert log.offset_for_timestamp(171) is None
    assert log.offset_for_timestamp(EARLIEST_TIMESTAMP) == TimestampOffset(0, -1, 2)
    latest = log.offset_for_timestamp(LATEST_TIMESTAMP)
    assert latest is not None and (latest.offset, latest.leader_epoch) == (len(flat), 2)
    mx = log.offset_for_timestamp(MAX_TIMESTAMP)
    assert mx is not None and (mx.timestamp, mx.offset) == (170, len(flat) - 1)
    log.increment_log_start_offset(4)
    got = log.offset_for_timestamp(100)
    assert got is not None and got.offset == 4  # never below the log start
    earliest = log.offset_for_timestamp(EARLIEST_TIMESTAMP)
    assert earliest is not None and earliest.offset == 4
    log.close()


def test_log_append_time(tmp_path: Path) -> None:
    clock = FakeClock(BASE_TS + 5000)
    log = Log(tmp_path / "t-0", LogConfig(message_timestamp_type="LogAppendTime"), clock=clock)
    info = append(log, records_batch([1, 2, 3]))
    assert info.log_append_time == BASE_TS + 5000 and info.max_timestamp == BASE_TS + 5000
    stored = read_all(log)
    h = read_header(stored)
    assert h.timestamp_type == 1 and h.max_timestamp == BASE_TS + 5000 and is_crc_valid(stored, h)
    assert {r.timestamp for r in all_records(log)} == {BASE_TS + 5000}
    log.close()


def test_size_limits(tmp_path: Path) -> None:
    log = Log(tmp_path / "t-0", LogConfig(max_message_bytes=200, segment_bytes=1000))
    with pytest.raises(RecordTooLargeError):
        append(log, batch(1, value_size=300))
    log.update_config(LogConfig(max_message_bytes=10_000, segment_bytes=1000))
    with pytest.raises(RecordBatchTooLargeError):
        append(log, batch(1, value_size=1200))
    assert log.log_end_offset == 0 and log.size == 0
    log.close()


def test_follower_append_keeps_offsets(tmp_path: Path) -> None:
    log = Log(tmp_path / "t-0", small_config())
    append_follower(log, with_offset(batch(3), 0, epoch=4) + with_offset(batch(2), 3, epoch=4))
    info = append_follower(log, with_offset(batch(1), 10, epoch=6))  # a gap (compacted leader)
    assert (info.first_offset, info.last_offset) == (10, 10) and log.log_end_offset == 11
    assert log.epochs.entries() == [(4, 0), (6, 10)]
    with pytest.raises(UnexpectedAppendOffsetError):
        append_follower(log, with_offset(batch(1), 10))
    with pytest.raises(UnexpectedAppendOffsetError):
        append_follower(log, with_offset(batch(2), 20) + with_offset(batch(1), 21))  # overlapping
    assert [h.base_offset for h in headers_of(read_all(log))] == [0, 3, 10]
    log.close()


def test_time_based_roll_uses_record_timestamps(tmp_path: Path) -> None:
    clock = FakeClock()
    log = Log(tmp_path / "t-0", LogConfig(segment_ms=1000), clock=clock)
    append(log, batch(1, ts=BASE_TS))
    append(log, batch(1, ts=BASE_TS + 1000))  # waited exactly segment.ms: no roll
    assert log.num_segments == 1
    append(log, batch(1, ts=BASE_TS + 1001))
    assert log.segment_bases() == [0, 2]
    # batches without timestamps fall back to the segment's creation time
    log2 = Log(tmp_path / "u-0", LogConfig(segment_ms=1000), clock=clock)
    append(log2, records_batch([-1]))
    clock.ms += 1001
    append(log2, records_batch([-1]))
    assert log2.segment_bases() == [0, 1]
    log.close()
    log2.close()


def test_roll_when_index_full_and_on_offset_overflow(tmp_path: Path) -> None:
    for stamp_step in (0, 1):  # same timestamps: the offset index fills; rising: the time index
        log = Log(tmp_path / f"t-{stamp_step}", LogConfig(index_interval_bytes=0, segment_index_bytes=3 * 12))
        for i in range(12):
            append(log, batch(1, ts=BASE_TS + i * stamp_step))
        assert log.num_segments >= 2
        for seg in log.segments():
            seg.ensure_indexes()
            assert seg.index.entries <= 4 and seg.time_index.entries <= 3  # 36 // 8, 36 // 12
        log.close()
    log2 = Log(tmp_path / "u-0", LogConfig())
    append_follower(log2, with_offset(batch(1), 0))
    append_follower(log2, with_offset(batch(1), 2**31 + 5))
    assert log2.segment_bases() == [0, 2**31 + 5]
    log2.close()


def test_sparse_index_rule(tmp_path: Path) -> None:
    log = Log(tmp_path / "t-0", LogConfig(index_interval_bytes=250))
    sizes = [append(log, batch(1, value_size=100)).size for _ in range(8)]
    seg = log.active_segment
    # an entry is added before a set once more than 250 bytes were written since the last one
    expected, since, pos = [], 0, 0
    for offset, size in enumerate(sizes):
        if since > 250:
            expected.append((offset, pos))
            since = 0
        since += size
        pos += size
    assert [seg.index.lookup(o) for o, _ in expected] == expected
    assert seg.index.entries == len(expected) and expected[0][0] > 0
    log.close()


def test_truncate_to(tmp_path: Path) -> None:
    log = Log(tmp_path / "t-0", small_config(segment_bytes=500))
    for i in range(20):
        append(log, batch(2, ts=BASE_TS + i), leader_epoch=i // 5)
    bases = log.segment_bases()
    assert len(bases) > 3
    assert not log.truncate_to(40)
    target = bases[2] + 2
    assert log.truncate_to(target)
    assert log.log_end_offset == target and log.segment_bases() == bases[:3]
    assert all(h.last_offset < target for h in headers_of(read_all(log)))
    assert log.epochs.latest_entry is not None and log.epochs.latest_entry[1] < target
    assert log.truncate_to(target - 1)  # mid-batch: the whole batch goes, LEO = target (Kafka)
    assert log.log_end_offset == target - 1
    assert headers_of(read_all(log))[-1].last_offset < target - 1
    info = append(log, batch(1))
    assert info.first_offset == target - 1
    assert log.truncate_to(0) and log.log_end_offset == 0 and read_all(log) == b""
    log.close()


def test_truncate_fully_and_start_at(tmp_path: Path) -> None:
    log = Log(tmp_path / "t-0", small_config())
    for _ in range(10):
        append(log, batch(2), leader_epoch=1)
    log.truncate_fully_and_start_at(500)
    assert (log.log_start_offset, log.log_end_offset, log.segment_bases()) == (500, 500, [500])
    assert len(log.epochs) == 0
    assert append(log, batch(1)).first_offset == 500
    log.close()
    reopened = Log(tmp_path / "t-0", small_config(), log_start_offset=500)
    assert (reopened.log_start_offset, reopened.log_end_offset) == (500, 501)
    reopened.close()


def test_flush_messages_moves_recovery_point(tmp_path: Path) -> None:
    log = Log(tmp_path / "t-0", LogConfig(flush_messages=5))
    append(log, batch(3))
    assert log.recovery_point == 0
    append(log, batch(3))
    assert log.recovery_point == 6
    log.close()


def test_flush_if_due(tmp_path: Path) -> None:
    clock = FakeClock()
    log = Log(tmp_path / "t-0", small_config(flush_ms=1000, segment_bytes=1 << 20), clock=clock)
    append(log, batch(2))
    assert not log.flush_if_due(clock.ms + 999)
    assert log.flush_if_due(clock.ms + 1000) and log.recovery_point == 2
    log.update_config(small_config(segment_bytes=200))
    for _ in range(4):
        append(log, batch(2, value_size=50))
    assert log.num_segments > 1
    assert log.flush_if_due(clock.ms)  # a rolled segment waits for its fsync
    assert log.recovery_point == log.segment_bases()[-1]
    log.close()


def test_iter_batches_and_closed_log(tmp_path: Path) -> None:
    log = Log(tmp_path / "t-0", small_config())
    for _ in range(10):
        append(log, batch(2))
    assert [h.base_offset for h, _ in log.iter_batches()] == list(range(0, 20, 2))
    assert [h.base_offset for h, _ in log.iter_batches(7)] == list(range(6, 20, 2))
    log.close()
    from zkafka.storage.errors import LogClosedError

    with pytest.raises(LogClosedError):
        log.read(0, 10)


def test_a_log_holds_one_descriptor_whatever_its_indexes_do(tmp_path: Path) -> None:
    """Indexes open their files per write: a broker with thousands of replicas needs one descriptor
    per replica (its active `.log`), not three (benchmarks/failover_bench.py hit EMFILE at 6,667)."""

    def open_fds() -> int:
        return len(os.listdir("/proc/self/fd"))

    gc.collect()  # leases left by earlier tests' fetch slices: released now, not in the middle
    cache = FileCache(100)
    before = open_fds()
    logs = [Log(tmp_path / f"t-{i}", LogConfig(index_interval_bytes=1), file_cache=cache) for i in range(20)]
    for log in logs:
        for _ in range(3):
            append(log, batch(2, value_size=50))
        log.flush()  # index entries written and fsynced
        log.truncate_to(2)  # index truncated on disk
        append(log, batch(1, value_size=50))
    assert open_fds() - before == len(logs)
    for log in logs:
        log.close()
    assert open_fds() == before
    reopened = Log(tmp_path / "t-0", LogConfig(index_interval_bytes=1))
    assert [r.offset for r in all_records(reopened)] == [0, 1, 2]
    reopened.close()
