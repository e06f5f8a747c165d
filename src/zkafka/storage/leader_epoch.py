"""Leader epoch cache of one partition and its `leader-epoch-checkpoint` file (Kafka §7).

Each entry says "leader epoch E started at offset S". Entries are strictly increasing in both
epoch and start offset. Every change is written through to the checkpoint file at once (tmp +
rename). Removing old entries (`truncate_from_start`, `clear`) is fsynced right away. A new epoch
(`assign`, once per leader change) and a truncation to the log end (`truncate_from_end`, at log
recovery and follower truncation) are fsynced by the log's next flush (`sync`), as Kafka does since
KAFKA-15046: a LeaderAndIsr that makes a broker leader of thousands of partitions, or a start-up
recovering thousands of logs, would otherwise wait for two or three fsyncs per partition. What a
machine crash loses of them is made again: an epoch entry from the batches (each carries its
leader epoch) by log recovery, a truncation by the next recovery or follower truncation.

Those two kinds of write can also be deferred (`defer_writes`, what a broker's `LogManager` does):
the change marks the cache dirty and queues its owner, and the file is written off the event loop
by the manager's `write_leader_epoch_checkpoints`, at the log's next flush (before the recovery
point moves past the change, so a re-validated batch can always restore what was lost) and at
close. A LeaderAndIsr making a broker leader of 30,000 partitions then costs no file writes on
the loop; what a process crash loses before the write is what a machine crash loses anyway.
"""

from __future__ import annotations

import os
from bisect import bisect_right
from collections import deque
from typing import Any

from zkafka.storage.checkpoint import LeaderEpochCheckpointFile

UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1


