"""build_batch -> validate_batches / iter_records round trips and the batch header invariants."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from records_strategies import CODECS, record_lists

from zkafka.records import (
    GZIP,
    HEADER_SIZE,
    LOG_APPEND_TIME,
    NONE,
    ZSTD,
    ControlRecordType,
    CorruptRecordError,
    InvalidRecordError,
    Record,
    assign_offsets,
    build_batch,
    control_record,
    is_crc_valid,
    iter_batch_records,
    iter_headers,
    iter_records,
    parse_control_record,
    read_header,
    simple_batch,
    validate_batches,
)


@settings(max_examples=150, deadline=None)
@given(
    records=record_lists(),
    codec=st.sampled_from(CODECS),
    producer=st.sampled_from([(-1, -1, -1), (4000, 3, 17), (1 << 40, 32767, (1 << 31) - 1)]),
    leader_epoch=st.integers(min_value=-1, max_value=1 << 20),
    flags=st.tuples(st.booleans(), st.booleans(), st.booleans()),
)
def test_round_trip_and_header_invariants(
    records: list[Record],
    codec: int,
    producer: tuple[int, int, int],
    leader_epoch: int,
    flags: tuple[bool, bool, bool],
) -> None:
    producer_id, producer_epoch, base_sequence = producer
    transactional, control, horizon = flags
    batch = build_batch(
        records,
        compression=codec,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        partition_leader_epoch=leader_epoch,
        is_transactional=transactional,
        is_control=control,
        delete_horizon=horizon,
    )
    (header,) = validate_batches(batch)
    assert header.size == len(batch) == header.batch_length + 12
    assert header.base_offset == records[0].offset
    assert header.last_offset == records[-1].offset
    assert header.records_count == len(records)
    assert header.base_timestamp == records[0].timestamp
    assert header.max_timestamp == max(r.timestamp for r in records)
    assert header.compression == codec
    assert header.timestamp_type == 0
    assert (header.is_transactional, header.is_control, header.has_delete_horizon) == flags
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == producer
    assert header.partition_leader_epoch == leader_epoch
    assert is_crc_valid(batch, header)
    assert list(iter_records(batch)) == records
    assert list(iter_records(batch, header)) == records


@settings(max_examples=50, deadline=None)
@given(records=record_lists(), codec=st.sampled_from(CODECS), append_time=st.integers(0, 1 << 44))
def test_log_append_time_gives_every_record_the_batch_time(
    records: list[Record], codec: int, append_time: int
) -> None:
    batch = build_batch(records, compression=codec, timestamp_type=LOG_APPEND_TIME, max_timestamp=append_time)
    (header,) = validate_batches(batch)
    assert header.timestamp_type == LOG_APPEND_TIME
    assert [r.timestamp for r in iter_records(batch)] == [append_time] * len(records)
    assert [r.offset for r in iter_records(batch)] == [r.offset for r in records]


@settings(max_examples=50, deadline=None)
@given(batches=st.lists(st.tuples(record_lists(max_size=5), st.sampled_from(CODECS)), min_size=1, max_size=4))
def test_many_batches(batches: list[tuple[list[Record], int]]) -> None:
    buf = b"".join(build_batch(records, compression=codec) for records, codec in batches)
    headers = validate_batches(buf)
    assert [h.records_count for h in headers] == [len(records) for records, _ in batches]
    pairs = list(iter_batch_records(buf))
    assert [record for _, record in pairs] == [r for records, _ in batches for r in records]
    assert all(record.offset in range(h.base_offset, h.next_offset) for h, record in pairs)
    # a cut trailing batch is ignored, as in a fetch response
    last = headers[-1]
    cut = buf[: last.position + last.size - 1]
    assert [h.position for h in iter_headers(cut)] == [h.position for h in headers[:-1]]
    assert len(list(iter_batch_records(cut))) == sum(h.records_count for h in headers[:-1])


def test_iter_records_at_a_position() -> None:
    first = simple_batch([(b"a", b"1")], timestamp=10)
    second = simple_batch([(b"b", b"2"), (None, b"3")], timestamp=20, compression=GZIP)
    buf = first + second
    header = read_header(buf, len(first))
    assert [(r.key, r.value) for r in iter_records(buf, header)] == [(b"b", b"2"), (None, b"3")]


def test_empty_batch_keeps_its_offset_range() -> None:
    batch = build_batch(
        [], base_offset=500, last_offset_delta=9, compression=ZSTD, producer_id=7, producer_epoch=1
    )
    (header,) = validate_batches(batch)
    assert header.size == HEADER_SIZE
    assert (header.base_offset, header.last_offset, header.next_offset) == (500, 509, 510)
    assert header.records_count == 0
    assert header.compression == NONE  # Kafka writes empty batches uncompressed
    assert list(iter_records(batch)) == []
    with pytest.raises(InvalidRecordError, match="last_offset_delta"):
        build_batch([])


def test_compaction_keeps_gaps_and_the_original_last_offset_delta() -> None:
    kept = [Record(103, 1000, b"k1", b"v"), Record(107, 1005, b"k2", None)]
    batch = build_batch(kept, base_offset=100, last_offset_delta=9, compression=GZIP, delete_horizon=True)
    (header,) = validate_batches(batch)
    assert (header.base_offset, header.last_offset, header.records_count) == (100, 109, 2)
    assert header.has_delete_horizon
    assert list(iter_records(batch)) == kept


def test_header_keys_survive_any_bytes() -> None:
    # b"\xff" is not UTF-8: it decodes to a lone surrogate and re-encodes to the same byte.
    records = [Record(0, 1, b"k", b"v", (("\udcffkey", b"x"), ("ok", None)))]
    batch = build_batch(records)
    assert b"\xffkey" in batch
    decoded = list(iter_records(batch))
    assert decoded == records
    assert build_batch(decoded) == batch


@settings(max_examples=50, deadline=None)
@given(
    batches=st.lists(st.tuples(record_lists(max_size=4), st.sampled_from(CODECS)), min_size=1, max_size=4),
    first=st.integers(0, 1 << 50),
    epoch=st.none() | st.integers(0, 1000),
)
def test_assign_offsets_keeps_the_crc_valid(
    batches: list[tuple[list[Record], int]], first: int, epoch: int | None
) -> None:
    buf = bytearray(
        b"".join(
            build_batch(records, compression=codec, partition_leader_epoch=-1) for records, codec in batches
        )
    )
    headers = validate_batches(buf)
    end = assign_offsets(buf, headers, first, epoch)
    assert end == first + sum(h.last_offset_delta + 1 for h in headers)
    patched = validate_batches(buf)  # raises on a CRC mismatch
    expected_base = first
    for (records, _), before, after in zip(batches, headers, patched, strict=True):
        assert after.base_offset == expected_base
        assert after.partition_leader_epoch == (-1 if epoch is None else epoch)
        assert after.crc == before.crc
        shift = expected_base - before.base_offset
        assert [r.offset for r in iter_records(buf, after)] == [r.offset + shift for r in records]
        expected_base = after.next_offset


def test_simple_batch() -> None:
    batch = simple_batch(
        [(b"k0", b"v0"), (None, None), (b"", b"")],
        timestamp=1234,
        compression=GZIP,
        headers=[("trace", b"1")],
        producer_id=9,
        producer_epoch=2,
        base_sequence=40,
        is_transactional=True,
    )
    (header,) = validate_batches(batch)
    assert (header.base_offset, header.last_offset_delta, header.records_count) == (0, 2, 3)
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (9, 2, 40)
    assert header.is_transactional
    assert header.last_sequence == 42
    assert list(iter_records(batch)) == [
        Record(0, 1234, b"k0", b"v0", (("trace", b"1"),)),
        Record(1, 1234, None, None, (("trace", b"1"),)),
        Record(2, 1234, b"", b"", (("trace", b"1"),)),
    ]
    with pytest.raises(InvalidRecordError):
        simple_batch([], timestamp=1)


@pytest.mark.parametrize("marker", [ControlRecordType.ABORT, ControlRecordType.COMMIT])
def test_control_batches(marker: ControlRecordType) -> None:
    batch = build_batch(
        [control_record(marker, 12, offset=77, timestamp=5)],
        is_control=True,
        is_transactional=True,
        producer_id=3,
        producer_epoch=0,
    )
    ((header, record),) = list(iter_batch_records(batch))
    assert header.is_control and header.is_transactional
    assert parse_control_record(record) == (0, marker)
    assert record.value == b"\x00\x00\x00\x00\x00\x0c"  # version 0, coordinator epoch 12


@pytest.mark.parametrize("key", [None, b"", b"\x00\x00\x00", b"\xff\xff\x00\x01"])
def test_bad_control_record_keys(key: bytes | None) -> None:
    with pytest.raises(CorruptRecordError):
        parse_control_record(Record(0, 0, key, None))


@pytest.mark.parametrize(
    ("records", "kwargs"),
    [
        ([Record(5, 0, None, b"a"), Record(5, 0, None, b"b")], {}),  # offsets must increase
        ([Record(5, 0, None, b"a"), Record(4, 0, None, b"b")], {}),
        ([Record(5, 0, None, b"a")], {"base_offset": 6}),  # before the base offset
        ([Record(1 << 32, 0, None, b"a")], {"base_offset": 0}),  # delta beyond int32
        ([Record(0, 0, None, b"a"), Record(3, 0, None, b"b")], {"last_offset_delta": 2}),
        ([Record(0, 0, None, b"a")], {"compression": 5}),
        ([Record(0, 1 << 62, None, b"a")], {"base_timestamp": -(1 << 62)}),  # delta beyond int64
        ([Record(0, 0, None, b"a")], {"timestamp_type": 2}),
        ([Record(0, 0, None, b"a")], {"producer_epoch": 1 << 15}),
        ([Record(0, 0, None, b"a")], {"base_sequence": 1 << 31}),
        ([Record(0, 0, None, b"a", (("\ud800", None),))], {}),  # not encodable as UTF-8
    ],
)
def test_build_batch_refuses_bad_input(records: list[Record], kwargs: dict[str, int]) -> None:
    with pytest.raises(InvalidRecordError):  # never a bare ValueError / struct.error
        build_batch(records, **kwargs)
