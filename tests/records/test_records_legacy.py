"""Message sets of magic 0 and 1, checked against kafka-python's legacy codec (an independent
implementation, used here as the oracle only)."""

from __future__ import annotations

import zlib
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record import MemoryRecords
from kafka.record.legacy_records import LegacyRecordBatchBuilder

from zkafka.records import (
    GZIP,
    LZ4,
    NONE,
    SNAPPY,
    CorruptRecordError,
    InvalidRecordError,
    Record,
    build_batch,
)
from zkafka.records.legacy import (
    decode_message_set,
    down_convert,
    down_convert_within,
    encode_message_set,
    is_legacy_message_set,
)

CODECS = [NONE, GZIP, SNAPPY, LZ4]
optional_bytes = st.one_of(st.none(), st.binary(max_size=40))
records_st = st.lists(
    st.tuples(optional_bytes, optional_bytes, st.integers(0, 2**41)), min_size=1, max_size=20
)


def oracle_read(buf: bytes) -> list[tuple[int, int, bytes | None, bytes | None]]:
    out = []
    records = MemoryRecords(buf)
    while (batch := records.next_batch()) is not None:
        # kafka-python says None where Kafka (and zkafka) say -1: magic 0 has no timestamp
        out.extend((r.offset, -1 if r.timestamp is None else r.timestamp, r.key, r.value) for r in batch)
    return out


def oracle_build(magic: int, codec: int, items: list[tuple[bytes | None, bytes | None, int]]) -> bytes:
    builder = LegacyRecordBatchBuilder(magic, codec, 1 << 24)
    for i, (key, value, ts) in enumerate(items):
        builder.append(i, ts if magic == 1 else None, key, value)
    return bytes(builder.build())


@settings(max_examples=60, deadline=None)
@given(records_st, st.sampled_from([0, 1]), st.sampled_from(CODECS))
def test_what_kafka_python_writes_we_read(items: list, magic: int, codec: int) -> None:
    if magic == 0 and codec == LZ4:
        return  # Kafka 0.8's broken LZ4 framing: rare, refused as corrupt (see the test below)
    buf = oracle_build(magic, codec, items)
    assert is_legacy_message_set(buf)
    ours = [(m.offset, m.timestamp, m.key, m.value) for m in decode_message_set(buf)]
    assert ours == oracle_read(buf)
    assert [(k, v) for _, _, k, v in ours] == [(k, v) for k, v, _ in items]


@settings(max_examples=60, deadline=None)
@given(records_st, st.sampled_from([0, 1]), st.sampled_from(CODECS), st.integers(0, 2**40), st.data())
def test_what_we_write_kafka_python_reads(
    items: list, magic: int, codec: int, base: int, data: st.DataObject
) -> None:
    gaps = data.draw(st.lists(st.integers(1, 5), min_size=len(items), max_size=len(items)))
    offsets = [base + sum(gaps[:i]) for i in range(len(items))]  # gaps as compaction leaves them
    records = [Record(o, ts, k, v) for o, (k, v, ts) in zip(offsets, items, strict=True)]
    if magic == 0 and codec == LZ4:
        codec = GZIP
    buf = encode_message_set(records, magic, codec=codec)
    expected_ts = [r.timestamp if magic == 1 else -1 for r in records]
    read = oracle_read(buf)
    assert [o for o, *_ in read] == offsets
    assert [(k, v) for _, _, k, v in read] == [(r.key, r.value) for r in records]
    if magic == 1 and codec == NONE:
        assert [t for _, t, _, _ in read] == expected_ts
    # and back: the same offsets, keys and values through our reader
    assert [(m.offset, m.key, m.value) for m in decode_message_set(buf)] == [
        (r.offset, r.key, r.value) for r in records
    ]


def test_a_partial_last_message_is_ignored() -> None:
    buf = encode_message_set([Record(5, 1, b"k", b"v"), Record(6, 2, b"k2", b"v2")], 1)
    assert [m.offset for m in decode_message_set(buf[:-3])] == [5]


