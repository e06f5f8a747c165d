"""`TopicDeletionManager`: deleting topics queued under /admin/delete_topics.

Theory of operation:
1. A topic is *queued* (context.topics_to_be_deleted) when its marker znode appears, or at failover.
   With delete.topic.enable=false markers are deleted instead and nothing else happens.
2. The first time a queued topic is eligible its partitions go OFFLINE -> NON_EXISTENT (no more
   elections) and every broker gets UpdateMetadata with leader -2 ("being deleted") for them.
3. Each live replica goes OFFLINE (StopReplica delete=false, out of the ISR) and then
   DELETION_STARTED (StopReplica delete=true). Replicas on dead brokers go DELETION_INELIGIBLE and the
   topic becomes *ineligible*: deletion pauses until those brokers return.
4. Each StopReplica(delete=true) answer moves the replica to DELETION_SUCCESSFUL (or, on error, to
   DELETION_INELIGIBLE, retried later). When every replica of the topic is DELETION_SUCCESSFUL the
   topic's znodes are deleted (fenced): /brokers/topics/<t> recursively, /config/topics/<t>, the marker.
5. A reassignment in progress also makes a topic ineligible; `resume_deletion_for_topics` clears the
   flag when the cause goes away (broker back, reassignment done) and restarts step 3.

Every entry point ends with `resume_deletions`, which decides per queued topic what to do next.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from zkafka.controller.core import ControllerCore
from zkafka.controller.partition_state_machine import PartitionStateMachine
from zkafka.controller.replica_state_machine import ReplicaStateMachine
from zkafka.controller.states import PartitionAndReplica, PartitionState, ReplicaState
from zkafka.protocol import ErrorCode
from zkafka.protocol.messages import StopReplicaResponse
from zkafka.zk.model import TopicPartition
from zkafka.zk.znodes import TopicZNode

__all__ = ["TopicDeletionManager"]

log = logging.getLogger(__name__)


class TopicDeletionManager:
    def __init__(self, core: ControllerCore, psm: PartitionStateMachine, rsm: ReplicaStateMachine) -> None:
        self.core = core
        self.psm = psm
        self.rsm = rsm

    @property
    def enabled(self) -> bool:
        return self.core.config.delete_topic_enable

    # -- queries ---------------------------------------------------------------------------------------
    def is_topic_queued_up_for_deletion(self, topic: str) -> bool:
        return self.enabled and self.core.context.is_topic_queued_up_for_deletion(topic)

    def is_topic_ineligible_for_deletion(self, topic: str) -> bool:
        return self.enabled and topic in self.core.context.topics_ineligible_for_deletion

    def is_topic_deletion_in_progress(self, topic: str) -> bool:
        return self.enabled and self.core.context.is_any_replica_in_state(
            topic, ReplicaState.DELETION_STARTED
        )

    def _is_eligible(self, topic: str) -> bool:
        return (
            self.core.context.is_topic_queued_up_for_deletion(topic)
            and not self.is_topic_deletion_in_progress(topic)
            and not self.is_topic_ineligible_for_deletion(topic)
        )

    # -- events ----------------------------------------------------------------------------------------
    async def process_deletion_requests(self) -> None:
        """Children of /admin/delete_topics changed."""
        core, ctx = self.core, self.core.context
        requested = set(await core.call(core.zk.get_topic_deletions))
        unknown = requested - ctx.all_topics
        if unknown:
            log.warning("ignoring deletion of non-existent topics %s", sorted(unknown))
            await core.call(core.zk.delete_topic_deletions, sorted(unknown), ctx.epoch_zk_version)
        requested -= unknown
        if not requested:
            return
        if not self.enabled:
            log.info("delete.topic.enable=false: removing deletion markers of %s", sorted(requested))
            await core.call(core.zk.delete_topic_deletions, sorted(requested), ctx.epoch_zk_version)
            return
        new = requested - ctx.topics_to_be_deleted
        if new:
            log.info("starting deletion of topics %s", sorted(new))
        reassigning = {tp.topic for tp in ctx.partitions_being_reassigned}
        await self.enqueue_topics_for_deletion(requested, ineligible=requested & reassigning)

    async def process_stop_replica_response(
        self, broker_id: int, partitions: frozenset[TopicPartition], response: StopReplicaResponse
    ) -> None:
        """A broker answered StopReplica(delete=true) for `partitions`."""
        errors = {
            TopicPartition(e.topic_name, e.partition_index): e.error_code for e in response.partition_errors
        }
        deleting = {tp for tp in partitions if self.is_topic_queued_up_for_deletion(tp.topic)}
        if response.error_code != ErrorCode.NONE:
            failed = deleting
        else:
            failed = {tp for tp in deleting if errors.get(tp, ErrorCode.NONE) != ErrorCode.NONE}
        if failed:
            await self.fail_replica_deletion(PartitionAndReplica(tp, broker_id) for tp in sorted(failed))
        done = deleting - failed
        if done:
            await self.complete_replica_deletion(PartitionAndReplica(tp, broker_id) for tp in sorted(done))

    # -- entry points ----------------------------------------------------------------------------------
    async def init(self, topics_to_be_deleted: set[str], topics_ineligible: set[str]) -> None:
        """At failover: queue what /admin/delete_topics holds (or drop the markers if disabled)."""
        ctx = self.core.context
        if self.enabled:
            ctx.topics_to_be_deleted |= topics_to_be_deleted
            ctx.topics_ineligible_for_deletion |= topics_ineligible & ctx.topics_to_be_deleted
        elif topics_to_be_deleted:
            log.info(
                "delete.topic.enable=false: removing deletion markers of %s", sorted(topics_to_be_deleted)
            )
            await self.core.call(
                self.core.zk.delete_topic_deletions, sorted(topics_to_be_deleted), ctx.epoch_zk_version
            )

    async def try_topic_deletion(self) -> None:
        if self.enabled:
            await self.resume_deletions()

    async def enqueue_topics_for_deletion(
        self, topics: Iterable[str], *, ineligible: Iterable[str] = ()
    ) -> None:
        if not self.enabled:
            return
        ctx = self.core.context
        topics = set(topics)
        ctx.topics_to_be_deleted |= topics
        ctx.topics_ineligible_for_deletion |= set(ineligible) & topics
        await self.resume_deletions()

    async def resume_deletion_for_topics(self, topics: Iterable[str]) -> None:
        if not self.enabled:
            return
        ctx = self.core.context
        to_resume = set(topics) & ctx.topics_to_be_deleted
        ctx.topics_ineligible_for_deletion -= to_resume
        if to_resume:
            await self.resume_deletions()

    def mark_topic_ineligible_for_deletion(self, topics: Iterable[str], reason: str) -> None:
        if not self.enabled:
            return
        ctx = self.core.context
        halted = set(topics) & ctx.topics_to_be_deleted
        if halted:
            log.info("halting deletion of %s: %s", sorted(halted), reason)
            ctx.topics_ineligible_for_deletion |= halted

    async def fail_replica_deletion(self, replicas: Iterable[PartitionAndReplica]) -> None:
        if not self.enabled:
            return
        failed = [r for r in replicas if self.is_topic_queued_up_for_deletion(r.topic)]
        if not failed:
            return
        log.info("replica deletion failed or impossible for %s", ", ".join(map(str, failed)))
        await self.rsm.handle_state_changes(failed, ReplicaState.DELETION_INELIGIBLE)
        self.mark_topic_ineligible_for_deletion({r.topic for r in failed}, "replica deletion failure")
        await self.resume_deletions()

    async def complete_replica_deletion(self, replicas: Iterable[PartitionAndReplica]) -> None:
        deleted = [r for r in replicas if self.is_topic_queued_up_for_deletion(r.topic)]
        await self.rsm.handle_state_changes(deleted, ReplicaState.DELETION_SUCCESSFUL)
        await self.resume_deletions()

    # -- the engine ------------------------------------------------------------------------------------
    async def resume_deletions(self) -> None:
        ctx = self.core.context
        retry: set[str] = set()
        start: set[str] = set()
        for topic in sorted(ctx.topics_to_be_deleted):
            if ctx.are_all_replicas_in_state(topic, ReplicaState.DELETION_SUCCESSFUL):
                await self._complete_delete_topic(topic)
                log.info("deletion of topic %s completed", topic)
                continue
            if not ctx.is_any_replica_in_state(
                topic, ReplicaState.DELETION_STARTED
            ) and ctx.is_any_replica_in_state(topic, ReplicaState.DELETION_INELIGIBLE):
                retry.add(topic)
            if self._is_eligible(topic):
                log.info("deletion of topic %s (re)started", topic)
                start.add(topic)
        for topic in sorted(retry):
            # Failed replicas go back to OFFLINE so that the next round can start their deletion again.
            await self.rsm.handle_state_changes(
                ctx.replicas_in_state(topic, ReplicaState.DELETION_INELIGIBLE), ReplicaState.OFFLINE
            )
        if start:
            await self._on_topic_deletion(start)

    async def _on_topic_deletion(self, topics: set[str]) -> None:
        ctx = self.core.context
        unseen = sorted(topics - ctx.topics_with_deletion_started)
        if unseen:
            partitions = [tp for t in unseen for tp in ctx.partitions_for_topic(t)]
            await self.psm.handle_state_changes(partitions, PartitionState.OFFLINE)
            await self.psm.handle_state_changes(partitions, PartitionState.NON_EXISTENT)
            ctx.topics_with_deletion_started |= set(unseen)
        # Brokers must stop serving these partitions to clients: leader -2 in their metadata.
        self.core.send_update_metadata(
            ctx.live_or_shutting_down_broker_ids,
            [tp for t in sorted(topics) for tp in ctx.partitions_for_topic(t)],
        )
        await self._on_partition_deletion(topics)

    async def _on_partition_deletion(self, topics: set[str]) -> None:
        ctx = self.core.context
        dead: list[PartitionAndReplica] = []
        retry: list[PartitionAndReplica] = []
        ineligible: set[str] = set()
        for topic in sorted(topics):
            done = set(ctx.replicas_in_state(topic, ReplicaState.DELETION_SUCCESSFUL))
            for replica in ctx.replicas_for_topic(topic):
                if not ctx.is_replica_online(replica.replica, replica.partition):
                    dead.append(replica)
                    ineligible.add(topic)
                elif replica not in done:
                    retry.append(replica)
        await self.rsm.handle_state_changes(dead, ReplicaState.DELETION_INELIGIBLE)
        # delete=false first: followers stop fetching before anything is removed.
        await self.rsm.handle_state_changes(retry, ReplicaState.OFFLINE)
        await self.rsm.handle_state_changes(retry, ReplicaState.DELETION_STARTED)
        if ineligible:
            self.mark_topic_ineligible_for_deletion(ineligible, "replicas on offline brokers")

    async def _complete_delete_topic(self, topic: str) -> None:
        core, ctx = self.core, self.core.context
        core.watches.cancel("data", TopicZNode.path(topic))
        await self.rsm.handle_state_changes(
            ctx.replicas_in_state(topic, ReplicaState.DELETION_SUCCESSFUL), ReplicaState.NON_EXISTENT
        )
        await core.call(core.zk.delete_topic, topic, ctx.epoch_zk_version)
        core.forget_topic(topic)
