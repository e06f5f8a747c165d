"""RecordBatch v2 (magic 2) at the batch level: a header view over bytes, CRC, in-place patching.

Layout (all big-endian; `reference/wire-protocol.md` §2.3)::

    offset  field                   type     covered by CRC?
     0      baseOffset              int64    no  - stamped by the broker on append
     8      batchLength             int32    no  - bytes after this field (total size - 12)
    12      partitionLeaderEpoch    int32    no  - stamped by the broker on append
    16      magic                   int8     no  - 2
    17      crc                     uint32   -   - CRC-32C of bytes 21..end
    21      attributes              int16    yes - bits 0-2 codec, 3 timestamp type, 4 txn, 5 control,
                                                   6 delete horizon
    23      lastOffsetDelta         int32    yes
    27      baseTimestamp           int64    yes
    35      maxTimestamp            int64    yes
    43      producerId              int64    yes
    51      producerEpoch           int16    yes
    53      baseSequence            int32    yes
    57      recordsCount            int32    yes
    61      records                 ...      yes - one compressed blob when the codec is not 0

Because baseOffset and partitionLeaderEpoch sit before the CRC'd region, the broker assigns
offsets and stamps the leader epoch in place and stores/serves the producer's bytes verbatim.
Nothing in this module looks at individual records: it is the produce/fetch hot path.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import NamedTuple

from crc32c import crc32c

MAGIC_V2 = 2
HEADER_SIZE = 61
LOG_OVERHEAD = 12  # baseOffset + batchLength: the part of a batch not counted in batchLength
MAGIC_OFFSET = 16  # baseOffset, batchLength, partitionLeaderEpoch (v0/v1: offset, size, crc)
CRC_START = 21

# Attribute bits
COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_MASK = 0x10
CONTROL_MASK = 0x20
DELETE_HORIZON_MASK = 0x40

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_PARTITION_LEADER_EPOCH = -1
NO_TIMESTAMP = -1

_HEADER = struct.Struct(">qiibIhiqqqhii")
_OFFSET_AND_LENGTH = struct.Struct(">qi")
_INT64 = struct.Struct(">q")
_INT32 = struct.Struct(">i")
_UINT32 = struct.Struct(">I")


class CorruptRecordError(ValueError):
    """Bytes that are not a valid v2 record batch (maps to Kafka's CORRUPT_MESSAGE)."""


class InvalidRecordError(ValueError):
    """A well-formed batch the broker refuses (e.g. wrong magic: maps to INVALID_RECORD / UNSUPPORTED)."""


class BatchHeader(NamedTuple):
    """The 61-byte header of one batch, decoded. `position` is where the batch starts in its buffer.

    A NamedTuple, not a dataclass: it is built once per batch on the produce path, and a tuple is
    several times cheaper to construct than a frozen dataclass."""

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int
    position: int = 0

    @property
    def size(self) -> int:
        """Total bytes of the batch including baseOffset and batchLength."""
        return self.batch_length + LOG_OVERHEAD

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def compression(self) -> int:
        return self.attributes & COMPRESSION_MASK

    @property
    def timestamp_type(self) -> int:
        return 1 if self.attributes & TIMESTAMP_TYPE_MASK else 0

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_MASK)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_MASK)

    @property
    def has_delete_horizon(self) -> bool:
        return bool(self.attributes & DELETE_HORIZON_MASK)

    @property
    def last_sequence(self) -> int:
        if self.base_sequence == NO_SEQUENCE:
            return NO_SEQUENCE
        # sequences wrap at int32 max, as in Kafka's DefaultRecordBatch.incrementSequence
        return (self.base_sequence + self.last_offset_delta) % (1 << 31)

    @property
    def is_idempotent(self) -> bool:
        return self.producer_id >= 0


_make_header = BatchHeader._make


def read_header(buf: bytes | bytearray | memoryview, position: int = 0) -> BatchHeader:
    """Decode the header at `position`; raises CorruptRecordError when it cannot be a v2 batch."""
    available = len(buf) - position
    # the magic byte sits at the same place in every message format: a legacy (v0/v1) message,
    # often shorter than a v2 header, is named as such rather than called truncated
    if available > MAGIC_OFFSET and buf[position + MAGIC_OFFSET] != MAGIC_V2:
        raise InvalidRecordError(
            f"unsupported record batch magic {buf[position + MAGIC_OFFSET]} (only v2 is accepted)"
        )
    if available < HEADER_SIZE:
        raise CorruptRecordError(f"batch header truncated: {available} bytes < {HEADER_SIZE}")
    header = _make_header((*_HEADER.unpack_from(buf, position), position))
    if header.batch_length < HEADER_SIZE - LOG_OVERHEAD:
        raise CorruptRecordError(f"batch length {header.batch_length} is smaller than the v2 header")
    if header.last_offset_delta < 0 or header.records_count < 0:
        raise CorruptRecordError("negative lastOffsetDelta or record count")
    return header


