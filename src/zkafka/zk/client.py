"""`KafkaZkClient`: every ZooKeeper read and write a Kafka broker or controller makes.

Paths and codecs come from `znodes.py`; this module decides *how* each write is made (atomic multis,
conditional versions, fencing) following Kafka's KafkaZkClient:

* broker registration = one multi {create EPHEMERAL empty, setData version 0}; the broker epoch is the
  znode's czxid;
* controller election = one multi {create EPHEMERAL /controller, conditional setData /controller_epoch};
  every later controller write is a multi that starts with `check(/controller_epoch, epochZkVersion)`,
  so a controller that lost its election can no longer change anything (`ControllerMovedError`);
* partition state writes are conditional on the state znode's zkVersion, per partition, pipelined.

Threading: all methods block on ZooKeeper round trips and are safe to call from several threads; call
them from an executor (see `watch_bridge.ZkExecutor`), never on the asyncio loop thread.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any, NamedTuple, TypeVar

from kazoo.exceptions import (
    BadVersionError,
    ConnectionLoss,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    OperationTimeoutError,
    SessionExpiredError,
    ZookeeperError,
)
from kazoo.protocol.states import ZnodeStat

from zkafka.zk.acl_store import AclStoreMixin
from zkafka.zk.bad_znodes import BadZNodes
from zkafka.zk.errors import (
    AdminOperationInProgressError,
    BrokerIdInUseError,
    ControllerMovedError,
    ProducerIdsExhaustedError,
    TopicAlreadyMarkedForDeletionError,
    TopicExistsError,
    UnknownTopicError,
    ZkError,
)
from zkafka.zk.json_codec import INT64_MAX
from zkafka.zk.model import (
    ANY_VERSION,
    PRODUCER_ID_BLOCK_SIZE,
    BrokerInfo,
    ConfigType,
    ControllerRegistration,
    FeatureZNodeData,
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    LogDirEvent,
    ProducerIdBlock,
    TopicAssignment,
    TopicPartition,
    random_uuid_base64,
    validate_replica_assignment,
)
from zkafka.zk.old_consumer_store import OldConsumerStoreMixin
from zkafka.zk.ops import CheckOp, CreateOp, DeleteOp, Op, SetDataOp, apply_ops, first_failure
from zkafka.zk.session import chunked
from zkafka.zk.topic_names import check_topic_creatable
from zkafka.zk.znodes import (
    ISR_CHANGES,
    LOG_DIR_EVENTS,
    PERSISTENT_TOP_LEVEL_PATHS,
    BrokerIdsZNode,
    BrokerIdZNode,
    BrokerSequenceIdZNode,
    ClusterIdZNode,
    ConfigEntityChangeNotificationZNode,
    ConfigEntityTypeZNode,
    ConfigEntityZNode,
    ControllerEpochZNode,
    ControllerZNode,
    DeleteTopicsTopicZNode,
    DeleteTopicsZNode,
    FeatureZNode,
    IsrChangeNotificationZNode,
    LogDirEventNotificationZNode,
    PreferredReplicaElectionZNode,
    ProducerIdBlockZNode,
    ReassignPartitionsZNode,
    SequentialZNodes,
    TopicPartitionStateZNode,
    TopicPartitionsZNode,
    TopicPartitionZNode,
    TopicsZNode,
    TopicZNode,
    UserClientsZNode,
)

log = logging.getLogger(__name__)

__all__ = ["CreatePartitionStatesResult", "KafkaZkClient", "UpdateLeaderAndIsrResult"]

_TRANSIENT = (ConnectionLoss, OperationTimeoutError)
DEFAULT_RESERVED_BROKER_MAX_ID = 1000
"""Kafka's `reserved.broker.max.id`: generated broker ids start above it."""
_DELETE_BATCH = 500
T = TypeVar("T")

NOT_LIVE = "the broker is treated as not live"
NO_STATE = "the partition has no leader until its state znode is rewritten (or deleted)"
TOPIC_SKIPPED = "the topic is left out until its znode is rewritten"
DEFAULTS_APPLY = "its entity's overrides are ignored (defaults apply)"
UNKNOWN_CONTROLLER = "treated as held by an unknown controller until it goes away"


def _controller_moved(epoch_zk_version: int) -> ControllerMovedError:
    return ControllerMovedError(
        f"controller epoch zkVersion {epoch_zk_version} is stale: another controller was elected"
    )


class UpdateLeaderAndIsrResult(NamedTuple):
    successful: dict[TopicPartition, int]
    """partition -> new zkVersion of its state znode."""
    bad_version: list[TopicPartition]
    """Partitions whose state znode changed since it was read (re-read and retry)."""
    failed: dict[TopicPartition, Exception]


