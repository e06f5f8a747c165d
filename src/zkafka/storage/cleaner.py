"""Log compaction (Kafka §5): keep the latest record per key, offsets never change.

One cleaning round of a log:

1. **Range.** `first_dirty` is the cleaner checkpoint (reset to the log start when outside
   [log start, log end]); `first_uncleanable` is the active segment's base, or earlier the base of
   the first dirty segment younger than `min.compaction.lag.ms`. The log is eligible when the dirty
   ratio dirty/(clean + dirty) exceeds `min.cleanable.dirty.ratio`, when a dirty segment's first
   batch is older than `max.compaction.lag.ms`, or when tombstones kept by an earlier round have
   passed their delete horizon.
2. **Offset map.** Keys of the dirty range -> their latest offset (a dict of the full keys: no
   hash collisions, unlike Kafka's MD5 map), filled batch by batch until `dedupe_buffer_bytes` is
   used up; the round then ends at `end_offset`, the offset after the last mapped batch.
3. **Rewrite.** The segments below `end_offset` are grouped (each group within segment.bytes and
   an int32 offset span) and each group is copied into `<first base>.log.cleaned`:
   - a record survives if it has a key, it is the latest for that key (or its key is not in the
     map, or it lies at/after `end_offset`), and it has a value or is a tombstone still inside its
     delete horizon. Keyless records are dropped. Control batches: see Transactions below.
   - an untouched batch is copied byte for byte; a filtered one is rebuilt with `build_batch`
     keeping every record's offset, the batch's last offset (Kafka's overrideLastOffset),
     producer fields, leader epoch and codec;
   - the last batch of each group is kept even when nothing survives (an empty batch), so every
     cleaned segment ends at the same offset as the segments it replaces. That makes the swap
     recoverable by offsets alone and the log end offset never moves.
4. **Swap.** The cleaned segment is fsynced, given the last source segment's mtime, and swapped
   in through `.cleaned` -> `.swap` -> final name (`Log.replace_segments`); a crash at any step
   is completed or undone by the next load.
5. The cleaner checkpoint becomes `end_offset`.

**Tombstones: the 3.1+ delete-horizon scheme (KIP-534)**, not 2.8's segment-mtime horizon. The first
round that keeps a tombstone rebuilds its batch with the delete-horizon attribute bit (0x40) set
and baseTimestamp = now + delete.retention.ms (record timestamps are deltas, so they are
unchanged). A later round drops the tombstone once now >= that horizon. Consequently a tombstone
always survives at least one round, even with delete.retention.ms=0. The log remembers the
earliest pending horizon so the cleaner comes back for it.

**Transactions** (Kafka 3.1+'s LogCleaner, `CleanedTransactionMetadata`). Cleaning never passes
the log's first unstable offset (a transaction without a settled marker: its records may still be
aborted). A `_TxnTracker` walks each round's batches in offset order with the aborted transactions
of the `.txnindex`es (producer id, first offset, marker offset):

- a transactional batch inside an aborted transaction is neither mapped nor kept (below
  `end_offset`), so it can neither hide an older committed record nor come back;
- a marker may go once no batch of its transaction remains: an ABORT marker when none of its
  aborted batches was traversed in this round (they were all removed by an earlier one), a COMMIT
  marker when none of its transaction's batches was. Like a tombstone, it first gets the
  delete-horizon bit and baseTimestamp = now + delete.retention.ms, and a round at or after that
  horizon drops it; so a transaction's marker outlives its data by at least two rounds. Markers at
  or after `end_offset` (a partial round) are copied untouched;
- the cleaned segment's `.txnindex` gets an aborted transaction only while its marker stays and a
  batch of it was seen (Kafka's rule: a reader needs the entry only to skip such batches), plus the
  entries of the untouched markers past `end_offset`.

**Each producer's last batch** is kept so the producer's sequence and epoch survive compaction
(`Log.last_producer_records`, from the partition's producer state; Kafka's LastRecord): its last
data batch, or when none is cached its markers of its current epoch. When nothing of it survives,
the batch is kept empty -- its header only (offsets, producer id, epoch, base sequence; no records,
uncompressed), as Kafka's `writeEmptyHeader`; once the producer has written again, a later round
drops it. zkafka's empty batch keeps the original baseTimestamp where Kafka writes -1.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass

from zkafka.records.batch import BatchHeader, CorruptRecordError, read_header
from zkafka.records.record import Record, build_batch, end_txn_marker, iter_records
from zkafka.storage.errors import CleaningAbortedError
from zkafka.storage.index import INT32_MAX
from zkafka.storage.log import Log
from zkafka.storage.naming import CLEANED_SUFFIX
from zkafka.storage.segment import LogSegment
from zkafka.storage.txn_index import AbortedTxn, TransactionIndex

log = logging.getLogger(__name__)

DEFAULT_DEDUPE_BUFFER_BYTES = 128 * 1024 * 1024  # log.cleaner.dedupe.buffer.size
MAP_ENTRY_OVERHEAD = 100  # rough bytes of a dict slot + int + bytes object header


@dataclass(frozen=True, slots=True)
class CleanableRange:
    """What a round of cleaning would cover, and how dirty the log is."""

    first_dirty: int
    first_uncleanable: int
    clean_bytes: int
    dirty_bytes: int
    max_lag_exceeded: bool
    horizon_due: bool

    @property
    def dirty_ratio(self) -> float:
        total = self.clean_bytes + self.dirty_bytes
        return self.dirty_bytes / total if total else 0.0

    def eligible(self, min_ratio: float) -> bool:
        if self.dirty_bytes > 0 and (self.max_lag_exceeded or self.dirty_ratio > min_ratio):
            return True
        return self.horizon_due and self.clean_bytes + self.dirty_bytes > 0


@dataclass(frozen=True, slots=True)
class CleanResult:
    first_dirty: int
    end_offset: int
    segments_cleaned: int
    bytes_read: int
    bytes_written: int
    records_removed: int


def cleanable_range(log_: Log, checkpoint: int | None, now_ms: int) -> CleanableRange:
    """Kafka's `cleanableOffsets` plus the byte counts behind the dirty ratio."""
    segments = log_.segments()
    start, end = log_.log_start_offset, log_.log_end_offset
    first_dirty = start if checkpoint is None or not start <= checkpoint <= end else checkpoint
    active_base = segments[-1].base_offset
    first_uncleanable = active_base
    config = log_.config
    dirty_inactive = [s for i, s in enumerate(segments[:-1]) if (segments[i + 1].base_offset > first_dirty)]
    if config.min_compaction_lag_ms > 0:
        for seg in dirty_inactive:
            if seg.largest_timestamp > now_ms - config.min_compaction_lag_ms:
                first_uncleanable = min(first_uncleanable, seg.base_offset)
                break
    unstable = log_.first_unstable_offset()
    if unstable is not None:
        first_uncleanable = min(first_uncleanable, unstable)
    first_uncleanable = max(first_uncleanable, first_dirty)
    clean_bytes = dirty_bytes = 0
    for i, seg in enumerate(segments):
        upper = segments[i + 1].base_offset if i + 1 < len(segments) else end
        if upper <= first_dirty:
            clean_bytes += seg.size
        elif seg.base_offset < first_uncleanable:
            dirty_bytes += seg.size
    lag_exceeded = False
    if config.max_compaction_lag_ms < (1 << 63) - 1:
        stamps = [t for s in dirty_inactive if (t := s.first_batch_timestamp()) > 0]
        lag_exceeded = bool(stamps) and min(stamps) < now_ms - config.max_compaction_lag_ms
    horizon = log_.latest_delete_horizon
    return CleanableRange(
        first_dirty, first_uncleanable, clean_bytes, dirty_bytes, lag_exceeded, 0 <= horizon <= now_ms
    )