def compute_crc(buf: bytes | bytearray | memoryview, position: int, size: int) -> int:
    return crc32c(memoryview(buf)[position + CRC_START : position + size])


def is_crc_valid(buf: bytes | bytearray | memoryview, header: BatchHeader) -> bool:
    return compute_crc(buf, header.position, header.size) == header.crc


def iter_headers(buf: bytes | bytearray | memoryview, position: int = 0) -> Iterator[BatchHeader]:
    """Headers of the complete batches in `buf`, in order; stops silently at a partial trailing batch.

    Suitable for trusted bytes (our own log, a fetch response whose last batch may be cut).
    Use `validate_batches` for untrusted input.
    """
    end = len(buf)
    while end - position >= LOG_OVERHEAD:
        _, length = _OFFSET_AND_LENGTH.unpack_from(buf, position)
        if length < HEADER_SIZE - LOG_OVERHEAD or position + LOG_OVERHEAD + length > end:
            return
        header = read_header(buf, position)
        yield header
        position += header.size


def validate_batches(buf: bytes | bytearray | memoryview, *, check_crc: bool = True) -> list[BatchHeader]:
    """Parse untrusted concatenated batches (a produce request's records): every byte must belong to a
    complete, CRC-valid v2 batch. Raises CorruptRecordError / InvalidRecordError otherwise."""
    headers: list[BatchHeader] = []
    position, end = 0, len(buf)
    if end == 0:
        raise CorruptRecordError("empty record set")
    while position < end:
        if end - position < LOG_OVERHEAD:
            raise CorruptRecordError(f"{end - position} trailing bytes after the last batch")
        header = read_header(buf, position)
        if position + header.size > end:
            raise CorruptRecordError(
                f"batch at byte {position} claims {header.size} bytes but only {end - position} remain"
            )
        if check_crc and not is_crc_valid(buf, header):
            raise CorruptRecordError(f"CRC mismatch in batch at byte {position}")
        headers.append(header)
        position += header.size
    return headers


def validate_whole_batches(buf: bytes | bytearray | memoryview) -> list[BatchHeader]:
    """`validate_batches` for records whose last batch may be cut (a fetch response: the leader
    stops at its byte limit mid-batch): the headers of the complete batches at the front of `buf`,
    each checked as `validate_batches` checks it (CRC included), in one pass; a partial batch after
    them (or a few trailing bytes) is left out silently. A complete batch that is not valid raises
    CorruptRecordError / InvalidRecordError. The caller keeps `buf` up to the last header's end."""
    headers: list[BatchHeader] = []
    position, end = 0, len(buf)
    while end - position >= LOG_OVERHEAD:
        _, length = _OFFSET_AND_LENGTH.unpack_from(buf, position)
        if position + LOG_OVERHEAD + length > end:
            break  # cut by the sender's byte limit: the next fetch brings it whole
        header = read_header(buf, position)
        if not is_crc_valid(buf, header):
            raise CorruptRecordError(f"CRC mismatch in batch at byte {position}")
        headers.append(header)
        position += header.size
    return headers


def patch_base_offset(buf: bytearray | memoryview, position: int, base_offset: int) -> None:
    """Overwrite baseOffset in place (outside the CRC)."""
    _INT64.pack_into(buf, position, base_offset)


def patch_partition_leader_epoch(buf: bytearray | memoryview, position: int, epoch: int) -> None:
    """Overwrite partitionLeaderEpoch in place (outside the CRC)."""
    _INT32.pack_into(buf, position + 12, epoch)


def assign_offsets(
    buf: bytearray | memoryview,
    headers: list[BatchHeader],
    first_offset: int,
    leader_epoch: int | None = None,
) -> int:
    """Give consecutive offsets to `headers`' batches in `buf` starting at `first_offset`, optionally
    stamping the leader epoch. Returns the next offset. The CRC stays valid."""
    offset = first_offset
    for h in headers:
        patch_base_offset(buf, h.position, offset)
        if leader_epoch is not None:
            patch_partition_leader_epoch(buf, h.position, leader_epoch)
        offset += h.last_offset_delta + 1
    return offset


def rewrite_crc(buf: bytearray | memoryview, position: int, size: int) -> None:
    """Recompute and store the CRC (only after changing CRC-covered fields, e.g. LogAppendTime)."""
    _UINT32.pack_into(buf, position + 17, compute_crc(buf, position, size))
