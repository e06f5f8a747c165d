"""Walking the record batches of a `.log` file with `os.pread`, without trusting the bytes.

Two walkers:
- `iter_file_headers` reads only batch headers (a small read per batch, or several batches per
  read when they are small): offset translation, next-offset and timestamp scans.
- `iter_file_batches` yields each whole batch as a memoryview (large chunked reads): recovery,
  compaction, timestamp search inside one batch.

(`write_all`, `read_exactly` and `read_whole_file` are the plain system-call helpers they and the
index and checkpoint files share.)

Both stop silently at an incomplete trailing batch (a torn write: the caller decides what that
means) and raise `CorruptRecordError`/`InvalidRecordError` for bytes that cannot be a v2 batch.
Positions yielded are file positions.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator

from zkafka.records.batch import (
    HEADER_SIZE,
    LOG_OVERHEAD,
    BatchHeader,
    CorruptRecordError,
    is_crc_valid,
    read_header,
)

HEADER_READ_BYTES = 4096
BATCH_READ_BYTES = 1 << 20
_LENGTH = struct.Struct(">i")
MIN_BATCH_LENGTH = HEADER_SIZE - LOG_OVERHEAD


def write_all(fd: int, data: bytes | bytearray | memoryview) -> None:
    """`os.write` until every byte is written (a regular file may take a short write)."""
    written = os.write(fd, data)
    if written == len(data):
        return
    with memoryview(data) as view:
        while written < len(view):
            written += os.write(fd, view[written:])


SMALL_FILE_READ = 1 << 16


def read_whole_file(path: str | os.PathLike[str]) -> bytes:
    """A small file's bytes with plain system calls (open, read, close): an index or checkpoint
    per replica is read at start-up, tens of thousands of them, where `Path.read_bytes` (a Path
    and a buffered file object each) cost several times the reads themselves."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        data = os.read(fd, SMALL_FILE_READ)
        if len(data) < SMALL_FILE_READ:
            return data
        parts = [data]
        while chunk := os.read(fd, SMALL_FILE_READ):
            parts.append(chunk)
        return b"".join(parts)
    finally:
        os.close(fd)


def read_exactly(fd: int, size: int, position: int) -> bytes:
    """`size` bytes at `position`, fewer only at end of file."""
    data = os.pread(fd, size, position)
    if len(data) == size or not data:
        return data
    parts = [data]
    got = len(data)
    while got < size:
        more = os.pread(fd, size - got, position + got)
        if not more:
            break
        parts.append(more)
        got += len(more)
    return b"".join(parts)


def iter_file_headers(fd: int, start: int, end: int) -> Iterator[tuple[int, BatchHeader]]:
    """(file position, header) of each complete batch in [start, end)."""
    pos = start
    buf = b""
    buf_pos = start
    while end - pos >= LOG_OVERHEAD:
        off = pos - buf_pos
        if off + HEADER_SIZE > len(buf):
            buf = read_exactly(fd, min(HEADER_READ_BYTES, end - pos), pos)
            buf_pos, off = pos, 0
            if len(buf) < LOG_OVERHEAD:
                return
        (length,) = _LENGTH.unpack_from(buf, off + 8)
        if length < MIN_BATCH_LENGTH:
            raise CorruptRecordError(f"batch at byte {pos} has impossible length {length}")
        size = length + LOG_OVERHEAD
        if pos + size > end or off + HEADER_SIZE > len(buf):
            return
        yield pos, read_header(buf, off)
        pos += size


def iter_file_batches(
    fd: int, start: int, end: int, *, check_crc: bool = False
) -> Iterator[tuple[int, BatchHeader, memoryview]]:
    """(file position, header, batch bytes) of each complete batch in [start, end).

    The header's `position` is 0 (relative to the yielded view).
    """
    pos = start
    buf = b""
    buf_pos = start
    while end - pos >= LOG_OVERHEAD:
        off = pos - buf_pos
        if off + LOG_OVERHEAD > len(buf):
            buf = read_exactly(fd, min(BATCH_READ_BYTES, end - pos), pos)
            buf_pos, off = pos, 0
            if len(buf) < LOG_OVERHEAD:
                return
        (length,) = _LENGTH.unpack_from(buf, off + 8)
        if length < MIN_BATCH_LENGTH:
            raise CorruptRecordError(f"batch at byte {pos} has impossible length {length}")
        size = length + LOG_OVERHEAD
        if pos + size > end:
            return
        if off + size > len(buf):
            buf = read_exactly(fd, max(size, min(BATCH_READ_BYTES, end - pos)), pos)
            buf_pos, off = pos, 0
            if len(buf) < size:
                return
        view = memoryview(buf)[off : off + size]
        header = read_header(view, 0)
        if check_crc and not is_crc_valid(view, header):
            raise CorruptRecordError(f"CRC mismatch in batch at byte {pos}")
        yield pos, header, view
        pos += size