def test_a_wrong_crc_is_corrupt() -> None:
    buf = bytearray(encode_message_set([Record(0, 1, b"k", b"v")], 1))
    buf[-1] ^= 0xFF
    with pytest.raises(CorruptRecordError, match="CRC"):
        decode_message_set(buf)


@pytest.mark.parametrize(
    "mutate",
    [
        lambda b: b[:12] + (2**31 - 1).to_bytes(4, "big") + b[16:],  # size beyond the buffer: partial
        lambda b: b[:12] + (3).to_bytes(4, "big") + b[16:],  # size below a message's minimum
    ],
)
def test_bad_sizes_never_crash(mutate: object) -> None:
    buf = mutate(encode_message_set([Record(0, 1, b"k", b"v")], 0))  # type: ignore[operator]
    try:
        assert decode_message_set(buf) == []
    except CorruptRecordError:
        pass


def test_unknown_codec_and_magic_are_invalid() -> None:
    body = bytearray(encode_message_set([Record(0, 1, b"k", b"v")], 1))
    body[17] = 6  # codec 6
    body[12 + 4 : 12 + 4] = b""  # keep layout
    crc = zlib.crc32(bytes(body[16:]))
    body[12:16] = crc.to_bytes(4, "big")
    with pytest.raises(InvalidRecordError):
        decode_message_set(bytes(body))


# -- lazy, bounded down-conversion (KIP-283) ------------------------------------------------------


def _stored(batches: int, per_batch: int, codec: int) -> list[bytes]:
    return [
        build_batch(
            [Record(b * per_batch + i, 1_700_000_000_000 + i, b"k", b"v" * 100) for i in range(per_batch)],
            compression=codec,
        )
        for b in range(batches)
    ]


def _counting(batches: list[bytes], pulled: list[int]) -> Iterator[bytes]:
    for batch in batches:
        pulled.append(1)
        yield batch


@pytest.mark.parametrize("codec", [NONE, GZIP])
def test_down_conversion_within_a_large_limit_is_the_whole_conversion(codec: int) -> None:
    stored = _stored(3, 10, codec)
    converted = down_convert_within(iter(stored), 1, 1 << 30)
    assert b"".join(converted.chunks) == down_convert(b"".join(stored), 1)
    assert converted.records == 30 and converted.size == sum(map(len, converted.chunks))


def test_down_conversion_stops_at_the_limit_between_whole_messages() -> None:
    stored = _stored(3, 10, NONE)
    pulled: list[int] = []
    converted = down_convert_within(_counting(stored, pulled), 1, 500)
    assert converted.size <= 500 and len(pulled) == 1  # the later batches were never read
    offsets = [m.offset for m in decode_message_set(b"".join(converted.chunks))]
    assert offsets == list(range(converted.records)) and converted.records >= 1
    one = down_convert_within(iter(stored), 0, 1)  # below one message: the first, whole
    assert [m.offset for m in decode_message_set(b"".join(one.chunks))] == [0]


def test_a_compressed_batch_is_whole_or_left_out() -> None:
    stored = _stored(3, 10, GZIP)
    first = down_convert_within(iter(stored), 1, 1)
    assert first.records == 10 and len(first.chunks) == 1  # the first wrapper, whole
    two = down_convert_within(iter(stored), 1, first.size * 2 + 1)
    assert two.records == 20


def test_records_below_the_fetch_offset_are_left_out_of_an_uncompressed_batch() -> None:
    stored = _stored(1, 10, NONE)
    converted = down_convert_within(iter(stored), 1, 1, first_offset=5)  # as kafka-go's ReadMessage
    assert [m.offset for m in decode_message_set(b"".join(converted.chunks))] == [5]
    wrapped = down_convert_within(iter(_stored(1, 10, GZIP)), 1, 1, first_offset=5)
    assert wrapped.records == 10  # a wrapper cannot be split: the client skips what it did not ask for