class _OffsetMap:
    """Key -> latest offset over the dirty range, bounded by an estimate of its memory."""

    def __init__(self, max_bytes: int) -> None:
        self.offsets: dict[bytes, int] = {}
        self.max_bytes = max_bytes
        self.used = 0

    @property
    def full(self) -> bool:
        return self.used >= self.max_bytes

    def put(self, key: bytes, offset: int) -> None:
        if key not in self.offsets:
            self.used += len(key) + MAP_ENTRY_OVERHEAD
        self.offsets[key] = offset


def _batches(log_: Log, seg: LogSegment) -> Iterator[tuple[BatchHeader, memoryview]]:
    for _, header, view in seg.iter_batches():
        if log_.cleaning_aborted:
            raise CleaningAbortedError(f"cleaning of {log_.dir_path.name} aborted")
        yield header, view


def _with_last(
    batches: Iterator[tuple[BatchHeader, memoryview]],
) -> Iterator[tuple[BatchHeader, memoryview, bool]]:
    """Each batch with a flag telling whether it is the last one (one batch of lookahead)."""
    previous = next(batches, None)
    for current in batches:
        assert previous is not None
        yield previous[0], previous[1], False
        previous = current
    if previous is not None:
        yield previous[0], previous[1], True


class _AbortedTxnState:
    """An aborted transaction met in this round, and whether one of its batches was seen."""

    __slots__ = ("batch_seen", "txn")

    def __init__(self, txn: AbortedTxn) -> None:
        self.txn = txn
        self.batch_seen = False


