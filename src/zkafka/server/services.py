"""What a request handler may use of its broker: `BrokerServices`, one per broker, built once by
`zkafka.server.broker` and handed to every request in its `RequestContext`.

Each field is the narrowest thing its handlers need: a `Protocol` where the object behind it can
do more than handlers should (the registration, the controller module, the log manager, and the
ZooKeeper session, whose protocol lives with it in `zookeeper.py`), the service itself where it is
already one job (metadata cache, replica manager, group and transaction coordinators, producer ids, ISR
maintenance). Nothing here knows the `Broker` class, so the handlers cannot reach back into
start-up, shutdown or the listeners.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from zkafka.config import BrokerConfig
from zkafka.controller.context import ReplicaAssignment
from zkafka.protocol import ErrorCode
from zkafka.quotas.replication import ReplicationQuota
from zkafka.security.authorizer import AclAuthorizer
from zkafka.server.broker_metrics import BrokerMetrics
from zkafka.server.client_quotas import ClientQuotas
from zkafka.server.coordinator_service import CoordinatorService
from zkafka.server.fetch_sessions import FetchSessionCache
from zkafka.server.isr import IsrManager
from zkafka.server.metadata_cache import MetadataCache, MetadataWaits
from zkafka.server.producer_ids import ProducerIdManager
from zkafka.server.replica_manager import ReplicaManager
from zkafka.server.txn_coordinator_service import TxnCoordinatorService
from zkafka.server.zookeeper import ZooKeeper
from zkafka.storage.config import LogConfig
from zkafka.storage.log import Log
from zkafka.storage.naming import TopicPartition


class BrokerIdentity(Protocol):
    """Who this broker is. `broker_epoch` is the czxid of its current `/brokers/ids/<id>`
    registration (-1 before the first): it changes when a new ZooKeeper session re-registers."""

    @property
    def broker_id(self) -> int: ...

    @property
    def cluster_id(self) -> str: ...

    @property
    def broker_epoch(self) -> int: ...


class ControllerAccess(Protocol):
    """The controller module running in this broker, as the controller-only APIs see it: they act
    only while `is_active` (else NOT_CONTROLLER), and never start or stop it."""

    @property
    def is_active(self) -> bool: ...

    @property
    def active_controller_id(self) -> int:
        """The broker named in /controller as this broker's controller module last read it (-1:
        none known)."""
        ...

    async def controlled_shutdown(
        self, broker_id: int, broker_epoch: int
    ) -> tuple[ErrorCode, set[TopicPartition]]: ...

    async def elect_leaders(
        self, partitions: Iterable[TopicPartition] | None, *, unclean: bool = False
    ) -> dict[TopicPartition, tuple[ErrorCode, str | None]]: ...

    async def alter_partition_reassignments(
        self, reassignments: Mapping[TopicPartition, Sequence[int] | None]
    ) -> dict[TopicPartition, tuple[ErrorCode, str | None]]: ...

    def list_partition_reassignments(
        self, partitions: Iterable[TopicPartition] | None = None
    ) -> dict[TopicPartition, ReplicaAssignment]: ...


class TopicLogs(Protocol):
    """The local logs as the admin and controller requests see them: the defaults new topics get,
    per-topic configs, and whether a partition has a log here yet (never opening or deleting one:
    that is the replica manager's job)."""

    @property
    def default_config(self) -> LogConfig: ...

    def get_log(self, topic: str, partition: int) -> Log | None: ...

    def update_topic_config(self, topic: str, config: LogConfig | None) -> None: ...

    @property
    def log_dirs(self) -> Sequence[Path]: ...

    def all_logs(self) -> dict[TopicPartition, Log]: ...

    def log_dir_of(self, topic: str, partition: int) -> Path | None: ...


class DynamicConfigs(Protocol):
    """This broker's dynamic broker configs (KIP-226), as the config APIs see them: the overrides
    of `/config/brokers/<default>` and `/config/brokers/<id>`, the effective config they make, a
    check of a proposed change (DynamicConfigError, in `zkafka.server.dynamic_config`) and a
    reload after writing one (`zkafka.server.dynamic_config.DynamicBrokerConfig`)."""

    @property
    def defaults(self) -> Mapping[str, str]: ...

    @property
    def per_broker(self) -> Mapping[str, str]: ...

    def check(self, overrides: Mapping[str, str], *, per_broker: bool) -> BrokerConfig: ...

    async def reload(self) -> None: ...

    def effective_text(self, key: str) -> str | None: ...

    def synonyms(self, key: str, *, per_broker: bool = True) -> list[tuple[str, str | None, int]]: ...


@dataclass(frozen=True, slots=True)
class BrokerServices:
    identity: BrokerIdentity
    config: BrokerConfig
    served_versions: Mapping[int, tuple[int, int]]
    """api key -> (min, max) version: exactly the APIs that have a handler."""
    metadata: MetadataCache
    metadata_waits: MetadataWaits
    replicas: ReplicaManager
    logs: TopicLogs
    isr: IsrManager
    zk: ZooKeeper
    controller: ControllerAccess
    groups: CoordinatorService
    producer_ids: ProducerIdManager
    transactions: TxnCoordinatorService | None = None
    """The transaction coordinator; None where a test builds services without it."""
    authorizer: AclAuthorizer | None = None
    """Kafka's ACL authorizer when `authorizer.class.name` asks for it, else None: no checks at all
    (`zkafka.server.authorization` is where requests are checked)."""
    dynamic: DynamicConfigs | None = None
    """Dynamic broker configs; None where a test builds services without them."""
    quotas: ClientQuotas | None = None
    """Client quotas (`zkafka.server.client_quotas`): produce/fetch byte rates and request time,
    each answering a KIP-219 throttle time; None where a test builds services without them."""
    leader_throttle: ReplicationQuota | None = None
    """The leader side of the replication throttles (`zkafka.server.replication_throttles`), which
    replica fetches of throttled partitions are held to."""
    on_topic_overrides: Callable[[str, Mapping[str, str]], None] | None = None
    """Where a topic's config overrides go when a handler has read them from ZooKeeper (the
    replication throttles' partitions, `ReplicationThrottles.update_topic`)."""
    metrics: BrokerMetrics | None = None
    """The counters handlers bump (per request, per partition batch); None when `metrics.listener`
    is unset, and then nothing is counted (`zkafka.server.broker_metrics`)."""
    fetch_sessions: FetchSessionCache | None = None
    """The incremental fetch sessions (KIP-227, `zkafka.server.fetch_sessions`), used by the session
    layer around Fetch (`apis/fetch_session_layer.py`); None: every fetch is answered sessionless."""

    def controller_id_for_clients(self) -> int:
        """The controller that Metadata and DescribeCluster name (`controller_for_clients`)."""
        return controller_for_clients(self.metadata, self.controller.active_controller_id)


def controller_for_clients(cache: MetadataCache, elected: int) -> int:
    """The controller to name to clients, given the cache and the broker `elected` in /controller
    as this broker's controller module last read it (-1: none known).

    Kafka's ZooKeeper-mode brokers answer the last UpdateMetadata's controller, which after a
    failover stays the dead one until the new controller has loaded the cluster and sent its first
    UpdateMetadata (seconds at scale): an admin client that looks the controller up in that window
    waits on a broker that is gone and, like librdkafka's, does not ask again before its request
    times out. Every broker watches /controller, so name the broker found there as soon as it
    differs and the cache knows it. While /controller is empty (an election under way, which
    takes milliseconds once the old session has expired) the cache's answer stands: a stale id
    read there could otherwise leave every client without a controller."""
    cached = cache.controller_id
    if elected >= 0 and elected != cached and elected in cache.brokers:
        return elected
    return cached
