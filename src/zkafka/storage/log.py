"""The log of one partition replica: `<log.dirs>/<topic>-<partition>/`, laid out exactly as Kafka's.

`zkafka.storage` is the only package that opens data files; everything above it (replica
manager, fetch sessions, group coordinator) goes through `Log` / `LogManager` and gets file
ranges back (`FetchSlice`), never paths to open on its own.

Durability and fsync policy (Kafka's):

- An append is a plain `os.write` into the page cache -- no fsync per write. Durability comes
  from replication: acks=all waits until the in-sync replicas have fetched the data, so a
  broker crash loses nothing the cluster acknowledged.
- `flush.messages` / `flush.ms` (topic) are honoured when set: an append that leaves
  `flush.messages` or more unflushed messages fsyncs synchronously, and the manager's periodic
  `flush_dirty_logs` fsyncs logs whose last flush is `flush.ms` old. The defaults (INT64_MAX)
  leave writeback to the OS. A rolled segment is fsynced by the next `flush_dirty_logs`
  (Kafka schedules the same flush asynchronously on roll).
- `flush(offset)` fsyncs the `.log` and indexes of the segments holding [recovery point, offset)
  and moves the recovery point; the manager writes recovery points to
  `recovery-point-offset-checkpoint`. After an unclean shutdown every segment from the recovery
  point on is re-validated batch by batch (framing + CRC-32C); a torn or corrupt tail is cut and
  later segments are dropped, so the log never serves bytes a crash damaged.
- Small metadata files (leader-epoch checkpoint, offset checkpoints, `meta.properties`) are
  always written tmp + fsync + rename.

Appends and reads are batch-level: nothing here decodes records except the timestamp search
(one batch) and compaction.

Thread-safety: every public method takes the log's lock, so a broker may append from a
per-partition executor while reading from the event loop.
"""

from __future__ import annotations

import logging
import os
import random
import shutil
import struct
import threading
import time
from bisect import bisect_right
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from zkafka.records.batch import TIMESTAMP_TYPE_MASK, BatchHeader, iter_headers, rewrite_crc
from zkafka.records.batch import assign_offsets as assign_batch_offsets
from zkafka.storage.checkpoint import fsync_dir
from zkafka.storage.config import LogConfig
from zkafka.storage.errors import (
    CleaningAbortedError,
    LogClosedError,
    LogDirIOError,
    OffsetOutOfRangeError,
    RecordBatchTooLargeError,
    RecordTooLargeError,
    StorageError,
    UnexpectedAppendOffsetError,
)
from zkafka.storage.file_cache import FileCache, FileLease
from zkafka.storage.log_loader import open_log_dir
from zkafka.storage.naming import (
    CLEANED_SUFFIX,
    DELETED_SUFFIX,
    INDEX_SUFFIX,
    LOG_SUFFIX,
    SWAP_SUFFIX,
    TIME_INDEX_SUFFIX,
    TopicPartition,
    parse_partition_dir_name,
    segment_file,
)
from zkafka.storage.retention import (
    deletable_prefix,
    log_start_offset_breached,
    retention_ms_breached,
    retention_size_breached,
)
from zkafka.storage.scan import read_exactly
from zkafka.storage.segment import LogSegment, TimestampOffset
from zkafka.storage.txn_index import AbortedTxn

log = logging.getLogger(__name__)

EARLIEST_TIMESTAMP = -2
LATEST_TIMESTAMP = -1
MAX_TIMESTAMP = -3
NO_TIMESTAMP = -1

_ATTRIBUTES = struct.Struct(">h")
_TIMESTAMP = struct.Struct(">q")


class AppendInfo(NamedTuple):
    """What one append did (the produce response's fields come from here)."""

    first_offset: int
    last_offset: int
    max_timestamp: int
    offset_of_max_timestamp: int
    log_append_time: int  # -1 unless message.timestamp.type=LogAppendTime
    log_start_offset: int
    size: int


@dataclass(frozen=True, slots=True)
class FetchSlice:
    """A byte range of one segment file holding whole batches, ready to be copied straight into a response.

    `lease` pins the segment's descriptor open (`zkafka.storage.file_cache`) for as long as the
    slice -- or whatever it hands the lease to, such as a fetch response's records -- keeps it:
    neither the descriptor cache nor a segment deletion closes it under a reader. When the cache's
    lease budget is spent the bytes are read at once instead: `data` holds them and `lease` is
    None. `path` lets a caller open its own descriptor instead. An empty slice has size 0 and
    neither.
    """

    fetch_offset: int
    path: str | None
    lease: FileLease | None
    position: int
    size: int
    segment_base_offset: int
    first_batch_offset: int = -1
    data: bytes | None = None

    @property
    def is_empty(self) -> bool:
        return self.size == 0

    @property
    def fd(self) -> int:
        """The pinned descriptor (valid while this slice or its lease is alive; -1 when empty)."""
        return self.lease.fd if self.lease is not None else -1

    def read_bytes(self) -> bytes:
        if not self.size:
            return b""
        if self.data is not None:
            return self.data
        data = read_exactly(self.fd, self.size, self.position)
        if len(data) != self.size:
            raise StorageError(f"{self.path}: {self.size} bytes expected at {self.position}, got {len(data)}")
        return data


