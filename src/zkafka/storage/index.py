"""Sparse indexes of a segment: the common file handling and Kafka's offset index (`.index`).

Offset index entry (8 bytes, big-endian): int32 offset relative to the segment base, int32 byte
position of a batch in the `.log`. The entry for a batch is (batch last offset, batch start).

**Preallocation decision.** Kafka preallocates index files to `segment.index.bytes`, mmaps them
and trims them on roll/close, so an untrimmed file after a crash is full of zero entries. zkafka
does not preallocate: files hold exactly the entries written, appended with `os.write`. Entries
are kept in memory (two `array`s, looked up with `bisect`) and reach the file lazily -- in chunks,
and always on flush, roll, truncation and close. That is safe because an index is only trusted
below the recovery point, which moves only when `Log.flush` has written and fsynced the indexes;
every segment from the recovery point on is re-validated and its indexes rebuilt after an unclean
shutdown. Opening a file treats `length / entry size` entries as valid after cheap sanity checks
(length divisible, keys strictly increasing, positions inside the `.log`); failing them raises
`CorruptIndexError` and the segment rebuilds the index from its `.log`. `segment.index.bytes`
still caps the entry count (a full index forces a roll, as in Kafka).

Arrays are loaded lazily: a segment that is never read after startup costs no memory or I/O.

**Files made on first write.** A new segment's index files are created by their first write of
entries, or before the segment is flushed, rolled or closed once it holds data (`ensure_file`),
not when the segment is made: a new replica has no file until its first write (topic creation
makes thousands at once). An empty `.log` without index files loads as empty indexes; a non-empty
one without them is rebuilt from the `.log`, as after a crash.

**No descriptor is held.** An index opens its file for each write (a chunk of entries, a
truncation, an fsync) and closes it again, so a replica costs at most one descriptor (its `.log`,
and only while the broker's `FileCache` keeps it open: `zkafka.storage.file_cache`), not
three. With thousands of partitions per broker that is the difference between fitting in a
20,000-descriptor limit and losing the ZooKeeper session to EMFILE (measured: 6,667 replicas per
broker, `benchmarks/failover_bench.py`). Kafka gets the same effect by mmapping its indexes and
closing the file. The extra open/close happens once per 4 KiB of entries, i.e. every few MB of log.
"""

from __future__ import annotations

import operator
import os
import struct
import sys
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from zkafka.storage.errors import CorruptIndexError
from zkafka.storage.file_cache import open_or_relieve
from zkafka.storage.scan import read_exactly, read_whole_file, write_all

INT32_MAX = (1 << 31) - 1
# Entries buffered in memory before they are written to the file (bounded write amplification).
PENDING_FLUSH_BYTES = 4096


def lookup_offset(
    offsets: Sequence[int], positions: Sequence[int], base_offset: int, target: int
) -> tuple[int, int]:
    """(absolute offset, position) of the largest entry whose offset <= `target`; (base, 0) if none."""
    i = bisect_right(offsets, target - base_offset) - 1
    if i < 0:
        return base_offset, 0
    return base_offset + offsets[i], positions[i]


def lookup_position(
    offsets: Sequence[int], positions: Sequence[int], base_offset: int, position: int
) -> tuple[int, int]:
    """(absolute offset, position) of the largest entry whose position <= `position`; (base, 0) if none."""
    i = bisect_right(positions, position) - 1
    if i < 0:
        return base_offset, 0
    return base_offset + offsets[i], positions[i]


def strictly_increasing(values: Sequence[int]) -> bool:
    return all(map(operator.lt, values, values[1:]))


def non_decreasing(values: Sequence[int]) -> bool:
    return all(map(operator.le, values, values[1:]))


def entries_below(keys: Sequence[int], rel_key: int) -> int:
    """How many entries have key < rel_key (what `truncate_to` keeps)."""
    return bisect_left(keys, rel_key)


