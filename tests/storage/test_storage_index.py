"""Offset index, time index and file naming: Kafka's byte layouts and rules."""

from __future__ import annotations

import struct
from array import array
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zkafka.storage.errors import CorruptIndexError
from zkafka.storage.index import OffsetIndex, lookup_offset, lookup_position
from zkafka.storage.naming import (
    TopicPartition,
    delete_dir_name,
    filename_prefix,
    offset_from_filename,
    parse_delete_dir_name,
    parse_partition_dir_name,
    partition_dir_name,
    segment_file,
)
from zkafka.storage.time_index import TimeIndex, lookup_timestamp

# ---- pure lookups ---------------------------------------------------------------------------------


def test_lookup_offset_rules() -> None:
    offsets, positions = array("i", [5, 10, 20]), array("i", [100, 200, 400])
    assert lookup_offset(offsets, positions, 1000, 999) == (1000, 0)  # below the base
    assert lookup_offset(offsets, positions, 1000, 1004) == (1000, 0)  # below the first entry
    assert lookup_offset(offsets, positions, 1000, 1005) == (1005, 100)
    assert lookup_offset(offsets, positions, 1000, 1019) == (1010, 200)
    assert lookup_offset(offsets, positions, 1000, 10**12) == (1020, 400)
    assert lookup_offset(array("i"), array("i"), 7, 100) == (7, 0)  # empty index


def test_lookup_position_and_timestamp() -> None:
    offsets, positions = array("i", [5, 10]), array("i", [100, 200])
    assert lookup_position(offsets, positions, 0, 99) == (0, 0)
    assert lookup_position(offsets, positions, 0, 150) == (5, 100)
    assert lookup_position(offsets, positions, 0, 200) == (10, 200)
    ts, offs = array("q", [50, 70]), array("i", [3, 9])
    assert lookup_timestamp(ts, offs, 100, 49) == (-1, 100)
    assert lookup_timestamp(ts, offs, 100, 50) == (50, 103)
    assert lookup_timestamp(ts, offs, 100, 1000) == (70, 109)


@given(st.lists(st.integers(0, 10_000), unique=True, max_size=50), st.integers(-5, 10_100))
@settings(max_examples=100, deadline=None)
def test_lookup_offset_matches_linear_scan(keys: list[int], target: int) -> None:
    keys.sort()
    offsets = array("i", keys)
    positions = array("i", [k * 3 for k in keys])
    expected = max((k for k in keys if k <= target), default=None)
    got = lookup_offset(offsets, positions, 0, target)
    assert got == ((expected, expected * 3) if expected is not None else (0, 0))


# ---- offset index file ----------------------------------------------------------------------------


def test_offset_index_file_is_big_endian_entries(tmp_path: Path) -> None:
    idx = OffsetIndex(tmp_path / "00000000000000000100.index", 100, 1024, create=True)
    idx.append(105, 0)
    idx.append(110, 4096)
    idx.close()
    data = (tmp_path / "00000000000000000100.index").read_bytes()
    assert data == struct.pack(">iiii", 5, 0, 10, 4096)


def test_offset_index_append_rules(tmp_path: Path) -> None:
    idx = OffsetIndex(tmp_path / "x.index", 100, 3 * 8, create=True)
    assert idx.max_entries == 3
    idx.append(101, 10)
    with pytest.raises(ValueError):
        idx.append(101, 20)  # not increasing
    with pytest.raises(ValueError):
        idx.append(99, 20)  # below the base
    with pytest.raises(ValueError):
        idx.append(100 + 2**31, 20)  # relative offset overflows int32
    idx.append(102, 20)
    idx.append(103, 30)
    assert idx.is_full
    with pytest.raises(ValueError):
        idx.append(104, 40)
    idx.close()


def test_offset_index_truncate_keeps_entries_below(tmp_path: Path) -> None:
    path = tmp_path / "x.index"
    idx = OffsetIndex(path, 0, 1 << 20, create=True)
    for i in range(1, 11):
        idx.append(i * 10, i * 100)
    idx.write_pending()
    idx.truncate_to(55)
    assert idx.entries == 5 and idx.lookup(1000) == (50, 500)
    idx.append(60, 600)  # pending only
    idx.truncate_to(60)
    assert idx.entries == 5
    idx.truncate_to(10)
    assert idx.entries == 0 and idx.lookup(55) == (0, 0)
    idx.close()
    assert path.read_bytes() == b""


