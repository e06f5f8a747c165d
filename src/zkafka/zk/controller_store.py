"""Controller election and partition states in ZooKeeper (part of `KafkaZkClient`):
`/controller` and `/controller_epoch` written in one multi at election, and the partition state
znodes written conditionally on their zkVersion, many per fenced multi (bounded in bytes, see
`store.MULTI_MAX_BYTES`), the multis pipelined.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Mapping
from typing import NamedTuple

from kazoo.exceptions import (
    BadVersionError,
    NodeExistsError,
    NoNodeError,
    SessionExpiredError,
)
from kazoo.protocol.states import ZnodeStat

from zkafka.zk.errors import (
    ControllerMovedError,
    ZkError,
)
from zkafka.zk.model import (
    ControllerRegistration,
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    TopicPartition,
)
from zkafka.zk.ops import CreateOp, Op, SetDataOp
from zkafka.zk.store import NO_STATE, TRANSIENT, UNKNOWN_CONTROLLER, ZkStore
from zkafka.zk.znodes import (
    ControllerEpochZNode,
    ControllerZNode,
    TopicPartitionStateZNode,
    TopicPartitionsZNode,
    TopicPartitionZNode,
)

log = logging.getLogger("zkafka.zk.client")  # one logger for the client, whatever module a line comes from


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


class ControllerStoreMixin(ZkStore):
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
        except (NodeExistsError, BadVersionError, *TRANSIENT):
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

    def delete_controller(self, epoch_zk_version: int) -> bool:
        """Resign: delete `/controller`, fenced by our own epoch zkVersion."""
        return self._fenced_delete_if_exists(ControllerZNode.path(), epoch_zk_version)

    # -- partition states ------------------------------------------------------------------------------
    def create_topic_partition_states(
        self, states: Mapping[TopicPartition, LeaderIsrAndControllerEpoch], epoch_zk_version: int
    ) -> CreatePartitionStatesResult:
        """Create `partitions`, `partitions/<p>` and `partitions/<p>/state` (all fenced) of new partitions."""
        # Batched multis (`_batched_fenced`): a topic of thousands of partitions is a few requests,
        # not thousands. Containers that exist already are fine (a partition being re-created
        # after a controller died half-way).
        # The topics' `partitions` first, on their own: when a topic grows, its `partitions` exists
        # and would roll back a multi holding the new partitions' containers too.
        topic_containers: list[tuple[object, Op]] = [
            (t, CreateOp(TopicPartitionsZNode.path(t))) for t in sorted({tp.topic for tp in states})
        ]
        partition_containers: list[tuple[object, Op]] = [
            (tp, CreateOp(TopicPartitionZNode.path(tp))) for tp in sorted(states)
        ]
        for containers in (topic_containers, partition_containers):
            failed_containers = [
                (key, result)
                for key, result in self._batched_fenced(epoch_zk_version, containers).items()
                if isinstance(result, Exception) and not isinstance(result, NodeExistsError)
            ]
            if failed_containers:
                # one line, not one per partition (a topic deleted meanwhile fails them all); the
                # state creates below fail too and are reported per partition to the caller
                key, result = failed_containers[0]
                log.warning(
                    "creating %d partition container(s) failed, first %s: %r",
                    len(failed_containers),
                    key,
                    result,
                )
        creates: Iterator[tuple[object, Op]] = (  # sent multi by multi as made (`_send_chunked`)
            (
                tp,
                CreateOp(
                    TopicPartitionStateZNode.path(tp),
                    TopicPartitionStateZNode.encode(s.leader_and_isr, s.controller_epoch),
                ),
            )
            for tp, s in states.items()
        )
        created: dict[TopicPartition, int] = {}
        failed: dict[TopicPartition, Exception] = {}
        for tp, result in self._batched_fenced(epoch_zk_version, creates).items():
            if isinstance(result, Exception):
                failed[tp] = result
            else:
                created[tp] = 0
        return CreatePartitionStatesResult(created, failed)

    def update_leader_and_isr(
        self,
        states: Mapping[TopicPartition, LeaderAndIsr] | Iterable[tuple[TopicPartition, LeaderAndIsr]],
        controller_epoch: int,
        epoch_zk_version: int,
    ) -> UpdateLeaderAndIsrResult:
        """Controller write of new leader/ISR: per partition a setData conditional on the
        `zk_version` carried by each LeaderAndIsr, many to a fenced multi. `states` may be an
        iterator of pairs, taken as the multis are sent (an election's decisions, made while
        ZooKeeper applies the first ones). Raises ControllerMovedError if fenced."""
        pairs = states.items() if isinstance(states, Mapping) else states
        # a generator: each multi is sent as soon as its operations are made (`_send_chunked`)
        writes: Iterator[tuple[object, Op]] = (
            (
                tp,
                SetDataOp(
                    TopicPartitionStateZNode.path(tp),
                    TopicPartitionStateZNode.encode(lai, controller_epoch),
                    lai.zk_version,
                ),
            )
            for tp, lai in pairs
        )
        successful: dict[TopicPartition, int] = {}
        bad_version: list[TopicPartition] = []
        failed: dict[TopicPartition, Exception] = {}
        for tp, result in self._batched_fenced(epoch_zk_version, writes).items():
            if isinstance(result, BadVersionError):
                bad_version.append(tp)
            elif isinstance(result, Exception):
                failed[tp] = result
            else:
                successful[tp] = int(result.version)
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
            return self._recognise_state_write(tp, leader_and_isr, controller_epoch)

    def conditional_update_partition_states(
        self, updates: Mapping[TopicPartition, tuple[LeaderAndIsr, int]]
    ) -> dict[TopicPartition, tuple[bool, int]]:
        """Many `conditional_update_partition_state`s (partition -> (state, controller epoch),
        each conditional on its state's zk_version), when a leader changes the ISR of thousands
        of partitions at once (a follower came back, or went away): as multis of many setData
        (`batched_multis`; unfenced, as the single write: the zkVersion is the condition), one
        ZooKeeper transaction per chunk instead of one request per partition. A chunk that fails
        (a stale zkVersion rolls back its neighbours too) or whose answer was lost is written
        again pipelined, partition by partition, so each keeps its own outcome."""
        items = (  # sent multi by multi as made (`_send_chunked`)
            (
                tp,
                SetDataOp(
                    TopicPartitionStateZNode.path(tp),
                    TopicPartitionStateZNode.encode(lai, epoch),
                    lai.zk_version,
                ),
            )
            for tp, (lai, epoch) in updates.items()
        )
        applied, left = self.batched_multis(items)
        out = {tp: (True, int(stat.version)) for tp, stat in applied.items()}
        if left:
            out.update(self._pipelined_state_updates({tp: updates[tp] for tp in left}))
        return out

    def _pipelined_state_updates(
        self, updates: Mapping[TopicPartition, tuple[LeaderAndIsr, int]]
    ) -> dict[TopicPartition, tuple[bool, int]]:
        """`conditional_update_partition_state` of each, pipelined (one round trip for all); one
        whose answer was lost is written again through the single-partition path, which
        recognises its own write, and a BADVERSION is read back for the same reason."""
        pending = [
            (
                tp,
                lai,
                epoch,
                self._zk.set_async(
                    TopicPartitionStateZNode.path(tp),
                    TopicPartitionStateZNode.encode(lai, epoch),
                    lai.zk_version,
                ),
            )
            for tp, (lai, epoch) in updates.items()
        ]
        out: dict[TopicPartition, tuple[bool, int]] = {}
        stale: dict[str, tuple[TopicPartition, LeaderAndIsr, int]] = {}
        for tp, lai, epoch, result in pending:
            try:
                out[tp] = True, int(result.get().version)
            except NoNodeError:
                out[tp] = False, -1
            except BadVersionError:
                stale[TopicPartitionStateZNode.path(tp)] = tp, lai, epoch
            except (*TRANSIENT, SessionExpiredError):  # the single path retries until reconnected
                out[tp] = self.conditional_update_partition_state(tp, lai, epoch)
        for path, found in self.get_data_many(list(stale)).items():
            tp, lai, epoch = stale[path]
            out[tp] = self._is_own_state(path, found, lai, epoch)
        return out

    def _recognise_state_write(
        self, tp: TopicPartition, leader_and_isr: LeaderAndIsr, controller_epoch: int
    ) -> tuple[bool, int]:
        """After BADVERSION: (True, zkVersion) if the znode holds exactly our state (our write
        went through and its answer was lost), else (False, -1)."""
        path = TopicPartitionStateZNode.path(tp)
        return self._is_own_state(path, self.get_data(path), leader_and_isr, controller_epoch)

    def _is_own_state(
        self,
        path: str,
        current: tuple[bytes, ZnodeStat] | None,
        leader_and_isr: LeaderAndIsr,
        controller_epoch: int,
    ) -> tuple[bool, int]:
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
