"""Reactions to brokers coming, going, bouncing, changing endpoints, losing log dirs or shutting down.

* Broker change (/brokers/ids children): compare with the context. New ids, vanished ids, and
  *bounced* ids (same id, larger broker epoch = czxid: it re-registered) are handled as startup,
  failure, and failure followed by startup. Channels are opened and closed to match.
* Startup: UpdateMetadata (brokers only) to the others, full UpdateMetadata to the new ones,
  its replicas ONLINE (LeaderAndIsr), elections for NEW/OFFLINE partitions, resume reassignments and
  deletions that were waiting for it, watch its znode.
* Failure: its replicas go offline: partitions it led go OFFLINE and are re-elected (Offline
  strategy), its replicas go OFFLINE (out of the ISR, never emptying it), deletions touching it pause;
  if no leadership changed, UpdateMetadata (brokers only) still tells everyone it is gone.
* Broker data change: new endpoints/features -> UpdateMetadata to all (and re-target its channel).
* LeaderAndIsr answers with KAFKA_STORAGE_ERROR and log dir failure notifications mark replicas
  offline the same way.
* Controlled shutdown: see `controlled_shutdown`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from zkafka.controller.core import ControllerCore
from zkafka.controller.election import ControlledShutdownElection
from zkafka.controller.events import BrokerModification
from zkafka.controller.partition_state_machine import PartitionStateMachine
from zkafka.controller.reassignment import Reassignments
from zkafka.controller.replica_state_machine import ReplicaStateMachine
from zkafka.controller.states import PartitionAndReplica, PartitionState, ReplicaState
from zkafka.controller.topic_deletion import TopicDeletionManager
from zkafka.protocol import ErrorCode
from zkafka.protocol.messages import LeaderAndIsrResponse
from zkafka.zk.model import LeaderAndIsr, TopicPartition
from zkafka.zk.watch_bridge import WatchEventType, ZkWatchEvent
from zkafka.zk.znodes import BrokerIdZNode

__all__ = ["BrokerEvents"]

log = logging.getLogger(__name__)

UNKNOWN_BROKER_EPOCH = -1
"""ControlledShutdown v0/v1 carries no broker epoch: nothing to check."""


class BrokerEvents:
    def __init__(
        self,
        core: ControllerCore,
        psm: PartitionStateMachine,
        rsm: ReplicaStateMachine,
        deletion: TopicDeletionManager,
        reassignments: Reassignments,
    ) -> None:
        self.core = core
        self.psm = psm
        self.rsm = rsm
        self.deletion = deletion
        self.reassignments = reassignments

    def watch_broker(self, broker_id: int) -> None:
        def on_change(event: ZkWatchEvent, broker_id: int = broker_id) -> BrokerModification | None:
            # Creation and deletion are broker changes (children of /brokers/ids), not modifications.
            return BrokerModification(broker_id) if event.type is WatchEventType.CHANGED else None

        if self.core.watches.is_watching("data", BrokerIdZNode.path(broker_id)):
            return
        self.core.watches.data(BrokerIdZNode.path(broker_id), on_change)
        # The registration was read before this watch existed: check once more for a change made in
        # between (nothing happens if there was none).
        self.core.emit(BrokerModification(broker_id))

    def unwatch_broker(self, broker_id: int) -> None:
        self.core.watches.cancel("data", BrokerIdZNode.path(broker_id))

    # -- membership ------------------------------------------------------------------------------------
    async def process_broker_change(self) -> None:
        core, ctx = self.core, self.core.context
        current = await core.call(core.zk.get_all_brokers_and_epochs)
        known = ctx.live_or_shutting_down_broker_ids
        new = sorted(set(current) - known)
        dead = sorted(known - set(current))
        bounced = sorted(b for b in set(current) & known if current[b][1] > ctx.broker_epochs.get(b, -1))
        if not (new or dead or bounced):
            return
        log.info("brokers joined %s, left %s, bounced %s", new, dead, bounced)
        for b in new:
            core.channels.add_broker(current[b][0])
        for b in bounced:
            core.channels.remove_broker(b)
            core.channels.add_broker(current[b][0])
        for b in dead:
            core.channels.remove_broker(b)
        if new:
            ctx.add_live_brokers({b: current[b] for b in new})
            await self.on_broker_startup(new)
        if bounced:
            ctx.remove_live_brokers(bounced)
            await self.on_broker_failure(bounced)
            ctx.add_live_brokers({b: current[b] for b in bounced})
            await self.on_broker_startup(bounced)
        if dead:
            ctx.remove_live_brokers(dead)
            await self.on_broker_failure(dead)

    async def on_broker_startup(self, brokers: list[int]) -> None:
        core, ctx = self.core, self.core.context
        new = set(brokers)
        for b in new:
            ctx.replicas_on_offline_dirs.pop(b, None)
        core.send_update_metadata(ctx.live_or_shutting_down_broker_ids - new, [])
        core.send_update_metadata(new, ctx.partitions_with_leaders())
        replicas = ctx.replicas_on_brokers(new)
        await self.rsm.handle_state_changes(replicas, ReplicaState.ONLINE)
        await self.psm.trigger_online_partition_state_change()
        await self.reassignments.maybe_resume(lambda _tp, a: any(r in new for r in a.target_replicas))
        deleting = {r.topic for r in replicas if self.deletion.is_topic_queued_up_for_deletion(r.topic)}
        if deleting:
            await self.deletion.resume_deletion_for_topics(deleting)
        for b in brokers:
            self.watch_broker(b)

    async def on_broker_failure(self, brokers: list[int]) -> None:
        ctx = self.core.context
        for b in brokers:
            ctx.replicas_on_offline_dirs.pop(b, None)
            ctx.shutting_down_broker_ids.discard(b)
        # The dead brokers' replicas are listed only once their partitions have new leaders: the
        # elections read nothing of that list (one object per replica, 20,000 at 30,000
        # partitions), and the leaderless partitions need not wait for it.
        await self.on_replicas_become_offline(lambda: ctx.replicas_on_brokers(brokers))
        for b in brokers:
            self.unwatch_broker(b)

    async def on_replicas_become_offline(
        self, replicas: list[PartitionAndReplica] | Callable[[], list[PartitionAndReplica]]
    ) -> None:
        """Kafka's onReplicasBecomeOffline: the partitions left without a live leader OFFLINE and
        re-elected, then `replicas` (or what the callable returns, called after the elections)
        OFFLINE, i.e. out of the ISRs."""
        core, ctx = self.core, self.core.context
        offline_leader = ctx.partitions_with_offline_leader()
        await self.psm.handle_state_changes(offline_leader, PartitionState.OFFLINE)
        elected = await self.psm.trigger_online_partition_state_change()
        if callable(replicas):
            replicas = replicas()
            # The LeaderAndIsr just sent to this controller's own broker reaches it over loopback
            # in a few loop turns, and the ISR removals below would hold the loop for half a
            # second before their first await (33,000 partitions): turns between their stages
            # let the broker read and apply it first (its new leaders served 0.9 s sooner at 100,000).
            await core.yield_to_broker()
        queued = self.deletion.is_topic_queued_up_for_deletion
        for_deletion = [r for r in replicas if queued(r.topic)]
        others = [r for r in replicas if not queued(r.topic)]
        await self.rsm.handle_state_changes(others, ReplicaState.OFFLINE)
        if for_deletion:
            await self.deletion.fail_replica_deletion(for_deletion)
        if not offline_leader and not any(isinstance(r, LeaderAndIsr) for r in elected.values()):
            # Nothing above told the brokers: they must still learn that these replicas are gone.
            core.send_update_metadata(ctx.live_or_shutting_down_broker_ids, [])

    async def process_broker_modification(self, broker_id: int) -> None:
        core, ctx = self.core, self.core.context
        old = ctx.live_brokers.get(broker_id)
        if old is None:
            return
        new = await core.call(core.zk.get_broker, broker_id)
        if new is None or new.epoch != ctx.broker_epochs.get(broker_id):
            return  # gone or re-registered: a broker change event handles it
        if new.endpoints == old.endpoints and dict(new.features) == dict(old.features):
            return
        log.info(
            "broker %d changed its endpoints/features: %s",
            broker_id,
            [e.connection_string for e in new.endpoints],
        )
        ctx.live_brokers[broker_id] = new
        core.channels.update_broker(new)
        core.send_update_metadata(ctx.live_or_shutting_down_broker_ids, [])

    # -- replica failures reported by brokers ----------------------------------------------------------
    async def process_leader_and_isr_response(
        self, broker_id: int, broker_epoch: int, response: LeaderAndIsrResponse
    ) -> None:
        ctx = self.core.context
        if response.error_code != ErrorCode.NONE:
            log.error(
                "broker %d answered LeaderAndIsr with %s",
                broker_id,
                ErrorCode.lookup(response.error_code).name,
            )
            return
        if ctx.broker_epochs.get(broker_id) != broker_epoch:
            return  # an answer from a previous incarnation
        previous = ctx.replicas_on_offline_dirs.get(broker_id, set())
        storage_error, none = ErrorCode.KAFKA_STORAGE_ERROR, ErrorCode.NONE
        offline = set()
        online = set()
        for error in response.partition_errors:
            code = error.error_code
            if code == storage_error:
                offline.add(TopicPartition(error.topic_name, error.partition_index))
            elif code == none and previous:
                # only a replica once reported offline can come back: with none, the answers'
                # successes (33,000 after a broker's death at 100,000) need no object each
                online.add(TopicPartition(error.topic_name, error.partition_index))
        current = (previous - online) | offline
        ctx.replicas_on_offline_dirs[broker_id] = current
        newly_offline = sorted(current - previous)
        if newly_offline:
            log.warning(
                "broker %d reports replicas on failed log dirs: %s",
                broker_id,
                [str(t) for t in newly_offline],
            )
            await self.on_replicas_become_offline(
                [PartitionAndReplica(tp, broker_id) for tp in newly_offline]
            )

    async def process_log_dir_event_notification(self) -> None:
        core, ctx = self.core, self.core.context
        names = await core.call(core.zk.get_log_dir_event_notifications)
        if not names:
            return
        try:
            brokers = await core.call(core.zk.get_brokers_from_log_dir_events, names)
            # LeaderAndIsr to every replica of those brokers: replicas on failed dirs answer with
            # KAFKA_STORAGE_ERROR, which marks them offline.
            await self.rsm.handle_state_changes(ctx.replicas_on_brokers(brokers), ReplicaState.ONLINE)
        finally:
            await core.call(core.zk.delete_log_dir_event_notifications, names, ctx.epoch_zk_version)

    # -- controlled shutdown ---------------------------------------------------------------------------
    async def controlled_shutdown(
        self, broker_id: int, broker_epoch: int
    ) -> tuple[ErrorCode, set[TopicPartition]]:
        """Move leadership away from a broker that asked to shut down; returns the replicated partitions
        it still leads (it retries until that set is empty or its retries run out)."""
        core, ctx = self.core, self.core.context
        if broker_id not in ctx.live_or_shutting_down_broker_ids:
            log.info("controlled shutdown of unknown broker %d refused", broker_id)
            return ErrorCode.BROKER_NOT_AVAILABLE, set()
        current_epoch = ctx.broker_epochs[broker_id]
        if broker_epoch != UNKNOWN_BROKER_EPOCH and broker_epoch < current_epoch:
            log.info(
                "controlled shutdown of broker %d with stale epoch %d (current %d) refused",
                broker_id,
                broker_epoch,
                current_epoch,
            )
            return ErrorCode.STALE_BROKER_EPOCH, set()
        log.info("controlled shutdown of broker %d", broker_id)
        began = time.perf_counter()
        ctx.shutting_down_broker_ids.add(broker_id)
        to_act = [
            tp
            for tp in ctx.partitions_on_broker(broker_id)
            if len(ctx.partition_replica_assignment(tp)) > 1
            and tp in ctx.leadership
            and not self.deletion.is_topic_queued_up_for_deletion(tp.topic)
        ]
        led = [tp for tp in to_act if ctx.leader(tp) == broker_id]
        followed = [tp for tp in to_act if ctx.leader(tp) != broker_id]
        await self.psm.handle_state_changes(led, PartitionState.ONLINE, ControlledShutdownElection())
        moved = time.perf_counter()
        for tp in followed:
            core.batch.add_stop_replica([broker_id], tp, delete=False)
        core.batch.flush()
        await self.rsm.handle_state_changes(
            [PartitionAndReplica(tp, broker_id) for tp in followed], ReplicaState.OFFLINE
        )
        # As Kafka: only replicated partitions of live topics count; a single replica cannot move.
        remaining = {
            tp
            for tp in ctx.partition_leaders_on_broker(broker_id)
            if len(ctx.partition_replica_assignment(tp)) > 1
            and not self.deletion.is_topic_queued_up_for_deletion(tp.topic)
        }
        log.info(
            "controlled shutdown of broker %d done: %d of %d led partition(s) moved in %.2f s, out of the "
            "ISR of %d followed partition(s) %.2f s later; %d still led there",
            broker_id,
            len(led) - len(remaining & set(led)),
            len(led),
            moved - began,
            len(followed),
            time.perf_counter() - moved,
            len(remaining),
        )
        return ErrorCode.NONE, remaining
