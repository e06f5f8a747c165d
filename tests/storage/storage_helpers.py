"""Shared helpers for the storage tests (imported by module name; tests/ has no packages)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from zkafka.records.batch import BatchHeader, iter_headers, validate_batches
from zkafka.records.record import Record, build_batch, iter_records, simple_batch
from zkafka.storage.config import LogConfig
from zkafka.storage.log import AppendInfo, Log

BASE_TS = 1_700_000_000_000


def batch(
    n: int = 1, *, ts: int = BASE_TS, key: str = "k", value_size: int = 10, compression: int = 0
) -> bytes:
    """A producer batch of `n` keyed records (offsets 0..n-1)."""
    return simple_batch(
        [(f"{key}{i}".encode(), bytes([i % 256]) * value_size) for i in range(n)],
        timestamp=ts,
        compression=compression,
    )


def keyed_batch(pairs: Sequence[tuple[bytes | None, bytes | None]], *, ts: int = BASE_TS) -> bytes:
    return simple_batch(list(pairs), timestamp=ts)


def records_batch(timestamps: Sequence[int], *, key: bytes = b"k") -> bytes:
    """One batch whose records have the given timestamps (offsets 0..n-1)."""
    return build_batch([Record(i, ts, key, b"v%d" % i) for i, ts in enumerate(timestamps)], base_offset=0)


def append(log: Log, data: bytes, *, leader_epoch: int | None = 0) -> AppendInfo:
    buf = bytearray(data)
    return log.append(buf, validate_batches(buf), leader_epoch=leader_epoch)


def append_follower(log: Log, data: bytes | bytearray) -> AppendInfo:
    buf = bytearray(data)
    return log.append(buf, validate_batches(buf), leader_epoch=None, assign_offsets=False)


def with_offset(data: bytes, base_offset: int, epoch: int = -1) -> bytes:
    """A copy of a single batch re-based at `base_offset` (as a leader would have stored it)."""
    from zkafka.records.batch import patch_base_offset, patch_partition_leader_epoch

    buf = bytearray(data)
    patch_base_offset(buf, 0, base_offset)
    patch_partition_leader_epoch(buf, 0, epoch)
    return bytes(buf)


def read_all(log: Log) -> bytes:
    """Every byte from the log start to the end, read slice by slice."""
    out = bytearray()
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        chunk = log.read(offset, 1 << 20)
        if chunk.is_empty:
            break
        data = chunk.read_bytes()
        headers = validate_batches(data)
        out += data
        offset = headers[-1].next_offset
    return bytes(out)


def headers_of(data: bytes) -> list[BatchHeader]:
    return list(iter_headers(data))


def all_records(log: Log) -> list[Record]:
    data = read_all(log)
    return [r for h in iter_headers(data) for r in iter_records(data, h)]


def small_config(**kw: object) -> LogConfig:
    defaults: dict[str, object] = {
        "segment_bytes": 1024,
        "index_interval_bytes": 128,
        "file_delete_delay_ms": 0,
    }
    defaults.update(kw)
    return LogConfig(**defaults)  # type: ignore[arg-type]


def segment_files(dir_path: Path) -> list[str]:
    return sorted(p.name for p in dir_path.iterdir())
