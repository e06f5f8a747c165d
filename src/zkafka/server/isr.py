"""Leader-side ISR maintenance, the ZooKeeper way (inter-broker protocol < 2.7, reference §2.5).

The leader shrinks the ISR when a follower has not caught up for `replica.lag.time.max.ms`, and
expands it when a follower reaches the high watermark. It writes the partition state znode itself
(same leader and leader epoch, the controller epoch it last received) conditionally on the
zkVersion it holds; a stale version means the controller changed the partition meanwhile, and
the leader waits for the controller's LeaderAndIsr instead. Successful changes are announced in
batches through `/isr_change_notification` (every 2.5 s when the last change is 5 s old or the
last announcement 60 s old), which the controller turns into UpdateMetadata for all brokers.
The ISR never becomes empty: the leader always stays in it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import replace
from typing import TYPE_CHECKING

from zkafka.logs import RateLimitedLog
from zkafka.metrics import Counter
from zkafka.server.replica_manager import ReplicaManager
from zkafka.server.zookeeper import ZooKeeper
from zkafka.storage.naming import TopicPartition
from zkafka.zk.client import KafkaZkClient
from zkafka.zk.model import LeaderAndIsr
from zkafka.zk.session import ZK_UNAVAILABLE

if TYPE_CHECKING:
    from zkafka.server.partition import LeaderState, Partition

log = logging.getLogger(__name__)
limited = RateLimitedLog(log)

PUBLISH_CHECK_MS = 2500
QUIET_BEFORE_PUBLISH_MS = 5000
MAX_PUBLISH_DELAY_MS = 60000


class IsrManager:
    def __init__(
        self,
        broker_id: int,
        replicas: ReplicaManager,
        zk: ZooKeeper,
        lag_time_max_ms: int,
        changes: tuple[Counter, Counter] | None = None,
    ) -> None:
        self._broker_id = broker_id
        # (shrinks, expands): Kafka's IsrShrinksPerSec / IsrExpandsPerSec; None when metrics are off
        self._changes = changes
        self._replicas = replicas
        self._zk = zk
        self._lag_ms = lag_time_max_ms
        self.pending: set[TopicPartition] = set()
        self.last_change_ms = 0
        self.last_publish_ms = int(time.time() * 1000)
        self._inflight: set[TopicPartition] = set()
        """Partitions with an ISR change queued or being written."""
        self._queued: list[tuple[Partition, LeaderState | None, tuple[int, ...], str]] = []
        """(partition, the state the change was decided from, new ISR, why)."""
        self._flusher: asyncio.Future[None] | None = None

    # -- decisions (on the loop) ------------------------------------------------------------------
    def maybe_expand(self, partition: Partition, replica_id: int) -> None:
        """Called after a fetch from follower `replica_id`: add it to the ISR if it caught up to the
        high watermark. Only the replica that just fetched is considered (as Kafka does): the state
        kept for another follower may be that of a broker that has since gone away."""
        if not partition.is_leader or partition.tp in self._inflight or replica_id in partition.isr:
            return
        f = partition.followers.get(replica_id)
        if (
            f is not None
            and replica_id in partition.state.replicas
            and f.log_end_offset >= partition.high_watermark
            and f.log_end_offset >= self._epoch_start(partition)
        ):
            self._write(partition, (*partition.isr, replica_id), f"expand with [{replica_id}]")

    def maybe_shrink_all(self) -> None:
        lag_ms = self._lag_ms
        now = int(time.time() * 1000)
        for p in list(self._replicas.partitions.values()):
            if not p.is_leader or p.tp in self._inflight:
                continue
            out = [
                r
                for r in p.isr
                if r != self._broker_id
                and now - (p.followers[r].last_caught_up_ms if r in p.followers else 0) > lag_ms
            ]
            if out:
                new_isr = tuple(r for r in p.isr if r not in out)
                self._write(p, new_isr, f"shrink, {out} out of sync for more than {lag_ms} ms")

    @staticmethod
    def _epoch_start(partition: Partition) -> int:
        entry = partition.log.epochs.latest_entry
        return entry[1] if entry is not None else 0

    # -- the ZooKeeper writes ---------------------------------------------------------------------
    def _write(self, partition: Partition, new_isr: tuple[int, ...], why: str) -> None:
        """Queue the change; the changes queued by one pass (a shrink check, the fetches served
        meanwhile) go to ZooKeeper together: a follower that comes back or goes away changes the
        ISR of every partition it follows, thousands, one round trip each otherwise."""
        self._inflight.add(partition.tp)
        self._queued.append((partition, partition.state, new_isr, why))
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.ensure_future(self._flush())
            self._flusher.add_done_callback(lambda t: _report_failure(t, "ISR updates"))

    async def _flush(self) -> None:
        while self._queued:
            batch, self._queued = self._queued, []
            try:
                await self._update(batch)
            except BaseException:
                # The rest is dropped too: the next shrink check, or the follower's next fetch,
                # decides again from what the partitions then look like.
                dropped, self._queued = self._queued, []
                for partition, _, _, _ in dropped:
                    self._inflight.discard(partition.tp)
                raise
            finally:
                for partition, _, _, _ in batch:
                    self._inflight.discard(partition.tp)

    async def _update(self, batch: list[tuple[Partition, LeaderState | None, tuple[int, ...], str]]) -> None:
        updates: dict[TopicPartition, tuple[LeaderAndIsr, int]] = {}
        decided: dict[TopicPartition, tuple[Partition, LeaderState, str]] = {}
        for partition, decided_from, new_isr, why in batch:
            state = partition.state
            if state is None or state is not decided_from or not new_isr:
                # A LeaderAndIsr came after the decision (this broker may not even lead any more):
                # its state wins; written with its epoch and zkVersion, the decision would replace
                # the controller's ISR. The next check decides again from the new state.
                continue
            desired = LeaderAndIsr(state.leader, state.leader_epoch, new_isr, zk_version=state.zk_version)
            updates[partition.tp] = desired, state.controller_epoch
            decided[partition.tp] = partition, state, why
        if not updates:
            return
        results = await self._zk.run(KafkaZkClient.conditional_update_partition_states, updates)
        stale: list[TopicPartition] = []
        for tp, (ok, version) in results.items():
            partition, state, why = decided[tp]
            if not ok:
                stale.append(tp)
                continue
            if partition.state is not state:  # a LeaderAndIsr arrived meanwhile: it wins
                continue
            new_isr = updates[tp][0].isr
            partition.state = replace(state, isr=new_isr, zk_version=version)
            # Per partition at DEBUG; INFO gets one line per announcement (`maybe_publish`).
            log.debug("%s: ISR %s -> %s (%s)", tp, list(state.isr), list(new_isr), why)
            if self._changes is not None:
                shrinks, expands = self._changes
                (shrinks if len(new_isr) < len(state.isr) else expands).inc()
            self.pending.add(tp)
            self.last_change_ms = int(time.time() * 1000)
            partition.maybe_increment_high_watermark()
        if stale:
            # The controller changed these meanwhile; its LeaderAndIsr brings the new state.
            log.info(
                "ISR update skipped for %d partition(s) whose cached zkVersion is stale (%s)",
                len(stale),
                ", ".join(str(tp) for tp in sorted(stale)[:3]) + (" ..." if len(stale) > 3 else ""),
            )

    async def maybe_publish(self) -> None:
        now = int(time.time() * 1000)
        if not self.pending:
            return
        if (
            now - self.last_change_ms < QUIET_BEFORE_PUBLISH_MS
            and now - self.last_publish_ms < MAX_PUBLISH_DELAY_MS
        ):
            return
        batch = sorted(self.pending)
        self.pending.clear()
        try:
            await self._zk.run(KafkaZkClient.create_isr_change_notification, batch)
        except BaseException:
            # Not announced: keep them for the next attempt (ZooKeeper may be away for a while; the
            # ISR itself is already in the state znodes, only the controller's news is late).
            self.pending.update(batch)
            raise
        self.last_publish_ms = now
        shown = ", ".join(str(tp) for tp in batch[:3]) + (" ..." if len(batch) > 3 else "")
        log.info("ISR changed for %d partition(s) (%s); announced to the controller", len(batch), shown)

    async def run(self) -> None:
        """Shrink checks every half lag time, publication checks every 2.5 s (as Kafka)."""
        lag_ms = self._lag_ms
        next_shrink = time.monotonic() + lag_ms / 2000
        while True:
            await asyncio.sleep(min(PUBLISH_CHECK_MS, lag_ms / 2) / 1000)
            try:
                if time.monotonic() >= next_shrink:
                    self.maybe_shrink_all()
                    next_shrink = time.monotonic() + lag_ms / 2000
                await self.maybe_publish()
            except ZK_UNAVAILABLE as e:
                limited.warning("isr-zk", "ISR maintenance waits for ZooKeeper: %s", e)
            except Exception:
                log.exception("ISR maintenance failed")


def _report_failure(task: asyncio.Future[None], what: str) -> None:
    if task.cancelled() or task.exception() is None:
        return
    error = task.exception()
    if isinstance(error, ZK_UNAVAILABLE):
        # Expected while ZooKeeper is down: the ISR stays as recorded and is retried later.
        limited.warning(("isr-zk", what), "%s postponed, ZooKeeper unavailable: %s", what, error)
    else:
        log.error("%s failed", what, exc_info=error)
