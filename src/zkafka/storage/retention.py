"""Which segments retention may delete (Kafka §4), as pure functions over segment objects.

A segment is deletable only when the high watermark has passed its upper bound (the next
segment's base, or the log end for the last one), it is not an empty last segment, and the
predicate holds; the scan goes oldest first and stops at the first segment that fails.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol


class SegmentLike(Protocol):
    base_offset: int
    size: int

    @property
    def largest_timestamp(self) -> int: ...


# predicate(segment, next segment or None) -> delete it?
Predicate = Callable[[SegmentLike, SegmentLike | None], bool]


def deletable_prefix(
    segments: Sequence[SegmentLike], log_end_offset: int, high_watermark: int, predicate: Predicate
) -> int:
    """How many of the oldest segments may be deleted."""
    n = 0
    for i, seg in enumerate(segments):
        nxt = segments[i + 1] if i + 1 < len(segments) else None
        upper = nxt.base_offset if nxt is not None else log_end_offset
        if nxt is None and seg.size == 0:
            break
        if high_watermark < upper or not predicate(seg, nxt):
            break
        n += 1
    return n


def retention_ms_breached(now_ms: int, retention_ms: int) -> Predicate:
    """Time rule: the segment's largest timestamp is more than retention.ms old."""
    return lambda seg, _next: now_ms - seg.largest_timestamp > retention_ms


def retention_size_breached(total_size: int, retention_bytes: int) -> Predicate:
    """Size rule: drop the oldest segments while the log stays at or above retention.bytes."""
    diff = total_size - retention_bytes

    def predicate(seg: SegmentLike, _next: SegmentLike | None) -> bool:
        nonlocal diff
        if total_size < retention_bytes or diff - seg.size < 0:
            return False
        diff -= seg.size
        return True

    return predicate


def log_start_offset_breached(log_start_offset: int) -> Predicate:
    """Always applied: the whole segment lies below the log start offset."""
    return lambda _seg, nxt: nxt is not None and nxt.base_offset <= log_start_offset