class LeaderEpochCache:
    """Sorted (epoch, start_offset) entries; `path=None` keeps it in memory only (tests, tools)."""

    __slots__ = (
        "_dirty",
        "_epochs",
        "_file",
        "_owner",
        "_queue",
        "_starts",
        "_unsynced",
    )

    def __init__(
        self, path: str | os.PathLike[str] | None, entries: list[tuple[int, int]] | None = None
    ) -> None:
        self._file = LeaderEpochCheckpointFile(path) if path is not None else None
        self._unsynced = False
        """The file was written by `assign` and not fsynced since."""
        self._dirty = False
        """Changed by a deferred write, the file not written yet."""
        self._queue: deque[Any] | None = None
        self._owner: object = None
        self._epochs: list[int] = []
        self._starts: list[int] = []
        for epoch, start in entries or ():
            self._assign(epoch, start)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> LeaderEpochCache:
        """Read the checkpoint (missing or 0-byte: empty). Raises CheckpointError when malformed."""
        return cls(path, LeaderEpochCheckpointFile(path).read())

    def _assign(self, epoch: int, start_offset: int) -> bool:
        if epoch < 0 or start_offset < 0:
            raise ValueError(f"invalid leader epoch entry ({epoch}, {start_offset})")
        if self._epochs and self._epochs[-1] == epoch and start_offset >= self._starts[-1]:
            return False
        self._remove_tail(lambda e, s: e >= epoch or s >= start_offset)
        self._epochs.append(epoch)
        self._starts.append(start_offset)
        return True

    def _remove_tail(self, doomed) -> bool:
        removed = False
        while self._epochs and doomed(self._epochs[-1], self._starts[-1]):
            self._epochs.pop()
            self._starts.pop()
            removed = True
        return removed

    def _flush(self, sync: bool = True) -> None:
        if self._file is None:
            return
        if not sync and self._queue is not None:
            if not self._dirty:
                self._dirty = True
                self._queue.append(self._owner)
            return
        self._file.write(self.entries(), sync=sync)
        self._dirty = False  # only once written: a failed write stays pending
        self._unsynced = not sync

    def defer_writes(self, queue: deque[Any], owner: object) -> None:
        """From now on, unsynced writes only queue `owner` on `queue`; its owner calls
        `write_if_dirty` (under the lock that guards this cache)."""
        self._queue, self._owner = queue, owner

    @property
    def dirty(self) -> bool:
        return self._dirty

    def queue_if_dirty(self) -> None:
        """Queue the owner again for a deferred change its writer left pending (a log that had
        no batch yet: `Log.write_epoch_checkpoint`)."""
        if self._dirty and self._queue is not None:
            self._queue.append(self._owner)

    def write_if_dirty(self) -> None:
        """Write the file (no fsync) when a deferred change is pending."""
        if self._dirty and self._file is not None:
            # cleared only once written: after a failed write the log's next flush tries again (and
            # fails before its recovery point passes the change)
            self._file.write(self.entries(), sync=False)
            self._dirty = False
            self._unsynced = True

    def sync(self) -> None:
        """Write a deferred change and fsync the checkpoint if it was written without (the log's
        flush calls this)."""
        self.write_if_dirty()
        if self._unsynced and self._file is not None:
            self._file.sync()
            self._unsynced = False

    # ---- queries --------------------------------------------------------------------------------

    def entries(self) -> list[tuple[int, int]]:
        return list(zip(self._epochs, self._starts, strict=True))

    def __len__(self) -> int:
        return len(self._epochs)

    @property
    def latest_epoch(self) -> int | None:
        return self._epochs[-1] if self._epochs else None

    @property
    def latest_entry(self) -> tuple[int, int] | None:
        return (self._epochs[-1], self._starts[-1]) if self._epochs else None

    @property
    def earliest_entry(self) -> tuple[int, int] | None:
        return (self._epochs[0], self._starts[0]) if self._epochs else None

    def epoch_for_offset(self, offset: int) -> int | None:
        """The epoch whose range holds `offset` (None below the first entry)."""
        i = bisect_right(self._starts, offset) - 1
        return self._epochs[i] if i >= 0 else None

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> tuple[int, int]:
        """(epoch, exclusive end offset) for OffsetForLeaderEpoch, exactly Kafka's `endOffsetFor`:

        - requested -1: (-1, -1)
        - requested == latest epoch: (epoch, log end offset)
        - no epoch above the requested one: (-1, -1)
        - no epoch at or below it: (requested, start of the first higher epoch)
        - otherwise: (largest epoch <= requested, start of the first higher epoch)
        """
        if requested_epoch == UNDEFINED_EPOCH:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if self._epochs and self._epochs[-1] == requested_epoch:
            return requested_epoch, log_end_offset
        higher = bisect_right(self._epochs, requested_epoch)
        if higher >= len(self._epochs):
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if higher == 0:
            return requested_epoch, self._starts[0]
        return self._epochs[higher - 1], self._starts[higher]

    # ---- updates --------------------------------------------------------------------------------

    def assign(self, epoch: int, start_offset: int) -> bool:
        """Record that `epoch` starts at `start_offset`; True when the cache changed.

        No-op when `epoch` is the latest epoch and `start_offset` is not before its start.
        Otherwise trailing entries with epoch >= `epoch` or start >= `start_offset` are replaced.
        """
        if not self._assign(epoch, start_offset):
            return False
        self._flush(sync=False)
        return True

    def truncate_from_end(self, end_offset: int) -> None:
        """Drop entries starting at or after `end_offset` (log truncation)."""
        if end_offset >= 0 and self._remove_tail(lambda e, s: s >= end_offset):
            # fsynced by the log's next flush too: this runs for every log recovered after a crash
            # (thousands at start-up), and a truncation lost in a machine crash is made again by
            # the next recovery (to the log end) or the next follower truncation.
            self._flush(sync=False)

    def truncate_from_start(self, start_offset: int) -> None:
        """Drop entries starting at or before `start_offset`, then re-add the last dropped epoch
        starting at `start_offset` (the log start moved)."""
        n = bisect_right(self._starts, start_offset)
        if n == 0:
            return
        epoch = self._epochs[n - 1]
        if n == 1 and self._starts[0] == start_offset:
            return
        del self._epochs[:n]
        del self._starts[:n]
        self._epochs.insert(0, epoch)
        self._starts.insert(0, start_offset)
        self._flush()

    def clear(self) -> None:
        if self._epochs:
            self._epochs.clear()
            self._starts.clear()
        self._flush()
