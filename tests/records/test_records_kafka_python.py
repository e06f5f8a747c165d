"""kafka-python 3.0.12 as an independent oracle, in both directions.

kafka-python here has gzip only (its snappy/lz4/zstd need python-snappy, lz4 and zstandard,
which are not installed). For snappy, a shim backed by cramjam's raw block codec is installed
into kafka.codec: the xerial framing (what the Java client and kafka-python write) is then
kafka-python's own code while the block codec is shared with us. lz4 and zstd are skipped.
"""

from __future__ import annotations

import types
import warnings
from collections.abc import Iterator

import cramjam
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from zkafka.records import (
    GZIP,
    LOG_APPEND_TIME,
    LZ4,
    NONE,
    SNAPPY,
    ZSTD,
    ControlRecordType,
    Record,
    build_batch,
    control_record,
    is_crc_valid,
    iter_records,
    validate_batches,
)
from zkafka.records.compression import XERIAL_MAGIC

with warnings.catch_warnings():  # kafka-python's protocol schemas use deprecated importlib APIs
    warnings.simplefilter("ignore", DeprecationWarning)
    import kafka.codec
    from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
    from kafka.record.memory_records import MemoryRecords, MemoryRecordsBuilder

_MISSING = {LZ4: "lz4", ZSTD: "zstandard"}
_NATIVE = {
    NONE: True,
    GZIP: True,
    SNAPPY: kafka.codec.has_snappy(),
    LZ4: kafka.codec.has_lz4(),
    ZSTD: kafka.codec.has_zstd(),
}


@pytest.fixture
def kafka_python_codec(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[int]:
    codec = request.param
    if not _NATIVE[codec]:
        if codec != SNAPPY:
            pytest.skip(
                f"kafka-python needs the '{_MISSING[codec]}' package for codec {codec}: not installed"
            )
        shim = types.SimpleNamespace(
            compress=lambda data: bytes(cramjam.snappy.compress_raw(data)),
            decompress=lambda data: bytes(cramjam.snappy.decompress_raw(data)),
        )
        monkeypatch.setattr(kafka.codec, "snappy", shim)
    yield codec


ORACLE_CODECS = pytest.mark.parametrize("kafka_python_codec", [NONE, GZIP, SNAPPY, LZ4, ZSTD], indirect=True)
HYPOTHESIS = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)

# Repetitive payloads so that kafka-python, which falls back to no compression when it does not
# pay, really compresses.
payloads = st.none() | st.binary(max_size=16).map(lambda b: b * 8)
header_lists = st.lists(st.tuples(st.text(max_size=6), st.none() | st.binary(max_size=8)), max_size=2)
record_specs = st.lists(
    st.tuples(st.integers(0, 3), st.integers(0, 10_000), payloads, payloads, header_lists),
    min_size=1,
    max_size=10,
)


def _their_records(batch: DefaultRecordBatch) -> list[Record]:
    return [Record(r.offset, r.timestamp, r.key, r.value, tuple((k, v) for k, v in r.headers)) for r in batch]


@ORACLE_CODECS
@HYPOTHESIS
@given(specs=record_specs, base_offset=st.integers(0, 1 << 40), base_ts=st.integers(0, 1 << 42))
def test_they_read_ours(kafka_python_codec: int, specs, base_offset: int, base_ts: int) -> None:
    codec = kafka_python_codec
    records, offset = [], base_offset
    for gap, ts, key, value, headers in specs:
        offset += gap
        records.append(Record(offset, base_ts + ts, key, value, tuple(headers)))
        offset += 1
    ours = build_batch(
        records, base_offset=base_offset, compression=codec, producer_id=11, producer_epoch=2, base_sequence=5
    )
    lone = Record(offset + 10, base_ts, b"k", b"v")
    two = ours + build_batch(
        [lone], compression=codec, is_transactional=True, producer_id=11, producer_epoch=2, base_sequence=6
    )
    theirs = MemoryRecords(two)
    first = theirs.next_batch()
    assert first.validate_crc()
    assert (first.base_offset, first.last_offset, first.records_count) == (
        base_offset,
        offset - 1,
        len(records),
    )
    assert (first.first_timestamp, first.max_timestamp) == (
        records[0].timestamp,
        max(r.timestamp for r in records),
    )
    assert (first.producer_id, first.producer_epoch, first.base_sequence) == (11, 2, 5)
    assert first.compression_type == codec
    assert not first.is_transactional
    assert _their_records(first) == records
    second = theirs.next_batch()
    assert second.validate_crc() and second.is_transactional
    assert second.base_offset == offset + 10
    assert [r.offset for r in second] == [offset + 10]
    assert not theirs.has_next()