def test_offset_index_load_checks(tmp_path: Path) -> None:
    path = tmp_path / "x.index"
    path.write_bytes(struct.pack(">ii", 1, 10) + b"\x00\x01")
    with pytest.raises(CorruptIndexError, match="multiple"):
        OffsetIndex(path, 0, 1024).load(1000)
    path.write_bytes(struct.pack(">iiii", 5, 10, 5, 20))
    with pytest.raises(CorruptIndexError, match="offsets"):
        OffsetIndex(path, 0, 1024).load(1000)
    path.write_bytes(struct.pack(">iiii", 5, 30, 6, 20))
    with pytest.raises(CorruptIndexError, match="positions"):
        OffsetIndex(path, 0, 1024).load(1000)
    path.write_bytes(struct.pack(">ii", 5, 2000))
    with pytest.raises(CorruptIndexError, match="beyond"):
        OffsetIndex(path, 0, 1024).load(1000)
    path.write_bytes(bytes(80))  # an untrimmed preallocated Kafka file: all zero entries
    with pytest.raises(CorruptIndexError):
        OffsetIndex(path, 0, 1024).load(1000)
    path.write_bytes(struct.pack(">iiii", 5, 10, 9, 20))
    idx = OffsetIndex(path, 0, 1024)
    idx.load(1000)
    assert idx.entries == 2 and idx.lookup(7) == (5, 10)


# ---- time index -----------------------------------------------------------------------------------


def test_time_index_monotonic_rule(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000010.timeindex"
    ti = TimeIndex(path, 10, 1024, create=True)
    assert ti.last_entry() == (-1, 10)
    assert ti.maybe_append(1000, 12)
    assert not ti.maybe_append(1000, 15)  # same timestamp: skipped
    with pytest.raises(ValueError):
        ti.maybe_append(999, 16)  # lower timestamp
    with pytest.raises(ValueError):
        ti.maybe_append(2000, 11)  # lower offset
    assert ti.maybe_append(2000, 20)
    assert ti.lookup(999) == (-1, 10)
    assert ti.lookup(1500) == (1000, 12)
    assert ti.lookup(2000) == (2000, 20)
    ti.close()
    assert path.read_bytes() == struct.pack(">qiqi", 1000, 2, 2000, 10)
    fresh = TimeIndex(path, 10, 1024)
    assert fresh.read_last_entry() == (2000, 20)  # without loading
    assert not fresh.loaded


def test_time_index_full_keeps_a_slot(tmp_path: Path) -> None:
    ti = TimeIndex(tmp_path / "t.timeindex", 0, 3 * 12, create=True)
    ti.maybe_append(1, 1)
    assert not ti.is_full
    ti.maybe_append(2, 2)
    assert ti.is_full  # entries >= max - 1
    with pytest.raises(ValueError):
        ti.maybe_append(3, 3)
    assert ti.maybe_append(3, 3, skip_full_check=True)
    ti.truncate_to(2)
    assert ti.last_entry() == (1, 1)
    ti.close()


def test_time_index_load_checks(tmp_path: Path) -> None:
    path = tmp_path / "t.timeindex"
    path.write_bytes(struct.pack(">qiqi", 10, 1, 5, 2))
    with pytest.raises(CorruptIndexError):
        TimeIndex(path, 0, 1024).load(100)
    path.write_bytes(struct.pack(">qi", 10, 1)[:7])
    with pytest.raises(CorruptIndexError):
        TimeIndex(path, 0, 1024).read_last_entry()


# ---- naming ---------------------------------------------------------------------------------------


def test_segment_names() -> None:
    assert filename_prefix(0) == "00000000000000000000"
    assert filename_prefix(1234) == "00000000000000001234"
    assert segment_file(Path("/d"), 1234, ".log") == Path("/d/00000000000000001234.log")
    assert segment_file(Path("/d"), 5, ".index", ".swap").name == "00000000000000000005.index.swap"
    assert offset_from_filename("00000000000000001234.log.deleted") == 1234
    assert offset_from_filename("00000000000000001234.timeindex") == 1234
    assert offset_from_filename("leader-epoch-checkpoint") is None
    assert offset_from_filename("1234.log") is None
    with pytest.raises(ValueError):
        filename_prefix(-1)


def test_partition_dir_names() -> None:
    assert parse_partition_dir_name("my-topic-12") == TopicPartition("my-topic", 12)
    assert parse_partition_dir_name("a.b_c-0") == TopicPartition("a.b_c", 0)
    for bad in ("topic", "-1", "topic-", "topic-x", "topic-01"):
        assert parse_partition_dir_name(bad) is None
    assert partition_dir_name(TopicPartition("t", 3)) == "t-3"
    name = delete_dir_name(TopicPartition("t", 3))
    assert name.startswith("t-3.") and name.endswith("-delete") and len(name) == len("t-3.") + 32 + 7
    assert parse_delete_dir_name(name) == TopicPartition("t", 3)
    assert parse_partition_dir_name(name) is None
    for tp in (TopicPartition("my-topic", 3), TopicPartition("a.b-c", 12)):
        assert parse_delete_dir_name(delete_dir_name(tp)) == tp
    long = delete_dir_name(TopicPartition("x" * 249, 7))
    assert len(long) <= 255 and parse_delete_dir_name(long) is not None