class CreatePartitionStatesResult(NamedTuple):
    created: dict[TopicPartition, int]
    """partition -> zkVersion (0) of the new state znode."""
    failed: dict[TopicPartition, Exception]
    """e.g. NodeExistsError when the state znode already exists."""


class KafkaZkClient(AclStoreMixin, OldConsumerStoreMixin):
    """A ZooKeeper session plus Kafka's data model; see the module docstring for the rules.

    Reads decode znode by znode: one whose data does not decode is reported to `bad_znodes` (one log
    line per content) and read as absent, so it never stops the reading of anything else."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.bad_znodes = BadZNodes()
        super().__init__(*args, **kwargs)

    def _decoded(
        self,
        decode: Callable[[bytes, str, ZnodeStat], T],
        path: str,
        found: tuple[bytes, ZnodeStat] | None,
        instead: str,
    ) -> T | None:
        """`decode` the data read from `path`; None if it was absent or does not decode (reported)."""
        if found is None:
            return None
        try:
            value = decode(found[0], path, found[1])
        except (ZkError, ValueError, TypeError, KeyError, AttributeError) as e:
            # Decoders raise ZNodeDataError; anything else from them is a decoder gap, and still
            # only this one znode's problem.
            self.bad_znodes.report(e, path, found[0], found[1], instead)
            return None
        self.bad_znodes.cleared(path)
        return value

    # -- bootstrap -------------------------------------------------------------------------------------
    def create_top_level_paths(self) -> None:
        """The persistent paths every broker ensures at startup (reference §1.9)."""
        stats = self.stat_many(PERSISTENT_TOP_LEVEL_PATHS)
        for path in PERSISTENT_TOP_LEVEL_PATHS:
            if stats[path] is None:
                self.create_if_absent(path)

    def get_cluster_id(self) -> str | None:
        found = self.get_data(ClusterIdZNode.path())
        return None if found is None else ClusterIdZNode.decode(found[0])

    def get_or_create_cluster_id(self, generate: Callable[[], str] = random_uuid_base64) -> str:
        """The cluster id; the first broker creates it, a broker losing the create race reads the winner's."""
        existing = self.get_cluster_id()
        if existing is not None:
            return existing
        candidate = generate()
        try:
            self.create(ClusterIdZNode.path(), ClusterIdZNode.encode(candidate), makepath=True)
            return candidate
        except NodeExistsError:
            winner = self.get_cluster_id()
            if winner is None:
                raise ZkError("/cluster/id vanished right after a create race") from None
            return winner

    def generate_broker_sequence_id(self, reserved_max_id: int = DEFAULT_RESERVED_BROKER_MAX_ID) -> int:
        """A broker id for a broker without `broker.id`: `/brokers/seqid`'s new dataVersion + reserved max."""
        path = BrokerSequenceIdZNode.path()
        self.ensure_path(path)
        return self.set_data(path, b"").version + reserved_max_id

    # -- brokers ---------------------------------------------------------------------------------------
    def register_broker(self, info: BrokerInfo) -> int:
        """Register `/brokers/ids/<id>` (ephemeral) in one multi; returns the broker epoch (czxid).

        If the znode exists and belongs to this client's own (current or previous) session, e.g. after a
        lost response or a re-registration, it is deleted and created afresh; if another session holds it
        BrokerIdInUseError is raised.
        """
        path = BrokerIdZNode.path(info.id)
        data = BrokerIdZNode.encode(info)
        ops: list[Op] = [CreateOp(path, b"", ephemeral=True), SetDataOp(path, data, 0)]
        for _ in range(10):
            try:
                results = self.multi(ops)
            except NodeExistsError:
                self._remove_own_ephemeral(path, f"broker id {info.id}")
                continue
            except (*_TRANSIENT, SessionExpiredError):
                self.wait_connected()
                continue
            stat = results[1]
            log.info("registered broker %d at %s with epoch %d", info.id, path, stat.czxid)
            return int(stat.czxid)
        raise ZkError(f"could not register broker {info.id}: {path} keeps changing")

    def _remove_own_ephemeral(self, path: str, what: str) -> None:
        found = self.get_data(path)
        if found is None:
            return
        stat = found[1]
        if stat.ephemeralOwner == 0:
            raise BrokerIdInUseError(f"{what}: {path} exists as a persistent znode; remove it by hand")
        if not self.is_own_session(stat.ephemeralOwner):
            raise BrokerIdInUseError(
                f"{what} is already registered at {path} by another ZooKeeper session "
                f"(0x{stat.ephemeralOwner:x}); is another broker running with the same id?"
            )
        try:
            self.delete(path, stat.version)
        except BadVersionError:
            pass  # changed meanwhile: the caller's loop re-reads

    def update_broker_info(self, info: BrokerInfo) -> int:
        """Rewrite this broker's registration in place (dynamic listener changes); returns its zkVersion."""
        try:
            return self.set_data(BrokerIdZNode.path(info.id), BrokerIdZNode.encode(info)).version
        except NoNodeError:
            raise ZkError(f"broker {info.id} is not registered") from None

    def get_broker(self, broker_id: int) -> BrokerInfo | None:
        path = BrokerIdZNode.path(broker_id)
        return self._decoded(BrokerIdZNode.decode, path, self.get_data(path), NOT_LIVE)

    def get_all_broker_ids(self) -> list[int]:
        ids = []
        for name in self.get_children(BrokerIdsZNode.path()) or []:
            try:
                ids.append(BrokerIdZNode.broker_id(name))
            except ValueError:
                log.warning("ignoring %s/%s: not a broker id", BrokerIdsZNode.path(), name)
        return sorted(ids)

    def get_all_brokers_and_epochs(self) -> dict[int, tuple[BrokerInfo, int]]:
        """broker id -> (registration, broker epoch); brokers that vanish meanwhile, or whose registration
        does not decode, are left out."""
        paths = [BrokerIdZNode.path(b) for b in self.get_all_broker_ids()]
        out: dict[int, tuple[BrokerInfo, int]] = {}
        for path, found in self.get_data_many(paths).items():
            info = self._decoded(BrokerIdZNode.decode, path, found, NOT_LIVE)
            if info is None:
                continue
            assert info.epoch is not None
            out[info.id] = (info, info.epoch)
        return dict(sorted(out.items()))

    def get_all_brokers(self) -> list[BrokerInfo]:
        return [info for info, _ in self.get_all_brokers_and_epochs().values()]

    # -- controller ------------------------------------------------------------------------------------
    def get_controller(self) -> ControllerRegistration | None:
        found = self.get_data(ControllerZNode.path())
        return None if found is None else ControllerZNode.decode(found[0])

    def get_controller_id(self) -> int | None:
        """The controller's broker id; None when /controller does not exist, -1 when it exists but does
        not decode (someone holds it: nobody else can be elected until it goes away)."""
        path = ControllerZNode.path()
        found = self.get_data(path)
        if found is None:
            return None
        decode = lambda d, _p, _s: ControllerZNode.decode(d)  # noqa: E731
        controller = self._decoded(decode, path, found, UNKNOWN_CONTROLLER)
        return -1 if controller is None else controller.broker_id

    def get_controller_epoch(self) -> tuple[int, int] | None:
        """(epoch, zkVersion of /controller_epoch), or None before the first election."""
        found = self.get_data(ControllerEpochZNode.path())
        if found is None:
            return None
        return ControllerEpochZNode.decode(found[0]), found[1].version

    def register_controller_and_increment_epoch(self, broker_id: int) -> tuple[int, int]:
        """Try to become controller: returns (new epoch, its zkVersion), the fencing token for every later
        controller write. Raises ControllerMovedError if another broker won."""
        current = self.get_controller_epoch()
        if current is None:
            self.create_if_absent(ControllerEpochZNode.path(), ControllerEpochZNode.encode(0))
            current = self.get_controller_epoch()
            if current is None:
                raise ZkError("/controller_epoch vanished right after being created")
        epoch, epoch_zk_version = current
        new_epoch = epoch + 1
        ops: list[Op] = [
            CreateOp(ControllerZNode.path(), ControllerZNode.encode(broker_id), ephemeral=True),
            SetDataOp(ControllerEpochZNode.path(), ControllerEpochZNode.encode(new_epoch), epoch_zk_version),
        ]
        try:
            results = self.multi(ops)
        except (NodeExistsError, BadVersionError, *_TRANSIENT):
            return self._check_controller_and_epoch(broker_id, new_epoch)
        log.info("broker %d elected controller with epoch %d", broker_id, new_epoch)
        return new_epoch, int(results[1].version)

    def _check_controller_and_epoch(self, broker_id: int, new_epoch: int) -> tuple[int, int]:
        # Our multi may have succeeded with its response lost: then /controller names us and the epoch
        # is exactly the one we wrote. Anything else means another broker won.
        self.wait_connected()
        controller = self.get_controller_id()
        if controller == broker_id:
            current = self.get_controller_epoch()
            if current is not None and current[0] == new_epoch:
                return current
        raise ControllerMovedError(
            f"broker {broker_id} lost the election for controller epoch {new_epoch}; "
            f"controller is {controller}"
        )

    def fenced_multi(self, epoch_zk_version: int, ops: Sequence[Op]) -> list[Any]:
        """Run `ops` atomically, only if `/controller_epoch` still has `epoch_zk_version`.

        Returns the results of `ops` (without the check). Raises ControllerMovedError when the check fails,
        or the failing operation's kazoo exception. Re-sent once reconnected after a connection loss, so a
        lost response shows up as that operation's NodeExists/NoNode/BadVersion.
        """
        all_ops: list[Op] = [CheckOp(ControllerEpochZNode.path(), epoch_zk_version), *ops]
        while True:
            try:
                return self.multi(all_ops)[1:]
            except _TRANSIENT:
                self.wait_connected()
            except ZookeeperError as e:
                if getattr(e, "op_index", None) == 0:
                    raise _controller_moved(epoch_zk_version) from e
                raise

    def _pipelined_fenced(
        self, epoch_zk_version: int, batches: Sequence[tuple[Any, Sequence[Op]]]
    ) -> dict[Any, list[Any] | Exception]:
        """Many independent fenced multis sent back to back (one round trip for all). Returns key -> results
        or the failing operation's error; raises ControllerMovedError if any fencing check failed."""
        check = CheckOp(ControllerEpochZNode.path(), epoch_zk_version)
        pending = []
        for key, ops in batches:
            tx = self._zk.transaction()
            apply_ops(tx, [check, *ops])
            pending.append((key, ops, tx.commit_async()))
        out: dict[Any, list[Any] | Exception] = {}
        moved = False
        for key, ops, async_result in pending:
            try:
                results = list(async_result.get())
            except _TRANSIENT:
                try:
                    out[key] = self.fenced_multi(epoch_zk_version, ops)
                except ControllerMovedError:
                    moved = True
                except ZookeeperError as e:
                    out[key] = e
                continue
            failure = first_failure(results)
            if failure is None:
                out[key] = results[1:]
            elif failure.index == 0:
                moved = True
            else:
                out[key] = failure.error
        if moved:
            raise _controller_moved(epoch_zk_version)
        return out

    def fenced_delete_recursive(self, path: str, epoch_zk_version: int) -> bool:
        """Delete `path` and its subtree, every batch fenced. False if it did not exist."""
        deleted_any = False
        for _ in range(20):
            nodes = self.list_recursive(path)
            if not nodes:
                return deleted_any
            try:
                for batch in chunked(nodes, _DELETE_BATCH):
                    self.fenced_multi(epoch_zk_version, [DeleteOp(p) for p in batch])
                return True
            except (NoNodeError, NotEmptyError):
                deleted_any = True  # the tree changed under us: list it again
        raise ZkError(f"{path} keeps changing while being deleted")

    def _fenced_delete_if_exists(self, path: str, epoch_zk_version: int | None) -> bool:
        try:
            if epoch_zk_version is None:
                return self.delete(path)
            self.fenced_multi(epoch_zk_version, [DeleteOp(path)])
            return True
        except NoNodeError:
            return False

    def _set_or_create(self, path: str, data: bytes, epoch_zk_version: int | None) -> None:
        if epoch_zk_version is None:
            self.set_or_create(path, data)
            return
        while True:
            try:
                self.fenced_multi(epoch_zk_version, [SetDataOp(path, data)])
                return
            except NoNodeError:
                pass
            try:
                self.fenced_multi(epoch_zk_version, [CreateOp(path, data)])
                return
            except NodeExistsError:
                continue

    def delete_controller(self, epoch_zk_version: int) -> bool:
        """Resign: delete `/controller`, fenced by our own epoch zkVersion."""
        return self._fenced_delete_if_exists(ControllerZNode.path(), epoch_zk_version)

    # -- partition states ------------------------------------------------------------------------------
    def create_topic_partition_states(
        self, states: Mapping[TopicPartition, LeaderIsrAndControllerEpoch], epoch_zk_version: int
    ) -> CreatePartitionStatesResult:
        """Create `partitions`, `partitions/<p>` and `partitions/<p>/state` (all fenced) of new partitions."""
        containers = [
            (t, [CreateOp(TopicPartitionsZNode.path(t))]) for t in sorted({tp.topic for tp in states})
        ]
        containers += [(tp, [CreateOp(TopicPartitionZNode.path(tp))]) for tp in sorted(states)]
        for key, result in self._pipelined_fenced(epoch_zk_version, containers).items():
            if isinstance(result, Exception) and not isinstance(result, NodeExistsError):
                log.warning("creating partition container for %s failed: %r", key, result)
        batches = [
            (
                tp,
                [
                    CreateOp(
                        TopicPartitionStateZNode.path(tp),
                        TopicPartitionStateZNode.encode(s.leader_and_isr, s.controller_epoch),
                    )
                ],
            )
            for tp, s in states.items()
        ]
        created: dict[TopicPartition, int] = {}
        failed: dict[TopicPartition, Exception] = {}
        for tp, result in self._pipelined_fenced(epoch_zk_version, batches).items():
            if isinstance(result, Exception):
                failed[tp] = result
            else:
                created[tp] = 0
        return CreatePartitionStatesResult(created, failed)

    def update_leader_and_isr(
        self,
        states: Mapping[TopicPartition, LeaderAndIsr],
        controller_epoch: int,
        epoch_zk_version: int,
    ) -> UpdateLeaderAndIsrResult:
        """Controller write of new leader/ISR: per partition a fenced setData conditional on the
        `zk_version` carried by each LeaderAndIsr. Raises ControllerMovedError if fenced."""
        batches = [
            (
                tp,
                [
                    SetDataOp(
                        TopicPartitionStateZNode.path(tp),
                        TopicPartitionStateZNode.encode(lai, controller_epoch),
                        lai.zk_version,
                    )
                ],
            )
            for tp, lai in states.items()
        ]
        successful: dict[TopicPartition, int] = {}
        bad_version: list[TopicPartition] = []
        failed: dict[TopicPartition, Exception] = {}
        for tp, result in self._pipelined_fenced(epoch_zk_version, batches).items():
            if isinstance(result, BadVersionError):
                bad_version.append(tp)
            elif isinstance(result, Exception):
                failed[tp] = result
            else:
                successful[tp] = int(result[0].version)
        return UpdateLeaderAndIsrResult(successful, bad_version, failed)

    def conditional_update_partition_state(
        self,
        tp: TopicPartition,
        leader_and_isr: LeaderAndIsr,
        controller_epoch: int,
        expected_version: int | None = None,
    ) -> tuple[bool, int]:
        """The partition leader's own ISR write (inter-broker protocol < 2.7): setData conditional on
        `expected_version` (default: `leader_and_isr.zk_version`). Returns (True, new zkVersion) or
        (False, -1) when the cached version is stale. A write whose response was lost is recognised by
        finding exactly our state in the znode."""
        version = leader_and_isr.zk_version if expected_version is None else expected_version
        path = TopicPartitionStateZNode.path(tp)
        try:
            return True, int(
                self.set_data(
                    path, TopicPartitionStateZNode.encode(leader_and_isr, controller_epoch), version
                ).version
            )
        except NoNodeError:
            return False, -1
        except BadVersionError:
            pass
        current = self.get_data(path)
        stored = self._decoded(TopicPartitionStateZNode.decode, path, current, NO_STATE)
        if (
            current is not None
            and stored is not None
            and stored.controller_epoch == controller_epoch
            and stored.leader_and_isr.same_state(leader_and_isr)
        ):
            return True, int(current[1].version)
        return False, -1

    def get_partition_state(self, tp: TopicPartition) -> LeaderIsrAndControllerEpoch | None:
        """None when the state znode is absent or does not decode."""
        path = TopicPartitionStateZNode.path(tp)
        return self._decoded(TopicPartitionStateZNode.decode, path, self.get_data(path), NO_STATE)

    def get_partition_states(
        self, tps: Iterable[TopicPartition]
    ) -> dict[TopicPartition, LeaderIsrAndControllerEpoch]:
        """Pipelined reads; partitions without a state znode, or whose state does not decode, are left
        out."""
        paths = {TopicPartitionStateZNode.path(tp): tp for tp in tps}
        out = {}
        for path, found in self.get_data_many(list(paths)).items():
            state = self._decoded(TopicPartitionStateZNode.decode, path, found, NO_STATE)
            if state is not None:
                out[paths[path]] = state
        return out

    def get_partitions_for_topic(self, topic: str) -> list[int]:
        """Partition ids that have a `partitions/<p>` znode."""
        return sorted(
            int(p) for p in self.get_children(TopicPartitionsZNode.path(topic)) or [] if p.isdigit()
        )

    # -- topics ----------------------------------------------------------------------------------------
    def get_all_topics(self) -> list[str]:
        return sorted(self.get_children(TopicsZNode.path()) or [])

    def topic_exists(self, topic: str) -> bool:
        return self.exists(TopicZNode.path(topic)) is not None

    def validate_topic_create(
        self, topic: str, assignment: Mapping[int, Sequence[int]], *, allow_internal: bool = False
    ) -> None:
        """Kafka's checks before a topic is created: name, existence, pending deletion, '.'/'_' collisions,
        assignment shape."""
        check_topic_creatable(
            topic,
            self.get_all_topics(),
            marked_for_deletion=self.get_topic_deletions(),
            allow_internal=allow_internal,
        )
        validate_replica_assignment(assignment)

    def create_topic_assignment(
        self,
        topic: str,
        assignment: Mapping[int, Sequence[int]],
        *,
        topic_id: str | None = None,
        config: Mapping[str, str] | None = None,
        validate: bool = True,
        allow_internal: bool = False,
    ) -> TopicAssignment:
        """Create a topic the ZooKeeper way: config znode first, then `/brokers/topics/<topic>` (the
        controller reacts to the latter). A topic id is generated unless given. TopicExistsError if the
        topic znode exists."""
        if validate:
            self.validate_topic_create(topic, assignment, allow_internal=allow_internal)
        elif self.topic_exists(topic):
            raise TopicExistsError(f"Topic '{topic}' already exists.")
        new = TopicAssignment(
            topic=topic,
            partitions={p: tuple(r) for p, r in sorted(assignment.items())},
            topic_id=topic_id or random_uuid_base64(),
        )
        self.set_or_create(
            ConfigEntityZNode.path(ConfigType.TOPIC, topic), ConfigEntityZNode.encode(config or {})
        )
        try:
            self.create(TopicZNode.path(topic), TopicZNode.encode(new), makepath=True)
        except NodeExistsError:
            raise TopicExistsError(f"Topic '{topic}' already exists.") from None
        return replace(new, zk_version=0)

    def get_topic_assignment(self, topic: str) -> TopicAssignment | None:
        """Raises ZNodeDataError when the topic znode does not decode (callers that write it back must
        not mistake that for an absent topic)."""
        path = TopicZNode.path(topic)
        found = self.get_data(path)
        return None if found is None else TopicZNode.decode(found[0], path, found[1])

    def get_topic_assignments(self, topics: Iterable[str]) -> dict[str, TopicAssignment]:
        """Pipelined reads; topics that vanished, or whose znode does not decode, are left out."""
        paths = {TopicZNode.path(t): t for t in topics}
        out = {}
        for path, found in self.get_data_many(list(paths)).items():
            assignment = self._decoded(TopicZNode.decode, path, found, TOPIC_SKIPPED)
            if assignment is not None:
                out[paths[path]] = assignment
        return out

    def set_topic_assignment(
        self,
        topic: str,
        partitions: Mapping[int, Sequence[int]],
        *,
        adding: Mapping[int, Sequence[int]] | None = None,
        removing: Mapping[int, Sequence[int]] | None = None,
        topic_id: str | None = None,
        expected_version: int = ANY_VERSION,
        epoch_zk_version: int | None = None,
    ) -> TopicAssignment:
        """Rewrite `/brokers/topics/<topic>` keeping its topic id and unknown keys (KAFKA-12835).

        `topic_id` sets an id only where none exists (controller back-fill); changing an existing id is
        refused. With `expected_version` the write is conditional (BadVersionError); otherwise a
        concurrent rewrite is re-read and merged again. `epoch_zk_version` fences a controller write.
        """
        path = TopicZNode.path(topic)
        while True:
            current = self.get_topic_assignment(topic)
            if current is None:
                raise UnknownTopicError(f"Topic '{topic}' does not exist.")
            if topic_id is not None and current.topic_id not in (None, topic_id):
                raise ValueError(f"topic {topic!r} already has id {current.topic_id}; refusing to change it")
            new = current.with_partitions(partitions, adding, removing)
            if topic_id is not None:
                new = replace(new, topic_id=topic_id)
            version = current.zk_version if expected_version == ANY_VERSION else expected_version
            data = TopicZNode.encode(new)
            try:
                if epoch_zk_version is None:
                    new_version = self.set_data(path, data, version).version
                else:
                    new_version = self.fenced_multi(epoch_zk_version, [SetDataOp(path, data, version)])[
                        0
                    ].version
            except BadVersionError:
                if expected_version != ANY_VERSION:
                    raise
                continue
            return replace(new, version=TopicZNode.CURRENT_VERSION, zk_version=int(new_version))

    def mark_topic_for_deletion(self, topic: str) -> None:
        """Create `/admin/delete_topics/<topic>`: UnknownTopicError / TopicAlreadyMarkedForDeletionError."""
        if not self.topic_exists(topic):
            raise UnknownTopicError(f"Topic '{topic}' does not exist.")
        try:
            self.create(DeleteTopicsTopicZNode.path(topic), DeleteTopicsTopicZNode.encode(), makepath=True)
        except NodeExistsError:
            raise TopicAlreadyMarkedForDeletionError(
                f"Topic '{topic}' is already marked for deletion."
            ) from None

    def is_topic_marked_for_deletion(self, topic: str) -> bool:
        return self.exists(DeleteTopicsTopicZNode.path(topic)) is not None

    def get_topic_deletions(self) -> list[str]:
        return sorted(self.get_children(DeleteTopicsZNode.path()) or [])

    def delete_topic_deletions(self, topics: Iterable[str], epoch_zk_version: int) -> None:
        batches = [(t, [DeleteOp(DeleteTopicsTopicZNode.path(t))]) for t in topics]
        self._pipelined_fenced(epoch_zk_version, batches)  # NoNode: already gone, fine

    def delete_topic(self, topic: str, epoch_zk_version: int) -> None:
        """Controller's final step of a topic deletion: topic tree, topic config, deletion marker (fenced)."""
        self.fenced_delete_recursive(TopicZNode.path(topic), epoch_zk_version)
        self._fenced_delete_if_exists(ConfigEntityZNode.path(ConfigType.TOPIC, topic), epoch_zk_version)
        self._fenced_delete_if_exists(DeleteTopicsTopicZNode.path(topic), epoch_zk_version)

    # -- legacy admin znodes ---------------------------------------------------------------------------
    def create_partition_reassignment(self, reassignment: Mapping[TopicPartition, Sequence[int]]) -> None:
        """The legacy tool's write; AdminOperationInProgressError if a reassignment is pending."""
        try:
            self.create(
                ReassignPartitionsZNode.path(), ReassignPartitionsZNode.encode(reassignment), makepath=True
            )
        except NodeExistsError:
            raise AdminOperationInProgressError("a partition reassignment is already in progress") from None

    def get_partition_reassignment(self) -> dict[TopicPartition, tuple[int, ...]] | None:
        found = self.get_data(ReassignPartitionsZNode.path())
        return None if found is None else ReassignPartitionsZNode.decode(found[0])

    def set_or_create_partition_reassignment(
        self, reassignment: Mapping[TopicPartition, Sequence[int]], epoch_zk_version: int | None = None
    ) -> None:
        data = ReassignPartitionsZNode.encode(reassignment)
        self._set_or_create(ReassignPartitionsZNode.path(), data, epoch_zk_version)

    def delete_partition_reassignment(self, epoch_zk_version: int | None = None) -> bool:
        return self._fenced_delete_if_exists(ReassignPartitionsZNode.path(), epoch_zk_version)

    def create_preferred_replica_election(self, partitions: Iterable[TopicPartition]) -> None:
        try:
            self.create(
                PreferredReplicaElectionZNode.path(),
                PreferredReplicaElectionZNode.encode(partitions),
                makepath=True,
            )
        except NodeExistsError:
            raise AdminOperationInProgressError(
                "a preferred replica election is already in progress"
            ) from None

    def get_preferred_replica_election(self) -> frozenset[TopicPartition] | None:
        found = self.get_data(PreferredReplicaElectionZNode.path())
        return None if found is None else PreferredReplicaElectionZNode.decode(found[0])

    def delete_preferred_replica_election(self, epoch_zk_version: int | None = None) -> bool:
        return self._fenced_delete_if_exists(PreferredReplicaElectionZNode.path(), epoch_zk_version)

    # -- notification queues ---------------------------------------------------------------------------
    def get_notifications(self, queue: SequentialZNodes) -> list[str]:
        """Child names of a notification queue, oldest first."""
        names = [n for n in self.get_children(queue.root) or [] if queue.is_notification(n)]
        return sorted(names, key=queue.sequence_number)

    def _delete_notifications(
        self, queue: SequentialZNodes, names: Iterable[str] | None, epoch_zk_version: int | None
    ) -> None:
        names = self.get_notifications(queue) if names is None else list(names)
        if epoch_zk_version is None:
            for name in names:
                self.delete(queue.path(name))
        else:
            self._pipelined_fenced(epoch_zk_version, [(n, [DeleteOp(queue.path(n))]) for n in names])

    def create_isr_change_notification(self, partitions: Iterable[TopicPartition]) -> str:
        """PS `/isr_change_notification/isr_change_N`; returns the created path."""
        data = IsrChangeNotificationZNode.encode(partitions)
        return self.create(ISR_CHANGES.path_prefix, data, sequential=True, makepath=True)

    def get_isr_change_notifications(self) -> list[str]:
        return self.get_notifications(ISR_CHANGES)

    def get_partitions_from_isr_change_notifications(self, names: Iterable[str]) -> set[TopicPartition]:
        paths = [ISR_CHANGES.path(n) for n in names]
        out: set[TopicPartition] = set()
        for path, found in self.get_data_many(paths).items():
            if found is None:
                continue
            try:
                out |= IsrChangeNotificationZNode.decode(found[0], path)
            except ZkError as e:
                log.warning("ignoring unreadable ISR change notification: %s", e)
        return out

    def delete_isr_change_notifications(
        self, names: Iterable[str] | None = None, epoch_zk_version: int | None = None
    ) -> None:
        """Delete the given (default: all) ISR change notifications; fenced with `epoch_zk_version`."""
        self._delete_notifications(ISR_CHANGES, names, epoch_zk_version)

    def create_log_dir_event_notification(self, broker_id: int) -> str:
        data = LogDirEventNotificationZNode.encode(LogDirEvent(broker_id))
        return self.create(LOG_DIR_EVENTS.path_prefix, data, sequential=True, makepath=True)

    def get_log_dir_event_notifications(self) -> list[str]:
        return self.get_notifications(LOG_DIR_EVENTS)

    def get_brokers_from_log_dir_events(self, names: Iterable[str]) -> list[int]:
        paths = [LOG_DIR_EVENTS.path(n) for n in names]
        brokers = []
        for path, found in self.get_data_many(paths).items():
            if found is None:
                continue
            try:
                brokers.append(LogDirEventNotificationZNode.decode(found[0], path).broker_id)
            except ZkError as e:
                log.warning("ignoring unreadable log dir event notification: %s", e)
        return brokers

    def delete_log_dir_event_notifications(
        self, names: Iterable[str] | None = None, epoch_zk_version: int | None = None
    ) -> None:
        self._delete_notifications(LOG_DIR_EVENTS, names, epoch_zk_version)

    def create_config_change_notification(self, entity_path: str) -> str:
        data = ConfigEntityChangeNotificationZNode.encode(entity_path)
        queue = ConfigEntityChangeNotificationZNode.SEQUENCE
        return self.create(queue.path_prefix, data, sequential=True, makepath=True)

    # -- dynamic config --------------------------------------------------------------------------------
    def get_entity_config(self, entity_type: ConfigType | str, znode_name: str) -> dict[str, str]:
        """Overrides of one entity (`{}` if none); `znode_name` is sanitized (znodes.config_entity_name)."""
        path = ConfigEntityZNode.path(entity_type, znode_name)
        found = self.get_data(path)
        return {} if found is None else ConfigEntityZNode.decode(found[0], path)

    def get_entity_configs(
        self, entity_type: ConfigType | str, znode_names: Iterable[str]
    ) -> dict[str, dict[str, str]]:
        """Overrides of many entities; an entity whose znode does not decode reads as `{}`."""
        paths = {ConfigEntityZNode.path(entity_type, n): n for n in znode_names}
        return {
            paths[path]: self._decoded(_decode_entity_config, path, found, DEFAULTS_APPLY) or {}
            for path, found in self.get_data_many(list(paths)).items()
        }

    def get_all_entities(self, entity_type: ConfigType | str) -> list[str]:
        return sorted(self.get_children(ConfigEntityTypeZNode.path(entity_type)) or [])

    def get_user_client_entities(self, user_znode_names: Iterable[str]) -> list[str]:
        """The `<user>/clients/<client>` entity names (quotas of a user with one client id) of the given
        users, as ConfigEntityZNode names below `/config/users`."""
        return [
            f"{user}/clients/{client}"
            for user in user_znode_names
            for client in sorted(self.get_children(UserClientsZNode.path(user)) or [])
        ]

    def set_entity_config(
        self, entity_type: ConfigType | str, znode_name: str, config: Mapping[str, str]
    ) -> str:
        """Set-or-create the entity's config, then announce it with a v2 change notification (returned)."""
        entity_type = ConfigType(entity_type)
        self.set_or_create(ConfigEntityZNode.path(entity_type, znode_name), ConfigEntityZNode.encode(config))
        return self.create_config_change_notification(f"{entity_type.value}/{znode_name}")

    # -- producer ids ----------------------------------------------------------------------------------
    def allocate_producer_id_block(
        self, broker_id: int, block_size: int = PRODUCER_ID_BLOCK_SIZE
    ) -> tuple[int, int]:
        """Claim the next block of producer ids (bounds inclusive) with a conditional write, retrying on
        conflicts; a write whose response was lost is recognised by reading back exactly our data."""
        path = ProducerIdBlockZNode.path()
        while True:
            found = self.get_data(path)
            if found is None:
                self.create_if_absent(path)
                continue
            data, stat = found
            previous = ProducerIdBlockZNode.decode(data, path)
            start = 0 if previous is None else previous.block_end + 1
            if start > INT64_MAX - block_size:
                raise ProducerIdsExhaustedError(f"no producer ids left after {start - 1}")
            block = ProducerIdBlock(broker_id, start, start + block_size - 1)
            new = ProducerIdBlockZNode.encode(block)
            try:
                self._zk.set(path, new, stat.version)
            except BadVersionError:
                continue  # another broker took a block
            except (*_TRANSIENT, SessionExpiredError):
                self.wait_connected()
                after = self.get_data(path)
                if after is None or after[0] != new or after[1].version != stat.version + 1:
                    continue
            log.info("broker %d allocated producer ids %d-%d", broker_id, block.block_start, block.block_end)
            return block.block_start, block.block_end

    # -- features --------------------------------------------------------------------------------------
    def get_feature(self) -> FeatureZNodeData | None:
        found = self.get_data(FeatureZNode.path())
        return None if found is None else FeatureZNode.decode(found[0], FeatureZNode.path(), found[1])

    def create_feature(self, data: FeatureZNodeData) -> int:
        self.create(FeatureZNode.path(), FeatureZNode.encode(data))
        return 0

    def update_feature(self, data: FeatureZNodeData, expected_version: int = ANY_VERSION) -> int:
        return int(self.set_data(FeatureZNode.path(), FeatureZNode.encode(data), expected_version).version)


def _decode_entity_config(data: bytes, path: str, _stat: ZnodeStat) -> dict[str, str]:
    return ConfigEntityZNode.decode(data, path)