@ORACLE_CODECS
@HYPOTHESIS
@given(specs=record_specs)
def test_we_read_theirs(kafka_python_codec: int, specs) -> None:
    codec = kafka_python_codec
    builder = MemoryRecordsBuilder(
        magic=2,
        compression_type=codec,
        batch_size=1 << 20,
        producer_id=21,
        producer_epoch=4,
        base_sequence=100,
    )
    expected = []
    for gap, ts, key, value, headers in specs:
        builder.skip(gap)  # kafka-python's hook for compacted (gapped) offsets
        offset = builder.next_offset()
        assert builder.append(1_700_000_000_000 + ts, key, value, list(headers)) is not None
        expected.append(Record(offset, 1_700_000_000_000 + ts, key, value, tuple(headers)))
    builder.close()
    buf = bytes(builder.buffer())
    (header,) = validate_batches(buf)
    assert is_crc_valid(buf, header)
    assert header.compression in (codec, NONE)  # kafka-python drops compression that does not pay
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (21, 4, 100)
    assert header.last_offset == expected[-1].offset
    assert header.records_count == len(expected)
    assert header.base_timestamp == expected[0].timestamp
    assert header.max_timestamp == max(r.timestamp for r in expected)
    assert list(iter_records(buf)) == expected


@ORACLE_CODECS
def test_both_ways_with_the_codec_really_used(kafka_python_codec: int) -> None:
    codec = kafka_python_codec
    values = [b"value %d " % i * 20 for i in range(50)]
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=codec,
        is_transactional=False,
        producer_id=-1,
        producer_epoch=-1,
        base_sequence=-1,
        batch_size=1 << 20,
    )
    for i, value in enumerate(values):
        builder.append(i, timestamp=1000 + i, key=b"k%d" % i, value=value, headers=[("h", b"%d" % i)])
    theirs = bytes(builder.build())
    (header,) = validate_batches(theirs)
    assert header.compression == codec
    if codec == SNAPPY:
        assert theirs[61:].startswith(XERIAL_MAGIC)
    expected = [Record(i, 1000 + i, b"k%d" % i, v, (("h", b"%d" % i),)) for i, v in enumerate(values)]
    assert list(iter_records(theirs)) == expected

    ours = build_batch(expected, compression=codec)
    batch = DefaultRecordBatch(ours)
    assert batch.validate_crc()
    assert batch.compression_type == codec
    assert _their_records(batch) == expected


def test_they_see_log_append_time_and_control_records() -> None:
    records = [Record(0, 5, b"a", b"1"), Record(1, 6, b"b", b"2")]
    batch = DefaultRecordBatch(build_batch(records, timestamp_type=LOG_APPEND_TIME, max_timestamp=999))
    assert batch.validate_crc()
    assert batch.timestamp_type == LOG_APPEND_TIME
    assert [r.timestamp for r in batch] == [999, 999]

    marker = build_batch(
        [control_record(ControlRecordType.COMMIT, 3, offset=40, timestamp=7)],
        is_control=True,
        is_transactional=True,
        producer_id=1,
        producer_epoch=0,
    )
    batch = DefaultRecordBatch(marker)
    assert batch.validate_crc() and batch.is_control_batch and batch.is_transactional
    (record,) = list(batch)
    assert record.commit and not record.abort and record.version == 0 and record.offset == 40
