"""`AdminClient`: topics, partitions, configs, offsets and the cluster's shape.

Every call is async; `zkafka.client.sync.SyncAdminClient` wraps them for blocking code (the CLI).
Batch calls (`create_topics`, `delete_topics`, `create_partitions`) return one result per item:
None for success or the broker's `KafkaError` (its code and, when sent, its message), so a tool
can report each topic; the singular forms (`create_topic`, ...) raise instead.

CreateTopics, DeleteTopics, CreatePartitions, ElectLeaders, AlterPartitionReassignments and
ListPartitionReassignments go to the controller named in Metadata and are retried there when the
broker answers NOT_CONTROLLER (the controller moved meanwhile). `elect_leaders` and
`alter_partition_reassignments` answer per partition like the batch calls. `describe_acls` lists
every ACL binding (DescribeAcls, decoded by `zkafka.security.acl_wire`, as `zkafka acls` does).
"""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any, Self, TypeVar

from zkafka.client import user_scram
from zkafka.client.cluster import BrokerMetadata, TopicMetadata
from zkafka.client.cluster_client import ClusterClient
from zkafka.client.connection import ConnectionError_
from zkafka.client.errors import BrokerUnavailableError, ClientTimeoutError, ConfigError
from zkafka.client.offsets import READ_UNCOMMITTED, list_offsets, offset_spec
from zkafka.client.security import ClientSecurity
from zkafka.client.types import OffsetAndTimestamp, TopicPartition
from zkafka.protocol import ErrorCode, KafkaError, Message
from zkafka.protocol.messages import (
    AlterClientQuotasRequest,
    AlterClientQuotasResponse,
    AlterConfigsRequest,
    AlterConfigsResponse,
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsResponse,
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    DescribeAclsRequest,
    DescribeAclsResponse,
    DescribeClientQuotasRequest,
    DescribeClientQuotasResponse,
    DescribeConfigsRequest,
    DescribeConfigsResponse,
    DescribeLogDirsRequest,
    DescribeLogDirsResponse,
    ElectLeadersRequest,
    ElectLeadersResponse,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsResponse,
)
from zkafka.security.acl_filters import PatternTypeFilter
from zkafka.security.acl_wire import ANY, PATTERN_FILTER_CODES, described_bindings
from zkafka.zk.acls import AclEntry, ResourcePattern

DEFAULT_TIMEOUT_MS = 30_000
K = TypeVar("K")
_WHOLE = "<the whole request>"
"""The one key of a request whose answer is all or nothing (see `_ask_controller`)."""


# -- value types -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class NewTopic:
    """A topic to create. -1 for partitions / replication factor means the broker's default
    (`num.partitions`, `default.replication.factor`). `assignment` (partition -> broker ids)
    replaces both counts, as in Kafka."""

    name: str
    num_partitions: int = -1
    replication_factor: int = -1
    configs: Mapping[str, str] = field(default_factory=dict)
    assignment: Mapping[int, Sequence[int]] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ConfigError("a topic name must be a non-empty string")
        if self.assignment is not None:
            if self.num_partitions != -1 or self.replication_factor != -1:
                raise ConfigError(
                    f"topic {self.name!r}: give either a replica assignment or partitions and "
                    "replication factor, not both"
                )
            if not self.assignment:
                raise ConfigError(f"topic {self.name!r}: the replica assignment is empty")
            if sorted(self.assignment) != list(range(len(self.assignment))):
                raise ConfigError(f"topic {self.name!r}: assigned partitions must be 0..N-1")
        else:
            if self.num_partitions == 0 or self.num_partitions < -1:
                raise ConfigError(f"topic {self.name!r}: partitions must be >= 1, got {self.num_partitions}")
            if self.replication_factor == 0 or self.replication_factor < -1:
                raise ConfigError(
                    f"topic {self.name!r}: replication factor must be >= 1, got {self.replication_factor}"
                )


@dataclass(frozen=True)
class NewPartitions:
    """Grow a topic to `total_count` partitions; `assignments` lists the replicas of each new one."""

    total_count: int
    assignments: Sequence[Sequence[int]] | None = None


class ConfigResourceType(IntEnum):
    TOPIC = 2
    BROKER = 4
    BROKER_LOGGER = 8


class ConfigSource(IntEnum):
    UNKNOWN = 0
    DYNAMIC_TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    DYNAMIC_BROKER_LOGGER_CONFIG = 6


class AlterConfigOp(IntEnum):
    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3


