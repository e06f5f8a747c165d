"""The record-area codecs of a v2 batch (attributes bits 0-2), all backed by `cramjam`.

Wire formats, as real clients write them:

- gzip: a gzip member (RFC 1952).
- snappy: we write one *raw* snappy block (librdkafka does the same); we read raw blocks and the
  xerial framing that the Java client and kafka-python write: magic ``\\x82SNAPPY\\x00``,
  int32 version, int32 compat, then repeated (int32 length, raw snappy block).
- lz4: the LZ4 *frame* format with independent blocks; Kafka's Java reader rejects linked blocks.
- zstd: a zstd frame.
"""

from __future__ import annotations

import struct
from enum import IntEnum

import cramjam

from .batch import CorruptRecordError, InvalidRecordError
from .varint import decode_unsigned_varint

NONE = 0
GZIP = 1
SNAPPY = 2
LZ4 = 3
ZSTD = 4

# Kafka's defaults (compression.gzip.level / compression.zstd.level, KIP-390).
_GZIP_LEVEL = 6
_ZSTD_LEVEL = 3

XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER_SIZE = 16  # magic (8) + int32 version + int32 compat
_INT32 = struct.Struct(">i")

# A raw snappy block declares its uncompressed length up front and cramjam allocates it before
# decoding, aborting the whole process when that fails. The longest expansion snappy can express
# is a 3-byte copy element producing 64 bytes, so a claim above 22x the input is certainly corrupt.
_SNAPPY_MAX_EXPANSION = 22

Buffer = bytes | bytearray | memoryview


class Codec(IntEnum):
    NONE = NONE
    GZIP = GZIP
    SNAPPY = SNAPPY
    LZ4 = LZ4
    ZSTD = ZSTD


def codec_name(codec: int) -> str:
    try:
        return Codec(codec).name.lower()
    except ValueError:
        return f"codec {codec}"


def _lz4_compress(data: Buffer) -> bytes:
    compressor = cramjam.lz4.Compressor(block_linked=False, content_checksum=False)
    # The streaming compressor accepts only `bytes`, unlike the other cramjam entry points.
    compressor.compress(data if type(data) is bytes else bytes(data))
    return bytes(compressor.finish())


def compress(codec: int, data: Buffer) -> bytes:
    """Compress a batch's record area with `codec` (NONE returns the bytes unchanged)."""
    if codec == NONE:
        return bytes(data)
    if codec == GZIP:
        return bytes(cramjam.gzip.compress(data, level=_GZIP_LEVEL))
    if codec == SNAPPY:
        return bytes(cramjam.snappy.compress_raw(data))
    if codec == LZ4:
        return _lz4_compress(data)
    if codec == ZSTD:
        return bytes(cramjam.zstd.compress(data, level=_ZSTD_LEVEL))
    raise InvalidRecordError(f"unknown compression codec {codec}")


def _snappy_raw_block(block: Buffer) -> bytes:
    declared, _ = decode_unsigned_varint(block, 0)
    if declared > _SNAPPY_MAX_EXPANSION * len(block):
        raise CorruptRecordError(
            f"snappy block of {len(block)} bytes claims an impossible {declared} uncompressed bytes"
        )
    return bytes(cramjam.snappy.decompress_raw(block))


def _snappy_xerial(data: memoryview) -> bytes:
    if len(data) < _XERIAL_HEADER_SIZE:
        raise CorruptRecordError("xerial snappy header truncated")
    # version and compat are not checked: some producers write them little-endian.
    parts: list[bytes] = []
    pos, end = _XERIAL_HEADER_SIZE, len(data)
    while pos < end:
        if end - pos < 4:
            raise CorruptRecordError("xerial snappy block length truncated")
        (length,) = _INT32.unpack_from(data, pos)
        pos += 4
        if length < 0 or pos + length > end:
            raise CorruptRecordError(f"xerial snappy block length {length} exceeds the {end - pos} left")
        parts.append(_snappy_raw_block(data[pos : pos + length]))
        pos += length
    return b"".join(parts)


def _snappy_decompress(data: memoryview) -> bytes:
    if data[: len(XERIAL_MAGIC)] == XERIAL_MAGIC:
        return _snappy_xerial(data)
    return _snappy_raw_block(data)


def decompress(codec: int, data: Buffer) -> bytes:
    """Decompress a batch's record area. Bad input raises CorruptRecordError, an unknown codec
    InvalidRecordError."""
    view = memoryview(data)
    if codec == NONE:
        return bytes(view)
    try:
        if codec == GZIP:
            return bytes(cramjam.gzip.decompress(view))
        if codec == SNAPPY:
            return _snappy_decompress(view)
        if codec == LZ4:
            return bytes(cramjam.lz4.decompress(view))
        if codec == ZSTD:
            return bytes(cramjam.zstd.decompress(view))
    except cramjam.DecompressionError as exc:
        raise CorruptRecordError(f"{codec_name(codec)} payload cannot be decompressed: {exc}") from None
    raise InvalidRecordError(f"unknown compression codec {codec}")
