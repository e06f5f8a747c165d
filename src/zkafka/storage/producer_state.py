"""Idempotent-producer state of one partition: duplicate and sequence checks, snapshots.

Kafka keeps, per producer id, the metadata of its last 5 batches (`kafka-storage.md` §6). The
leader checks every client batch that carries a producer id *before* it gets offsets:

- same epoch and the same (first, last) sequence as a cached batch -> duplicate: nothing is
  appended and the producer gets the original offsets back (a retry after a lost response);
- epoch older than the stored one -> INVALID_PRODUCER_EPOCH;
- same epoch: first sequence must follow the last one (wrapping at int32 max); new epoch: must
  start at 0 unless the producer was unknown -> otherwise OUT_OF_ORDER_SEQUENCE_NUMBER;
- unknown producer (e.g. its state expired): any sequence is accepted (KIP-360).

Followers and log recovery replay batches without checks (`update` only). All of this works
on batch headers, so the produce path stays batch-level.

Snapshots use Kafka's PidSnapshot v1 layout in `<20d>.snapshot` (end offset, exclusive).
"""

from __future__ import annotations

import os
import struct
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from crc32c import crc32c

from zkafka.records.batch import NO_PRODUCER_EPOCH, BatchHeader

MAX_CACHED_BATCHES = 5
INT32_MAX = (1 << 31) - 1

SNAPSHOT_SUFFIX = ".snapshot"
_SNAPSHOT_VERSION = 1
_SNAP_HEADER = struct.Struct(">hIi")  # version, crc, count
_SNAP_ENTRY = struct.Struct(">qhiqiqiq")  # 46 bytes


class ProducerStateError(Exception):
    """A batch refused by the sequence checks. `error` is the Kafka error name."""

    def __init__(self, error: str, message: str) -> None:
        super().__init__(message)
        self.error = error


class InvalidProducerEpochError(ProducerStateError):
    def __init__(self, message: str) -> None:
        super().__init__("INVALID_PRODUCER_EPOCH", message)


class OutOfOrderSequenceError(ProducerStateError):
    def __init__(self, message: str) -> None:
        super().__init__("OUT_OF_ORDER_SEQUENCE_NUMBER", message)


