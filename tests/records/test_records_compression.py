"""The four codecs: round trips, the wire framings real clients use, and bad payloads."""

from __future__ import annotations

import os
import struct

import cramjam
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zkafka.records import GZIP, LZ4, NONE, SNAPPY, ZSTD, CorruptRecordError, InvalidRecordError
from zkafka.records.compression import XERIAL_MAGIC, compress, decompress

CODECS = [NONE, GZIP, SNAPPY, LZ4, ZSTD]
SAMPLE = b"the quick brown fox " * 300 + os.urandom(200)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(CODECS), st.binary(max_size=3000))
def test_round_trip(codec: int, data: bytes) -> None:
    assert decompress(codec, compress(codec, data)) == data


@pytest.mark.parametrize("codec", CODECS)
def test_buffers_of_every_kind(codec: int) -> None:
    compressed = compress(codec, memoryview(bytearray(SAMPLE)))
    assert decompress(codec, bytearray(compressed)) == SAMPLE
    assert decompress(codec, memoryview(b"xx" + compressed)[2:]) == SAMPLE


def test_snappy_writes_a_raw_block() -> None:
    compressed = compress(SNAPPY, SAMPLE)
    assert not compressed.startswith(XERIAL_MAGIC)
    assert bytes(cramjam.snappy.decompress_raw(compressed)) == SAMPLE


def _xerial(data: bytes, block: int, header_format: str = ">ii") -> bytes:
    out = XERIAL_MAGIC + struct.pack(header_format, 1, 1)
    for i in range(0, len(data), block):
        raw = bytes(cramjam.snappy.compress_raw(data[i : i + block]))
        out += struct.pack(">i", len(raw)) + raw
    return out


@pytest.mark.parametrize("header_format", [">ii", "<ii"])
def test_snappy_reads_xerial_framing(header_format: str) -> None:
    framed = _xerial(SAMPLE, 1024, header_format)
    assert decompress(SNAPPY, framed) == SAMPLE
    assert decompress(SNAPPY, XERIAL_MAGIC + b"\x00\x00\x00\x01" * 2) == b""


@pytest.mark.parametrize(
    "framed",
    [
        XERIAL_MAGIC + b"\x00\x00\x00\x01",  # header cut
        XERIAL_MAGIC + b"\x00\x00\x00\x01" * 2 + b"\x00\x00",  # block length cut
        XERIAL_MAGIC + b"\x00\x00\x00\x01" * 2 + b"\x00\x00\x00\x09abc",  # block cut
        XERIAL_MAGIC + b"\x00\x00\x00\x01" * 2 + b"\xff\xff\xff\xffabc",  # negative block length
        XERIAL_MAGIC + b"\x00\x00\x00\x01" * 2 + b"\x00\x00\x00\x03abc",  # not snappy
    ],
)
def test_bad_xerial_framing(framed: bytes) -> None:
    with pytest.raises(CorruptRecordError):
        decompress(SNAPPY, framed)


def test_snappy_impossible_length_is_refused_before_allocating() -> None:
    # cramjam would try to allocate the declared 4 GiB and abort the process on failure.
    with pytest.raises(CorruptRecordError, match="impossible"):
        decompress(SNAPPY, b"\xff\xff\xff\xff\x0f\x00abc")


def test_lz4_frames_have_independent_blocks() -> None:
    frame = compress(LZ4, SAMPLE)
    assert frame[:4] == b"\x04\x22\x4d\x18"
    flags = frame[4]
    assert flags >> 6 == 1  # frame version 01
    assert flags & 0x20  # block independence: Kafka's Java reader refuses linked blocks


@pytest.mark.parametrize("codec", [GZIP, SNAPPY, LZ4, ZSTD])
def test_every_truncation_is_corrupt(codec: int) -> None:
    compressed = compress(codec, SAMPLE[:1500])
    for cut in range(len(compressed)):
        with pytest.raises(CorruptRecordError):
            decompress(codec, compressed[:cut])


@settings(max_examples=100, deadline=None)
@given(st.sampled_from([GZIP, SNAPPY, LZ4, ZSTD]), st.binary(max_size=200))
def test_garbage_payload_is_corrupt_or_decodes(codec: int, garbage: bytes) -> None:
    try:
        decompress(codec, garbage)
    except CorruptRecordError:
        pass


@pytest.mark.parametrize("codec", [5, 6, 7, -1, 99])
def test_unknown_codec(codec: int) -> None:
    with pytest.raises(InvalidRecordError):
        compress(codec, b"x")
    with pytest.raises(InvalidRecordError):
        decompress(codec, b"x")


@pytest.mark.parametrize("codec", [GZIP, LZ4, ZSTD])
def test_a_decompression_bomb_is_refused_without_allocating_it(codec: int) -> None:
    """600 MiB of zeros compress to a few hundred KB or less; expanding them is refused at the limit
    (at most 256 MiB of buffer, never the whole)."""
    import tracemalloc

    from zkafka.records.compression import MAX_LIMIT

    bomb = compress(codec, b"\0" * (600 << 20))
    tracemalloc.start()
    try:
        with pytest.raises(CorruptRecordError, match="expands beyond"):
            decompress(codec, bomb)
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak <= MAX_LIMIT + (8 << 20)


@pytest.mark.parametrize("codec", [GZIP, LZ4, ZSTD])
def test_highly_compressible_real_data_still_decompresses(codec: int) -> None:
    data = b"".join(b'{"user":%d,"event":"click","page":"/home"}' % (i % 10) for i in range(200_000))
    assert decompress(codec, compress(codec, data)) == data