@dataclass(frozen=True)
class ConfigResource:
    type: ConfigResourceType
    name: str

    @classmethod
    def topic(cls, name: str) -> Self:
        return cls(ConfigResourceType.TOPIC, name)

    @classmethod
    def broker(cls, broker_id: int | str = "") -> Self:
        """A broker's configs; the empty name means the cluster-wide dynamic default."""
        return cls(ConfigResourceType.BROKER, str(broker_id))


@dataclass(frozen=True)
class ConfigEntry:
    name: str
    value: str | None
    source: ConfigSource = ConfigSource.UNKNOWN
    read_only: bool = False
    is_default: bool = False
    is_sensitive: bool = False
    synonyms: tuple[tuple[str, str | None, ConfigSource], ...] = ()

    @property
    def is_override(self) -> bool:
        """Set on the resource itself (a topic override or a dynamic per-broker config)."""
        if self.source == ConfigSource.UNKNOWN:  # DescribeConfigs v0 tells only "default or not"
            return not self.is_default and not self.read_only
        return self.source in (ConfigSource.DYNAMIC_TOPIC_CONFIG, ConfigSource.DYNAMIC_BROKER_CONFIG)


QUOTA_DEFAULT = "<default>"


@dataclass(frozen=True, slots=True)
class QuotaFilter:
    """One DescribeClientQuotas filter component: `entity_type` (`user` or `client-id`) and a name
    to match exactly, `<default>` for the default entity, or None for any entity of the type."""

    entity_type: str
    name: str | None = None

    @property
    def match_type(self) -> int:
        return 2 if self.name is None else 1 if self.name == QUOTA_DEFAULT else 0


class ElectionType(IntEnum):
    PREFERRED = 0
    UNCLEAN = 1


@dataclass(frozen=True)
class PartitionReassignment:
    """A reassignment in progress: `replicas` is target + original, as in the topic znode."""

    replicas: tuple[int, ...]
    adding_replicas: tuple[int, ...]
    removing_replicas: tuple[int, ...]

    @property
    def target_replicas(self) -> tuple[int, ...]:
        return tuple(r for r in self.replicas if r not in self.removing_replicas)


@dataclass(frozen=True)
class ClusterDescription:
    cluster_id: str | None
    controller_id: int
    brokers: tuple[BrokerMetadata, ...]


@dataclass(frozen=True)
class LogDirDescription:
    """One log dir of one broker (DescribeLogDirs): its error (KAFKA_STORAGE_ERROR when offline),
    the bytes its partitions take, and its file system's total and usable bytes (-1 when the
    broker does not say: below DescribeLogDirs v4)."""

    path: str
    error_code: int
    partitions_bytes: int
    total_bytes: int
    usable_bytes: int


# -- the client ----------------------------------------------------------------------------------


