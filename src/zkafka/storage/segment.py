"""One segment of a partition log: `<base>.log` plus its `.index` and `.timeindex`.

The segment appends whole record sets, keeps Kafka's sparse-index rule (an offset entry -- and a
time entry -- whenever more than `index.interval.bytes` were written since the last one; the entry
maps the set's *last* offset to the position where the set *starts*, so the first set of a segment
never gets one), translates offsets to file positions and re-validates itself after a crash.

Indexes are loaded lazily and rebuilt from the `.log` when missing or failing their sanity checks
(see `zkafka.storage.index`). A new segment is only its `.log` until it holds data: its index files
are made by their first entry, or when the segment is flushed, rolled or closed with data in it.
All file access is `os.pread` / `os.write` on raw descriptors.

The `.log` descriptor comes from the broker's `FileCache` (`zkafka.storage.file_cache`): it may be
closed whenever no one has it pinned, so every use is inside `acquire`/`release` (`_pinned`), and
a write not yet fsynced is remembered here (`_unsynced`), not by keeping the descriptor.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from zkafka.records.batch import BatchHeader, CorruptRecordError, InvalidRecordError
from zkafka.storage.errors import CorruptIndexError, LogDirIOError, StorageError
from zkafka.storage.file_cache import FileCache, FileLease, SegmentFile, default_file_cache
from zkafka.storage.index import INT32_MAX, OffsetIndex
from zkafka.storage.naming import (
    INDEX_SUFFIX,
    LOG_SUFFIX,
    TIME_INDEX_SUFFIX,
    TXN_INDEX_SUFFIX,
    filename_prefix,
    segment_file,
)
from zkafka.storage.scan import iter_file_batches, iter_file_headers, read_exactly, write_all
from zkafka.storage.tail_positions import LIMIT as TAIL_LIMIT
from zkafka.storage.tail_positions import TailPositions
from zkafka.storage.time_index import NO_TIMESTAMP, TimeIndex
from zkafka.storage.txn_index import TransactionIndex

log = logging.getLogger(__name__)

_BAD_BATCH = (CorruptRecordError, InvalidRecordError)


@dataclass(frozen=True, slots=True)
class TimestampOffset:
    """A ListOffsets answer: the first record at or after a timestamp (or a special offset)."""

    offset: int
    timestamp: int
    leader_epoch: int | None = None


class LogSegment:
    """A segment's files and in-memory state. Not thread-safe: `Log` serialises access."""

    __slots__ = (
        "_dir",
        "_file",
        "_log_file",
        "_max_ts",
        "_offset_of_max_ts",
        "_rolling_ts",
        "_tail",
        "_unsynced",
        "base_offset",
        "bytes_since_last_index_entry",
        "closed",
        "created_ms",
        "index",
        "index_interval_bytes",
        "roll_jitter_ms",
        "size",
        "suffix",
        "time_index",
        "txn_index",
    )

    def __init__(
        self,
        dir_path: Path | str,
        base_offset: int,
        *,
        index_interval_bytes: int,
        max_index_bytes: int,
        created_ms: int,
        roll_jitter_ms: int = 0,
        suffix: str = "",
        create: bool = False,
        file_cache: FileCache | None = None,
        log_on_first_write: bool = False,
    ) -> None:
        """`log_on_first_write` (with `create`): the `.log` too is made by its first use, not now
        (a new replica's first segment: see `zkafka.storage.log_loader.open_log_dir`)."""
        # paths kept as str, Paths made when asked for (`dir_path`, `log_path`): a replica's
        # creation and start-up make a segment each, tens of thousands, and a Path costs a parse
        # (~5 us) and ~0.5 KiB
        self._dir = os.fspath(dir_path)
        self.base_offset = base_offset
        self.suffix = suffix
        self.index_interval_bytes = index_interval_bytes
        self.roll_jitter_ms = roll_jitter_ms
        self.created_ms = created_ms
        stem = f"{self._dir}/{filename_prefix(base_offset)}"  # not os.path.join: ~3x dearer
        self._log_file = stem + LOG_SUFFIX + suffix
        self.index = OffsetIndex(stem + INDEX_SUFFIX + suffix, base_offset, max_index_bytes, create=create)
        self.time_index = TimeIndex(
            stem + TIME_INDEX_SUFFIX + suffix, base_offset, max_index_bytes, create=create
        )
        self.txn_index = TransactionIndex(stem + TXN_INDEX_SUFFIX + suffix)
        self.closed = False  # after close()/delete_files(): never reopen the file by accident
        self._unsynced = False  # written or truncated since the last fsync of the `.log`
        cache = file_cache if file_cache is not None else default_file_cache()
        if create:
            self._file = SegmentFile(cache, self._log_file, create=True, on_first_use=log_on_first_write)
            self.size = 0
            self._max_ts: int | None = NO_TIMESTAMP
            self._offset_of_max_ts = base_offset
            self._rolling_ts: int | None = NO_TIMESTAMP
        else:
            self._file = SegmentFile(cache, self._log_file)
            self.size = os.stat(self._log_file).st_size
            # unknown until needed: read from the time index (an empty segment has none, and
            # may have no index files: they are made on first write)
            self._max_ts = None if self.size else NO_TIMESTAMP
            self._offset_of_max_ts = base_offset
            self._rolling_ts = None if self.size else NO_TIMESTAMP
        self.bytes_since_last_index_entry = 0
        self._tail: TailPositions | None = None
        """Where the batches appended last start (`zkafka.storage.tail_positions`): made by the
        first append that names its batches, dropped when the segment stops being active."""

    def __repr__(self) -> str:
        return f"LogSegment({os.path.basename(self._log_file)}, size={self.size})"

    @property
    def dir_path(self) -> Path:
        return Path(self._dir)

    @property
    def log_path(self) -> Path:
        return Path(self._log_file)

    @property
    def log_file(self) -> str:
        """`log_path` as the str it is kept as (a read's slice names it: no Path per fetch)."""
        return self._log_file

    # ---- descriptors and indexes ----------------------------------------------------------------

    @contextmanager
    def pinned(self) -> Iterator[int]:
        """The `.log` descriptor, kept open (not evicted, not closed) until the block ends."""
        file = self._file
        fd = file.acquire()
        try:
            yield fd
        finally:
            file.release()

    def lease(self) -> FileLease:
        """A pin on the `.log` descriptor for a value that outlives the call (a fetch response)."""
        return self._file.lease()

    def try_lease(self) -> FileLease | None:
        """A lease, or None when the descriptor cache's lease budget is spent."""
        return self._file.try_lease()

    @property
    def has_open_file(self) -> bool:
        return self._file.fd is not None

    def ensure_indexes(self) -> None:
        """Load both indexes, rebuilding them from the `.log` when missing or corrupt."""
        if self.index.loaded and self.time_index.loaded:
            return
        try:
            self.index.load(self.size)
            self.time_index.load(self.size)
        except (CorruptIndexError, FileNotFoundError) as e:
            log.warning("rebuilding indexes of %s: %s", self.log_path, e)
            self.rebuild_indexes()

    def indexes_present(self) -> bool:
        return self.index.path.exists() and self.time_index.path.exists()

    def _ensure_index_files(self) -> bool:
        """Create index files a new segment has not written yet, once it holds data: a segment
        that is flushed, rolled or closed is trusted by the next load, index files included.
        True when a file was created (its directory entry wants an fsync)."""
        if not self.size:
            return False
        created = self.index.ensure_file()
        return self.time_index.ensure_file() or created

    # ---- timestamps -----------------------------------------------------------------------------

    def _ensure_max_timestamp(self) -> None:
        if self._max_ts is not None:
            return
        try:
            ts, offset = self.time_index.read_last_entry()
        except (CorruptIndexError, FileNotFoundError) as e:
            log.warning("rebuilding indexes of %s: %s", self.log_path, e)
            self.rebuild_indexes()
            return
        self._max_ts, self._offset_of_max_ts = ts, offset

    @property
    def max_timestamp_so_far(self) -> int:
        self._ensure_max_timestamp()
        assert self._max_ts is not None
        return self._max_ts

    @property
    def offset_of_max_timestamp_so_far(self) -> int:
        self._ensure_max_timestamp()
        return self._offset_of_max_ts

    @property
    def last_modified_ms(self) -> int:
        """The `.log` mtime; a `.log` not made yet was last changed when the segment was made."""
        if self._file.absent:
            return self.created_ms
        return os.stat(self._log_file).st_mtime_ns // 1_000_000

    @property
    def largest_timestamp(self) -> int:
        """The largest record timestamp, or the `.log` mtime when no batch has one (Kafka's rule)."""
        ts = self.max_timestamp_so_far
        return ts if ts >= 0 else self.last_modified_ms

    def first_batch_timestamp(self) -> int:
        """The max timestamp of the segment's first appended set (-1 when empty or unknown)."""
        return self._rolling_based_timestamp()

    def _rolling_based_timestamp(self) -> int:
        if self._rolling_ts is None:
            with self.pinned() as fd:
                first = next(iter_file_headers(fd, 0, self.size), None)
            self._rolling_ts = first[1].max_timestamp if first else NO_TIMESTAMP
        return self._rolling_ts

    def time_waited_for_roll(self, now_ms: int, max_timestamp_in_messages: int) -> int:
        first_ts = self._rolling_ts
        if first_ts is None:
            first_ts = self._rolling_based_timestamp()
        if first_ts >= 0:
            return max_timestamp_in_messages - first_ts
        return now_ms - self.created_ms

    def should_roll(
        self,
        now_ms: int,
        messages_size: int,
        max_timestamp_in_messages: int,
        max_offset_in_messages: int,
        segment_bytes: int,
        max_segment_ms: int,
    ) -> bool:
        """Kafka's `shouldRoll`: size, time (with jitter), full index, offset overflow."""
        size = self.size
        if size > segment_bytes - messages_size:
            return True
        if size > 0:
            waited = self.time_waited_for_roll(now_ms, max_timestamp_in_messages)
            if waited > max_segment_ms - self.roll_jitter_ms:
                return True
        index, time_index = self.index, self.time_index
        if not (index.loaded and time_index.loaded):
            self.ensure_indexes()
        return (
            index.is_full
            or time_index.is_full
            or not 0 <= max_offset_in_messages - self.base_offset <= INT32_MAX
        )

    # ---- writing --------------------------------------------------------------------------------

    def append(
        self,
        data: bytes | bytearray | memoryview,
        largest_offset: int,
        largest_timestamp: int,
        offset_of_max_timestamp: int,
        batches: Sequence[BatchHeader] | None = None,
        first_offset: int | None = None,
    ) -> None:
        """Append a set of whole batches (already validated and given their offsets).

        `batches`, the headers of `data`'s batches (positions relative to `data`), are noted as
        the segment's tail for lookups near the end; their base offsets are the headers' own, or
        consecutive from `first_offset` when given (a leader's append assigns them in the bytes,
        not in the headers)."""
        position = self.size
        file = self._file
        fd = file.acquire()
        try:
            write_all(fd, data)
        except OSError as e:
            try:  # leave no partial set behind; recovery would cut it anyway
                os.ftruncate(fd, position)
            except OSError:
                pass
            raise LogDirIOError(f"write to {self.log_path} failed: {e}", path=str(self.log_path)) from e
        finally:
            file.release()
        self._unsynced = True
        n = len(data)
        self.size = position + n
        if batches is not None:
            self._note_tail(batches, position, first_offset)
        if position == 0:
            self._rolling_ts = largest_timestamp
        max_ts = self._max_ts
        if max_ts is None:
            max_ts = self.max_timestamp_so_far
        if largest_timestamp > max_ts:
            self._max_ts = max_ts = largest_timestamp
            self._offset_of_max_ts = offset_of_max_timestamp
        if self.bytes_since_last_index_entry > self.index_interval_bytes:
            self._add_index_entries(largest_offset, position, max_ts)
            self.bytes_since_last_index_entry = n
        else:
            self.bytes_since_last_index_entry += n

    def _note_tail(self, batches: Sequence[BatchHeader], position: int, first_offset: int | None) -> None:
        tail = self._tail
        if tail is None or (first_offset is None and len(batches) >= TAIL_LIMIT):
            tail = self._tail = TailPositions()
        if first_offset is None:
            # a follower's append of hundreds of small batches: only the last TAIL_LIMIT would stay
            # noted, and they alone (a fresh tail) are still consecutive up to the segment's end
            for h in batches[-TAIL_LIMIT:]:
                tail.add(h.base_offset, position + h.position)
        else:
            base = first_offset
            for h in batches:
                tail.add(base, position + h.position)
                base += h.last_offset_delta + 1

    def _add_index_entries(self, largest_offset: int, position: int, max_ts: int) -> None:
        index, time_index = self.index, self.time_index
        if not (index.loaded and time_index.loaded):
            self.ensure_indexes()
        # Offsets and the running max timestamp only grow, so these are Kafka's append and
        # maybeAppend; a full index (only when a caller skipped should_roll: the cleaner's
        # output) just stays sparser, which is still correct.
        base = self.base_offset
        index.try_append(largest_offset - base, position)
        if max_ts >= 0:
            time_index.try_append(max_ts, self._offset_of_max_ts - base)

    def on_become_inactive(self) -> None:
        """On roll: force the final time-index entry and write out the indexes."""
        self._tail = None  # reads of an older segment are not at the tail: the index serves them
        self.ensure_indexes()
        self.time_index.maybe_append(self.max_timestamp_so_far, self._offset_of_max_ts, skip_full_check=True)
        self._ensure_index_files()
        self.index.write_pending()
        self.time_index.write_pending()

    def flush(self, *, fsync: bool = True) -> bool:
        """fsync the `.log`, both indexes and the `.txnindex` (below the recovery point they are
        trusted after a crash). Without `fsync`: only write the indexes' pending entries; the
        caller syncs the whole filesystem. True when an index file was created (the directory
        wants an fsync too)."""
        if fsync and self._unsynced:
            with self.pinned() as fd:  # the descriptor may have been evicted since the write
                os.fsync(fd)
            self._unsynced = False
        created = self._ensure_index_files()
        self.index.flush(fsync=fsync)
        self.time_index.flush(fsync=fsync)
        if fsync:
            self.txn_index.flush()
        return created

    # ---- reading --------------------------------------------------------------------------------

    def translate_offset(
        self, offset: int, start_position: int = 0, *, retry: bool = True
    ) -> tuple[int, BatchHeader] | None:
        """(position, header) of the first batch whose last offset >= `offset`, or None."""
        self.ensure_indexes()
        index_offset, index_position = self.index.lookup(offset)
        position = max(index_position, start_position)
        tail = self._tail
        if tail is not None:
            # a batch noted at append time at or before `offset`: the scan starts there, not
            # up to index.interval.bytes of headers earlier
            position = max(position, tail.start_of(offset))
        try:
            with self.pinned() as fd:
                found = self._scan_to(fd, offset, position, index_offset, index_position)
            return found
        except (*_BAD_BATCH, CorruptIndexError) as e:
            if position == 0 or not retry:
                raise StorageError(f"corrupt data in {self.log_path}: {e}") from e
            log.warning("rebuilding indexes of %s: %s", self.log_path, e)
            self.rebuild_indexes()
            return self.translate_offset(offset, start_position, retry=False)

    def _scan_to(
        self, fd: int, offset: int, position: int, index_offset: int, index_position: int
    ) -> tuple[int, BatchHeader] | None:
        for pos, header in iter_file_headers(fd, position, self.size):
            if pos == index_position and index_position > 0 and header.last_offset != index_offset:
                raise CorruptIndexError(f"{self.index.path}: entry {index_offset} points at another batch")
            if header.last_offset >= offset:
                return pos, header
        return None

    def batch_position(self, offset: int) -> int | None:
        """The position of the first batch whose last offset >= `offset` (None: there is none):
        a read's upper bound. No read at all when a batch noted in the tail starts at `offset`
        (a high watermark sits at a batch start)."""
        tail = self._tail
        if tail is not None:
            position = tail.position_of(offset)
            if position >= 0:
                return position
        found = self.translate_offset(offset)
        return None if found is None else found[0]

    def read(
        self, offset: int, max_bytes: int, *, max_position: int, min_one_batch: bool
    ) -> tuple[int, int, BatchHeader] | None:
        """(position, size, first header) of whole batches from the one containing `offset`, at most
        `max_bytes` (but at least the first batch when `min_one_batch`, KIP-74) and never past
        `max_position`. None when no batch of this segment holds `offset` or later."""
        found = self.translate_offset(offset)
        if found is None:
            return None
        start, first = found
        limit = min(max_position, self.size)  # a batch boundary: a batch start or the end
        if start + first.size > limit:
            return start, 0, first  # the first batch reaches past max_offset
        if first.size >= max_bytes:
            return start, (first.size if min_one_batch or first.size == max_bytes else 0), first
        if start + max_bytes >= limit:
            return start, limit - start, first
        end = self._last_batch_boundary(start + first.size, start + max_bytes)
        return start, end - start, first

    def _last_batch_boundary(self, position: int, limit: int) -> int:
        """The largest batch end <= `limit`, scanning forward from batch start `position`."""
        _, index_position = self.index.lookup_by_position(limit)
        start = index_position if index_position > position else position
        with self.pinned() as fd:
            try:
                for pos, header in iter_file_headers(fd, start, limit):
                    start = pos + header.size
                return start
            except _BAD_BATCH:
                if start == position:
                    raise
            # the index entry did not point at a batch: walk from the known boundary instead
            for pos, header in iter_file_headers(fd, position, limit):
                position = pos + header.size
            return position

    def read_bytes(self, position: int, size: int) -> bytes:
        with self.pinned() as fd:
            return read_exactly(fd, size, position)

    def iter_headers(self, start: int = 0, end: int | None = None) -> Iterator[tuple[int, BatchHeader]]:
        """(position, header) of each batch in [start, end) (default: the whole file), the file
        pinned while the iteration lasts (a generator: closing it releases the pin)."""
        with self.pinned() as fd:
            yield from iter_file_headers(fd, start, self.size if end is None else end)

    def iter_batches(self, *, check_crc: bool = False) -> Iterator[tuple[int, BatchHeader, memoryview]]:
        """(position, header, bytes) of every batch, the file pinned while the iteration lasts."""
        with self.pinned() as fd:
            yield from iter_file_batches(fd, 0, self.size, check_crc=check_crc)

    def read_next_offset(self) -> int:
        """The offset after the last batch (the base offset when empty)."""
        if self.size == 0:  # no index or descriptor needed: an idle replica's load stays free
            return self.base_offset
        if self.size <= self.index_interval_bytes and not self.index.loaded:
            # no index entry can exist yet (the first is written past index.interval.bytes), so
            # the scan starts at 0 anyway: a replica holding a few batches loads without
            # reading its index files (they are read when first needed)
            position = 0
        else:
            self.ensure_indexes()
            _, position = self.index.lookup(self.index.last_offset)
        next_offset = self.base_offset
        for _, header in self.iter_headers(position):
            next_offset = header.next_offset
        return next_offset

    def find_offset_by_timestamp(self, timestamp: int, starting_offset: int) -> TimestampOffset | None:
        """The first record with timestamp >= `timestamp` and offset >= `starting_offset`."""
        from zkafka.records.record import iter_records  # records are decoded only for one batch

        self.ensure_indexes()
        _, ts_offset = self.time_index.lookup(timestamp)
        _, position = self.index.lookup(max(ts_offset, starting_offset))
        with self.pinned() as fd:
            for pos, header in iter_file_headers(fd, position, self.size):
                if header.max_timestamp < timestamp or header.last_offset < starting_offset:
                    continue
                data = read_exactly(fd, header.size, pos)
                for record in iter_records(data):
                    if record.timestamp >= timestamp and record.offset >= starting_offset:
                        return TimestampOffset(record.offset, record.timestamp, header.partition_leader_epoch)
        return None

    # ---- recovery and truncation ----------------------------------------------------------------

    def recover(self, on_batch: Callable[[BatchHeader], None] | None = None) -> int:
        """Validate every batch (framing, CRC-32C, offsets), cut the file at the first bad one and
        rebuild both indexes. Returns the number of bytes cut."""
        return self._rebuild(check_crc=True, truncate=True, on_batch=on_batch)

    def rebuild_indexes(self) -> None:
        """Rebuild both indexes from the batch headers without touching the `.log`."""
        self._rebuild(check_crc=False, truncate=False, on_batch=None)

    def _rebuild(
        self, *, check_crc: bool, truncate: bool, on_batch: Callable[[BatchHeader], None] | None
    ) -> int:
        with self.pinned() as fd:
            return self._rebuild_pinned(fd, check_crc=check_crc, truncate=truncate, on_batch=on_batch)

    def _rebuild_pinned(
        self, fd: int, *, check_crc: bool, truncate: bool, on_batch: Callable[[BatchHeader], None] | None
    ) -> int:
        index, time_index = self.index, self.time_index
        index.reset()
        time_index.reset()
        valid = 0
        max_ts, offset_of_max = NO_TIMESTAMP, self.base_offset
        first_ts = NO_TIMESTAMP
        since_entry = 0
        next_offset = self.base_offset
        batches = (
            ((p, h) for p, h, _ in iter_file_batches(fd, 0, self.size, check_crc=True))
            if check_crc
            else iter_file_headers(fd, 0, self.size)
        )
        try:
            for pos, header in batches:
                if header.base_offset < next_offset or header.last_offset - self.base_offset > INT32_MAX:
                    log.warning(
                        "%s: batch at byte %d has out-of-order offset %d",
                        self.log_path,
                        pos,
                        header.base_offset,
                    )
                    break
                if pos == 0:
                    first_ts = header.max_timestamp
                if header.max_timestamp > max_ts:
                    max_ts, offset_of_max = header.max_timestamp, header.last_offset
                if since_entry > self.index_interval_bytes and not index.is_full:
                    index.append(header.last_offset, pos)
                    time_index.maybe_append(max_ts, offset_of_max, skip_full_check=True)
                    since_entry = 0
                since_entry += header.size
                valid = pos + header.size
                next_offset = header.next_offset
                if on_batch is not None:
                    on_batch(header)
        except _BAD_BATCH as e:
            log.warning("%s: invalid batch at byte %d: %s", self.log_path, valid, e)
        truncated = self.size - valid
        if truncate and truncated:
            log.warning("%s: truncating %d invalid bytes at position %d", self.log_path, truncated, valid)
            os.ftruncate(fd, valid)
            self._unsynced = True
            self.size = valid
            if self._tail is not None:
                self._tail.truncate(valid)
        if truncate:
            self.txn_index.truncate_to(next_offset)  # markers that did not survive the cut
        time_index.maybe_append(max_ts, offset_of_max, skip_full_check=True)
        index.write_rebuilt()
        time_index.write_rebuilt()
        self._max_ts, self._offset_of_max_ts = max_ts, offset_of_max
        self._rolling_ts = first_ts
        self.bytes_since_last_index_entry = since_entry
        return truncated if truncate else 0

    def truncate_to(self, offset: int, now_ms: int) -> int:
        """Remove every batch whose last offset >= `offset` (the whole batch holding `offset`).
        Returns the bytes removed."""
        found = self.translate_offset(offset)
        self.index.truncate_to(offset)
        self.time_index.truncate_to(offset)
        self.txn_index.truncate_to(offset)
        self.bytes_since_last_index_entry = 0
        if found is None:
            return 0
        position = found[0]
        removed = self.size - position
        with self.pinned() as fd:
            os.ftruncate(fd, position)
        self._unsynced = True
        self.size = position
        if self._tail is not None:
            self._tail.truncate(position)
        if position == 0:
            self.created_ms = now_ms
            self._rolling_ts = NO_TIMESTAMP
        self._recompute_max_timestamp()
        return removed

    def _recompute_max_timestamp(self) -> None:
        ts, offset = self.time_index.last_entry()
        _, position = self.index.lookup(offset) if ts >= 0 else (0, 0)
        for _, header in self.iter_headers(position):
            if header.max_timestamp > ts:
                ts, offset = header.max_timestamp, header.last_offset
        self._max_ts, self._offset_of_max_ts = ts, offset

    # ---- files ----------------------------------------------------------------------------------

    def set_last_modified(self, ms: int) -> None:
        os.utime(self._log_file, ns=(time.time_ns(), ms * 1_000_000))

    def change_suffix(self, new_suffix: str) -> None:
        """Rename the files from the current temporary suffix to `new_suffix` (the log last, so a
        `.log<suffix>` on disk means the indexes were already renamed)."""
        self.txn_index.rename(segment_file(self.dir_path, self.base_offset, TXN_INDEX_SUFFIX, new_suffix))
        for idx, ext in ((self.index, INDEX_SUFFIX), (self.time_index, TIME_INDEX_SUFFIX)):
            target = segment_file(self.dir_path, self.base_offset, ext, new_suffix)
            if idx.path.exists():
                idx.rename(target)
            else:
                idx.path = target
        target = segment_file(self.dir_path, self.base_offset, LOG_SUFFIX, new_suffix)
        self._file.rename(target)  # atomic with a reopen by a thread not holding the log's lock
        self._log_file = os.fspath(target)
        self.suffix = new_suffix

    def close(self) -> None:
        """Write out the indexes (with the final time entry when loaded) and close descriptors."""
        self.closed = True
        try:
            if self.time_index.loaded and self._max_ts is not None:
                self.time_index.maybe_append(self._max_ts, self._offset_of_max_ts, skip_full_check=True)
            self._ensure_index_files()
        finally:
            self.index.close()
            self.time_index.close()
            self._file.close()

    def close_quietly(self) -> None:
        try:
            self.close()
        except (OSError, ValueError, StorageError) as e:
            log.warning("closing %s: %s", self.log_path, e)

    def delete_files(self) -> None:
        """Close and remove the segment's files (whatever their current suffix)."""
        self.closed = True
        self.txn_index.delete()
        self.index.delete()
        self.time_index.delete()
        self._file.close()  # at once, or when the last reader (a fetch response) lets go
        self.log_path.unlink(missing_ok=True)

    def abandon(self) -> None:
        """Close the `.log` without writing anything more (what a crash leaves: tests, failed loads)."""
        self.closed = True
        self.index.discard_pending()
        self.time_index.discard_pending()
        self._file.close()
