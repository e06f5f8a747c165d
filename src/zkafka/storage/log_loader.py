"""Opening a partition's log directory: what `Log` does once, before it serves anything.

Kafka's load sequence (reference §3.2): drop the leftovers of interrupted work (`.deleted`,
`.cleaned`, `.tmp`, index swaps and orphan indexes), finish an interrupted compaction swap, open the
segments in offset order, and, after an unclean shutdown, re-validate every segment from the
recovery point on batch by batch (framing + CRC-32C), cutting a torn or corrupt tail and dropping
the segments after it. The leader-epoch cache is read from its checkpoint, or rebuilt from the
batches' partitionLeaderEpoch fields when the checkpoint is missing or corrupt.

Kept apart from `log.py` because it changes for other reasons (crash recovery, file layout) than
the running log (appends, reads, retention), and runs before any lock or reader exists.
"""

from __future__ import annotations

import logging
import os
from bisect import bisect_right
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from zkafka.records.batch import BatchHeader
from zkafka.storage.checkpoint import LEADER_EPOCH_CHECKPOINT
from zkafka.storage.errors import CheckpointError
from zkafka.storage.leader_epoch import LeaderEpochCache
from zkafka.storage.naming import (
    CLEANED_SUFFIX,
    DELETED_SUFFIX,
    INDEX_SUFFIX,
    INDEX_SUFFIXES,
    LOG_SUFFIX,
    SWAP_SUFFIX,
    TIME_INDEX_SUFFIX,
    filename_prefix,
    offset_from_filename,
    snapshot_offsets_in,
)
from zkafka.storage.segment import LogSegment

# The log's own logger: recovery lines stay where operators (and their log filters) found them.
log = logging.getLogger("zkafka.storage.log")

SegmentFactory = Callable[..., LogSegment]
"""`new_segment(base_offset, *, suffix="", create=True, log_on_first_write=False)`: a segment of the
log being loaded."""


def load_epoch_cache(dir_path: str | Path, present: bool) -> tuple[LeaderEpochCache, bool]:
    """The cache from `leader-epoch-checkpoint`; (empty cache, True) when the file is corrupt
    or missing and must be rebuilt from the batches' partitionLeaderEpoch fields (only done
    when the log turns out to hold data). `present`: the directory's listing has the file (a
    listing made anyway, instead of a stat per replica at start-up)."""
    path = f"{os.fspath(dir_path)}/{LEADER_EPOCH_CHECKPOINT}"  # a str: no Path (nor os.path.join) per replica
    if not present:
        return LeaderEpochCache(path), True
    try:
        return LeaderEpochCache.load(path), False
    except CheckpointError as e:
        log.warning("%s; rebuilding the leader epoch cache from the log", e)
        return LeaderEpochCache(path), True


