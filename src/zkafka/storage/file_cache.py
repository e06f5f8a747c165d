"""A bounded cache of open segment `.log` descriptors, shared by every log of a broker.

Why: a broker holding 67,000 replicas has at least 67,000 `.log` files, but a process may have
only 20,000 descriptors (a hard `RLIMIT_NOFILE` an operator cannot always raise) and its
connections need some of them. Kafka keeps every segment open and asks operators for a limit of
100,000 or more; zkafka keeps at most `zkafka.log.max.open.files` `.log` descriptors open
(indexes hold none: `zkafka.storage.index`), opening one on demand and closing the least recently
used one beyond the bound. A partition being written keeps its active segment's descriptor, since
every append touches it; an idle replica holds none.

Rules that keep it correct:
- Every use of a descriptor is inside a *pin* (`SegmentFile.acquire` / `release`, or a
  `FileLease` that a fetch response holds until its bytes are read): a pinned descriptor is never
  closed, by eviction or by the segment's own close or delete; those wait for the last pin. So a
  descriptor number is never read after it was closed and reused for another file.
- Eviction only closes: nothing is written there, so flush and fsync semantics are the segment's
  own (it remembers writes not yet fsynced and reopens the file to fsync them: fsync works on the
  inode, whichever descriptor wrote the pages).
- Leases are bounded: at most half the capacity of them at once (`SegmentFile.try_lease` answers
  None beyond that, and the fetch path then reads the bytes at once instead of keeping the file
  pinned). One fetch over 30,000 partitions would otherwise pin 30,000 descriptors.
- A file is renamed through the cache (`SegmentFile.rename`): the rename on disk and the new
  `path` change together under its lock, so a reopen by another thread never uses a stale name.
- Opening that hits EMFILE/ENFILE closes half of the unpinned descriptors and tries once more; a
  second failure is a `StorageError` for that request, not a failed log dir.
"""

from __future__ import annotations

import errno
import logging
import os
import resource
import threading
import weakref
from collections import OrderedDict, deque
from pathlib import Path

from zkafka.storage.errors import LogClosedError, StorageError

log = logging.getLogger(__name__)

# Descriptors left to everything but segment files when the bound is derived from RLIMIT_NOFILE:
# connections, sockets to ZooKeeper and other brokers, checkpoint and index files opened for
# one write, the interpreter's own.
_RESERVED_FRACTION = 0.5
_MIN_CAPACITY = 16
_OPEN_FLAGS = os.O_RDWR | os.O_APPEND | getattr(os, "O_CLOEXEC", 0)
_CREATE_FLAGS = _OPEN_FLAGS | os.O_CREAT | os.O_TRUNC


def default_capacity(nofile_soft: int | None = None) -> int:
    """Half of the process's soft RLIMIT_NOFILE (the rest for connections and short-lived files),
    at least 16."""
    if nofile_soft is None:
        nofile_soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if nofile_soft == resource.RLIM_INFINITY or nofile_soft <= 0:
        nofile_soft = 1 << 20
    return max(_MIN_CAPACITY, int(nofile_soft * (1 - _RESERVED_FRACTION)))


class SegmentFile:
    """The descriptor slot of one `.log` file: open while in the cache or pinned, else None."""

    __slots__ = ("absent", "cache", "closed", "fd", "path", "pins")

    def __init__(
        self, cache: FileCache, path: str | Path, *, create: bool = False, on_first_use: bool = False
    ) -> None:
        self.cache = cache
        self.path = path  # a str from a segment: no Path per replica
        self.fd: int | None = None
        self.pins = 0
        self.closed = False
        self.absent = create and on_first_use
        """Not made yet: the first `acquire` creates it (emptying a stale file, as `create` does)."""
        if create and not on_first_use:  # a new segment: made empty now, and kept open
            cache.create(self)

    def acquire(self) -> int:
        """Pin the file open and return its descriptor; `release` exactly once afterwards."""
        return self.cache.acquire(self)

    def release(self) -> None:
        self.cache.release(self)

    def close(self) -> None:
        """The owner is done with the file (segment closed or deleted): close it now, or when the
        last pin is released."""
        self.cache.close(self)

    def rename(self, target: Path) -> None:
        """Rename the file to `target`, atomically with respect to a reopen (see `FileCache.rename`)."""
        self.cache.rename(self, target)

    def lease(self) -> FileLease:
        return FileLease(self)

    def try_lease(self) -> FileLease | None:
        """A lease, or None when the cache's lease budget is spent (read the bytes now instead)."""
        cache = self.cache
        if cache.leases >= cache.max_leases:
            return None
        return FileLease(self)


