"""`ControllerBrokerRequestBatch`: the requests one controller decision produces, built up while the
state machines work and sent together at the end (`flush`).

Rules:
* Any LeaderAndIsr for a partition also schedules an UpdateMetadata for that partition to every live
  broker, so the cluster's metadata caches follow every leadership change.
* `flush` sends, per broker, LeaderAndIsr first, then UpdateMetadata, then StopReplica; channels keep
  that order on the wire.
* Pinned versions: LeaderAndIsr v3, UpdateMetadata v7, StopReplica v1 (LeaderAndIsr and StopReplica the
  newest non-flexible ones; UpdateMetadata v7, flexible, because it carries the topic ids brokers
  answer Metadata v10+ and Fetch v13 with; all carry the target broker's epoch, taken from the
  context when the batch is flushed).
* UpdateMetadata partition states are computed once per partition at flush, from the context as it
  is then (a partition is added many times in one decision: per replica, per state machine); a topic
  the context forgets before the flush is captured first (`capture_topic`), so it is still
  announced. The live broker list is captured at flush.
* StopReplica v1 has one request-level `delete_partitions` flag, so a broker may get two requests.
* Nothing is built for a broker that is neither live nor shutting down (as Kafka's batch; a
  bounced broker is not live while its old incarnation's replicas go offline).
"""

from __future__ import annotations

import functools
import logging
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from zkafka.controller.channel import ControllerChannelManager
from zkafka.controller.context import ControllerContext, ReplicaAssignment
from zkafka.protocol import EncodeError, Message, encode_once
from zkafka.protocol.message import ZERO_UUID
from zkafka.protocol.messages import (
    LeaderAndIsrRequest,
    LeaderAndIsrResponse,
    StopReplicaRequest,
    StopReplicaResponse,
    UpdateMetadataRequest,
)
from zkafka.zk.model import (
    LEADER_DURING_DELETE,
    LeaderIsrAndControllerEpoch,
    TopicPartition,
    uuid_from_base64,
)

__all__ = [
    "LEADER_AND_ISR_VERSION",
    "STOP_REPLICA_VERSION",
    "UPDATE_METADATA_VERSION",
    "ControllerBrokerRequestBatch",
]

log = logging.getLogger(__name__)

LEADER_AND_ISR_VERSION = 3
UPDATE_METADATA_VERSION = 7
STOP_REPLICA_VERSION = 1
_UM_BROKER_EPOCH_AT = 8
"""Where UpdateMetadata v5-v7's broker_epoch (int64) sits in the body: after controller_id and
controller_epoch (two int32s)."""

_UmPartitionState = UpdateMetadataRequest.UpdateMetadataPartitionState

LeaderAndIsrCallback = Callable[[int, int, LeaderAndIsrResponse], None]
"""(broker id, broker epoch the request was sent to, response)."""
StopReplicaCallback = Callable[[int, frozenset[TopicPartition], StopReplicaResponse], None]
"""(broker id, partitions asked to be deleted, response) for StopReplica(delete=true)."""


@dataclass(slots=True)
class _PartitionDecision:
    leadership: LeaderIsrAndControllerEpoch
    assignment: ReplicaAssignment
    is_new: bool