def open_log_dir(
    dir_path: Path | str,
    new_segment: SegmentFactory,
    name: object,
    had_clean_shutdown: bool,
    recovery_point: int,
    log_start_offset: int,
    *,
    listing: list[str] | None = None,
    make_dir: bool = True,
    absent: bool = False,
) -> tuple[LeaderEpochCache, LoadedLog]:
    """A log's leader-epoch cache and segments: loaded from its directory, or, when the directory
    does not exist yet, a new empty log in a directory made here. A directory this call made holds
    nothing to list, check or recover: a new log costs its directory, and its first `.log` when it
    is first written (topic creation makes thousands of logs at once). `listing`: the names in the
    directory, listed by the caller (the log manager's start-up, `prefetch_listings`), so no
    `mkdir` is tried first. One listing serves the whole load: a broker restarting with tens of
    thousands of replicas pays a few system calls each, not a dozen.

    Without `make_dir` a directory that does not exist is not made either: the new log (from
    offset 0 only) is then `LoadedLog.dir_made` False, and its owner makes the directory before
    its first file (`Log._ensure_dir`). A `mkdir` is most of what a new replica costs the file
    system (~70 us of CPU on ext4, against a few for the failed listing), and a topic's creation
    makes one per replica. (Paths are strs here for that reason: a Path costs a parse and
    ~0.5 KiB, and start-up loads as many logs.) With `absent` too the caller knows there is no
    directory (the log manager: it loaded every log directory of its data dirs at start-up and
    made or renamed every one since), and the failed listing that would find out is skipped as
    well (~3 us of system call and a raised FileNotFoundError per replica)."""
    dir_path = os.fspath(dir_path)
    if listing is None and not make_dir and log_start_offset == 0:
        try:
            listing = None if absent else os.listdir(dir_path)
        except FileNotFoundError:
            pass
        if listing is None:
            epochs = LeaderEpochCache(f"{dir_path}/{LEADER_EPOCH_CHECKPOINT}")
            loaded = LogLoader(dir_path, new_segment, epochs, name).create(log_start_offset)
            loaded.changed = False
            loaded.dir_made = False
            return epochs, loaded
    if listing is None:
        try:
            os.mkdir(dir_path)
        except FileExistsError:
            listing = os.listdir(dir_path)
        else:
            epochs = LeaderEpochCache(f"{dir_path}/{LEADER_EPOCH_CHECKPOINT}")
            return epochs, LogLoader(dir_path, new_segment, epochs, name).create(log_start_offset)
    epochs, rebuild_epochs = load_epoch_cache(dir_path, LEADER_EPOCH_CHECKPOINT in listing)
    loaded = LogLoader(dir_path, new_segment, epochs, name).load(
        had_clean_shutdown, recovery_point, log_start_offset, rebuild_epochs, listing
    )
    return epochs, loaded


LISTING_CHUNK = 256
"""Directories one listing task lists: a task (a future, a queue hand-off) per replica would cost
the loading thread more than the listing it saves."""


def _list_dirs(paths: list[str]) -> list[list[str] | None]:
    out: list[list[str] | None] = []
    for path in paths:
        try:
            out.append(os.listdir(path))
        except OSError:
            out.append(None)  # listed again by its load, which reports the error as before
    return out


def prefetch_listings(paths: list[str], threads: int) -> Iterator[list[str] | None]:
    """The names in each of `paths`, in order, listed ahead by `threads` worker threads (None for
    a directory that could not be listed). Listing a directory is a system call that releases the
    GIL: at start-up, while the calling thread loads one log, the workers list the next ones'
    directories -- a third of a start-up's time with tens of thousands of replicas, and real I/O
    when the page cache is cold. Nothing else writes these directories while the broker starts."""
    chunks = [paths[i : i + LISTING_CHUNK] for i in range(0, len(paths), LISTING_CHUNK)]
    if not chunks:
        return
    pool = ThreadPoolExecutor(max(1, threads), thread_name_prefix="log-listing")
    try:
        for listings in pool.map(_list_dirs, chunks):
            yield from listings
    finally:
        pool.shutdown(wait=True, cancel_futures=True)  # a load that failed stops the listing


@dataclass
class LoadedLog:
    """What a log directory holds once loaded: its segments in offset order (never empty) and
    its offsets."""

    segments: list[LogSegment]
    log_end_offset: int
    log_start_offset: int
    recovery_point: int
    changed: bool = False
    """Files were created or deleted: the directory entry wants an fsync."""
    recovered_from: int | None = None
    """After an unclean shutdown, the base offset of the first segment re-validated: from there on
    the `.txnindex` files may have lost entries with the page cache (a power loss), and the owner
    of the producer state re-adds them as it replays the markers (Kafka's recoverSegment)."""
    dir_made: bool = True
    """The directory exists (False: a new empty log whose directory waits for its first file)."""
    snapshot_offsets: list[int] = field(default_factory=list)
    """The producer-state snapshots the directory held, from the load's own listing: the first
    producer-state rebuild needs them, and need not list the directory again."""