class AdminClient(ClusterClient):
    def __init__(
        self,
        bootstrap_servers: str | Sequence[str] | None = None,
        *,
        zookeeper_connect: str | None = None,
        zookeeper_listener_name: str | None = None,
        client_id: str = "zkafka-admin",
        request_timeout_ms: int = DEFAULT_TIMEOUT_MS,
        retry_backoff_ms: int = 100,
        security: ClientSecurity | None = None,
    ) -> None:
        super().__init__(
            bootstrap_servers,
            zookeeper_connect=zookeeper_connect,
            zookeeper_listener_name=zookeeper_listener_name,
            client_id=client_id,
            request_timeout_ms=request_timeout_ms,
            retry_backoff_ms=retry_backoff_ms,
            security=security,
        )

    # -- cluster ---------------------------------------------------------------------------------
    async def describe_cluster(self) -> ClusterDescription:
        meta = await self.cluster.refresh()
        return ClusterDescription(
            meta.cluster_id, meta.controller_id, tuple(meta.brokers[b] for b in sorted(meta.brokers))
        )

    async def describe_log_dirs(
        self, broker_ids: Sequence[int] | None = None
    ) -> dict[int, list[LogDirDescription]]:
        """Every log dir of the given brokers (default: all live ones), asked of each broker."""
        meta = await self.cluster.refresh()
        out: dict[int, list[LogDirDescription]] = {}
        for broker in sorted(meta.brokers) if broker_ids is None else broker_ids:
            resp = await self.cluster.send(broker, DescribeLogDirsRequest(topics=None))
            assert isinstance(resp, DescribeLogDirsResponse)
            out[broker] = [
                LogDirDescription(
                    r.log_dir,
                    r.error_code,
                    sum(p.partition_size for t in r.topics for p in t.partitions),
                    r.total_bytes,
                    r.usable_bytes,
                )
                for r in resp.results
            ]
        return out

    # -- topics ----------------------------------------------------------------------------------
    async def list_topics(self, *, include_internal: bool = False) -> list[str]:
        meta = await self.cluster.refresh(all_topics=True)
        return sorted(name for name, t in meta.topics.items() if include_internal or not t.is_internal)

    async def describe_topics(self, names: Iterable[str] | None = None) -> dict[str, TopicMetadata]:
        """Partitions, leaders, replicas and ISR of `names` (every topic when None). A requested
        topic that does not exist raises KafkaError UNKNOWN_TOPIC_OR_PARTITION."""
        if names is None:
            meta = await self.cluster.refresh(all_topics=True)
            return {n: meta.topics[n] for n in sorted(meta.topics)}
        wanted = list(dict.fromkeys(_names(names)))
        meta = await self.cluster.refresh(wanted)
        out = {}
        for name in wanted:
            topic = meta.topics.get(name)
            if topic is None:
                raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {name!r} does not exist")
            out[name] = topic
        return out

    async def create_topics(
        self,
        topics: Sequence[NewTopic],
        *,
        validate_only: bool = False,
        timeout_ms: int = DEFAULT_TIMEOUT_MS,
    ) -> dict[str, KafkaError | None]:
        def build(names: list[str]) -> CreateTopicsRequest:
            return CreateTopicsRequest(
                topics=[_creatable(by_name[n]) for n in names],
                timeout_ms=timeout_ms,
                validate_only=validate_only,
            )

        def results(resp: Message) -> dict[str, KafkaError | None]:
            assert isinstance(resp, CreateTopicsResponse)
            return {t.name: _error_or_none(t.error_code, t.error_message, t.name) for t in resp.topics}

        by_name = _unique({t.name: t for t in topics}, [t.name for t in topics])
        out = await self._to_controller(list(by_name), build, results, timeout_ms)
        if not validate_only:
            created = {n: by_name[n].num_partitions for n, e in out.items() if e is None}
            await self._await_metadata(created, timeout_ms)
        return out

    async def create_topic(
        self,
        name: str,
        num_partitions: int = -1,
        replication_factor: int = -1,
        *,
        configs: Mapping[str, str] | None = None,
        assignment: Mapping[int, Sequence[int]] | None = None,
        validate_only: bool = False,
        timeout_ms: int = DEFAULT_TIMEOUT_MS,
    ) -> None:
        topic = NewTopic(name, num_partitions, replication_factor, dict(configs or {}), assignment)
        result = await self.create_topics([topic], validate_only=validate_only, timeout_ms=timeout_ms)
        _raise_first(result)

    async def delete_topics(
        self, names: Sequence[str], *, timeout_ms: int = DEFAULT_TIMEOUT_MS
    ) -> dict[str, KafkaError | None]:
        def build(batch: list[str]) -> DeleteTopicsRequest:
            return DeleteTopicsRequest(topic_names=batch, timeout_ms=timeout_ms)

        def results(resp: Message) -> dict[str, KafkaError | None]:
            assert isinstance(resp, DeleteTopicsResponse)
            return {r.name: _error_or_none(r.error_code, None, r.name) for r in resp.responses}

        names = _names(names)
        unique = list(_unique({n: n for n in names}, names))
        return await self._to_controller(unique, build, results, timeout_ms)

    async def delete_topic(self, name: str, *, timeout_ms: int = DEFAULT_TIMEOUT_MS) -> None:
        _raise_first(await self.delete_topics([name], timeout_ms=timeout_ms))

    async def create_partitions(
        self,
        new_partitions: Mapping[str, NewPartitions | int],
        *,
        validate_only: bool = False,
        timeout_ms: int = DEFAULT_TIMEOUT_MS,
    ) -> dict[str, KafkaError | None]:
        specs = {
            n: p if isinstance(p, NewPartitions) else NewPartitions(p) for n, p in new_partitions.items()
        }

        def build(names: list[str]) -> CreatePartitionsRequest:
            return CreatePartitionsRequest(
                topics=[
                    CreatePartitionsRequest.CreatePartitionsTopic(
                        name=n,
                        count=specs[n].total_count,
                        assignments=None
                        if specs[n].assignments is None
                        else [
                            CreatePartitionsRequest.CreatePartitionsAssignment(broker_ids=list(a))
                            for a in specs[n].assignments or ()
                        ],
                    )
                    for n in names
                ],
                timeout_ms=timeout_ms,
                validate_only=validate_only,
            )

        def results(resp: Message) -> dict[str, KafkaError | None]:
            assert isinstance(resp, CreatePartitionsResponse)
            return {r.name: _error_or_none(r.error_code, r.error_message, r.name) for r in resp.results}

        out = await self._to_controller(list(specs), build, results, timeout_ms)
        if not validate_only:
            await self._await_metadata(
                {n: specs[n].total_count for n, e in out.items() if e is None}, timeout_ms
            )
        return out

    async def _await_metadata(self, partition_counts: Mapping[str, int], timeout_ms: int) -> None:
        """Wait (at most `timeout_ms`) until Metadata shows these topics with this many partitions
        (-1: any), each with a leader. The controller has decided when it answers; the brokers
        learn it a moment later, and a describe or produce right after should find the topic."""
        if not partition_counts:
            return
        deadline = time.monotonic() + timeout_ms / 1000
        while True:
            meta = await self.cluster.refresh(partition_counts)
            if all(_ready(meta.topics.get(n), count) for n, count in partition_counts.items()):
                return
            if time.monotonic() >= deadline:
                return  # created all the same; the metadata will catch up
            await asyncio.sleep(self.cluster.retry_backoff / 2)

    async def create_partition(
        self,
        topic: str,
        total_count: int,
        *,
        assignments: Sequence[Sequence[int]] | None = None,
        validate_only: bool = False,
    ) -> None:
        result = await self.create_partitions(
            {topic: NewPartitions(total_count, assignments)}, validate_only=validate_only
        )
        _raise_first(result)

    async def _to_controller(
        self,
        names: list[K],
        build: Callable[[list[K]], Message],
        results: Callable[[Message], dict[K, KafkaError | None]],
        timeout_ms: int,
    ) -> dict[K, KafkaError | None]:
        """Send `build(names)` to the controller; names (topics, partitions) answered NOT_CONTROLLER
        (or lost with a broken connection) are sent again to the controller Metadata names next."""
        deadline = time.monotonic() + max(timeout_ms / 1000, self.cluster.request_timeout) + 5
        out: dict[K, KafkaError | None] = {}
        pending = names
        refresh = False
        while pending:
            try:
                controller = await self.cluster.controller(refresh=refresh)
                resp = await self.cluster.send(
                    controller, build(pending), timeout=timeout_ms / 1000 + self.cluster.request_timeout
                )
            except (ConnectionError_, ClientTimeoutError, BrokerUnavailableError, KafkaError) as e:
                if isinstance(e, KafkaError) and e.code != ErrorCode.NOT_CONTROLLER:
                    raise
                if time.monotonic() >= deadline:
                    raise
                refresh = True
                await asyncio.sleep(self.cluster.retry_backoff)
                continue
            answered = results(resp)
            retry = []
            for name in pending:
                err = answered.get(name, KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR, f"no answer for {name}"))
                if err is not None and err.code == ErrorCode.NOT_CONTROLLER and time.monotonic() < deadline:
                    retry.append(name)
                else:
                    out[name] = err
            pending = retry
            if pending:
                refresh = True
                await asyncio.sleep(self.cluster.retry_backoff)
        return {n: out[n] for n in names}

    async def _ask_controller(
        self, request: Message, error: Callable[[Message], KafkaError | None], timeout_ms: int
    ) -> Message:
        """Send `request` to the controller, again while `error(answer)` says NOT_CONTROLLER;
        the last answer (raises a KafkaError other than NOT_CONTROLLER)."""
        answers: list[Message] = []

        def results(resp: Message) -> dict[str, KafkaError | None]:
            answers.append(resp)
            return {_WHOLE: error(resp)}

        outcome = (await self._to_controller([_WHOLE], lambda _: request, results, timeout_ms))[_WHOLE]
        if outcome is not None:
            raise outcome
        return answers[-1]

    # -- leaders and reassignments -------------------------------------------------------------
    async def elect_leaders(
        self,
        partitions: Iterable[TopicPartition] | None = None,
        election_type: ElectionType | int = ElectionType.PREFERRED,
        *,
        timeout_ms: int = DEFAULT_TIMEOUT_MS,
    ) -> dict[TopicPartition, KafkaError | None]:
        """Elect the preferred (or, UNCLEAN, any live even out-of-sync) replica as leader. Per
        partition None (elected) or the broker's error: ELECTION_NOT_NEEDED when the leader is
        already right, PREFERRED_LEADER_NOT_AVAILABLE / ELIGIBLE_LEADERS_NOT_AVAILABLE,
        UNKNOWN_TOPIC_OR_PARTITION. `partitions` None = every partition; the answer then lists
        only those that needed an election (as Kafka's)."""
        kind = ElectionType(election_type)

        def build(batch: list[TopicPartition] | None) -> ElectLeadersRequest:
            return ElectLeadersRequest(
                election_type=kind,
                topic_partitions=None if batch is None else _by_topic(batch, _election_entry),
                timeout_ms=timeout_ms,
            )

        if partitions is None:

            def not_controller(resp: Message) -> KafkaError | None:
                assert isinstance(resp, ElectLeadersResponse)
                if resp.error_code != ErrorCode.NONE:
                    return _error_or_none(resp.error_code, None, "leader election")
                if any(
                    e is not None and e.code == ErrorCode.NOT_CONTROLLER for e in _elections(resp).values()
                ):
                    return KafkaError(ErrorCode.NOT_CONTROLLER, "not the controller")
                return None

            resp = await self._ask_controller(build(None), not_controller, timeout_ms)
            assert isinstance(resp, ElectLeadersResponse)
            return _elections(resp)

        wanted = list(dict.fromkeys(TopicPartition(*tp) for tp in partitions))

        def results(resp: Message) -> dict[TopicPartition, KafkaError | None]:
            assert isinstance(resp, ElectLeadersResponse)
            if resp.error_code != ErrorCode.NONE:
                return dict.fromkeys(wanted, _error_or_none(resp.error_code, None, "leader election"))
            return _elections(resp)

        return await self._to_controller(wanted, build, results, timeout_ms)

    async def alter_partition_reassignments(
        self,
        reassignments: Mapping[TopicPartition, Sequence[int] | None],
        *,
        timeout_ms: int = DEFAULT_TIMEOUT_MS,
    ) -> dict[TopicPartition, KafkaError | None]:
        """Start (target replicas) or cancel (None) reassignments. Per partition None (accepted;
        the controller carries on moving the data) or the broker's error: INVALID_REPLICA_ASSIGNMENT,
        NO_REASSIGNMENT_IN_PROGRESS (nothing to cancel), UNKNOWN_TOPIC_OR_PARTITION."""
        targets = {TopicPartition(*tp): None if r is None else list(r) for tp, r in reassignments.items()}
        Req = AlterPartitionReassignmentsRequest

        def build(batch: list[TopicPartition]) -> AlterPartitionReassignmentsRequest:
            by_topic: dict[str, list[Req.ReassignablePartition]] = defaultdict(list)
            for tp in batch:
                by_topic[tp.topic].append(
                    Req.ReassignablePartition(partition_index=tp.partition, replicas=targets[tp])
                )
            return Req(
                timeout_ms=timeout_ms,
                topics=[Req.ReassignableTopic(name=t, partitions=ps) for t, ps in by_topic.items()],
            )

        def results(resp: Message) -> dict[TopicPartition, KafkaError | None]:
            assert isinstance(resp, AlterPartitionReassignmentsResponse)
            if resp.error_code != ErrorCode.NONE:
                return dict.fromkeys(
                    targets, _error_or_none(resp.error_code, resp.error_message, "reassignment")
                )
            return {
                TopicPartition(t.name, p.partition_index): _error_or_none(
                    p.error_code, p.error_message, f"{t.name}-{p.partition_index}"
                )
                for t in resp.responses
                for p in t.partitions
            }

        return await self._to_controller(list(targets), build, results, timeout_ms)

    async def list_partition_reassignments(
        self, partitions: Iterable[TopicPartition] | None = None, *, timeout_ms: int = DEFAULT_TIMEOUT_MS
    ) -> dict[TopicPartition, PartitionReassignment]:
        """The reassignments in progress (among `partitions`; all when None). A partition that is
        not being reassigned (or does not exist) is simply absent."""
        Req = ListPartitionReassignmentsRequest
        request = Req(
            timeout_ms=timeout_ms,
            topics=None
            if partitions is None
            else _by_topic(
                partitions,
                lambda topic, ids: Req.ListPartitionReassignmentsTopics(name=topic, partition_indexes=ids),
            ),
        )

        def error(resp: Message) -> KafkaError | None:
            assert isinstance(resp, ListPartitionReassignmentsResponse)
            return _error_or_none(resp.error_code, resp.error_message, "listing reassignments")

        resp = await self._ask_controller(request, error, timeout_ms)
        assert isinstance(resp, ListPartitionReassignmentsResponse)
        return {
            TopicPartition(t.name, p.partition_index): PartitionReassignment(
                tuple(p.replicas), tuple(p.adding_replicas), tuple(p.removing_replicas)
            )
            for t in resp.topics
            for p in t.partitions
        }

    # -- configs ---------------------------------------------------------------------------------
    async def describe_configs(
        self,
        resources: Sequence[ConfigResource],
        *,
        keys: Sequence[str] | None = None,
        include_synonyms: bool = False,
    ) -> dict[ConfigResource, dict[str, ConfigEntry]]:
        """The configs of each resource (only `keys` when given). Broker resources are asked of
        that broker; topics of any broker. A resource's error raises its KafkaError."""
        by_target: dict[int | None, list[ConfigResource]] = defaultdict(list)
        for res in resources:
            by_target[_target_broker(res)].append(res)
        out: dict[ConfigResource, dict[str, ConfigEntry]] = {}
        for target, group in by_target.items():
            request = DescribeConfigsRequest(
                resources=[
                    DescribeConfigsRequest.DescribeConfigsResource(
                        resource_type=r.type,
                        resource_name=r.name,
                        configuration_keys=None if keys is None else list(keys),
                    )
                    for r in group
                ],
                include_synonyms=include_synonyms,
            )
            resp = await self._send_to(target, request)
            assert isinstance(resp, DescribeConfigsResponse)
            for result in resp.results:
                res = ConfigResource(ConfigResourceType(result.resource_type), result.resource_name)
                _raise_error(result.error_code, result.error_message, f"{res.type.name.lower()} {res.name!r}")
                out[res] = {c.name: _config_entry(c) for c in result.configs}
        return {r: out.get(r, {}) for r in resources}

    async def describe_topic_configs(self, topic: str) -> dict[str, ConfigEntry]:
        return (await self.describe_configs([ConfigResource.topic(topic)]))[ConfigResource.topic(topic)]

    async def alter_configs(
        self,
        resource: ConfigResource,
        changes: Mapping[str, str | None],
        *,
        validate_only: bool = False,
    ) -> None:
        """Set (value) or remove (None) configs of one resource, leaving the others as they are.

        Uses IncrementalAlterConfigs when the broker offers it; otherwise reads the resource's
        current overrides and sends the merged full set with AlterConfigs (whose semantics
        replace every override of the resource).
        """
        target = _target_broker(resource)
        node = target if target is not None else await self.cluster.any_broker()
        conn = await self.cluster.connection(node)
        if IncrementalAlterConfigsRequest.API_KEY in conn.api_versions:
            incremental = IncrementalAlterConfigsRequest(
                resources=[
                    IncrementalAlterConfigsRequest.AlterConfigsResource(
                        resource_type=resource.type,
                        resource_name=resource.name,
                        configs=[
                            IncrementalAlterConfigsRequest.AlterableConfig(
                                name=k,
                                config_operation=AlterConfigOp.DELETE if v is None else AlterConfigOp.SET,
                                value=v,
                            )
                            for k, v in changes.items()
                        ],
                    )
                ],
                validate_only=validate_only,
            )
            resp = await self.cluster.send(node, incremental)
            assert isinstance(resp, IncrementalAlterConfigsResponse)
            for r in resp.responses:
                _raise_error(r.error_code, r.error_message, f"{resource.type.name.lower()} {resource.name!r}")
            return
        current = (await self.describe_configs([resource]))[resource]
        merged = {name: e.value for name, e in current.items() if e.is_override}
        for k, v in changes.items():
            if v is None:
                merged.pop(k, None)
            else:
                merged[k] = v
        await self.replace_configs(resource, merged, validate_only=validate_only)

    async def replace_configs(
        self, resource: ConfigResource, configs: Mapping[str, str | None], *, validate_only: bool = False
    ) -> None:
        """AlterConfigs as the protocol defines it: `configs` become the resource's whole set of
        overrides (anything not listed returns to its default)."""
        request = AlterConfigsRequest(
            resources=[
                AlterConfigsRequest.AlterConfigsResource(
                    resource_type=resource.type,
                    resource_name=resource.name,
                    configs=[
                        AlterConfigsRequest.AlterableConfig(name=k, value=v) for k, v in configs.items()
                    ],
                )
            ],
            validate_only=validate_only,
        )
        resp = await self._send_to(_target_broker(resource), request)
        assert isinstance(resp, AlterConfigsResponse)
        for r in resp.responses:
            _raise_error(r.error_code, r.error_message, f"{resource.type.name.lower()} {resource.name!r}")

    # -- client quotas (KIP-546) -------------------------------------------------------------------
    async def describe_client_quotas(
        self, components: Sequence[QuotaFilter], *, strict: bool = False
    ) -> list[tuple[tuple[str | None, str | None], dict[str, float]]]:
        """The quotas of every entity the filter matches: ((user, client id), {key: bound}), where a
        part is None when the entity does not name it and `<default>` for the default entity."""
        request = DescribeClientQuotasRequest(
            components=[
                DescribeClientQuotasRequest.ComponentData(
                    entity_type=c.entity_type,
                    match_type=c.match_type,
                    match=None if c.match_type != 0 else c.name,
                )
                for c in components
            ],
            strict=strict,
        )
        resp = await self.cluster.send_any(request)
        assert isinstance(resp, DescribeClientQuotasResponse)
        _raise_error(resp.error_code, resp.error_message, "client quotas")
        out = []
        for entry in resp.entries or ():
            parts = {
                e.entity_type: QUOTA_DEFAULT if e.entity_name is None else e.entity_name for e in entry.entity
            }
            out.append(((parts.get("user"), parts.get("client-id")), {v.key: v.value for v in entry.values}))
        return out

    async def alter_client_quotas(
        self,
        entity: tuple[str | None, str | None],
        changes: Mapping[str, float | None],
        *,
        validate_only: bool = False,
    ) -> None:
        """Set (a bound) or remove (None) quotas of one (user, client id) entity (`<default>` for a
        default part, None for a part it does not name); the entity's error raises."""
        parts = [
            AlterClientQuotasRequest.EntityData(
                entity_type=kind, entity_name=None if name == QUOTA_DEFAULT else name
            )
            for kind, name in (("user", entity[0]), ("client-id", entity[1]))
            if name is not None
        ]
        ops = [
            AlterClientQuotasRequest.OpData(key=k, value=0.0 if v is None else float(v), remove=v is None)
            for k, v in changes.items()
        ]
        request = AlterClientQuotasRequest(
            entries=[AlterClientQuotasRequest.EntryData(entity=parts, ops=ops)], validate_only=validate_only
        )
        resp = await self.cluster.send_any(request)
        assert isinstance(resp, AlterClientQuotasResponse)
        for r in resp.entries:
            _raise_error(r.error_code, r.error_message, "client quota entity")

    # -- ACLs ---------------------------------------------------------------------------------------
    async def describe_acls(self) -> dict[ResourcePattern, frozenset[AclEntry]]:
        """Every ACL binding, through DescribeAcls (so the broker's authorizer decides what this
        principal may see). A broker without an authorizer raises SECURITY_DISABLED."""
        request = DescribeAclsRequest(
            resource_type_filter=ANY,
            resource_name_filter=None,
            pattern_type_filter=PATTERN_FILTER_CODES[PatternTypeFilter.ANY],
            principal_filter=None,
            host_filter=None,
            operation=ANY,
            permission_type=ANY,
        )
        resp = await self.cluster.send_any(request)
        assert isinstance(resp, DescribeAclsResponse)
        _raise_error(resp.error_code, resp.error_message, "ACLs")
        return described_bindings(resp.resources)

    # -- SCRAM credentials (KIP-554) -----------------------------------------------------------
    async def describe_user_scram_credentials(
        self, users: Sequence[str] | None = None
    ) -> dict[str, dict[str, int] | KafkaError]:
        """user -> {mechanism: iterations} or that user's error (`zkafka.client.user_scram`)."""
        return await user_scram.describe_user_scram_credentials(self.cluster, users)

    async def alter_user_scram_credentials(
        self,
        upsertions: Sequence[user_scram.ScramUpsertion] = (),
        deletions: Sequence[user_scram.ScramDeletion] = (),
    ) -> dict[str, KafkaError | None]:
        """user -> None or its error; the passwords are salted and hashed here, never sent."""
        return await user_scram.alter_user_scram_credentials(self.cluster, upsertions, deletions)

    async def _send_to(self, target: int | None, request: Message) -> Message:
        if target is None:
            return await self.cluster.send_any(request)
        return await self.cluster.send(target, request)

    # -- offsets ---------------------------------------------------------------------------------
    async def list_offsets(
        self,
        specs: Mapping[TopicPartition, str | int],
        *,
        isolation_level: int = READ_UNCOMMITTED,
    ) -> dict[TopicPartition, OffsetAndTimestamp | None]:
        """Offsets by spec: "earliest", "latest", or a timestamp in ms (the first offset whose
        record timestamp is >= it; None when there is none)."""
        converted = {tp: offset_spec(s) for tp, s in specs.items()}
        return await list_offsets(self.cluster, converted, isolation_level=isolation_level)

    async def topic_offsets(self, topic: str, spec: str | int = "latest") -> dict[int, int]:
        """partition -> offset for every partition of `topic` (-1 where a timestamp finds nothing)."""
        meta = (await self.describe_topics([topic]))[topic]
        found = await self.list_offsets({TopicPartition(topic, p): spec for p in meta.partitions})
        return {tp.partition: (-1 if r is None else r.offset) for tp, r in sorted(found.items())}


