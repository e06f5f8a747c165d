"""Kafka's time index (`.timeindex`): 12-byte entries, int64 timestamp + int32 relative offset.

Monotonic rule (Kafka's `TimeIndex.maybeAppend`): an entry is written only when its timestamp is
strictly greater than the last entry's; a lower timestamp or offset is a bug and raises. `is_full`
keeps one slot free for the entry forced on roll/close. File handling (no preallocation, lazy load,
pending tail) is described in `zkafka.storage.index`.
"""

from __future__ import annotations

import os
import struct
from bisect import bisect_right
from collections.abc import Sequence

from zkafka.storage.errors import CorruptIndexError
from zkafka.storage.file_cache import open_or_relieve
from zkafka.storage.index import INT32_MAX, SparseIndex, entries_below, non_decreasing, strictly_increasing

NO_TIMESTAMP = -1


def lookup_timestamp(
    timestamps: Sequence[int], offsets: Sequence[int], base_offset: int, target: int
) -> tuple[int, int]:
    """(timestamp, absolute offset) of the largest entry with timestamp <= `target`; (-1, base) if none."""
    i = bisect_right(timestamps, target) - 1
    if i < 0:
        return NO_TIMESTAMP, base_offset
    return timestamps[i], base_offset + offsets[i]


class TimeIndex(SparseIndex):
    __slots__ = ()
    entry_struct = struct.Struct(">qi")
    key_type = "q"
    value_type = "i"
    reserved_slots = 1

    def _check(self, keys, values, log_size: int) -> None:  # type: ignore[override]
        if not keys:
            return
        if values[0] < 0:
            raise CorruptIndexError(f"{self.path}: negative relative offset")
        if not strictly_increasing(keys):
            raise CorruptIndexError(f"{self.path}: timestamps not strictly increasing")
        if not non_decreasing(values):
            raise CorruptIndexError(f"{self.path}: offsets decreasing")

    def last_entry(self) -> tuple[int, int]:
        """(timestamp, absolute offset) of the last entry, (-1, base) when empty."""
        keys, values = self._arrays()
        if not keys:
            return NO_TIMESTAMP, self.base_offset
        return keys[-1], self.base_offset + values[-1]

    def read_last_entry(self) -> tuple[int, int]:
        """Like `last_entry` but without loading the whole file when not loaded yet."""
        if self.loaded:
            return self.last_entry()
        size = self.entry_struct.size
        fd = open_or_relieve(self._path, os.O_RDONLY)
        try:
            length = os.fstat(fd).st_size
            if length % size:
                raise CorruptIndexError(f"{self.path}: length {length} is not a multiple of {size}")
            if length == 0:
                return NO_TIMESTAMP, self.base_offset
            ts, rel = self.entry_struct.unpack(os.pread(fd, size, length - size))
        finally:
            os.close(fd)
        if rel < 0:
            raise CorruptIndexError(f"{self.path}: negative relative offset")
        return ts, self.base_offset + rel

    def maybe_append(self, timestamp: int, offset: int, *, skip_full_check: bool = False) -> bool:
        """Append (timestamp, offset) when timestamp is larger than the last one; True if appended."""
        keys, values = self._arrays()
        if not skip_full_check and self.is_full:
            raise ValueError(f"time index {self.path} is full")
        rel = offset - self.base_offset
        if not 0 <= rel <= INT32_MAX:
            raise ValueError(f"offset {offset} does not fit in the time index of segment {self.base_offset}")
        if keys and rel < values[-1]:
            raise ValueError(f"time index offset {offset} is below the last entry's")
        if keys and timestamp < keys[-1]:
            raise ValueError(f"time index timestamp {timestamp} is below the last entry's {keys[-1]}")
        if timestamp > (keys[-1] if keys else NO_TIMESTAMP):
            self._append(timestamp, rel)
            return True
        return False

    def lookup(self, timestamp: int) -> tuple[int, int]:
        keys, values = self._arrays()
        return lookup_timestamp(keys, values, self.base_offset, timestamp)

    def truncate_to(self, offset: int) -> None:
        """Keep the entries whose offset < `offset`."""
        _, values = self._arrays()
        self._truncate_entries(entries_below(values, offset - self.base_offset))
