"""Where the active segment's most recently appended batches start, kept in memory.

Fetches read at the tail of a log: a follower asks for what was appended since its last fetch, a
caught-up consumer for the same up to the high watermark, and a consumer's read is also bounded
by the high watermark, which needs that offset's position too. Finding a batch's file position
otherwise takes the offset index's entry below it and a scan of batch headers from there, up to
`index.interval.bytes` (4 KiB) of them: a dozen or more header decodes per lookup for small
batches, twice per consumer fetch, which was a quarter of a leader's CPU with `linger.ms=0`
producers. The segment notes here each batch it appends (its base offset and file position,
known at append time), so a lookup near the tail starts at the batch itself, and the bound at a
batch start needs no read at all.

Only batches appended since the segment was opened or created are noted, the last `LIMIT` of
them (two arrays of int64: ~1 KiB at most per written partition; an idle replica has none), and
each entry is a batch start in the current file: a truncation drops the entries at or after the
cut, a roll drops the whole thing with the segment's active role. After a restart the tail
starts empty and fills as appends come; lookups before its first entry use the offset index.
"""

from __future__ import annotations

from array import array
from bisect import bisect_right

LIMIT = 64
"""Batches remembered; when full the older half is dropped (a lookup further back than that
costs the index scan it always did)."""


class TailPositions:
    """Base offsets and file positions of consecutive batches ending at the segment's end."""

    __slots__ = ("bases", "positions")

    def __init__(self) -> None:
        self.bases = array("q")
        self.positions = array("q")

    def __len__(self) -> int:
        return len(self.bases)

    def add(self, base_offset: int, position: int) -> None:
        """A batch starting at `base_offset` was written at `position`, after every one noted."""
        bases = self.bases
        if len(bases) >= LIMIT:
            del bases[: LIMIT // 2]
            del self.positions[: LIMIT // 2]
        bases.append(base_offset)
        self.positions.append(position)

    def start_of(self, offset: int) -> int:
        """The position of the last noted batch starting at or before `offset` (the batch holding
        it, or the one before a gap after which it lies: a scan from there finds it), or -1 when
        `offset` is before the first noted batch."""
        i = bisect_right(self.bases, offset) - 1
        return self.positions[i] if i >= 0 else -1

    def position_of(self, offset: int) -> int:
        """The position of the noted batch starting exactly at `offset`, else -1."""
        bases = self.bases
        i = bisect_right(bases, offset) - 1
        return self.positions[i] if i >= 0 and bases[i] == offset else -1

    def truncate(self, size: int) -> None:
        """The file was cut at byte `size`: forget the batches that started at or after it."""
        positions = self.positions
        keep = len(positions)
        while keep and positions[keep - 1] >= size:
            keep -= 1
        del positions[keep:]
        del self.bases[keep:]