# -- helpers -------------------------------------------------------------------------------------


def _names(names: Iterable[str]) -> list[str]:
    """A list of topic names; a single string is one name, not a sequence of one-letter names."""
    if isinstance(names, str):
        return [names]
    out = list(names)
    for name in out:
        if not isinstance(name, str) or not name:
            raise ConfigError(f"topic names must be non-empty strings, got {name!r}")
    return out


def _by_topic(partitions: Iterable[TopicPartition], make: Callable[[str, list[int]], Any]) -> list[Any]:
    """Request entries `make(topic, [partition ids])`, one per topic."""
    grouped: dict[str, list[int]] = defaultdict(list)
    for tp in partitions:
        grouped[tp.topic].append(tp.partition)
    return [make(topic, ids) for topic, ids in grouped.items()]


def _election_entry(topic: str, ids: list[int]) -> ElectLeadersRequest.TopicPartitions:
    return ElectLeadersRequest.TopicPartitions(topic=topic, partitions=ids)


def _elections(resp: ElectLeadersResponse) -> dict[TopicPartition, KafkaError | None]:
    return {
        TopicPartition(r.topic, p.partition_id): _error_or_none(
            p.error_code, p.error_message, f"{r.topic}-{p.partition_id}"
        )
        for r in resp.replica_election_results
        for p in r.partition_result
    }