class _TxnTracker:
    """Kafka's CleanedTransactionMetadata: follows a round's batches in offset order to tell
    which transactional batches are aborted (from the `.txnindex` entries) and which markers no
    batch of their transaction needs any more. Transactions are told apart by producer id: a
    producer has at most one open at a time."""

    def __init__(self, aborted: list[AbortedTxn]) -> None:
        self.pending = sorted(aborted, key=lambda t: t.first_offset, reverse=True)  # pop() = earliest
        self.ongoing_aborted: dict[int, _AbortedTxnState] = {}
        self.ongoing_committed: set[int] = set()  # producers with a batch of a committed txn seen
        self.index: TransactionIndex | None = None  # the cleaned segment's, while one is written

    def _open_up_to(self, offset: int) -> None:
        while self.pending and self.pending[-1].first_offset <= offset:
            txn = self.pending.pop()
            self.ongoing_aborted[txn.producer_id] = _AbortedTxnState(txn)

    def on_data(self, header: BatchHeader) -> bool:
        """A data batch traversed; True when it belongs to an aborted transaction."""
        self._open_up_to(header.last_offset)
        if not header.is_transactional:
            return False
        state = self.ongoing_aborted.get(header.producer_id)
        if state is None:
            self.ongoing_committed.add(header.producer_id)
            return False
        state.batch_seen = True
        return True

    def on_marker(self, header: BatchHeader, view: memoryview) -> bool:
        """A control batch traversed; True when no batch of its transaction was seen in this
        round, so the cleaned log no longer holds any and the marker may go (after its delete
        horizon). An ABORT marker that stays brings its `.txnindex` entry to the cleaned segment."""
        self._open_up_to(header.last_offset)
        if header.records_count == 0:
            return True  # emptied by an earlier round (a producer's last batch)
        try:
            marker = end_txn_marker(view, header)
        except CorruptRecordError:
            return False
        if marker is None:
            return False  # an unknown control type: kept, as Kafka does
        pid = header.producer_id
        if marker[0]:  # COMMIT
            if pid in self.ongoing_committed:
                self.ongoing_committed.discard(pid)
                return False
            return True
        state = self.ongoing_aborted.pop(pid, None)
        if state is not None and state.batch_seen:
            if self.index is not None:
                self.index.append(state.txn)
            return False
        return True

    def pass_marker(self, header: BatchHeader) -> None:
        """A marker beyond the round's end offset: kept as it is; it closes its transaction."""
        self._open_up_to(header.last_offset)
        self.ongoing_aborted.pop(header.producer_id, None)
        self.ongoing_committed.discard(header.producer_id)


def _build_offset_map(
    log_: Log, first_dirty: int, first_uncleanable: int, max_bytes: int, aborted: list[AbortedTxn]
) -> tuple[_OffsetMap, int]:
    """Map the dirty range batch by batch; returns the map and the offset the round ends at."""
    offset_map = _OffsetMap(max_bytes)
    end_offset = first_dirty
    txns = _TxnTracker(aborted)
    for seg in log_.segments():
        if seg.base_offset >= first_uncleanable:
            break
        for header, view in _batches(log_, seg):
            if header.base_offset >= first_uncleanable:
                return offset_map, end_offset
            # the tracker sees the clean part too: its markers close transactions
            is_aborted = txns.on_marker(header, view) if header.is_control else txns.on_data(header)
            if header.last_offset < first_dirty:
                continue
            if not header.is_control and not is_aborted:
                for record in iter_records(view, header):
                    if record.key is not None:
                        offset_map.put(record.key, record.offset)
            end_offset = header.next_offset
            if offset_map.full:
                return offset_map, end_offset
    return offset_map, max(end_offset, min(first_uncleanable, log_.log_end_offset))


def _group_segments(segments: list[LogSegment], uppers: list[int], max_bytes: int) -> list[list[LogSegment]]:
    """Consecutive segments whose total size fits in one segment and whose offsets fit in int32."""
    groups: list[list[LogSegment]] = []
    for seg, upper in zip(segments, uppers, strict=True):
        if groups:
            group = groups[-1]
            if (
                sum(s.size for s in group) + seg.size <= max_bytes
                and upper - 1 - group[0].base_offset <= INT32_MAX
            ):
                group.append(seg)
                continue
        groups.append([seg])
    return groups


