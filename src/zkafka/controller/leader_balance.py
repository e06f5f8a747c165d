"""Preferred replica elections: from /admin/preferred_replica_election, from the ElectLeaders API, and
the periodic automatic leader rebalance.

Automatic rebalance (auto.leader.rebalance.enable): partitions are grouped by their preferred broker
(first replica). A broker's imbalance = share of its preferred partitions led by someone else; above
leader.imbalance.per.broker.percentage those partitions get a preferred election, unless a
reassignment is running, the broker is down, the topic is being deleted, or the preferred replica is
not in the ISR (it could not lead anyway).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence

from zkafka.controller.core import ControllerCore
from zkafka.controller.election import OfflineElection, PreferredElection, preferred_leader
from zkafka.controller.events import PreferredReplicaElectionZNode
from zkafka.controller.partition_state_machine import PartitionStateMachine
from zkafka.controller.states import PartitionState, StateChangeFailedError
from zkafka.controller.topic_deletion import TopicDeletionManager
from zkafka.protocol import ErrorCode
from zkafka.zk.errors import ZNodeDataError
from zkafka.zk.model import LeaderAndIsr, TopicPartition
from zkafka.zk.watch_bridge import WatchEventType, ZkWatchEvent
from zkafka.zk.znodes import PreferredReplicaElectionZNode as PreferredElectionPath

__all__ = ["ElectionResults", "LeaderBalancer", "imbalanced_partitions"]

log = logging.getLogger(__name__)

ElectionResults = dict[TopicPartition, tuple[ErrorCode, str | None]]


def imbalanced_partitions(
    assignments: Mapping[TopicPartition, Sequence[int]],
    leaders: Mapping[TopicPartition, int],
    imbalance_percentage: int,
) -> dict[int, list[TopicPartition]]:
    """Preferred broker -> its partitions led by another broker, for every broker whose share of such
    partitions exceeds `imbalance_percentage` %. Partitions without a known leader do not count as
    misplaced (nothing to move)."""
    by_preferred: dict[int, list[TopicPartition]] = {}
    for tp, replicas in assignments.items():
        if replicas:
            by_preferred.setdefault(replicas[0], []).append(tp)
    out = {}
    for broker, partitions in sorted(by_preferred.items()):
        misplaced = sorted(tp for tp in partitions if tp in leaders and leaders[tp] != broker)
        if len(misplaced) / len(partitions) > imbalance_percentage / 100:
            out[broker] = misplaced
    return out


class LeaderBalancer:
    def __init__(
        self, core: ControllerCore, psm: PartitionStateMachine, deletion: TopicDeletionManager
    ) -> None:
        self.core = core
        self.psm = psm
        self.deletion = deletion

    def watch(self) -> None:
        def on_change(event: ZkWatchEvent) -> PreferredReplicaElectionZNode | None:
            starts = event.type in (WatchEventType.CREATED, WatchEventType.RESYNC)
            return PreferredReplicaElectionZNode() if event.exists and starts else None

        self.core.watches.exists(PreferredElectionPath.path(), on_change)

    async def process_zk_election(self) -> None:
        """Run the elections /admin/preferred_replica_election asks for, then delete it."""
        core = self.core
        try:
            partitions = await core.call(core.zk.get_preferred_replica_election)
        except ZNodeDataError as e:
            log.error("ignoring unreadable preferred replica election request: %s", e)
            partitions = frozenset()
        if partitions is None:
            return
        try:
            await self.elect(partitions, unclean=False)
        finally:
            await core.call(core.zk.delete_preferred_replica_election, core.context.epoch_zk_version)

    async def elect(self, partitions: Iterable[TopicPartition] | None, *, unclean: bool) -> ElectionResults:
        """ElectLeaders: preferred (or, with `unclean`, offline-leader) elections; per-partition results
        in Kafka's error codes. `partitions` None = every partition."""
        ctx = self.core.context
        known = set(ctx.all_partitions)
        requested = sorted(known if partitions is None else set(partitions))
        results: ElectionResults = {}
        electable = []
        for tp in requested:
            if tp not in known:
                results[tp] = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The partition does not exist.")
            elif self.deletion.is_topic_queued_up_for_deletion(tp.topic):
                results[tp] = (ErrorCode.INVALID_TOPIC_EXCEPTION, "The topic is being deleted.")
            elif self._needs_election(tp, unclean):
                electable.append(tp)
            else:
                results[tp] = (ErrorCode.ELECTION_NOT_NEEDED, None)
        strategy = OfflineElection(allow_unclean=True) if unclean else PreferredElection()
        outcome = await self.psm.handle_state_changes(electable, PartitionState.ONLINE, strategy)
        not_available = (
            ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE if unclean else ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE
        )
        for tp in electable:
            result = outcome.get(tp)
            if isinstance(result, LeaderAndIsr):
                results[tp] = (ErrorCode.NONE, None)
            elif isinstance(result, StateChangeFailedError):
                results[tp] = (not_available, str(result))
            elif result is None:
                results[tp] = (not_available, "the partition is not in a state that allows an election")
            else:
                results[tp] = (ErrorCode.UNKNOWN_SERVER_ERROR, str(result))
        return results

    def _needs_election(self, tp: TopicPartition, unclean: bool) -> bool:
        ctx = self.core.context
        leader = ctx.leader(tp)
        if unclean:
            return leader is None or leader < 0 or leader not in ctx.live_broker_ids
        replicas = ctx.partition_replica_assignment(tp)
        return leader is not None and bool(replicas) and leader != replicas[0]

    async def check_and_rebalance(self) -> None:
        """The automatic leader rebalance check."""
        ctx = self.core.context
        assignments = {
            tp: ctx.partition_replica_assignment(tp)
            for tp in ctx.all_partitions
            if not self.deletion.is_topic_queued_up_for_deletion(tp.topic)
        }
        leaders = {tp: s.leader_and_isr.leader for tp, s in ctx.leadership.items() if tp in assignments}
        imbalanced = imbalanced_partitions(
            assignments, leaders, self.core.config.leader_imbalance_per_broker_percentage
        )
        for broker, partitions in imbalanced.items():
            if ctx.partitions_being_reassigned:
                log.debug("leader rebalance skipped: reassignments in progress")
                return
            candidates = [tp for tp in partitions if ctx.is_replica_online(broker, tp) and self._can_lead(tp)]
            if candidates:
                log.info("rebalancing leadership of %d partitions back to broker %d", len(candidates), broker)
                await self.psm.handle_state_changes(candidates, PartitionState.ONLINE, PreferredElection())

    def _can_lead(self, tp: TopicPartition) -> bool:
        ctx = self.core.context
        state = ctx.leadership.get(tp)
        if state is None:
            return False
        replicas = ctx.partition_replica_assignment(tp)
        return preferred_leader(replicas, state.leader_and_isr.isr, ctx.online_replicas(tp)) is not None