def _ready(topic: TopicMetadata | None, count: int) -> bool:
    if topic is None or topic.error != ErrorCode.NONE or not topic.partitions:
        return False
    if count > 0 and topic.partition_count < count:
        return False
    return all(p.leader >= 0 for p in topic.partitions.values())


def _unique(mapping: dict[str, Any], names: list[str]) -> dict[str, Any]:
    if len(mapping) != len(names):
        dupes = sorted({n for n in names if names.count(n) > 1})
        raise ConfigError(f"topic names given more than once: {', '.join(dupes)}")
    return mapping


def _creatable(topic: NewTopic) -> CreateTopicsRequest.CreatableTopic:
    assignments = []
    if topic.assignment is not None:
        assignments = [
            CreateTopicsRequest.CreatableReplicaAssignment(partition_index=p, broker_ids=list(brokers))
            for p, brokers in sorted(topic.assignment.items())
        ]
    return CreateTopicsRequest.CreatableTopic(
        name=topic.name,
        num_partitions=topic.num_partitions,
        replication_factor=topic.replication_factor,
        assignments=assignments,
        configs=[CreateTopicsRequest.CreatableTopicConfig(name=k, value=v) for k, v in topic.configs.items()],
    )


def _error_or_none(code: int, message: str | None, what: str) -> KafkaError | None:
    if code == ErrorCode.NONE:
        return None
    return KafkaError(code, message or f"{what}: {ErrorCode.lookup(code).message}")