class _BatchFilter:
    """Decides, batch by batch, what a cleaned segment gets."""

    def __init__(
        self,
        offset_map: _OffsetMap,
        end_offset: int,
        now_ms: int,
        delete_retention_ms: int,
        aborted: list[AbortedTxn] | None = None,
        last_records: dict[int, tuple[int, int]] | None = None,
    ) -> None:
        self.txns = _TxnTracker(aborted or [])
        self.last_records = last_records or {}
        self.map = offset_map.offsets
        self.end_offset = end_offset
        self.now_ms = now_ms
        self.new_horizon = now_ms + delete_retention_ms
        self.records_removed = 0
        self.markers_removed = 0
        self.earliest_pending_horizon = -1

    def _note_horizon(self, horizon: int) -> None:
        if self.earliest_pending_horizon < 0 or horizon < self.earliest_pending_horizon:
            self.earliest_pending_horizon = horizon

    def _keep(self, record: Record, header: BatchHeader) -> bool:
        if record.offset >= self.end_offset:
            return True
        if record.key is None:
            return False
        latest = self.map.get(record.key)
        if latest is not None and record.offset < latest:
            return False
        if record.value is not None:
            return True
        return not header.has_delete_horizon or self.now_ms < header.base_timestamp

    def _producer_last(self, header: BatchHeader) -> bool:
        """Is this the producer's last batch (Kafka keeps it, at least empty, so the producer's
        sequence and epoch survive)? Its last data batch; or, when it has none cached, a marker
        of its current epoch."""
        last = self.last_records.get(header.producer_id) if header.producer_id >= 0 else None
        if last is None:
            return False
        last_data_offset, epoch = last
        if last_data_offset >= 0:
            return header.last_offset == last_data_offset
        return header.is_control and header.producer_epoch == epoch

    def filter(self, header: BatchHeader, view: memoryview, *, keep_empty: bool) -> bytes | memoryview | None:
        keep_empty = keep_empty or self._producer_last(header)
        if header.is_control:
            return self._filter_marker(header, view, keep_empty=keep_empty)
        aborted = self.txns.on_data(header)
        records = list(iter_records(view, header))
        if aborted and header.last_offset < self.end_offset:
            kept: list[Record] = []
        else:
            kept = [r for r in records if self._keep(r, header)]
        self.records_removed += len(records) - len(kept)
        has_tombstone = any(r.value is None for r in kept)
        stamp = has_tombstone and not header.has_delete_horizon
        if has_tombstone:
            self._note_horizon(self.new_horizon if stamp else header.base_timestamp)
        if not records and not keep_empty:
            return None  # kept empty by an earlier round for a producer that has written since
        if len(kept) == len(records) and not stamp:
            return view
        if not kept and not keep_empty:
            return None
        keep_horizon = stamp or (header.has_delete_horizon and has_tombstone)
        if stamp:
            base_timestamp: int | None = self.new_horizon
        elif keep_horizon or not kept:
            base_timestamp = header.base_timestamp
        else:
            base_timestamp = None  # the first kept record's timestamp
        return _rebuild(header, kept, base_timestamp, delete_horizon=keep_horizon)

    def _filter_marker(
        self, header: BatchHeader, view: memoryview, *, keep_empty: bool
    ) -> bytes | memoryview | None:
        """KIP-534 for markers: one whose transaction left no batch in the cleaned log gets a
        delete horizon in the first round that could drop it and goes in a round after it."""
        if header.base_offset >= self.end_offset:
            self.txns.pass_marker(header)
            return view
        if not self.txns.on_marker(header, view):
            return view
        if header.records_count > 0:
            if not header.has_delete_horizon:
                self._note_horizon(self.new_horizon)
                return _rebuild(
                    header, list(iter_records(view, header)), self.new_horizon, delete_horizon=True
                )
            if self.now_ms < header.base_timestamp:
                self._note_horizon(header.base_timestamp)
                return view
            self.markers_removed += 1
        if not keep_empty:
            return None
        if header.records_count == 0:
            return view
        return _rebuild(header, [], header.base_timestamp, delete_horizon=False)