class FileLease:
    """A pin held by a value that outlives the call that made it (a fetch response's records,
    read when the response is written). Released by `release()` or, failing that, when the lease
    is garbage (a response never written: its connection closed)."""

    __slots__ = ("_file", "fd")

    def __init__(self, file: SegmentFile) -> None:
        self.fd = file.acquire()
        self._file: SegmentFile | None = file
        file.cache.leases += 1

    def release(self) -> None:
        file, self._file = self._file, None
        if file is not None:
            file.cache.leases -= 1
            file.release()

    def __del__(self) -> None:
        file = getattr(self, "_file", None)  # unset when acquire() raised in __init__
        self._file = None
        if file is not None:
            file.cache.leases -= 1  # an int store under the GIL: no lock needed for a budget
            # a finalizer may run inside the cache's own locked section (a GC pass started by an
            # allocation there): hand the release over instead of taking the lock here
            file.cache.release_later(file)


class FileCache:
    """At most `capacity` unpinned `.log` descriptors open; least recently used closed first.
    Thread-safe (appends on the event loop, log creation and the cleaner in threads)."""

    def __init__(self, capacity: int | None = None) -> None:
        self.capacity = default_capacity() if capacity is None or capacity <= 0 else capacity
        self.max_leases = max(1, self.capacity // 2)
        self.leases = 0  # FileLeases alive (approximate under threads: it is a budget, not a bound)
        self._lock = threading.Lock()
        self._open: OrderedDict[SegmentFile, None] = OrderedDict()  # least recently used first
        self._late_releases: deque[SegmentFile] = deque()
        self.opens = 0
        self.evictions = 0
        _caches.add(self)

    def __repr__(self) -> str:
        return f"FileCache(open={len(self._open)}, capacity={self.capacity})"

    @property
    def open_count(self) -> int:
        return len(self._open)

    def pinned_count(self) -> int:
        with self._lock:
            return sum(1 for f in self._open if f.pins)

    # ---- pins -----------------------------------------------------------------------------------

    def create(self, file: SegmentFile) -> None:
        """Create (or empty) the file and keep it open."""
        with self._lock:
            if self._late_releases:
                self._drain_late_releases()
            self._open_file(file, _CREATE_FLAGS)

    def acquire(self, file: SegmentFile) -> int:
        with self._lock:
            if self._late_releases:
                self._drain_late_releases()
            fd = file.fd
            if fd is None:
                if file.closed:
                    raise LogClosedError(f"{file.path} is closed")
                fd = self._open_file(file, _CREATE_FLAGS if file.absent else _OPEN_FLAGS)
                file.absent = False
            else:
                self._open.move_to_end(file)
            file.pins += 1
            return fd

    def release(self, file: SegmentFile) -> None:
        with self._lock:
            self._release(file)
            if self._late_releases:
                self._drain_late_releases()

    def release_later(self, file: SegmentFile) -> None:
        """A finalizer's release: now when the lock is free, else by the next call that takes it
        (the lock may be held by this very thread, below the finalizer)."""
        self._late_releases.append(file)  # deque.append is atomic: no lock
        if self._lock.acquire(blocking=False):
            try:
                self._drain_late_releases()
            finally:
                self._lock.release()

    def _release(self, file: SegmentFile) -> None:
        file.pins -= 1
        if file.pins:
            return
        if file.closed:
            self._close(file)
        elif len(self._open) > self.capacity:
            self._make_room(0)

    def _drain_late_releases(self) -> None:
        late = self._late_releases
        while late:
            self._release(late.popleft())

    def close(self, file: SegmentFile) -> None:
        with self._lock:
            if self._late_releases:
                self._drain_late_releases()
            file.closed = True
            if not file.pins:
                self._close(file)

    def rename(self, file: SegmentFile, target: Path) -> None:
        """Rename the file on disk and its `path` in one step under the lock: an evicted file
        reopened by another thread (the cleaner reads without the log's lock) between the two
        would otherwise open the old name, gone already (ENOENT). An open descriptor follows the
        inode, so it needs nothing. A file still `absent` (made by its first use, not used yet)
        has nothing on disk to rename: only its name changes (a new replica restarted at another
        offset, `Log.truncate_fully_and_start_at`, renames its never-written first segment)."""
        with self._lock:
            if not file.absent:
                os.replace(file.path, target)
            file.path = target

    # ---- descriptors ----------------------------------------------------------------------------

    def _open_file(self, file: SegmentFile, flags: int = _OPEN_FLAGS) -> int:
        self._make_room(1)
        try:
            fd = os.open(file.path, flags, 0o644)
        except OSError as e:
            if e.errno not in (errno.EMFILE, errno.ENFILE):
                raise
            unpinned = sum(1 for f in self._open if not f.pins)
            log.warning(
                "out of descriptors opening %s with %d segment files open (%d pinned): closing half "
                "of the unpinned ones; lower zkafka.log.max.open.files or raise the open files limit",
                file.path,
                len(self._open),
                len(self._open) - unpinned,
            )
            self._evict(max(1, unpinned // 2))
            try:
                fd = os.open(file.path, flags, 0o644)
            except OSError as e2:
                raise StorageError(f"cannot open {file.path}: {e2}") from e2
        self.opens += 1
        file.fd = fd
        self._open[file] = None
        return fd

    def relieve(self) -> int:
        """Close half of the unpinned descriptors (another open in this process hit EMFILE)."""
        with self._lock:
            unpinned = sum(1 for f in self._open if not f.pins)
            before = self.evictions
            self._evict(max(1, unpinned // 2))
            return self.evictions - before

    def _make_room(self, needed: int) -> None:
        excess = len(self._open) + needed - self.capacity
        if excess > 0:
            self._evict(excess)

    def _evict(self, n: int) -> None:
        victims = []
        for f in self._open:  # oldest first; pinned ones stay
            if not f.pins:
                victims.append(f)
                if len(victims) >= n:
                    break
        for f in victims:
            self._close(f)
        self.evictions += len(victims)

    def _close(self, file: SegmentFile) -> None:
        fd = file.fd
        if fd is None:
            return
        file.fd = None
        del self._open[file]
        try:
            os.close(fd)
        except OSError as e:  # nothing is lost: writes went to the page cache at write time
            log.warning("closing %s: %s", file.path, e)


_caches: weakref.WeakSet[FileCache] = weakref.WeakSet()


def open_or_relieve(path: str | Path, flags: int, mode: int = 0o644) -> int:
    """`os.open` for storage's short-lived opens (index and checkpoint writes): on EMFILE/ENFILE,
    every descriptor cache of the process closes half of its unpinned files and the open is tried
    once more."""
    try:
        return os.open(path, flags, mode)
    except OSError as e:
        if e.errno not in (errno.EMFILE, errno.ENFILE):
            raise
        freed = sum(cache.relieve() for cache in list(_caches))
        log.warning("out of descriptors opening %s: closed %d cached segment files", path, freed)
        return os.open(path, flags, mode)


_default: FileCache | None = None
_default_guard = threading.Lock()


def default_file_cache() -> FileCache:
    """The process-wide cache of logs opened without one (tools, tests): bounded by RLIMIT_NOFILE."""
    global _default
    with _default_guard:
        if _default is None:
            _default = FileCache()
        return _default