class SparseIndex:
    """An append-only file of fixed-size (key, value) entries mirrored by two in-memory arrays.

    Subclasses define the entry layout; this class owns the file, the lazy load and the pending
    (not yet written) tail. Invariant once loaded: the file holds the first `_on_disk` entries and
    `_pending` the encoded rest.
    """

    __slots__ = (
        "_absent",
        "_full_at",
        "_keys",
        "_on_disk",
        "_path",
        "_pending",
        "_rebuilding",
        "_unsynced",
        "_values",
        "base_offset",
        "max_entries",
    )

    entry_struct: struct.Struct
    key_type: str
    value_type: str
    reserved_slots = 0  # entries kept free for a forced final entry (the time index keeps one)

    def __init__(
        self, path: str | os.PathLike[str], base_offset: int, max_index_bytes: int, *, create: bool = False
    ) -> None:
        self._path = os.fspath(path)  # a str: ~0.5 KiB less than a Path, per file of every replica
        self.base_offset = base_offset
        self.max_entries = max(1, max_index_bytes // self.entry_struct.size)
        self._full_at = self.max_entries - self.reserved_slots
        self._keys: array | None = None
        self._values: array | None = None
        self._on_disk = 0
        self._pending = bytearray()
        self._unsynced = False  # written since the last fsync
        self._rebuilding = False  # between `reset` and `write_rebuilt`: the file is not written
        self._absent = False
        """A new index whose file is not made yet: the first write (or `ensure_file`) creates it,
        emptying whatever stale file sits at the path, as creating it up front did."""
        if create:  # the (empty) arrays too come with the first use: an idle replica holds none
            self._absent = True

    @property
    def path(self) -> Path:
        return Path(self._path)

    @path.setter
    def path(self, path: Path) -> None:
        self._path = os.fspath(path)

    # ---- loading --------------------------------------------------------------------------------

    @property
    def loaded(self) -> bool:
        return self._keys is not None

    def load(self, log_size: int) -> None:
        """Read and sanity-check the file (no-op when loaded). Raises CorruptIndexError/FileNotFoundError,
        the latter not for the index of an empty `.log`: a new segment's files are made on first
        write (see "Files made on first write" above), so an empty segment may have none."""
        if self._keys is not None:
            return
        if self._absent:
            self._keys, self._values = array(self.key_type), array(self.value_type)
            return
        try:
            data = read_whole_file(self._path)
        except FileNotFoundError:
            if log_size:
                raise
            data = b""
            self._absent = True  # made by `ensure_file` once the segment holds data
        size = self.entry_struct.size
        if len(data) % size:
            raise CorruptIndexError(f"{self.path}: length {len(data)} is not a multiple of {size}")
        keys, values = self._decode(data)
        self._check(keys, values, log_size)
        self._keys, self._values = keys, values
        self._on_disk = len(keys)

    def _decode(self, data: bytes) -> tuple[array, array]:
        keys, values = array(self.key_type), array(self.value_type)
        for k, v in self.entry_struct.iter_unpack(data):
            keys.append(k)
            values.append(v)
        return keys, values

    def _check(self, keys: array, values: array, log_size: int) -> None:
        raise NotImplementedError

    def _arrays(self) -> tuple[array, array]:
        if self._keys is None and self._absent:
            self.load(0)  # a new index: empty
        if self._keys is None or self._values is None:
            raise CorruptIndexError(f"{self.path}: used before load()")
        return self._keys, self._values

    # ---- state ----------------------------------------------------------------------------------

    @property
    def entries(self) -> int:
        return len(self._arrays()[0])

    @property
    def is_full(self) -> bool:
        keys = self._keys
        if keys is None:
            keys = self._arrays()[0]
        return len(keys) >= self._full_at

    def try_append(self, key: int, value: int) -> bool:
        """The append path's entry: add (key, value) when the index has room and `key` is above
        the last key (relative offset for `.index`, timestamp for `.timeindex`)."""
        keys = self._keys
        if keys is None:
            keys = self._arrays()[0]
        if len(keys) >= self._full_at or (keys and key <= keys[-1]):
            return False
        self._append(key, value)
        return True

    def _append(self, key: int, value: int) -> None:
        keys, values = self._arrays()
        keys.append(key)
        values.append(value)
        self._pending += self.entry_struct.pack(key, value)
        if len(self._pending) >= PENDING_FLUSH_BYTES and not self._rebuilding:
            self.write_pending()

    def _truncate_entries(self, n: int) -> None:
        keys, values = self._arrays()
        if n >= len(keys):
            return
        del keys[n:]
        del values[n:]
        size = self.entry_struct.size
        if n >= self._on_disk:
            del self._pending[(n - self._on_disk) * size :]
        else:
            self._pending.clear()
            with self._opened() as fd:
                os.ftruncate(fd, n * size)
            self._on_disk = n

    def reset(self) -> None:
        """Drop every entry (before a rebuild), in memory only: `write_rebuilt` then makes the
        file hold the entries appended since. Until then nothing is written."""
        self._keys, self._values = array(self.key_type), array(self.value_type)
        self._pending.clear()
        self._on_disk = 0
        self._rebuilding = True

    def write_rebuilt(self) -> None:
        """End a rebuild (`reset`): the file is rewritten with the rebuilt entries, unless it
        already holds exactly those bytes (a recovery re-validating a segment that was intact:
        after a SIGKILL most are, and truncating and rewriting their index files cost more than
        the validation). Either way the file counts as unsynced, as after a rewrite: the next
        flush fsyncs it. A file that does not exist (a segment never flushed before a crash) is
        not made here: the entries stay pending and the segment's next flush, roll or close makes
        it, as it does a new segment's. The rebuilt entries are derived from the `.log`, and a
        crash before then rebuilds them again; the recovery point passes the segment only after
        that flush. Creating two files per replica was 40% of a broker's start-up after a SIGKILL
        with tens of thousands of written replicas."""
        self._rebuilding = False
        data = bytes(self._pending)
        if not self._absent:
            try:
                fd = os.open(self._path, os.O_RDONLY)
            except FileNotFoundError:
                self._absent = True  # the pending entries make it (`_opened`, `ensure_file`)
                return
            else:
                try:
                    same = os.fstat(fd).st_size == len(data) and read_exactly(fd, len(data), 0) == data
                finally:
                    os.close(fd)
                if same:
                    self._on_disk += len(data) // self.entry_struct.size
                    self._pending.clear()
                    self._unsynced = True
                    return
        with self._opened() as fd:
            os.ftruncate(fd, 0)
            write_all(fd, data)
        self._on_disk += len(data) // self.entry_struct.size
        self._pending.clear()

    # ---- file -----------------------------------------------------------------------------------

    @contextmanager
    def _opened(self) -> Iterator[int]:
        """The file, opened for one write (see "No descriptor is held" above), made empty first
        if this index was created and never written."""
        flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND
        if self._absent:
            flags |= os.O_TRUNC
        fd = open_or_relieve(self._path, flags)
        self._absent = False
        try:
            yield fd
        finally:
            os.close(fd)
        self._unsynced = True

    def ensure_file(self) -> bool:
        """Create the file of a new index that has had no entry written yet (True when it did).
        A segment holding data does this before it is flushed or closed, so a trusted segment
        (below the recovery point, or after a clean shutdown) has both index files, as Kafka's."""
        if not self._absent:
            return False
        with self._opened():
            pass
        return True

    def write_pending(self) -> None:
        if not self._pending:
            return
        with self._opened() as fd:
            write_all(fd, self._pending)
        self._on_disk += len(self._pending) // self.entry_struct.size
        self._pending.clear()

    def flush(self, *, fsync: bool = True) -> None:
        """Write the pending entries and fsync (only when something was written since the last;
        without `fsync` the caller syncs the whole filesystem)."""
        self.write_pending()
        if fsync and self._unsynced:
            fd = open_or_relieve(self._path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
            self._unsynced = False

    def discard_pending(self) -> None:
        """Forget the entries not yet written (what a crash loses; tests and failed loads)."""
        self._pending.clear()

    def close(self) -> None:
        if self._keys is not None:
            self.write_pending()

    def rename(self, path: Path) -> None:
        if self._keys is not None:
            self.write_pending()
        if not self._absent:
            os.replace(self.path, path)
        self.path = path

    def delete(self) -> None:
        self.close()
        self.path.unlink(missing_ok=True)
        self._keys = self._values = None


class OffsetIndex(SparseIndex):
    """`.index`: (relative offset int32, position int32)."""

    __slots__ = ()

    entry_struct = struct.Struct(">ii")
    key_type = "i"
    value_type = "i"

    def _decode(self, data: bytes) -> tuple[array, array]:
        # fast path: both fields are int32, so the whole file is one int32 array
        both = array("i")
        both.frombytes(data)
        if sys.byteorder == "little":
            both.byteswap()
        return both[0::2], both[1::2]

    def _check(self, keys: array, values: array, log_size: int) -> None:
        if not keys:
            return
        if keys[0] < 0 or values[0] < 0:
            raise CorruptIndexError(f"{self.path}: negative first entry")
        if values[-1] >= log_size:
            raise CorruptIndexError(f"{self.path}: last position {values[-1]} beyond log size {log_size}")
        if not strictly_increasing(keys):
            raise CorruptIndexError(f"{self.path}: offsets not strictly increasing")
        if not strictly_increasing(values):
            raise CorruptIndexError(f"{self.path}: positions not strictly increasing")

    @property
    def last_offset(self) -> int:
        """Absolute offset of the last entry, or the base offset when empty."""
        keys, _ = self._arrays()
        return self.base_offset + keys[-1] if keys else self.base_offset

    def can_append_offset(self, offset: int) -> bool:
        return 0 <= offset - self.base_offset <= INT32_MAX

    def append(self, offset: int, position: int) -> None:
        """Add (offset, position); offsets must strictly increase (Kafka's InvalidOffsetException)."""
        keys = self._keys
        if keys is None:
            keys = self._arrays()[0]
        rel = offset - self.base_offset
        if not 0 <= rel <= INT32_MAX:
            raise ValueError(f"offset {offset} does not fit in the index of segment {self.base_offset}")
        if keys and rel <= keys[-1]:
            raise ValueError(f"index offset {offset} is not larger than the last entry {self.last_offset}")
        if len(keys) >= self._full_at:
            raise ValueError(f"offset index {self.path} is full")
        self._append(rel, position)

    def lookup(self, target: int) -> tuple[int, int]:
        keys, values = self._arrays()
        return lookup_offset(keys, values, self.base_offset, target)

    def lookup_by_position(self, position: int) -> tuple[int, int]:
        keys, values = self._arrays()
        return lookup_position(keys, values, self.base_offset, position)

    def truncate_to(self, offset: int) -> None:
        """Keep the entries whose offset < `offset`."""
        keys, _ = self._arrays()
        self._truncate_entries(entries_below(keys, offset - self.base_offset))
