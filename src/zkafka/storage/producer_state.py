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

Transactions: a producer's first transactional batch opens its transaction at that batch's
offset (`ProducerEntry.current_txn_first_offset`); its COMMIT or ABORT marker (a control batch,
written only by the coordinator's WriteTxnMarkers) closes it and `update` returns the
`CompletedTxn`. The first unstable offset is the earliest first offset of the transactions still
open, or of those completed by a marker the high watermark has not passed yet; the partition's
last stable offset (LSO) is that or the high watermark, whichever is lower. Markers are checked
(`check_marker`): an older producer epoch is INVALID_PRODUCER_EPOCH, an older coordinator epoch
TRANSACTION_COORDINATOR_FENCED. A non-transactional batch from a producer with an open
transaction is INVALID_TXN_STATE.

KIP-890 (the leader's verification with the coordinator, `zkafka.server.txn_verification`):
`has_ongoing_txn` says whether a batch needs one; `start_verification` hands out a guard that a
marker for the producer invalidates, so an answer the coordinator gave for a transaction that has
ended meanwhile is not used.

Snapshots use Kafka's PidSnapshot v1 layout in `<20d>.snapshot` (end offset, exclusive), the
open transaction's first offset included.
"""

from __future__ import annotations

import os
import struct
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from crc32c import crc32c

from zkafka.records.batch import NO_PRODUCER_EPOCH, BatchHeader
from zkafka.storage.naming import SNAPSHOT_SUFFIX, snapshot_offsets_in

MAX_CACHED_BATCHES = 5
INT32_MAX = (1 << 31) - 1

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


class InvalidTxnStateError(ProducerStateError):
    def __init__(self, message: str) -> None:
        super().__init__("INVALID_TXN_STATE", message)


class CoordinatorFencedError(ProducerStateError):
    def __init__(self, message: str) -> None:
        super().__init__("TRANSACTION_COORDINATOR_FENCED", message)


class CorruptSnapshotError(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class CompletedTxn:
    """A transaction closed by the marker at `last_offset`."""

    producer_id: int
    first_offset: int
    last_offset: int
    is_aborted: bool


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
    current_txn_first_offset: int = -1
    """The first offset of this producer's open transaction, -1 when it has none."""

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

    # slots, and a list rather than a deque for the few unreplicated transactions (an empty deque
    # is ~0.7 KiB): every replica of a broker has one of these, most of them idle
    __slots__ = ("log_dir", "map_end_offset", "ongoing", "producers", "unreplicated", "verifying")

    def __init__(self, log_dir: str | Path | None = None) -> None:
        self.log_dir = log_dir  # a replica's, often a str (`Log.directory`): no Path per replica
        self.producers: dict[int, ProducerEntry] = {}
        self.map_end_offset = 0  # all batches below this offset are reflected in `producers`
        self.ongoing: dict[int, int] = {}  # producer id -> first offset of its open transaction
        self.unreplicated: list[CompletedTxn] = []  # completed, marker not yet below the HW
        # KIP-890: producer id -> (epoch, guard) of a verification asked of the coordinator and
        # not yet used; a marker for the producer drops it (the transaction it vouched for ended)
        self.verifying: dict[int, tuple[int, object]] = {}

    # -- leader-side checks --------------------------------------------------------------------
    def check(self, header: BatchHeader) -> BatchMetadata | None:
        """Validate a client batch before it is appended. Returns the cached metadata when the
        batch is a duplicate of one already in the log (the caller answers with its offsets),
        None when it may be appended; raises ProducerStateError when it must be refused."""
        pid = header.producer_id
        if pid < 0 or header.is_control:
            return None  # markers are checked by `check_marker`
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
        if not header.is_transactional and entry.current_txn_first_offset >= 0:
            raise InvalidTxnStateError(f"producer {pid} wrote a non-transactional batch inside a transaction")
        return None

    def check_epoch(self, header: BatchHeader) -> None:
        """Only the epoch rule: for transactional batches the coordinators write (TxnOffsetCommit),
        whose sequences are not the producer's."""
        entry = self.producers.get(header.producer_id)
        if entry is not None and header.producer_epoch < entry.epoch:
            raise InvalidProducerEpochError(
                f"producer {header.producer_id} epoch {header.producer_epoch} is older than {entry.epoch}"
            )

    def check_marker(self, producer_id: int, epoch: int, coordinator_epoch: int) -> None:
        """A marker from the transaction coordinator, before it is appended."""
        entry = self.producers.get(producer_id)
        if entry is None:
            return
        if epoch < entry.epoch:
            raise InvalidProducerEpochError(
                f"marker for producer {producer_id} has epoch {epoch}, older than {entry.epoch}"
            )
        if coordinator_epoch < entry.coordinator_epoch:
            raise CoordinatorFencedError(
                f"marker for producer {producer_id} from coordinator epoch {coordinator_epoch}, "
                f"older than {entry.coordinator_epoch}"
            )

    # -- KIP-890 verification (leader) --------------------------------------------------------------
    def has_ongoing_txn(self, producer_id: int, epoch: int) -> bool:
        """Has the producer a transaction open here at this epoch? Its batches then need no new
        verification: the coordinator vouched for the partition when the transaction's first
        batch came."""
        entry = self.producers.get(producer_id)
        return entry is not None and entry.current_txn_first_offset >= 0 and entry.epoch == epoch

    def start_verification(self, producer_id: int, epoch: int) -> object:
        """The guard of a verification about to be asked: `is_verified` with it stays true until
        a marker for the producer (or a newer epoch's verification) lands."""
        current = self.verifying.get(producer_id)
        if current is not None and current[0] == epoch:
            return current[1]
        guard = object()
        if current is None or current[0] < epoch:
            self.verifying[producer_id] = (epoch, guard)
        return guard

    def is_verified(self, producer_id: int, epoch: int, guard: object) -> bool:
        current = self.verifying.get(producer_id)
        return current is not None and current == (epoch, guard)

    def end_verification(self, producer_id: int, guard: object) -> None:
        """The guard was used (its batch appended or refused): forget it."""
        current = self.verifying.get(producer_id)
        if current is not None and current[1] is guard:
            del self.verifying[producer_id]

    # -- state updates (leader after append, followers, recovery) --------------------------------
    def update(self, header: BatchHeader, marker: tuple[bool, int] | None = None) -> CompletedTxn | None:
        """Record an appended batch (its header carries the assigned base offset). For a control
        batch, `marker` is its (commit, coordinator epoch); the transaction it closes is returned."""
        pid = header.producer_id
        completed = None
        if pid >= 0:
            entry = self.producers.get(pid)
            if entry is None:
                entry = self.producers[pid] = ProducerEntry(pid)
            if header.producer_epoch != entry.epoch:
                entry.epoch = header.producer_epoch
                entry.batches.clear()
            if header.is_control:
                completed = self._end_txn(entry, header, marker)
            elif header.is_transactional and entry.current_txn_first_offset < 0:
                entry.current_txn_first_offset = header.base_offset
                self.ongoing[pid] = header.base_offset
            if header.base_sequence >= 0 and not header.is_control:
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
        return completed

    def _end_txn(
        self, entry: ProducerEntry, header: BatchHeader, marker: tuple[bool, int] | None
    ) -> CompletedTxn | None:
        commit, coordinator_epoch = marker if marker is not None else (True, entry.coordinator_epoch)
        entry.coordinator_epoch = coordinator_epoch
        self.verifying.pop(entry.producer_id, None)
        first = entry.current_txn_first_offset
        entry.current_txn_first_offset = -1
        self.ongoing.pop(entry.producer_id, None)
        if first < 0:
            return None  # a marker without data (e.g. an abort right after InitProducerId)
        done = CompletedTxn(entry.producer_id, first, header.base_offset, not commit)
        self.unreplicated.append(done)
        return done

    def last_records(self) -> dict[int, tuple[int, int]]:
        """Producer id -> (last offset of its last data batch, -1 if none cached; epoch): Kafka's
        LastRecord, what compaction keeps so each producer's sequence state survives it. Called
        from the cleaner thread: the entries are copied in one step and a batch list emptied
        meanwhile reads as none."""
        out: dict[int, tuple[int, int]] = {}
        for pid, entry in list(self.producers.items()):
            try:
                last = entry.batches[-1].last_offset
            except IndexError:
                last = -1
            out[pid] = (last, entry.epoch)
        return out

    # -- transactions and the last stable offset --------------------------------------------------
    def first_unstable_offset(self) -> int | None:
        """The earliest first offset of an open transaction, or of one whose marker is not yet
        below the high watermark; None when every transaction is settled."""
        ongoing, unreplicated = self.ongoing, self.unreplicated
        if not unreplicated:
            # no list built when nothing is open (every fetch answer asks, per partition)
            return min(ongoing.values()) if ongoing else None
        first = unreplicated[0].first_offset
        return min(first, *ongoing.values()) if ongoing else first

    def last_stable_offset_after(self, completed: CompletedTxn) -> int:
        """The LSO recorded with an aborted transaction in `.txnindex`: the first offset of the
        earliest transaction still open, or just past the marker."""
        return min(self.ongoing.values(), default=completed.last_offset + 1)

    def on_high_watermark(self, high_watermark: int) -> None:
        """Markers below the high watermark are replicated: their transactions are settled."""
        while self.unreplicated and self.unreplicated[0].last_offset < high_watermark:
            del self.unreplicated[0]

    def replay(
        self,
        batches: Iterable[tuple[BatchHeader, tuple[bool, int] | None]],
        on_completed: Callable[[CompletedTxn], None] | None = None,
    ) -> None:
        """Replay appended batches, each with its marker (commit, coordinator epoch) if a control
        batch, telling `on_completed` of every transaction a marker closes; the caller then
        reports the high watermark (`on_high_watermark`)."""
        for h, marker in batches:
            if h.next_offset > self.map_end_offset:
                completed = self.update(h, marker)
                if completed is not None and on_completed is not None:
                    on_completed(completed)

    def truncate_to(self, offset: int) -> None:
        """Forget batches at or beyond `offset` (log truncation); reload from a snapshot then."""
        for pid in list(self.producers):
            entry = self.producers[pid]
            kept = [b for b in entry.batches if b.last_offset < offset]
            if entry.current_txn_first_offset >= offset:
                entry.current_txn_first_offset = -1
                self.ongoing.pop(pid, None)
            if not kept and entry.current_txn_first_offset < 0:
                del self.producers[pid]
                continue
            entry.batches.clear()
            entry.batches.extend(kept)
        self.unreplicated = [t for t in self.unreplicated if t.last_offset < offset]
        self.map_end_offset = min(self.map_end_offset, offset)
        self.verifying.clear()

    def clear(self, start_offset: int = 0) -> None:
        self.producers.clear()
        self.ongoing.clear()
        self.unreplicated.clear()
        self.verifying.clear()
        self.map_end_offset = start_offset

    def expire(self, now_ms: int, expiration_ms: int) -> None:
        """Drop producers idle longer than `producer.id.expiration.ms`."""
        for pid in [
            p
            for p, e in self.producers.items()
            if now_ms - e.last_timestamp > expiration_ms and e.current_txn_first_offset < 0
        ]:
            del self.producers[pid]  # never one with an open transaction (Kafka keeps those too)

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
                e.current_txn_first_offset,
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
        self.clear()
        for i in range(count):
            pid, epoch, last_seq, last_offset, delta, ts, coord_epoch, txn_first = _SNAP_ENTRY.unpack_from(
                data, _SNAP_HEADER.size + i * _SNAP_ENTRY.size
            )
            entry = ProducerEntry(pid, epoch, last_timestamp=ts, coordinator_epoch=coord_epoch)
            if txn_first >= 0:
                entry.current_txn_first_offset = txn_first
                self.ongoing[pid] = txn_first
            if last_seq >= 0:
                first_seq = last_seq - delta if last_seq >= delta else INT32_MAX + 1 - (delta - last_seq)
                entry.batches.append(BatchMetadata(first_seq, last_seq, last_offset, delta, ts))
            self.producers[pid] = entry
        self.map_end_offset = end_offset

    def snapshot_path(self, end_offset: int) -> Path:
        assert self.log_dir is not None
        return Path(self.log_dir, f"{end_offset:020d}{SNAPSHOT_SUFFIX}")

    def take_snapshot(self, *, fsync: bool = True) -> Path | None:
        """Write `<map_end_offset>.snapshot` (fsynced, as Kafka does, unless the caller syncs the
        filesystem itself); returns its path. Nothing is written when a snapshot at that offset
        exists already or the log has never had a batch: Kafka also snapshots only past its last
        snapshot, and an idle broker with thousands of empty logs would otherwise write (and
        fsync) thousands of empty files at every shutdown."""
        if self.log_dir is None or (self.map_end_offset == 0 and not self.producers):
            return None  # checked before the path is built: shutdown asks every idle log
        path = self.snapshot_path(self.map_end_offset)
        if path.exists():
            return None
        tmp = path.with_name(path.name + ".tmp")
        with open(tmp, "wb") as f:
            f.write(self.snapshot_bytes())
            f.flush()
            if fsync:
                os.fsync(f.fileno())
        os.replace(tmp, path)
        return path

    def snapshot_offsets(self) -> list[int]:
        if self.log_dir is None:
            return []
        try:
            return snapshot_offsets_in(os.listdir(self.log_dir))
        except FileNotFoundError:  # a new replica's directory waits for its first write
            return []

    def load_latest_snapshot(self, max_offset: int, listed: list[int] | None = None) -> int | None:
        """Load the newest valid snapshot at or below `max_offset`; corrupt ones are deleted and the
        next older one tried (Kafka's rule). Returns the snapshot's offset or None. `listed`: the
        snapshot offsets when the caller knows them (the log's load listed the directory: a
        second listing per replica was a tenth of a start-up's CPU)."""
        for off in reversed(self.snapshot_offsets() if listed is None else listed):
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
        if above is None and (at_or_below is None or at_or_below < 0):
            # No offset can match: skip listing the directory. Shutdown asks this of every log
            # (below its start offset, -1 for a log never truncated): 6,667 listings took ~0.3 s
            # of a controlled shutdown's exit at 10,000 partitions.
            return
        for off in self.snapshot_offsets():
            if (above is not None and off > above) or (at_or_below is not None and off <= at_or_below):
                self.snapshot_path(off).unlink(missing_ok=True)