class CorruptSnapshotError(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class BatchMetadata:
    first_seq: int
    last_seq: int
    last_offset: int
    offset_delta: int
    timestamp: int

    @property
    def first_offset(self) -> int:
        return self.last_offset - self.offset_delta


@dataclass(slots=True)
class ProducerEntry:
    producer_id: int
    epoch: int = NO_PRODUCER_EPOCH
    batches: deque[BatchMetadata] = field(default_factory=lambda: deque(maxlen=MAX_CACHED_BATCHES))
    last_timestamp: int = -1
    coordinator_epoch: int = -1

    def find_duplicate(self, epoch: int, first_seq: int, last_seq: int) -> BatchMetadata | None:
        if epoch != self.epoch:
            return None
        for b in self.batches:
            if b.first_seq == first_seq and b.last_seq == last_seq:
                return b
        return None

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else -1


def _next_seq(seq: int) -> int:
    return 0 if seq == INT32_MAX else seq + 1


class ProducerStateManager:
    """Per-partition producer state. Not thread-safe: the partition's owner serialises calls."""

    def __init__(self, log_dir: Path | None = None) -> None:
        self.log_dir = log_dir
        self.producers: dict[int, ProducerEntry] = {}
        self.map_end_offset = 0  # all batches below this offset are reflected in `producers`

    # -- leader-side checks --------------------------------------------------------------------
    def check(self, header: BatchHeader) -> BatchMetadata | None:
        """Validate a client batch before it is appended. Returns the cached metadata when the
        batch is a duplicate of one already in the log (the caller answers with its offsets),
        None when it may be appended; raises ProducerStateError when it must be refused."""
        pid = header.producer_id
        if pid < 0:
            return None
        entry = self.producers.get(pid)
        if entry is None:
            return None  # unknown producer: any sequence is accepted (KIP-360)
        epoch, first_seq, last_seq = header.producer_epoch, header.base_sequence, header.last_sequence
        dup = entry.find_duplicate(epoch, first_seq, last_seq)
        if dup is not None:
            return dup
        if epoch < entry.epoch:
            raise InvalidProducerEpochError(
                f"producer {pid} epoch {epoch} is older than the current epoch {entry.epoch}"
            )
        if epoch > entry.epoch:
            if first_seq != 0 and entry.epoch != NO_PRODUCER_EPOCH:
                raise OutOfOrderSequenceError(
                    f"producer {pid} started epoch {epoch} at sequence {first_seq}, expected 0"
                )
            return None
        if entry.batches and first_seq != _next_seq(entry.last_seq):
            raise OutOfOrderSequenceError(
                f"producer {pid} epoch {epoch}: sequence {first_seq} does not follow {entry.last_seq}"
            )
        return None

    # -- state updates (leader after append, followers, recovery) --------------------------------
    def update(self, header: BatchHeader) -> None:
        """Record an appended batch (its header carries the assigned base offset)."""
        pid = header.producer_id
        if pid >= 0:
            entry = self.producers.get(pid)
            if entry is None:
                entry = self.producers[pid] = ProducerEntry(pid)
            if header.producer_epoch != entry.epoch:
                entry.epoch = header.producer_epoch
                entry.batches.clear()
            if header.base_sequence >= 0:
                entry.batches.append(
                    BatchMetadata(
                        header.base_sequence,
                        header.last_sequence,
                        header.last_offset,
                        header.last_offset_delta,
                        header.max_timestamp,
                    )
                )
            entry.last_timestamp = header.max_timestamp
        self.map_end_offset = max(self.map_end_offset, header.next_offset)

    def replay(self, headers: Iterable[BatchHeader]) -> None:
        for h in headers:
            if h.next_offset > self.map_end_offset:
                self.update(h)

    def truncate_to(self, offset: int) -> None:
        """Forget batches at or beyond `offset` (log truncation); reload from a snapshot then."""
        for pid in list(self.producers):
            entry = self.producers[pid]
            kept = [b for b in entry.batches if b.last_offset < offset]
            if not kept:
                del self.producers[pid]
                continue
            entry.batches.clear()
            entry.batches.extend(kept)
        self.map_end_offset = min(self.map_end_offset, offset)

    def clear(self, start_offset: int = 0) -> None:
        self.producers.clear()
        self.map_end_offset = start_offset

    def expire(self, now_ms: int, expiration_ms: int) -> None:
        """Drop producers idle longer than `producer.id.expiration.ms`."""
        for pid in [p for p, e in self.producers.items() if now_ms - e.last_timestamp > expiration_ms]:
            del self.producers[pid]

    # -- snapshots (PidSnapshot v1 bytes) ---------------------------------------------------------
    def snapshot_bytes(self) -> bytes:
        body = bytearray()
        for e in self.producers.values():
            last = e.batches[-1] if e.batches else None
            body += _SNAP_ENTRY.pack(
                e.producer_id,
                e.epoch,
                last.last_seq if last else -1,
                last.last_offset if last else -1,
                last.offset_delta if last else 0,
                e.last_timestamp,
                e.coordinator_epoch,
                -1,
            )
        count = struct.pack(">i", len(self.producers))
        crc = crc32c(count + bytes(body))
        return struct.pack(">hI", _SNAPSHOT_VERSION, crc) + count + bytes(body)

    def load_snapshot_bytes(self, data: bytes, end_offset: int) -> None:
        if len(data) < _SNAP_HEADER.size:
            raise CorruptSnapshotError("snapshot shorter than its header")
        version, crc, count = _SNAP_HEADER.unpack_from(data, 0)
        if version != _SNAPSHOT_VERSION:
            raise CorruptSnapshotError(f"unsupported snapshot version {version}")
        if crc32c(data[6:]) != crc:
            raise CorruptSnapshotError("snapshot CRC mismatch")
        if count < 0 or len(data) != _SNAP_HEADER.size + count * _SNAP_ENTRY.size:
            raise CorruptSnapshotError(f"snapshot length does not match its {count} entries")
        self.producers.clear()
        for i in range(count):
            pid, epoch, last_seq, last_offset, delta, ts, coord_epoch, _ = _SNAP_ENTRY.unpack_from(
                data, _SNAP_HEADER.size + i * _SNAP_ENTRY.size
            )
            entry = ProducerEntry(pid, epoch, last_timestamp=ts, coordinator_epoch=coord_epoch)
            if last_seq >= 0:
                first_seq = last_seq - delta if last_seq >= delta else INT32_MAX + 1 - (delta - last_seq)
                entry.batches.append(BatchMetadata(first_seq, last_seq, last_offset, delta, ts))
            self.producers[pid] = entry
        self.map_end_offset = end_offset

    def snapshot_path(self, end_offset: int) -> Path:
        assert self.log_dir is not None
        return self.log_dir / f"{end_offset:020d}{SNAPSHOT_SUFFIX}"

    def take_snapshot(self) -> Path | None:
        """Write `<map_end_offset>.snapshot` (fsynced, as Kafka does); returns its path."""
        if self.log_dir is None:
            return None
        path = self.snapshot_path(self.map_end_offset)
        tmp = path.with_name(path.name + ".tmp")
        with open(tmp, "wb") as f:
            f.write(self.snapshot_bytes())
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        return path

    def snapshot_offsets(self) -> list[int]:
        if self.log_dir is None or not self.log_dir.exists():
            return []
        out = []
        for p in self.log_dir.iterdir():
            if p.name.endswith(SNAPSHOT_SUFFIX) and p.name[:20].isdigit():
                out.append(int(p.name[:20]))
        return sorted(out)

    def load_latest_snapshot(self, max_offset: int) -> int | None:
        """Load the newest valid snapshot at or below `max_offset`; corrupt ones are deleted and the
        next older one tried (Kafka's rule). Returns the snapshot's offset or None."""
        for off in reversed(self.snapshot_offsets()):
            if off > max_offset:
                continue
            path = self.snapshot_path(off)
            try:
                self.load_snapshot_bytes(path.read_bytes(), off)
                return off
            except (CorruptSnapshotError, OSError):
                path.unlink(missing_ok=True)
        self.clear()
        return None

    def delete_snapshots(self, *, above: int | None = None, at_or_below: int | None = None) -> None:
        for off in self.snapshot_offsets():
            if (above is not None and off > above) or (at_or_below is not None and off <= at_or_below):
                self.snapshot_path(off).unlink(missing_ok=True)
