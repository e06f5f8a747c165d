"""`KafkaZkClient`: every ZooKeeper read and write a Kafka broker or controller makes.

Paths and codecs come from `znodes.py`; this module decides *how* each write is made (atomic multis,
conditional versions, fencing) following Kafka's KafkaZkClient:

* broker registration = one multi {create EPHEMERAL empty, setData version 0}; the broker epoch is the
  znode's czxid;
* controller election = one multi {create EPHEMERAL /controller, conditional setData /controller_epoch};
  every later controller write is a multi that starts with `check(/controller_epoch, epochZkVersion)`,
  so a controller that lost its election can no longer change anything (`ControllerMovedError`);
* partition state writes are conditional on the state znode's zkVersion, per partition, and go
  many to a fenced multi (bounded below `jute.maxbuffer`), the multis pipelined.

The parts live in their own modules, one reason to change each: `store` (decoding and fenced
writes, the base of all), `controller_store`, `topic_store`, `notification_store`, `config_store`,
`acl_store` and `old_consumer_store`; this module keeps the bootstrap, broker registration,
producer-id blocks and features, and puts them together.

Threading: all methods block on ZooKeeper round trips and are safe to call from several threads; call
them from an executor (see `watch_bridge.ZkExecutor`), never on the asyncio loop thread.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from kazoo.exceptions import (
    BadVersionError,
    NodeExistsError,
    NoNodeError,
    SessionExpiredError,
)

from zkafka.zk.acl_store import AclStoreMixin
from zkafka.zk.config_store import ConfigStoreMixin
from zkafka.zk.controller_store import (
    ControllerStoreMixin,
    CreatePartitionStatesResult,
    UpdateLeaderAndIsrResult,
)
from zkafka.zk.errors import (
    BrokerIdInUseError,
    ProducerIdsExhaustedError,
    ZkError,
)
from zkafka.zk.json_codec import INT64_MAX
from zkafka.zk.model import (
    ANY_VERSION,
    PRODUCER_ID_BLOCK_SIZE,
    BrokerInfo,
    FeatureZNodeData,
    ProducerIdBlock,
    random_uuid_base64,
)
from zkafka.zk.old_consumer_store import OldConsumerStoreMixin
from zkafka.zk.ops import CreateOp, Op, SetDataOp
from zkafka.zk.store import DEFAULT_RESERVED_BROKER_MAX_ID, NOT_LIVE, TRANSIENT
from zkafka.zk.topic_store import TopicStoreMixin
from zkafka.zk.znodes import (
    PERSISTENT_TOP_LEVEL_PATHS,
    BrokerIdsZNode,
    BrokerIdZNode,
    BrokerSequenceIdZNode,
    ClusterIdZNode,
    FeatureZNode,
    ProducerIdBlockZNode,
)

log = logging.getLogger(__name__)

__all__ = ["CreatePartitionStatesResult", "KafkaZkClient", "UpdateLeaderAndIsrResult"]


class KafkaZkClient(
    ControllerStoreMixin, TopicStoreMixin, ConfigStoreMixin, AclStoreMixin, OldConsumerStoreMixin
):
    """A ZooKeeper session plus Kafka's data model; see the module docstring for the rules.

    Reads decode znode by znode: one whose data does not decode is reported to `bad_znodes` (one log
    line per content) and read as absent, so it never stops the reading of anything else."""

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
            except (*TRANSIENT, SessionExpiredError):
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
            except (*TRANSIENT, SessionExpiredError):
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


def controller_id_or_none(zookeeper_connect: str, timeout_ms: int = 2000) -> int | None:
    """The active controller's broker id, read with a short-lived session; None when there is
    none or ZooKeeper does not answer within `timeout_ms` (tools then go on without it)."""
    try:
        zk = KafkaZkClient(zookeeper_connect, connection_timeout_ms=timeout_ms, create_chroot=False)
    except Exception:
        return None
    try:
        return zk.get_controller_id()
    except Exception:
        return None
    finally:
        zk.close()
