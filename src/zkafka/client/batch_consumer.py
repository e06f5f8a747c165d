"""`BatchConsumer`: a `Consumer` that hands over fetched record batches undecoded.

For readers that decode whole batches at once into columns (the Spark source builds Arrow
columns with `zkafka.records.columns`) instead of one `ConsumedRecord` per record. Everything
else is the `Consumer`'s: positions, leader changes, OFFSET_OUT_OF_RANGE, CRC checks, skipping
control batches and, with read_committed, aborted transactions' batches, and the next Fetch
going out while the caller decodes the previous one.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from zkafka.client.aborted import AbortedTransactions
from zkafka.client.consumer import Consumer, _Fetched
from zkafka.client.types import TopicPartition
from zkafka.records import BatchHeader


@dataclass(frozen=True, slots=True)
class FetchedBatches:
    """One partition's share of one Fetch, CRCs checked and filtered as the `Consumer` filters."""

    tp: TopicPartition
    data: bytes | memoryview
    """The partition's records bytes as the broker sent them (may end in a partial batch)."""
    batches: list[tuple[BatchHeader, int]]
    """The batches whose records go to the application, in log order (headers positioned in
    `data`), each with the first offset to return from it: a batch straddling the fetch
    position holds records the application already had."""
    next_offset: int
    """The position after these batches (past skipped control and aborted batches too)."""


class BatchConsumer(Consumer):
    """A `Consumer` whose `poll_batches` returns `FetchedBatches` instead of records (`poll` is
    not for it: it returns nothing)."""

    def _decode(
        self,
        tp: TopicPartition,
        fetch_offset: int,
        data: bytes | memoryview | None,
        aborted: AbortedTransactions | None = None,
    ) -> None:
        if not data:
            return
        accepted, next_offset = self._accepted_batches(tp, fetch_offset, data, aborted)
        if next_offset == fetch_offset:
            return
        batches = FetchedBatches(tp, data, accepted, next_offset)
        self._fetched.append(_Fetched(tp, fetch_offset, deque(), next_offset, batches))
        self._buffered.add(tp)

    async def poll_batches(self, timeout_ms: float = 0) -> list[FetchedBatches]:
        """What arrived for the assigned partitions, every partition's whole fetched share;
        waits up to `timeout_ms` for some. Positions move past what is returned."""
        return await self._poll_with(self._take_batches, timeout_ms)

    def _take_batches(self) -> list[FetchedBatches]:
        out: list[FetchedBatches] = []
        while self._fetched:
            fetched = self._fetched.popleft()
            self._buffered.discard(fetched.tp)
            state = self._states.get(fetched.tp)
            if state is None or state.position != fetched.fetch_offset:
                continue  # unassigned or sought since the fetch: stale
            state.position = fetched.next_offset
            assert isinstance(fetched.batches, FetchedBatches)
            out.append(fetched.batches)
        return out