@dataclass
class LogLoader:
    dir_path: str
    new_segment: SegmentFactory
    epochs: LeaderEpochCache
    name: object  # for log lines: the Log (formatted with %s only when a line is written)
    _segments: list[LogSegment] = field(default_factory=list)
    _bases: list[int] = field(default_factory=list)
    _changed: bool = False
    _recovered_from: int | None = None

    def load(
        self,
        had_clean_shutdown: bool,
        recovery_point: int,
        log_start_offset: int,
        rebuild_epochs: bool,
        names: list[str] | None = None,
    ) -> LoadedLog:
        """`names`: the directory's listing, when the caller has just made it."""
        try:
            return self._load(
                had_clean_shutdown,
                recovery_point,
                log_start_offset,
                rebuild_epochs,
                os.listdir(self.dir_path) if names is None else names,
            )
        except BaseException:
            for seg in self._segments:
                seg.close_quietly()
            raise

    def _load(
        self,
        had_clean_shutdown: bool,
        recovery_point: int,
        log_start_offset: int,
        rebuild_epochs: bool,
        names: list[str],
    ) -> LoadedLog:
        if self._remove_temporary_files(names):
            names = os.listdir(self.dir_path)  # files were deleted or renamed: list again
        present = set(names)
        bases = sorted(
            b for name in names if name.endswith(LOG_SUFFIX) and (b := offset_from_filename(name)) is not None
        )
        for base in bases:
            seg = self.new_segment(base, create=False)
            prefix = filename_prefix(base)
            if seg.size and not (  # an empty one's are made on first write
                prefix + INDEX_SUFFIX in present and prefix + TIME_INDEX_SUFFIX in present
            ):
                # Kafka recovers such a segment; below the recovery point the data is trusted, so
                # rebuilding the indexes from the batch headers is enough (done lazily)
                log.info("%s has no index; it will be rebuilt", seg.log_path)
            self._segments.append(seg)
            self._bases.append(base)
        if not had_clean_shutdown and self._segments:
            self._recover_from(recovery_point)
        if not self._segments:  # a new log never written (`create`), or a crash before its `.log`
            self._add(self.new_segment(log_start_offset, log_on_first_write=log_start_offset == 0))
        # the active segment's indexes are loaded by their first use (an append, a read, a
        # truncation), as Kafka's lazy indexes are: most replicas of a restarted broker are idle
        leo = self._segments[-1].read_next_offset()
        if leo < log_start_offset:
            log.warning(
                "%s: log end %d is below the log start %d; emptying it", self.name, leo, log_start_offset
            )
            self._delete_now(list(self._segments))
            self._add(self.new_segment(log_start_offset))
            leo = log_start_offset
        start = max(log_start_offset, self._bases[0])
        if rebuild_epochs and leo > self._bases[0]:
            self._rebuild_epoch_cache()
        self.epochs.truncate_from_end(leo)
        self.epochs.truncate_from_start(start)
        return LoadedLog(
            self._segments,
            leo,
            start,
            leo if had_clean_shutdown else min(recovery_point, leo),
            self._changed,
            self._recovered_from,
            snapshot_offsets=snapshot_offsets_in(names),
        )

    def create(self, log_start_offset: int) -> LoadedLog:
        """The log of a directory just made (so empty): one empty segment, nothing to recover.
        From offset 0 its `.log` is made by the first write (or read) too: a directory without a
        `.log` loads as an empty log from 0. From any other offset the file is made now, since its
        name is what records where the log starts."""
        self._add(self.new_segment(log_start_offset, log_on_first_write=log_start_offset == 0))
        return LoadedLog(self._segments, log_start_offset, log_start_offset, log_start_offset, True)

    def _remove_temporary_files(self, names: list[str]) -> bool:
        """Kafka §3.2 step 2: drop `.deleted`, `.cleaned`, `.tmp` and orphan index files, and
        complete the swaps of `.log.swap` files (finished compactions). `names` is the directory's
        listing; True when anything was deleted or renamed (the listing is stale)."""
        swaps: list[int] = []
        logs: set[int] = set()
        changed = False
        for name in names:
            base = offset_from_filename(name)
            if name.endswith((DELETED_SUFFIX, CLEANED_SUFFIX, ".tmp")):
                Path(self.dir_path, name).unlink(missing_ok=True)
                changed = True
            elif base is not None and name.endswith(LOG_SUFFIX + SWAP_SUFFIX):
                swaps.append(base)
            elif base is not None and name.endswith(SWAP_SUFFIX):
                # index swaps: the swapped segment's indexes are rebuilt, never trusted
                Path(self.dir_path, name).unlink(missing_ok=True)
                changed = True
            elif base is not None and name.endswith(LOG_SUFFIX):
                logs.add(base)
        for name in names:
            base = offset_from_filename(name)
            if base is not None and name.endswith(INDEX_SUFFIXES) and base not in logs:
                log.info("deleting orphan index file %s/%s", self.dir_path, name)
                Path(self.dir_path, name).unlink(missing_ok=True)
                changed = True
        for base in sorted(swaps):
            self._complete_swap(base)
        return changed or bool(swaps)

    def _complete_swap(self, base: int) -> None:
        """A crash happened after a compacted segment became `.swap`: it holds everything of the
        segments it covers, so delete those and rename the swap into place."""
        swap = self.new_segment(base, suffix=SWAP_SUFFIX, create=False)
        try:
            swap.recover()
            end = swap.read_next_offset()
        except BaseException:
            swap.close_quietly()
            raise
        if swap.size == 0:
            log.warning("%s is empty; discarding it", swap.log_path)
            swap.delete_files()
            return
        for name in os.listdir(self.dir_path):
            old = offset_from_filename(name)
            if old is not None and base <= old < end and name.endswith((LOG_SUFFIX, *INDEX_SUFFIXES)):
                Path(self.dir_path, name).unlink(missing_ok=True)
        swap.change_suffix("")
        swap.close()
        log.info("completed the interrupted swap of %s (offsets %d..%d)", swap.log_path, base, end)

    def _recover_from(self, recovery_point: int) -> None:
        """Re-validate every segment holding offsets >= `recovery_point`; after the first one that
        had to be cut, drop all later segments."""
        first = max(0, bisect_right(self._bases, recovery_point) - 1)
        self._recovered_from = self._bases[first]
        for i in range(first, len(self._segments)):
            seg = self._segments[i]
            cut = seg.recover(on_batch=self._epoch_from_recovered_batch)
            if cut:
                doomed = self._segments[i + 1 :]
                if doomed:
                    log.warning("%s: deleting %d segments after the corrupt one", self.name, len(doomed))
                    self._delete_now(doomed)
                break
        # Empty trailing segments hold no data; after a crash they may sit above a hole left by
        # lost writes (a roll whose first batch never reached the disk). Dropping them makes the
        # log end offset the end of the last intact batch.
        while len(self._segments) > 1 and self._segments[-1].size == 0:
            self._delete_now([self._segments[-1]])

    def _epoch_from_recovered_batch(self, header: BatchHeader) -> None:
        epoch = header.partition_leader_epoch
        latest = self.epochs.latest_epoch
        if epoch >= 0 and (latest is None or epoch > latest):
            self.epochs.assign(epoch, header.base_offset)

    def _rebuild_epoch_cache(self) -> None:
        self.epochs.clear()
        for seg in self._segments:
            for _, header in seg.iter_headers():
                self._epoch_from_recovered_batch(header)

    def _add(self, seg: LogSegment) -> None:
        self._segments.append(seg)
        self._bases.append(seg.base_offset)
        self._changed = True

    def _delete_now(self, doomed: list[LogSegment]) -> None:
        for seg in doomed:
            i = self._segments.index(seg)
            del self._segments[i]
            del self._bases[i]
            seg.delete_files()
        self._changed = True
