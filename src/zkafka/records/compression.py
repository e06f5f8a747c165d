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
from collections.abc import Callable
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

# gzip, lz4 and zstd can expand a thousandfold (a "decompression bomb": a 1 MB batch of zeros is
# gigabytes). Output is written into a buffer of bounded size, grown while needed, and a payload
# that would expand beyond MAX_EXPANSION x its size (at least MIN_LIMIT, at most MAX_LIMIT) is
# refused as corrupt instead of being allocated. Real record data compresses 2-10x.
MAX_EXPANSION = 256
MIN_LIMIT = 64 << 20
MAX_LIMIT = 256 << 20
_FIRST_GUESS = 8


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
            return _bounded(cramjam.gzip.decompress_into, view, codec)
        if codec == SNAPPY:
            return _snappy_decompress(view)
        if codec == LZ4:
            return _bounded(cramjam.lz4.decompress_into, view, codec)
        if codec == ZSTD:
            return _bounded(cramjam.zstd.decompress_into, view, codec)
    except cramjam.DecompressionError as exc:
        raise CorruptRecordError(f"{codec_name(codec)} payload cannot be decompressed: {exc}") from None
    raise InvalidRecordError(f"unknown compression codec {codec}")


def expansion_limit(compressed_size: int) -> int:
    return min(MAX_LIMIT, max(MIN_LIMIT, MAX_EXPANSION * compressed_size))


_LZ4_MAX_RATIO = 255  # an LZ4 sequence can produce at most ~255 bytes per input byte


def _bounded(decompress_into: Callable[[Buffer, bytearray], int], data: memoryview, codec: int) -> bytes:
    """Decompress with bounded memory. The size the payload declares (gzip's ISIZE, the zstd and
    lz4 frame content size) is the first guess: exact, that is as fast as cramjam's own allocation.
    Without one, lz4 small enough that even its largest expansion is within the limit decompresses
    directly; anything else goes into a buffer grown 8x at a time up to the limit."""
    limit = expansion_limit(len(data))
    declared = _declared_size(codec, data)
    if declared is None and codec == LZ4 and _LZ4_MAX_RATIO * len(data) <= limit:
        return bytes(cramjam.lz4.decompress(data))
    if declared is not None and declared <= limit:
        size = max(declared, 1)
    else:
        size = min(limit, max(1 << 16, _FIRST_GUESS * len(data)))
    while True:
        out = bytearray(size)
        try:
            n = decompress_into(data, out)
        except cramjam.DecompressionError as exc:
            if "whole buffer" not in str(exc):
                raise
            if size >= limit:
                raise CorruptRecordError(
                    f"{codec_name(codec)} payload of {len(data)} bytes expands beyond {limit} bytes"
                ) from None
            size = min(limit, max(size * 8, 1 << 16))
            del out  # free the smaller buffer before the next one is allocated
            continue
        del out[n:]
        return bytes(out)


_GZIP_MAGIC = b"\x1f\x8b"
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
_LZ4_MAGIC = b"\x04\x22\x4d\x18"


def _declared_size(codec: int, data: memoryview) -> int | None:
    """The uncompressed size the payload's own header or trailer states, if it states one. Only a
    guess: a wrong claim just costs a retry."""
    if codec == GZIP and len(data) >= 18 and data[:2] == _GZIP_MAGIC:
        return int.from_bytes(data[-4:], "little")  # ISIZE: exact for one member below 4 GiB
    if codec == ZSTD and len(data) >= 6 and data[:4] == _ZSTD_MAGIC:
        descriptor = data[4]
        fcs_flag, single_segment, dict_flag = descriptor >> 6, (descriptor >> 5) & 1, descriptor & 3
        fcs_size = (1 if single_segment else 0, 2, 4, 8)[fcs_flag]
        if fcs_size == 0:
            return None
        pos = 5 + (0 if single_segment else 1) + (0, 1, 2, 4)[dict_flag]
        if pos + fcs_size > len(data):
            return None
        value = int.from_bytes(data[pos : pos + fcs_size], "little")
        return value + 256 if fcs_size == 2 else value
    if codec == LZ4 and len(data) >= 14 and data[:4] == _LZ4_MAGIC and data[4] & 0x08:
        return int.from_bytes(data[6:14], "little")
    return None