def _empty_slice(offset: int) -> FetchSlice:
    return FetchSlice(offset, None, None, 0, 0, -1)


def _roll_jitter(config: LogConfig) -> int:
    if config.segment_jitter_ms <= 0:
        return 0
    return random.randrange(min(config.segment_jitter_ms, config.segment_ms))


class Log:
    """One partition's segments, leader-epoch cache and offsets.

    Open with the recovery point and log start offset from the log dir's checkpoints and the
    clean-shutdown flag (`LogManager` does this); a missing dir is created (with `make_dir=False`
    by the log's first file: `has_dir`).
    """

    __slots__ = (
        "_bases",
        "_cleaning",
        "_cleaning_done",
        "_clock",
        "_closed",
        "_dir_dirty",
        "_file_cache",
        "_leo",
        "_lock",
        "_log_append_time",
        "_parent_dirty",
        "_pending_deletes",
        "_roll_flush_offset",
        "_roll_ms",
        "_segments",
        "cleaning_aborted",
        "config",
        "directory",
        "epochs",
        "first_unstable_offset",
        "has_dir",
        "last_flush_ms",
        "last_producer_records",
        "latest_delete_horizon",
        "log_start_offset",
        "on_delete_scheduled",
        "on_roll",
        "recovered_from",
        "recovery_point",
        "snapshots_at_load",
        "topic_partition",
    )

    def __init__(
        self,
        dir_path: Path | str,
        config: LogConfig,
        *,
        recovery_point: int = 0,
        log_start_offset: int = 0,
        had_clean_shutdown: bool = False,
        clock: Callable[[], float] = time.time,
        topic_partition: TopicPartition | None = None,
        file_cache: FileCache | None = None,
        listing: list[str] | None = None,
        make_dir: bool = True,
        absent: bool = False,
    ) -> None:
        """`listing`: the names in `dir_path`, just listed by the caller (start-up). `make_dir`
        False: a missing directory of a new log from offset 0 is made by the log's first file
        (`_ensure_dir`), not now (`LogManager.get_or_create_log`: a topic's creation); with
        `absent` the caller knows there is none, so it is not looked for either."""
        self.directory = os.fspath(dir_path)
        """The log's directory as a str; `dir_path` makes a Path of it when asked. A topic's
        creation opens a log per replica, and a Path costs a parse (~5 us) and ~0.5 KiB each."""
        self._file_cache = file_cache  # None: the process-wide one (`default_file_cache`)
        self.config = config
        self._derive_config()
        self._clock = clock
        self.topic_partition = topic_partition or parse_partition_dir_name(os.path.basename(self.directory))
        self._lock = threading.RLock()
        self._segments: list[LogSegment] = []
        self._bases: list[int] = []
        self._pending_deletes: list[tuple[int, LogSegment]] = []
        self.on_delete_scheduled: Callable[[Log], None] | None = None
        """Told (from whichever thread scheduled it) when a segment's files wait to be deleted:
        the log manager then asks only such logs, not every log every second."""
        self._closed = False
        self._cleaning = 0  # > 0 while the cleaner reads segments: physical deletes wait
        # made by the first `begin_cleaning`: most logs are never compacted, and a Condition is
        # ~0.9 KiB, a tenth of an idle replica's cost on a broker with thousands of them
        self._cleaning_done: threading.Condition | None = None
        self.cleaning_aborted = False  # polled by the cleaner between batches
        self._dir_dirty = False
        self._parent_dirty = False
        """The directory was made after the log was opened (`_ensure_dir`): the next flush fsyncs
        its parent too before the recovery point moves, as the manager's `sync_created_dirs` did
        for a directory made with the log."""
        self._roll_flush_offset = -1  # a rolled segment still to fsync (see flush_if_due)
        self.last_flush_ms = self._now_ms()
        self.recovery_point = recovery_point
        self.log_start_offset = log_start_offset
        self._leo = 0
        # earliest expiry of tombstones kept by the last compaction (-1: none known)
        self.latest_delete_horizon = -1
        # the first offset of a transaction not yet settled (the partition's producer state knows
        # it; set by its owner): compaction stops there, since such records may still be aborted
        self.first_unstable_offset: Callable[[], int | None] = lambda: None
        # producer id -> (offset of its last data batch or -1, epoch), from the producer state
        # (set by its owner): compaction keeps these batches so sequence checks survive it
        self.last_producer_records: Callable[[], dict[int, tuple[int, int]]] = dict
        # called with the new base offset at every roll (set by the owner of the producer state,
        # which snapshots it there as Kafka does: an unclean restart replays from the snapshot at
        # or below its first re-validated segment, so that replay stays one segment long)
        self.on_roll: Callable[[int], None] = lambda base: None
        self.has_dir = True  # while the loader runs: it makes or lists the directory itself
        self.epochs, loaded = open_log_dir(
            dir_path,
            self._new_segment,
            self,  # named in log lines by its repr, made only if one is written
            had_clean_shutdown,
            recovery_point,
            log_start_offset,
            listing=listing,
            make_dir=make_dir,
            absent=absent,
        )
        self.has_dir = loaded.dir_made
        """False until the first file of a log opened with `make_dir=False` makes the directory:
        such a log holds nothing, so it has nothing to lose, rename or load."""
        self._segments = loaded.segments
        self._bases = [seg.base_offset for seg in loaded.segments]
        self._leo = loaded.log_end_offset
        self.log_start_offset = loaded.log_start_offset
        self.recovery_point = loaded.recovery_point
        self.recovered_from = loaded.recovered_from
        """Set by an unclean load (`LoadedLog.recovered_from`); the partition's first producer-state
        rebuild re-adds the aborted transactions from there to the `.txnindex` and clears it."""
        self.snapshots_at_load: list[int] | None = loaded.snapshot_offsets
        """The producer-state snapshot offsets the load listed; taken (set to None) by the first
        producer-state rebuild, since snapshots are written and deleted after it."""
        self._dir_dirty = loaded.changed

    @property
    def dir_path(self) -> Path:
        return Path(self.directory)

    def __repr__(self) -> str:
        return f"Log({self.directory}, start={self.log_start_offset}, end={self._leo})"

    def _now_ms(self) -> int:
        return int(self._clock() * 1000)

    # ---- segments -------------------------------------------------------------------------------

    def _ensure_dir(self) -> None:
        """Make the directory of a log opened without one, before its first file. Every file of a
        log comes after a batch (the `.log` by the append, indexes, epoch checkpoint, producer
        snapshots, `.txnindex`, the cleaner's) or with a segment made at once (`_new_segment`:
        a roll, a restart at another offset), and each of those calls this first."""
        if self.has_dir:
            return
        try:
            os.mkdir(self.directory)
        except OSError as e:
            if not (isinstance(e, FileExistsError) and os.path.isdir(self.directory)):
                # the data dir failed (or vanished, or holds a file of that name): the broker
                # takes it offline, as for any failed write
                raise LogDirIOError(f"{self}: making its directory failed: {e}", path=self.directory) from e
            # not made by this broker, whose log manager knew of none here: unexpected, so said
            log.warning("%s: its directory already existed; its first segment starts empty", self)
        self.has_dir = True
        self._dir_dirty = True  # and the entries of the files made in it next
        self._parent_dirty = True

    def _new_segment(
        self, base_offset: int, *, suffix: str = "", create: bool = True, log_on_first_write: bool = False
    ) -> LogSegment:
        if create and not log_on_first_write and not self.has_dir:
            self._ensure_dir()  # the segment's `.log` is made now
        return LogSegment(
            self.directory,
            base_offset,
            index_interval_bytes=self.config.index_interval_bytes,
            max_index_bytes=self.config.segment_index_bytes,
            created_ms=self._now_ms(),
            roll_jitter_ms=_roll_jitter(self.config),
            suffix=suffix,
            create=create,
            file_cache=self._file_cache,
            log_on_first_write=log_on_first_write,
        )

    def _add_segment(self, seg: LogSegment) -> None:
        self._segments.append(seg)
        self._bases.append(seg.base_offset)
        self._dir_dirty = True

    def _delete_segments_now(self, doomed: list[LogSegment]) -> None:
        for seg in doomed:
            i = self._segments.index(seg)
            del self._segments[i]
            del self._bases[i]
            seg.delete_files()
        self._dir_dirty = True

    # ---- properties -----------------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def log_end_offset(self) -> int:
        return self._leo

    @property
    def size(self) -> int:
        """Bytes in all segments."""
        with self._lock:
            return sum(seg.size for seg in self._segments)

    @property
    def num_segments(self) -> int:
        return len(self._segments)

    @property
    def active_segment(self) -> LogSegment:
        return self._segments[-1]

    def segments(self) -> list[LogSegment]:
        """A snapshot of the segments, oldest first."""
        with self._lock:
            return list(self._segments)

    def segment_bases(self) -> list[int]:
        with self._lock:
            return list(self._bases)

    def _check_open(self) -> None:
        if self._closed:
            raise LogClosedError(f"{self.directory} is closed")

    def update_config(self, config: LogConfig) -> None:
        """Apply a changed topic config; new segments and future appends use it."""
        with self._lock:
            self.config = config
            self._derive_config()

    def _derive_config(self) -> None:
        """Values the append path would otherwise recompute per call."""
        config = self.config
        self._log_append_time = config.message_timestamp_type == "LogAppendTime"
        if config.compact and config.max_compaction_lag_ms > 0:
            self._roll_ms = min(config.segment_ms, config.max_compaction_lag_ms)
        else:
            self._roll_ms = config.segment_ms

    # ---- append ---------------------------------------------------------------------------------

    def append(
        self,
        batches: bytearray | memoryview,
        headers: list[BatchHeader],
        *,
        leader_epoch: int | None,
        assign_offsets: bool = True,
    ) -> AppendInfo:
        """Append validated batches (`headers` from `validate_batches(batches)`).

        As leader (`assign_offsets=True`) the batches get offsets from the log end and, when
        `leader_epoch` is given, that epoch -- patched in place in `batches`, CRC untouched -- and
        LogAppendTime topics get the append time stamped. As follower the offsets are kept and
        must not go below the log end offset.
        """
        if not headers:
            raise ValueError("append needs at least one batch")
        with self._lock:
            if self._closed:
                raise LogClosedError(f"{self.directory} is closed")
            config = self.config
            size = len(batches)
            now_ms = int(self._clock() * 1000)
            append_time = max_ts = NO_TIMESTAMP
            if assign_offsets:
                first = self._leo
                limit = config.max_message_bytes
                offset_of_max = offset = first
                for h in headers:
                    if h.size > limit:
                        raise RecordTooLargeError(
                            f"{self.dir_path.name}: batch of {h.size} bytes exceeds max.message.bytes={limit}"
                        )
                    offset += h.last_offset_delta + 1
                    if h.max_timestamp > max_ts:
                        max_ts, offset_of_max = h.max_timestamp, offset - 1
                last = assign_batch_offsets(batches, headers, first, leader_epoch) - 1
                if self._log_append_time:
                    append_time = max_ts = now_ms
                    offset_of_max = last
                    self._stamp_append_time(batches, headers, now_ms)
            else:
                first, last = self._check_follower_offsets(headers)
                offset_of_max = first
                for h in headers:
                    if h.max_timestamp > max_ts:
                        max_ts, offset_of_max = h.max_timestamp, h.last_offset
            if size > config.segment_bytes:
                raise RecordBatchTooLargeError(
                    f"{size} bytes can never fit in a segment of segment.bytes={config.segment_bytes}"
                )
            if not self.has_dir:
                self._ensure_dir()  # the `.log` (and every later file) goes in it
            seg = self._segments[-1]
            if seg.should_roll(now_ms, size, max_ts, last, config.segment_bytes, self._roll_ms):
                try:
                    seg = self._roll(first)
                except OSError as e:  # a new segment's files could not be made (disk full, I/O)
                    raise LogDirIOError(f"{self}: rolling a segment failed: {e}", path=self.directory) from e
            seg.append(batches, last, max_ts, offset_of_max, headers, first if assign_offsets else None)
            self._leo = last + 1
            if first == 0:  # the first batch: a pending epoch change may be written now
                self.epochs.queue_if_dirty()
            if assign_offsets:
                if leader_epoch is not None and leader_epoch >= 0:
                    latest = self.epochs.latest_epoch
                    if latest is None or leader_epoch > latest:
                        self.epochs.assign(leader_epoch, first)
            else:
                self._assign_batch_epochs(headers)
            if self._leo - self.recovery_point >= config.flush_messages:
                self._flush(self._leo)
            return AppendInfo(first, last, max_ts, offset_of_max, append_time, self.log_start_offset, size)

    def _check_follower_offsets(self, headers: list[BatchHeader]) -> tuple[int, int]:
        """A follower's batches keep the leader's offsets: never below the log end, increasing."""
        first, last = headers[0].base_offset, headers[-1].last_offset
        expected = self._leo
        for h in headers:
            if h.base_offset < expected:
                raise UnexpectedAppendOffsetError(
                    f"{self.dir_path.name}: follower append at offset {h.base_offset} is below "
                    f"{'the log end offset' if h is headers[0] else 'the previous batch end'} {expected}",
                    first_offset=first,
                    last_offset=last,
                )
            expected = h.base_offset + h.last_offset_delta + 1
        return first, last

    @staticmethod
    def _stamp_append_time(batches: bytearray | memoryview, headers: list[BatchHeader], now_ms: int) -> None:
        """LogAppendTime: set the timestamp-type bit and maxTimestamp (both under the CRC)."""
        for h in headers:
            _ATTRIBUTES.pack_into(batches, h.position + 21, h.attributes | TIMESTAMP_TYPE_MASK)
            _TIMESTAMP.pack_into(batches, h.position + 35, now_ms)
            rewrite_crc(batches, h.position, h.size)

    def _assign_batch_epochs(self, headers: list[BatchHeader]) -> None:
        """Follower: every batch's partitionLeaderEpoch above the latest one starts a new epoch."""
        latest = self.epochs.latest_epoch
        for h in headers:
            epoch = h.partition_leader_epoch
            if epoch >= 0 and (latest is None or epoch > latest):
                self.epochs.assign(epoch, h.base_offset)
                latest = epoch

    def assign_leader_epoch(self, epoch: int) -> bool:
        """A new leader: `epoch` starts at the log end (under the lock: the checkpoint may be
        written from another thread)."""
        with self._lock:
            self._check_open()
            return self.epochs.assign(epoch, self._leo)

    def write_epoch_checkpoint(self) -> bool:
        """Write a deferred leader-epoch checkpoint change (`LeaderEpochCache.defer_writes`); False
        when it waits for the log's first batch (`_write_epochs`), whose append queues the log
        again."""
        with self._lock:
            if self._closed or not self.epochs.dirty:
                return True
            return self._write_epochs()

    def _write_epochs(self, *, sync: bool = False) -> bool:
        """Write (and with `sync` fsync) a deferred leader-epoch change, but not while the log has
        never held a batch: its entries then all start at offset 0 and describe no data, and a
        topic's creation would write one checkpoint per new replica it leads. A load without the
        file starts such a log with no epoch, which an empty log can have; once the log holds data
        the change is written (its first append queues it again), and an unclean load re-derives
        every epoch above the recovery point from the batches anyway. False while it waits."""
        if self._leo == 0:
            return False
        if sync:
            self.epochs.sync()
        else:
            self.epochs.write_if_dirty()
        return True

    def roll(self) -> LogSegment:
        """Start a new active segment at the log end offset (no-op when the active one is empty)."""
        with self._lock:
            self._check_open()
            return self._roll(self._leo)

    def _roll(self, expected_next_offset: int) -> LogSegment:
        new_base = max(expected_next_offset, self._leo)
        active = self._segments[-1]
        if active.size == 0 and active.base_offset == new_base:
            return active
        if new_base <= active.base_offset:
            raise StorageError(
                f"{self}: cannot roll to {new_base}, the active segment starts at {active.base_offset}"
            )
        for suffix in (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX):
            segment_file(self.dir_path, new_base, suffix).unlink(missing_ok=True)  # stale files
        active.on_become_inactive()
        seg = self._new_segment(new_base)
        self._add_segment(seg)
        self._roll_flush_offset = new_base
        self.on_roll(new_base)
        return seg

    # ---- read -----------------------------------------------------------------------------------

    def read(
        self, offset: int, max_bytes: int, *, max_offset: int | None = None, min_one_batch: bool = True
    ) -> FetchSlice:
        """Whole batches from the one holding `offset`, within one segment.

        At most `max_bytes`, but the whole first batch when `min_one_batch` (KIP-74); only batches
        that end before `max_offset` (the high watermark, exclusive) when given. Raises
        OffsetOutOfRangeError outside [log_start_offset, log_end_offset].
        """
        with self._lock:
            self._check_open()
            leo = self._leo
            if offset < self.log_start_offset or offset > leo:
                raise OffsetOutOfRangeError(
                    f"offset {offset} is outside [{self.log_start_offset}, {leo}] of {self.dir_path.name}",
                    log_start_offset=self.log_start_offset,
                    log_end_offset=leo,
                )
            end = leo if max_offset is None else min(max_offset, leo)
            i = max(0, bisect_right(self._bases, offset) - 1)
            while offset < end and i < len(self._segments):
                seg = self._segments[i]
                if end <= seg.base_offset:
                    break
                upper = self._bases[i + 1] if i + 1 < len(self._bases) else leo
                max_position = seg.size
                if end < upper:
                    bound = seg.batch_position(end)
                    if bound is not None:
                        max_position = bound
                result = seg.read(offset, max_bytes, max_position=max_position, min_one_batch=min_one_batch)
                if result is not None:
                    position, size, first = result
                    lease = seg.try_lease() if size else None
                    data = None if lease is not None or not size else seg.read_bytes(position, size)
                    return FetchSlice(
                        offset, seg.log_file, lease, position, size, seg.base_offset, first.base_offset, data
                    )
                i += 1
            return _empty_slice(offset)

    def iter_batches(self, start_offset: int | None = None) -> Iterator[tuple[BatchHeader, bytes]]:
        """Every batch from the one holding `start_offset` (default: the log start) to the end, as
        (header, bytes). For tools, tests and the group coordinator's load -- not the fetch path."""
        offset = self.log_start_offset if start_offset is None else start_offset
        while True:
            chunk = self.read(offset, 1 << 20)
            if chunk.is_empty:
                return
            data = chunk.read_bytes()
            pos = 0
            for h in iter_headers(data):
                yield h, data[h.position : h.position + h.size]
                pos = h.position + h.size
                offset = h.next_offset
            if pos == 0:
                return

    def iter_batch_headers(self, start_offset: int) -> Iterator[tuple[BatchHeader, bytes | None]]:
        """(header, bytes) of every batch from the one holding `start_offset` to the end, where only
        a control batch's bytes are read (None for the others): a producer-state rebuild replays
        headers and markers. Reading headers alone leaves the indexes of a log replayed from its
        first segment's start unloaded and copies no data batch -- at start-up after a SIGKILL
        every written replica is replayed. A control batch's bytes start at the batch (its header's
        `position` is not an offset into them)."""
        with self._lock:
            self._check_open()
            segments = self._segments[max(0, bisect_right(self._bases, start_offset) - 1) :]
        for seg in segments:
            if seg.size == 0:  # nothing to read (and no `.log` made for an idle replica)
                continue
            position = 0
            if start_offset > seg.base_offset:
                found = seg.translate_offset(start_offset)
                if found is None:
                    continue
                position = found[0]
            for pos, header in seg.iter_headers(position):
                yield header, (seg.read_bytes(pos, header.size) if header.is_control else None)

    # ---- aborted transactions (`.txnindex`) ---------------------------------------------------

    def append_aborted_txn(self, txn: AbortedTxn) -> None:
        """Record a transaction aborted by the marker at `txn.last_offset` (just appended) in the
        `.txnindex` of the segment holding the marker."""
        with self._lock:
            self._check_open()
            i = max(0, bisect_right(self._bases, txn.last_offset) - 1)
            self._segments[i].txn_index.append(txn)

    def collect_aborted_txns(self, fetch_offset: int, upper_bound: int) -> list[AbortedTxn]:
        """The aborted transactions that may have records in [fetch_offset, upper_bound): what a
        read_committed fetch lists so the client can drop their records. A transaction's marker
        is never before its data, so segments before the one holding `fetch_offset` are skipped."""
        with self._lock:
            self._check_open()
            i = max(0, bisect_right(self._bases, fetch_offset) - 1)
            out: list[AbortedTxn] = []
            for seg in self._segments[i:]:
                out += seg.txn_index.collect(fetch_offset, upper_bound)
            return out

    # ---- offsets by timestamp -------------------------------------------------------------------

    def offset_for_timestamp(self, timestamp: int) -> TimestampOffset | None:
        """ListOffsets: -2 earliest, -1 latest, -3 max timestamp, else the first record with
        timestamp >= `timestamp` (None when there is none)."""
        with self._lock:
            self._check_open()
            if timestamp == EARLIEST_TIMESTAMP:
                first = self.epochs.earliest_entry
                epoch = first[0] if first is not None and first[1] <= self.log_start_offset else None
                return TimestampOffset(self.log_start_offset, NO_TIMESTAMP, epoch)
            if timestamp == LATEST_TIMESTAMP:
                return TimestampOffset(self._leo, NO_TIMESTAMP, self.epochs.latest_epoch)
            if timestamp == MAX_TIMESTAMP:
                best = max(self._segments, key=lambda s: s.max_timestamp_so_far)
                if best.max_timestamp_so_far < 0:
                    return None
                return TimestampOffset(
                    best.offset_of_max_timestamp_so_far, best.max_timestamp_so_far, self.epochs.latest_epoch
                )
            if timestamp < 0:
                raise ValueError(f"invalid ListOffsets timestamp {timestamp}")
            for seg in self._segments:
                if seg.largest_timestamp >= timestamp:
                    found = seg.find_offset_by_timestamp(timestamp, self.log_start_offset)
                    if found is not None:
                        epoch = (
                            found.leader_epoch
                            if found.leader_epoch is not None and found.leader_epoch >= 0
                            else None
                        )
                        return TimestampOffset(found.offset, found.timestamp, epoch)
            return None

    # ---- truncation and log start -----------------------------------------------------------------

    def truncate_to(self, offset: int) -> bool:
        """Remove everything at and after `offset` (follower truncation). True when data was removed.

        The whole batch holding `offset` goes; the log end offset becomes `offset` (Kafka's rule).
        """
        if offset < 0:
            raise ValueError(f"cannot truncate to negative offset {offset}")
        with self._lock:
            self._check_open()
            if offset >= self._leo:
                self.epochs.truncate_from_end(offset)
                return False
            if offset < self._bases[0]:
                self._truncate_fully(offset)
                return True
            doomed = [seg for seg in self._segments if seg.base_offset > offset]
            self._schedule_delete(doomed)
            active = self._segments[-1]
            active.ensure_indexes()
            active.truncate_to(offset, self._now_ms())
            self._leo = offset
            self.recovery_point = min(self.recovery_point, offset)
            self.log_start_offset = min(self.log_start_offset, offset)
            self.epochs.truncate_from_end(offset)
            if self._roll_flush_offset > offset:
                self._roll_flush_offset = -1
            return True

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Delete all data and restart the log empty at `offset` (follower out of range)."""
        if offset < 0:
            raise ValueError(f"cannot restart a log at negative offset {offset}")
        with self._lock:
            self._check_open()
            self._truncate_fully(offset)

    def _truncate_fully(self, offset: int) -> None:
        doomed = list(self._segments)
        self._schedule_delete(doomed, keep_active=False)
        self._add_segment(self._new_segment(offset))
        self._leo = self.log_start_offset = self.recovery_point = offset
        self._roll_flush_offset = -1
        self.epochs.clear()

    def increment_log_start_offset(self, offset: int) -> bool:
        """Raise the log start offset (DeleteRecords, follower catching up with the leader's).

        The caller checks `offset <= high watermark`; here it must not pass the log end offset.
        Whole segments below it are removed by the next retention check.
        """
        with self._lock:
            self._check_open()
            if offset > self._leo:
                raise OffsetOutOfRangeError(
                    f"{self.dir_path.name}: log start {offset} would pass the log end {self._leo}",
                    log_start_offset=self.log_start_offset,
                    log_end_offset=self._leo,
                )
            if offset <= self.log_start_offset:
                return False
            self.log_start_offset = offset
            self.epochs.truncate_from_start(offset)
            return True

    # ---- retention ------------------------------------------------------------------------------

    def delete_old_segments(self, now_ms: int | None = None, high_watermark: int | None = None) -> int:
        """Retention (Kafka §4): whole segments, oldest first, never above `high_watermark`
        (default: the log end). Time and size rules apply only with cleanup.policy delete; the
        log-start rule always. Returns the number of segments deleted."""
        with self._lock:
            self._check_open()
            now = self._now_ms() if now_ms is None else now_ms
            hw = self._leo if high_watermark is None else min(high_watermark, self._leo)
            config = self.config
            deleted = 0
            if config.delete:
                if config.retention_ms >= 0:
                    deleted += self._delete_prefix(retention_ms_breached(now, config.retention_ms), hw, now)
                if config.retention_bytes >= 0:
                    total = sum(seg.size for seg in self._segments)
                    deleted += self._delete_prefix(
                        retention_size_breached(total, config.retention_bytes), hw, now
                    )
            deleted += self._delete_prefix(log_start_offset_breached(self.log_start_offset), hw, now)
            self.delete_expired_files(now)
            return deleted

    def _delete_prefix(self, predicate, high_watermark: int, now_ms: int) -> int:
        n = deletable_prefix(self._segments, self._leo, high_watermark, predicate)
        if n == 0:
            return 0
        if n == len(self._segments):
            self._roll(self._leo)  # never delete the active segment: replace it with an empty one
        doomed = self._segments[:n]
        self._schedule_delete(doomed, now_ms=now_ms)
        if self._bases[0] > self.log_start_offset:
            self.log_start_offset = self._bases[0]
            self.epochs.truncate_from_start(self.log_start_offset)
        return n

    def _schedule_delete(
        self, doomed: list[LogSegment], *, keep_active: bool = True, now_ms: int | None = None
    ) -> None:
        """Remove segments from the log, rename their files `.deleted` and delete them after
        file.delete.delay.ms (at once when 0)."""
        if not doomed:
            return
        due = (self._now_ms() if now_ms is None else now_ms) + self.config.file_delete_delay_ms
        for seg in doomed:
            i = self._segments.index(seg)
            del self._segments[i]
            del self._bases[i]
            try:
                seg.change_suffix(DELETED_SUFFIX)
            except OSError as e:
                # the in-memory view no longer matches the disk: stop using this log; the next
                # load rebuilds a consistent one from the files (Kafka takes the dir offline)
                self._fail(e)
            self._pending_deletes.append((due, seg))
        if self.on_delete_scheduled is not None:
            self.on_delete_scheduled(self)
        self._dir_dirty = True
        if keep_active and not self._segments:
            raise StorageError(f"{self}: deleted the active segment")
        if self.config.file_delete_delay_ms <= 0:
            self.delete_expired_files(due)

    @property
    def has_pending_deletes(self) -> bool:
        return bool(self._pending_deletes)

    def delete_expired_files(self, now_ms: int) -> int:
        """Physically delete `.deleted` segments whose delay has passed. Returns how many."""
        if not self._pending_deletes:
            # the common case, checked without the lock; one queued meanwhile is seen next round
            return 0
        with self._lock:
            if self._cleaning and not self._closed:
                return 0
            keep, done = [], 0
            for due, seg in self._pending_deletes:
                if due <= now_ms:
                    seg.delete_files()
                    done += 1
                else:
                    keep.append((due, seg))
            self._pending_deletes = keep
            return done

    # ---- flush ----------------------------------------------------------------------------------

    def flush(self, up_to: int | None = None, *, fsync: bool = True) -> None:
        """fsync the segments holding [recovery point, up_to) (default: the log end) and move the
        recovery point there. `fsync=False` only writes what is buffered and moves the recovery
        point: for a caller that syncs the whole filesystem before it checkpoints the recovery
        point (the manager's shutdown: one syncfs instead of an fsync per file of every log)."""
        with self._lock:
            self._check_open()
            self._flush(self._leo if up_to is None else min(up_to, self._leo), fsync=fsync)

    def _flush(self, up_to: int, *, fsync: bool = True) -> None:
        start = self.recovery_point
        if up_to > start:
            first = max(0, bisect_right(self._bases, start) - 1)
            for i in range(first, len(self._segments)):
                if self._bases[i] >= up_to:
                    break
                if self._segments[i].flush(fsync=fsync):
                    self._dir_dirty = True
        # The leader-epoch checkpoint (and the dir) before the recovery point moves: a restart
        # re-derives epochs from the batches above the recovery point only, so a change that
        # failed to be written must fail this flush rather than be passed.
        self._write_epochs(sync=fsync)  # without fsync: before the caller's syncfs
        if fsync and self._dir_dirty:
            fsync_dir(self.directory)
            self._dir_dirty = False
        if fsync and self._parent_dirty:
            fsync_dir(os.path.dirname(self.directory))
            self._parent_dirty = False
        if up_to > start:
            self.recovery_point = up_to
        if self._roll_flush_offset <= up_to:
            self._roll_flush_offset = -1
        self.last_flush_ms = self._now_ms()

    def flush_if_due(self, now_ms: int) -> bool:
        """The manager's periodic flush: flush.ms elapsed, or a rolled segment not yet fsynced."""
        with self._lock:
            if self._closed:
                return False
            if self._roll_flush_offset >= 0:
                self._flush(self._roll_flush_offset)
                return True
            if now_ms - self.last_flush_ms >= self.config.flush_ms and self._leo > self.recovery_point:
                self._flush(self._leo)
                return True
            return False

    # ---- compaction support ---------------------------------------------------------------------

    def begin_cleaning(self) -> bool:
        """The cleaner is about to read segments without the lock: keep their files open until
        `end_cleaning`. False when the log is closed or another round is running."""
        with self._lock:
            if self._closed or self._cleaning:
                return False
            self._cleaning = 1
            self.cleaning_aborted = False
            if self._cleaning_done is None:
                self._cleaning_done = threading.Condition(self._lock)
            return True

    def end_cleaning(self) -> None:
        with self._lock:
            self._cleaning = 0
            if self._cleaning_done is not None:
                self._cleaning_done.notify_all()
            if not self._closed:
                self.delete_expired_files(self._now_ms())  # deletes that waited for the cleaner

    def _abort_cleaning(self, timeout: float = 60.0) -> None:
        """Ask a running cleaner to stop and wait for it (Kafka's abortCleaning)."""
        if self._cleaning and self._cleaning_done is not None:
            self.cleaning_aborted = True
            if not self._cleaning_done.wait_for(lambda: not self._cleaning, timeout):
                log.error("%s: the cleaner did not stop within %.0f s", self, timeout)

    def new_cleaned_segment(self, base_offset: int) -> LogSegment:
        """An empty `<base>.log.cleaned` segment (with indexes) for the cleaner to fill."""
        with self._lock:
            for suffix in (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX):
                segment_file(self.dir_path, base_offset, suffix, CLEANED_SUFFIX).unlink(missing_ok=True)
            return self._new_segment(base_offset, suffix=CLEANED_SUFFIX)

    def replace_segments(self, cleaned: LogSegment, old: list[LogSegment]) -> None:
        """Swap a finished `.cleaned` segment in for `old` (Kafka's replaceSegments):
        `.cleaned` -> `.swap`, old segments -> `.deleted`, `.swap` -> final name. A crash at any
        point is completed or undone by the next load (`_complete_swap`)."""
        with self._lock:
            self._check_open()
            if any(seg not in self._segments for seg in old):
                raise CleaningAbortedError(f"{self}: segments changed during cleaning")
            if old[-1] is self._segments[-1]:
                raise StorageError(f"{self}: the active segment cannot be replaced")
            cleaned.change_suffix(SWAP_SUFFIX)  # failing here changes nothing: the caller cleans up
            self._schedule_delete(old)
            try:
                cleaned.change_suffix("")
            except OSError as e:
                self._fail(e)
            i = bisect_right(self._bases, cleaned.base_offset)
            self._segments.insert(i, cleaned)
            self._bases.insert(i, cleaned.base_offset)
            self._dir_dirty = True
            fsync_dir(self.directory)

    # ---- lifecycle ------------------------------------------------------------------------------

    def _fail(self, error: OSError) -> None:
        """An I/O error in the middle of a multi-step change: close without writing anything more
        and raise. Every such change is ordered so that the next load completes or undoes it."""
        log.error("%s: I/O error, closing the log: %s", self, error)
        self.close_without_flush()
        raise StorageError(f"{self.directory}: {error}") from error

    def close(self) -> None:
        """Write out the indexes (with the final time entry) and close every file. No fsync:
        call `flush()` first for durability (the manager's shutdown does)."""
        with self._lock:
            if self._closed:
                return
            self._abort_cleaning()
            self._closed = True
            try:
                self._write_epochs()
            except OSError as e:
                log.warning("%s: writing the leader-epoch checkpoint: %s", self, e)
            self.delete_expired_files(1 << 62)
            for seg in self._segments:
                seg.close_quietly()

    def close_without_flush(self) -> None:
        """Close descriptors without writing anything more -- what a crash leaves on disk (tests,
        failed loads)."""
        with self._lock:
            self._closed = True
            for seg in [*self._segments, *(s for _, s in self._pending_deletes)]:
                seg.abandon()

    def delete(self) -> None:
        """Close the log and remove its directory."""
        with self._lock:
            self.close()
            shutil.rmtree(self.directory, ignore_errors=True)
