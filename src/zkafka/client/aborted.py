"""A read_committed consumer's filter for the records of aborted transactions.

The broker returns read_committed fetches only up to the last stable offset, but the records of
aborted transactions are still in the log below it. Like Kafka's consumer, the client skips them
with what the Fetch response lists: for each aborted transaction overlapping the fetched range,
its producer id and first offset. From its first offset on, that producer's transactional batches
are skipped until a control batch (its ABORT marker) of the same producer ends the transaction.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable

from zkafka.records.batch import BatchHeader


class AbortedTransactions:
    """Feed it every batch header of one partition's fetched data in log order."""

    __slots__ = ("_aborting", "_upcoming")

    def __init__(self, aborted: Iterable[tuple[int, int]]) -> None:
        """`aborted`: (producer id, first offset) pairs from the Fetch response."""
        self._upcoming = [(first_offset, producer_id) for producer_id, first_offset in aborted]
        heapq.heapify(self._upcoming)
        self._aborting: set[int] = set()

    def skip(self, header: BatchHeader) -> bool:
        """Whether the batch's records belong to an aborted transaction (control batches are
        never returned to the application either; they end the producer's transaction here)."""
        upcoming = self._upcoming
        while upcoming and upcoming[0][0] <= header.last_offset:
            self._aborting.add(heapq.heappop(upcoming)[1])
        if header.is_control:
            self._aborting.discard(header.producer_id)
            return True
        return header.is_transactional and header.producer_id in self._aborting