def _raise_error(code: int, message: str | None, what: str) -> None:
    error = _error_or_none(code, message, what)
    if error is not None:
        raise error


def _raise_first(results: Mapping[str, KafkaError | None]) -> None:
    for error in results.values():
        if error is not None:
            raise error


def _target_broker(resource: ConfigResource) -> int | None:
    if resource.type in (ConfigResourceType.BROKER, ConfigResourceType.BROKER_LOGGER) and resource.name:
        try:
            return int(resource.name)
        except ValueError:
            raise ConfigError(f"broker resource name must be a broker id, got {resource.name!r}") from None
    return None


def _config_entry(c: DescribeConfigsResponse.DescribeConfigsResourceResult) -> ConfigEntry:
    source = _source(c.config_source)
    if source == ConfigSource.UNKNOWN:
        # DescribeConfigs v0 has only is_default: a non-default topic value is an override
        source = ConfigSource.DEFAULT_CONFIG if c.is_default else ConfigSource.UNKNOWN
    return ConfigEntry(
        name=c.name,
        value=c.value,
        source=source,
        read_only=c.read_only,
        is_default=c.is_default or source == ConfigSource.DEFAULT_CONFIG,
        is_sensitive=c.is_sensitive,
        synonyms=tuple((s.name, s.value, _source(s.source)) for s in c.synonyms),
    )


def _source(value: int) -> ConfigSource:
    try:
        return ConfigSource(value)
    except ValueError:
        return ConfigSource.UNKNOWN
