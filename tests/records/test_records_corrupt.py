"""Bad input never crashes, hangs or yields wrong data: it raises CorruptRecordError or
InvalidRecordError, and nothing else."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from records_strategies import CODECS, record_lists

from zkafka.records import (
    GZIP,
    HEADER_SIZE,
    NONE,
    CorruptRecordError,
    InvalidRecordError,
    Record,
    build_batch,
    compress,
    iter_batch_records,
    iter_records,
    read_header,
    rewrite_crc,
    validate_batches,
    validate_whole_batches,
)

BAD = (CorruptRecordError, InvalidRecordError)
HEADER = struct.Struct(">qiibIhiqqqhii")

SMALL = [
    Record(10, 1000, b"key", b"value", (("h1", b"x"), ("h2", None))),
    Record(11, 1001, None, b""),
    Record(13, 900, b"", None),
]


def frame(area: bytes, count: int, *, attributes: int = 0, last_offset_delta: int | None = None) -> bytes:
    """A batch with a consistent length and a valid CRC around an arbitrary records area."""
    buf = bytearray(HEADER_SIZE) + area
    last = max(count - 1, 0) if last_offset_delta is None else last_offset_delta
    HEADER.pack_into(buf, 0, 0, len(buf) - 12, -1, 2, 0, attributes, last, 0, 0, -1, -1, -1, count)
    rewrite_crc(buf, 0, len(buf))
    return bytes(buf)


def drain(buf: bytes | bytearray) -> list[Record]:
    return list(iter_records(buf))


@pytest.mark.parametrize("codec", CODECS)
def test_every_truncation(codec: int) -> None:
    batch = build_batch(SMALL, compression=codec)
    for cut in range(len(batch)):
        with pytest.raises(CorruptRecordError):
            validate_batches(batch[:cut])
        with pytest.raises(CorruptRecordError):
            drain(batch[:cut])
        # a cut batch after a whole one is also refused by validate_batches, ignored by iter_headers
        if cut:
            with pytest.raises(CorruptRecordError):
                validate_batches(batch + batch[:cut])
        assert len(list(iter_batch_records(batch + batch[:cut]))) == len(SMALL)


@pytest.mark.parametrize("codec", CODECS)
def test_whole_batches_before_a_cut_one(codec: int) -> None:
    """A fetch response's records (the leader cuts the last batch at its byte limit): the whole
    batches are validated and kept, whatever follows them of a cut one is left out."""
    batch = build_batch(SMALL, compression=codec)
    for cut in range(len(batch)):
        headers = validate_whole_batches(batch + batch + batch[:cut])
        assert [h.position for h in headers] == [0, len(batch)]
        assert headers == validate_batches(batch + batch)
        assert validate_whole_batches(batch[:cut]) == []


def test_whole_batches_are_checked_as_validate_batches_checks_them() -> None:
    batch = build_batch(SMALL)
    for position in range(17, len(batch)):  # a flipped byte under the CRC of a whole batch
        damaged = bytearray(batch)
        damaged[position] ^= 0x01
        with pytest.raises(CorruptRecordError):
            validate_whole_batches(batch + damaged + batch[:20])
    wrong_magic = bytearray(batch)
    wrong_magic[16] = 1
    with pytest.raises(InvalidRecordError):
        validate_whole_batches(batch + wrong_magic)
    too_short = bytearray(batch)
    struct.pack_into(">i", too_short, 8, 10)  # a length that cannot hold a v2 header
    with pytest.raises(CorruptRecordError):
        validate_whole_batches(batch + too_short)


@pytest.mark.parametrize("codec", CODECS)
def test_every_truncation_of_the_records_area_behind_a_valid_frame(codec: int) -> None:
    area = build_batch(SMALL)[HEADER_SIZE:]
    for cut in range(len(area)):
        payload = compress(codec, area[:cut]) if codec != NONE else area[:cut]
        batch = frame(payload, len(SMALL), attributes=codec)
        validate_batches(batch)  # the frame is fine...
        with pytest.raises(CorruptRecordError):
            drain(batch)  # ...the records are not


@pytest.mark.parametrize("codec", CODECS)
def test_every_flipped_byte_under_the_crc_is_detected(codec: int) -> None:
    batch = build_batch(SMALL, compression=codec)
    for position in range(17, len(batch)):  # crc and everything it covers
        for mask in (0x01, 0x80, 0xFF):
            damaged = bytearray(batch)
            damaged[position] ^= mask
            with pytest.raises(CorruptRecordError):
                validate_batches(damaged)


def test_damage_to_the_frame_itself() -> None:
    batch = bytearray(build_batch(SMALL))
    batch[16] = 1  # magic
    with pytest.raises(InvalidRecordError):
        validate_batches(batch)
    with pytest.raises(InvalidRecordError):
        drain(batch)
    for length in (0, 48, len(batch) - 11, 1 << 30, -1):
        damaged = bytearray(build_batch(SMALL))
        struct.pack_into(">i", damaged, 8, length)
        with pytest.raises(CorruptRecordError):
            validate_batches(damaged)
    with pytest.raises(CorruptRecordError, match="empty"):
        validate_batches(b"")


@pytest.mark.parametrize("codec", [5, 6, 7])
def test_unknown_codec_bits(codec: int) -> None:
    batch = frame(b"\x00" * 10, 1, attributes=codec)
    assert read_header(batch).compression == codec
    with pytest.raises(InvalidRecordError):
        drain(batch)


@settings(max_examples=100, deadline=None)
@given(codec=st.sampled_from([1, 2, 3, 4]), garbage=st.binary(max_size=100), count=st.integers(0, 5))
def test_garbage_compressed_payloads(codec: int, garbage: bytes, count: int) -> None:
    try:
        drain(frame(garbage, count, attributes=codec))
    except BAD:
        pass


@pytest.mark.parametrize(
    ("area_hex", "count", "message"),
    [
        # record length as a 6-byte varint
        ("8080808080000000000101 00", 1, "varint"),
        # timestamp delta as an 11-byte varlong
        ("10 00 8080808080808080808000 00 01 01 00", 1, "varlong"),
        # negative record length
        ("03 00000001010100", 1, "negative length"),
        # key length -2
        ("0e 00000003 0161 00", 1, "key length -2"),
        # value length -3
        ("0e 000000 01 05 61 00", 1, "value length -3"),
        # header count -1
        ("0c 000000 01 01 01", 1, "-1 headers"),
        # huge header count in a tiny record
        ("14 000000 01 01 feffffff0f", 1, "headers in"),
        # header key length -1 (header keys are not nullable)
        ("10 000000 01 01 02 01 01", 1, "header key length"),
        # header value length -2
        ("10 000000 01 01 02 00 03", 1, "header value length"),
        # length says 8 but the fields take 7
        ("10 00000001026100 00", 1, "span"),
        # length says 6 but the fields take 7
        ("0c 00000001026100", 1, "span"),
        # count says 2, there is 1 record
        ("0e 00000001026100", 2, "truncated"),
        # count says 1, there are 2 records
        ("0e 00000001026100 0e 00020001026200", 1, "garbage"),
        # count says 0, there is 1 record
        ("0e 00000001026100", 0, "garbage"),
        # a huge count with a single record
        ("0e 00000001026100", (1 << 31) - 1, "truncated"),
        # key length past the end of the batch
        ("0e 000000 7e 026100", 1, "truncated"),
    ],
)
def test_malformed_records(area_hex: str, count: int, message: str) -> None:
    batch = frame(bytes.fromhex(area_hex), count)
    validate_batches(batch)
    with pytest.raises(CorruptRecordError, match=message):
        drain(batch)
    with pytest.raises(CorruptRecordError, match=message):
        drain(frame(compress(GZIP, bytes.fromhex(area_hex)), count, attributes=GZIP))


def test_reference_record_decodes() -> None:
    # the well-formed record the malformed cases above are variations of
    assert drain(frame(bytes.fromhex("0e00000001026100"), 1)) == [Record(0, 0, None, b"a")]


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200))
def test_fuzz_random_bytes(data: bytes) -> None:
    try:
        validate_batches(data)
    except BAD:
        pass
    try:
        drain(data)
    except BAD:
        pass
    try:
        list(iter_batch_records(data))
    except BAD:
        pass


@settings(max_examples=200, deadline=None)
@given(area=st.binary(max_size=120), count=st.integers(0, 4))
def test_fuzz_records_area_behind_a_valid_frame(area: bytes, count: int) -> None:
    try:
        drain(frame(area, count))
    except BAD:
        pass


@settings(max_examples=150, deadline=None)
@given(
    records=record_lists(max_size=4),
    codec=st.sampled_from(CODECS),
    edits=st.lists(st.tuples(st.integers(0, 1 << 16), st.integers(0, 255)), min_size=1, max_size=4),
)
def test_fuzz_mutated_batches_without_the_crc_check(
    records: list[Record], codec: int, edits: list[tuple[int, int]]
) -> None:
    """Mutations past the header reach the record decoder (iter_records does not check the CRC)."""
    batch = bytearray(build_batch(records, compression=codec))
    for position, value in edits:
        batch[HEADER_SIZE + position % (len(batch) - HEADER_SIZE)] = value
    try:
        decoded = drain(batch)
    except BAD:
        return
    assert len(decoded) == len(records)