class ControllerBrokerRequestBatch:
    def __init__(
        self,
        controller_id: int,
        context: ControllerContext,
        channels: ControllerChannelManager,
        *,
        on_leader_and_isr_response: LeaderAndIsrCallback | None = None,
        on_stop_replica_response: StopReplicaCallback | None = None,
    ) -> None:
        self.controller_id = controller_id
        self.context = context
        self.channels = channels
        self._on_leader_and_isr_response = on_leader_and_isr_response
        self._on_stop_replica_response = on_stop_replica_response
        self._leader_and_isr: dict[int, dict[TopicPartition, _PartitionDecision]] = {}
        self._stop_replica: dict[int, dict[TopicPartition, bool]] = {}
        self._update_metadata_brokers: set[int] = set()
        self._update_metadata_partitions: dict[TopicPartition, _UmPartitionState | None] = {}
        """None: computed at flush."""

    @property
    def is_empty(self) -> bool:
        return not (self._leader_and_isr or self._stop_replica or self._update_metadata_brokers)

    def clear(self) -> None:
        self._leader_and_isr.clear()
        self._stop_replica.clear()
        self._update_metadata_brokers.clear()
        self._update_metadata_partitions.clear()

    # -- adding ---------------------------------------------------------------------------------------
    def add_leader_and_isr(
        self,
        broker_ids: Iterable[int],
        partition: TopicPartition,
        leadership: LeaderIsrAndControllerEpoch,
        assignment: ReplicaAssignment,
        *,
        is_new: bool,
    ) -> None:
        for broker_id in broker_ids:
            if broker_id < 0:
                continue
            per_broker = self._leader_and_isr.setdefault(broker_id, {})
            previous = per_broker.get(partition)
            # "new" must survive a later, non-new decision in the same batch: the broker may create
            # the replica from scratch only if it was told so at least once.
            new = is_new or (previous is not None and previous.is_new)
            per_broker[partition] = _PartitionDecision(leadership, assignment, new)
        # add_update_metadata(every live broker, [partition]) without a new set per call
        self._update_metadata_brokers.update(self.context.live_brokers)
        self._update_metadata_partitions[partition] = None

    def add_stop_replica(self, broker_ids: Iterable[int], partition: TopicPartition, *, delete: bool) -> None:
        for broker_id in broker_ids:
            if broker_id < 0:
                continue
            per_broker = self._stop_replica.setdefault(broker_id, {})
            per_broker[partition] = delete or per_broker.get(partition, False)

    def add_update_metadata(self, broker_ids: Iterable[int], partitions: Iterable[TopicPartition]) -> None:
        self._update_metadata_brokers.update(b for b in broker_ids if b >= 0)
        pending = self._update_metadata_partitions
        for partition in partitions:
            pending[partition] = None

    def capture_topic(self, topic: str) -> None:
        """Compute the pending UpdateMetadata states of `topic`'s partitions now: the context is
        about to forget the topic."""
        pending = self._update_metadata_partitions
        for tp in [tp for tp, state in pending.items() if state is None and tp.topic == topic]:
            state = self._update_metadata_partition_state(tp)
            if state is None:
                del pending[tp]
            else:
                pending[tp] = state

    def _update_metadata_partition_state(self, partition: TopicPartition) -> _UmPartitionState | None:
        ctx = self.context
        leadership = ctx.leadership.get(partition)
        deleting = ctx.is_topic_queued_up_for_deletion(partition.topic)
        if leadership is None:
            if deleting:
                # Never led under this controller (its state znode did not decode, say), but the
                # brokers may still list it from an earlier controller: they must drop it too.
                replicas = list(ctx.partition_replica_assignment(partition))
                return _UmPartitionState(
                    topic_name=partition.topic,
                    partition_index=partition.partition,
                    controller_epoch=ctx.epoch,
                    leader=LEADER_DURING_DELETE,
                    leader_epoch=0,
                    isr=[],
                    zk_version=-1,
                    replicas=replicas,
                    offline_replicas=[],
                )
            log.debug("no leader assigned yet for %s: not in UpdateMetadata", partition)
            return None
        lai = leadership.leader_and_isr
        replicas = list(ctx.partition_replica_assignment(partition))
        return _UmPartitionState(
            topic_name=partition.topic,
            partition_index=partition.partition,
            controller_epoch=leadership.controller_epoch,
            leader=LEADER_DURING_DELETE if deleting else lai.leader,
            leader_epoch=lai.leader_epoch,
            isr=list(lai.isr),
            zk_version=lai.zk_version,
            replicas=replicas,
            offline_replicas=[r for r in replicas if not ctx.is_replica_online(r, partition)],
        )

    # -- sending --------------------------------------------------------------------------------------
    def flush(self) -> bool:
        """Queue everything on the brokers' channels and start a new batch. Returns whether there
        was anything to queue."""
        if self.is_empty:
            return False
        try:
            self._send_leader_and_isr()
            self._send_update_metadata()
            self._send_stop_replica()
        finally:
            self.clear()
        return True

    def _own_broker_first(self, item: int | tuple[int, object]) -> tuple[bool, int]:
        """Sort key of a broker id (or a (broker id, ...) item): the controller's own broker first,
        then by id. Clients send the admin requests that wait for their outcome to the controller
        (CreateTopics waits for its partitions' leaders in that broker's metadata): in a topic's
        creation that broker's LeaderAndIsr, then its UpdateMetadata, were encoded and sent last,
        ~0.25 s after the first broker's at 10,000 partitions, on the answer's critical path."""
        broker_id = item if isinstance(item, int) else item[0]
        return broker_id != self.controller_id, broker_id

    def _send(
        self, broker_id: int, request: Message, version: int, callback: Callable[[Message], None] | None
    ) -> None:
        self.channels.send(broker_id, request, version, callback)

    def _leader_and_isr_answered(self, broker_id: int, broker_epoch: int, response: Message) -> None:
        assert isinstance(response, LeaderAndIsrResponse) and self._on_leader_and_isr_response is not None
        self._on_leader_and_isr_response(broker_id, broker_epoch, response)

    def _stop_replica_answered(
        self, broker_id: int, asked: frozenset[TopicPartition], response: Message
    ) -> None:
        assert isinstance(response, StopReplicaResponse) and self._on_stop_replica_response is not None
        self._on_stop_replica_response(broker_id, asked, response)

    def _send_leader_and_isr(self) -> None:
        ctx = self.context
        targets = ctx.live_or_shutting_down_broker_ids
        for broker_id, decisions in sorted(self._leader_and_isr.items(), key=self._own_broker_first):
            if broker_id not in targets:
                continue
            by_topic: dict[str, list[LeaderAndIsrRequest.LeaderAndIsrPartitionState]] = {}
            leader_ids: set[int] = set()
            for tp, d in sorted(decisions.items()):
                lai = d.leadership.leader_and_isr
                leader_ids.add(lai.leader)
                by_topic.setdefault(tp.topic, []).append(
                    LeaderAndIsrRequest.LeaderAndIsrPartitionState(
                        partition_index=tp.partition,
                        controller_epoch=d.leadership.controller_epoch,
                        leader=lai.leader,
                        leader_epoch=lai.leader_epoch,
                        isr=list(lai.isr),
                        zk_version=lai.zk_version,
                        replicas=list(d.assignment.replicas),
                        adding_replicas=list(d.assignment.adding),
                        removing_replicas=list(d.assignment.removing),
                        is_new=d.is_new,
                    )
                )
            live_leaders = []
            for leader_id in sorted(leader_ids & targets):
                endpoint = ctx.live_brokers[leader_id].endpoint(self.channels.listener_name)
                if endpoint is not None:
                    live_leaders.append(
                        LeaderAndIsrRequest.LeaderAndIsrLiveLeader(
                            broker_id=leader_id, host_name=endpoint.host, port=endpoint.port
                        )
                    )
            broker_epoch = ctx.broker_epochs.get(broker_id, -1)
            request = LeaderAndIsrRequest(
                controller_id=self.controller_id,
                controller_epoch=ctx.epoch,
                broker_epoch=broker_epoch,
                topic_states=[
                    LeaderAndIsrRequest.LeaderAndIsrTopicState(topic_name=t, partition_states=states)
                    for t, states in by_topic.items()
                ],
                live_leaders=live_leaders,
            )
            callback = None
            if self._on_leader_and_isr_response is not None:
                callback = functools.partial(self._leader_and_isr_answered, broker_id, broker_epoch)
            self._send(broker_id, request, LEADER_AND_ISR_VERSION, callback)

    def _live_brokers(self) -> list[UpdateMetadataRequest.UpdateMetadataBroker]:
        out = []
        for broker_id, info in sorted(self.context.live_brokers.items()):
            out.append(
                UpdateMetadataRequest.UpdateMetadataBroker(
                    id=broker_id,
                    endpoints=[
                        UpdateMetadataRequest.UpdateMetadataEndpoint(
                            port=e.port,
                            host=e.host,
                            listener=e.listener_name,
                            security_protocol=e.security_protocol.id,
                        )
                        for e in info.endpoints
                    ],
                    rack=info.rack,
                )
            )
        return out

    def _topic_id(self, topic: str) -> uuid.UUID:
        """The topic's id for the brokers; all zeros while unknown (a topic whose znode predates
        ids and whose back-fill failed), which brokers read as "no id"."""
        text = self.context.topic_ids.get(topic)
        return ZERO_UUID if text is None else uuid_from_base64(text)

    def _send_update_metadata(self) -> None:
        ctx = self.context
        targets = sorted(
            self._update_metadata_brokers & ctx.live_or_shutting_down_broker_ids, key=self._own_broker_first
        )
        if not targets:
            return
        by_topic: dict[str, list[UpdateMetadataRequest.UpdateMetadataPartitionState]] = {}
        for tp, captured in sorted(self._update_metadata_partitions.items()):
            state = captured if captured is not None else self._update_metadata_partition_state(tp)
            if state is not None:
                by_topic.setdefault(tp.topic, []).append(state)
        topic_states = [
            UpdateMetadataRequest.UpdateMetadataTopicState(
                topic_name=t, topic_id=self._topic_id(t), partition_states=states
            )
            for t, states in by_topic.items()
        ]
        request = UpdateMetadataRequest(
            controller_id=self.controller_id,
            controller_epoch=ctx.epoch,
            broker_epoch=-1,
            topic_states=topic_states,
            live_brokers=self._live_brokers(),
        )
        # Every broker gets the same body but for its own broker epoch: encoded once (at 30,000
        # partitions encoding it per broker was ~8 % of a controlled shutdown's controller CPU),
        # the epoch written into each copy.
        try:
            encoded = encode_once(request, UPDATE_METADATA_VERSION)
        except EncodeError:
            log.exception("cannot encode UpdateMetadata v%d: not sent", UPDATE_METADATA_VERSION)
            return
        for broker_id in targets:
            epoch = ctx.broker_epochs.get(broker_id, -1)
            self._send(
                broker_id, encoded.with_int64_at(_UM_BROKER_EPOCH_AT, epoch), UPDATE_METADATA_VERSION, None
            )

    def _send_stop_replica(self) -> None:
        ctx = self.context
        targets = ctx.live_or_shutting_down_broker_ids
        for broker_id, partitions in sorted(self._stop_replica.items()):
            if broker_id not in targets:
                # As Kafka's batch: a dead broker's replicas go OFFLINE with a StopReplica each,
                # sent to no one. Not built at all (20,000 partitions at 30,000), and not sent to
                # a bounced broker's new incarnation either, whose channel is already open.
                continue
            broker_epoch = ctx.broker_epochs.get(broker_id, -1)
            for delete in (False, True):
                selected = sorted(tp for tp, d in partitions.items() if d is delete)
                if not selected:
                    continue
                by_topic: dict[str, list[int]] = {}
                for tp in selected:
                    by_topic.setdefault(tp.topic, []).append(tp.partition)
                request = StopReplicaRequest(
                    controller_id=self.controller_id,
                    controller_epoch=ctx.epoch,
                    broker_epoch=broker_epoch,
                    delete_partitions=delete,
                    topics=[
                        StopReplicaRequest.StopReplicaTopicV1(name=t, partition_indexes=ps)
                        for t, ps in by_topic.items()
                    ],
                )
                callback = None
                if delete and self._on_stop_replica_response is not None:
                    callback = functools.partial(self._stop_replica_answered, broker_id, frozenset(selected))
                self._send(broker_id, request, STOP_REPLICA_VERSION, callback)