def _rebuild(
    header: BatchHeader, kept: list[Record], base_timestamp: int | None, *, delete_horizon: bool
) -> bytes:
    """The batch with only `kept`, keeping its offsets range (Kafka's overrideLastOffset), producer
    fields, leader epoch and codec."""
    first = kept[0].offset if kept else header.base_offset
    return build_batch(
        kept,
        base_offset=first,
        last_offset_delta=header.last_offset - first,
        compression=header.compression,
        base_timestamp=base_timestamp,
        max_timestamp=header.max_timestamp if header.timestamp_type == 1 or not kept else None,
        timestamp_type=header.timestamp_type,
        producer_id=header.producer_id,
        producer_epoch=header.producer_epoch,
        base_sequence=header.base_sequence,
        partition_leader_epoch=header.partition_leader_epoch,
        is_transactional=header.is_transactional,
        is_control=header.is_control,
        delete_horizon=delete_horizon,
    )


def _clean_group(log_: Log, group: list[LogSegment], batch_filter: _BatchFilter) -> tuple[int, int]:
    """Write the group's surviving batches into a `.cleaned` segment and swap it in.
    Returns (bytes read, bytes written)."""
    cleaned = log_.new_cleaned_segment(group[0].base_offset)
    read = written = 0
    batch_filter.txns.index = cleaned.txn_index  # gets the aborted txns whose markers stay
    try:
        for header, view, is_last in _with_last(b for seg in group for b in _batches(log_, seg)):
            read += header.size
            out = batch_filter.filter(header, view, keep_empty=is_last)
            if out is None:
                continue
            if out is not view:
                header = read_header(out, 0)
            cleaned.append(
                out,
                largest_offset=header.last_offset,
                largest_timestamp=header.max_timestamp,
                offset_of_max_timestamp=header.last_offset,
            )
            written += len(out)
        for seg in group:  # markers beyond the round's end stay untouched, and so do their entries
            for txn in seg.txn_index.entries():
                if txn.last_offset >= batch_filter.end_offset:
                    cleaned.txn_index.append(txn)
        if read == 0:  # only empty segments: nothing to rewrite
            cleaned.delete_files()
            return 0, 0
        cleaned.on_become_inactive()
        cleaned.flush()
        cleaned.set_last_modified(group[-1].last_modified_ms)
        log_.replace_segments(cleaned, group)
    except BaseException:
        if cleaned.suffix == CLEANED_SUFFIX:  # the swap has not begun: the output is just garbage
            cleaned.close_quietly()
            try:
                cleaned.delete_files()
            except OSError:
                pass
        raise
    return read, written


def clean_log(
    log_: Log,
    checkpoint: int | None,
    now_ms: int,
    *,
    dedupe_buffer_bytes: int = DEFAULT_DEDUPE_BUFFER_BYTES,
    force: bool = False,
) -> CleanResult | None:
    """One cleaning round if the log is eligible (or `force`); None when there was nothing to do."""
    if not log_.config.compact or not log_.begin_cleaning():
        return None
    try:
        rng = cleanable_range(log_, checkpoint, now_ms)
        if not force and not rng.eligible(log_.config.min_cleanable_dirty_ratio):
            return None
        aborted = log_.collect_aborted_txns(log_.log_start_offset, rng.first_uncleanable)
        offset_map, end_offset = _build_offset_map(
            log_, rng.first_dirty, rng.first_uncleanable, dedupe_buffer_bytes, aborted
        )
        segments = log_.segments()
        uppers = [s.base_offset for s in segments[1:]] + [log_.log_end_offset]
        chosen = [
            (s, u) for s, u in zip(segments[:-1], uppers[:-1], strict=True) if s.base_offset < end_offset
        ]
        if not chosen:
            return None
        batch_filter = _BatchFilter(
            offset_map,
            end_offset,
            now_ms,
            log_.config.delete_retention_ms,
            aborted,
            log_.last_producer_records(),
        )
        read = written = 0
        groups = _group_segments([s for s, _ in chosen], [u for _, u in chosen], log_.config.segment_bytes)
        for group in groups:
            r, w = _clean_group(log_, group, batch_filter)
            read += r
            written += w
        log_.latest_delete_horizon = batch_filter.earliest_pending_horizon
        log.info(
            "cleaned %s up to offset %d: %d -> %d bytes, %d records and %d markers removed",
            log_.dir_path.name,
            end_offset,
            read,
            written,
            batch_filter.records_removed,
            batch_filter.markers_removed,
        )
        return CleanResult(
            rng.first_dirty, end_offset, len(chosen), read, written, batch_filter.records_removed
        )
    except CleaningAbortedError as e:
        log.info("%s", e)
        return None
    finally:
        log_.end_cleaning()
