"""Typed values stored in Kafka's znodes (what the codecs in `znodes.py` decode to and encode from).

Plain immutable data, no ZooKeeper I/O. Version numbers of znodes ("zkVersion", ZooKeeper's
`stat.version`) travel with the values that need them for conditional writes; `UNKNOWN_VERSION`
marks a value that was not read from ZooKeeper.
"""

from __future__ import annotations

import base64
import enum
import re
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

# One TopicPartition for the broker side; storage owns it (it names the log directories).
from zkafka.storage.naming import TopicPartition as TopicPartition
from zkafka.zk.errors import InvalidReplicaAssignmentError

ANY_VERSION = -1
"""ZooKeeper's "match any version" for setData/delete (Kafka's ZkVersion.MatchAnyVersion)."""
UNKNOWN_VERSION = -2
"""zkVersion of a value that does not exist in ZooKeeper (Kafka's ZkVersion.UnknownVersion)."""


# One TopicPartition for the whole broker side (storage owns it: it names log directories).

# --------------------------------------------------------------------------------------------------
# Topic ids / cluster ids: Kafka's Uuid as 22 characters of URL-safe base64 without padding.

_UUID_B64_RE = re.compile(r"^[A-Za-z0-9_-]{22}$")


def random_uuid_base64() -> str:
    """A random Kafka `Uuid` string, as used for cluster ids and topic ids.

    Kafka never hands out the all-zero id or the metadata topic's id (0, 1), and avoids ids whose string
    starts with '-' because command-line tools would parse them as options.
    """
    while True:
        raw = uuid.uuid4().bytes
        if int.from_bytes(raw, "big") in (0, 1):
            continue
        text = base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")
        if not text.startswith("-"):
            return text


def is_uuid_base64(text: str) -> bool:
    """22 characters of URL-safe base64 (= 16 bytes), the form Kafka's `Uuid.toString` produces."""
    return bool(_UUID_B64_RE.match(text))


def uuid_from_base64(text: str) -> uuid.UUID:
    """The 16 bytes behind a Kafka `Uuid` string (the form stored in znodes), as the wire carries
    them; ValueError unless `text` is one (`is_uuid_base64`)."""
    if not is_uuid_base64(text):
        raise ValueError(f"{text!r} is not a 22-character base64 Kafka Uuid")
    return uuid.UUID(bytes=base64.urlsafe_b64decode(text + "=="))


def uuid_to_base64(value: uuid.UUID) -> str:
    """Kafka's `Uuid.toString` of `value`."""
    return base64.urlsafe_b64encode(value.bytes).decode("ascii").rstrip("=")


# --------------------------------------------------------------------------------------------------
# Brokers


class SecurityProtocol(enum.Enum):
    """Kafka's security protocols with their wire ids (UpdateMetadata's SecurityProtocol int16)."""

    PLAINTEXT = 0
    SSL = 1
    SASL_PLAINTEXT = 2
    SASL_SSL = 3

    @property
    def id(self) -> int:
        return self.value

    @classmethod
    def parse(cls, name: str) -> SecurityProtocol:
        try:
            return cls[name.upper()]
        except KeyError:
            known = ", ".join(p.name for p in cls)
            raise ValueError(f"unknown security protocol {name!r} (known: {known})") from None


_ENDPOINT_RE = re.compile(r"^([A-Za-z0-9_.-]+)://\[?([0-9a-zA-Z\-%._:]*)\]?:([0-9]+)$")


@dataclass(frozen=True)
class EndPoint:
    listener_name: str
    host: str
    port: int
    security_protocol: SecurityProtocol

    @property
    def connection_string(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.listener_name}://{host}:{self.port}"

    @classmethod
    def parse(cls, text: str, protocol_map: Mapping[str, SecurityProtocol] | None = None) -> EndPoint:
        """Parse `LISTENER://host:port`. Without a protocol map the listener name must itself be a
        security protocol name (registrations before version 4)."""
        m = _ENDPOINT_RE.match(text)
        if m is None:
            raise ValueError(f"endpoint {text!r} is not of the form LISTENER://host:port")
        listener = m[1].upper()
        port = int(m[3])
        if port > 65535:
            raise ValueError(f"endpoint {text!r}: port {port} out of range")
        if protocol_map is not None:
            if listener not in protocol_map:
                raise ValueError(
                    f"endpoint {text!r}: listener {listener} is not in the security protocol map"
                )
            protocol = protocol_map[listener]
        else:
            protocol = SecurityProtocol.parse(listener)
        return cls(listener, m[2], port, protocol)


@dataclass(frozen=True)
class SupportedVersionRange:
    min_version: int
    max_version: int

    def __post_init__(self) -> None:
        if not 1 <= self.min_version <= self.max_version:
            raise ValueError(f"bad supported version range [{self.min_version}, {self.max_version}]")


@dataclass(frozen=True)
class BrokerInfo:
    """A broker's registration, `/brokers/ids/<id>`."""

    id: int
    endpoints: tuple[EndPoint, ...]
    rack: str | None = None
    features: Mapping[str, SupportedVersionRange] = field(default_factory=dict)
    jmx_port: int = -1
    timestamp_ms: int | None = None
    """Registration time; None when encoding means "now"."""
    version: int = 5
    """Registration JSON version read (or to write)."""
    epoch: int | None = None
    """Broker epoch = czxid of the registration znode (KIP-380); None when not read from ZooKeeper."""

    def endpoint(self, listener_name: str) -> EndPoint | None:
        name = listener_name.upper()
        return next((e for e in self.endpoints if e.listener_name == name), None)

    @property
    def listener_security_protocol_map(self) -> dict[str, SecurityProtocol]:
        return {e.listener_name: e.security_protocol for e in self.endpoints}


# --------------------------------------------------------------------------------------------------
# Topics and partitions


@dataclass(frozen=True)
class TopicAssignment:
    """`/brokers/topics/<topic>`: replica assignment (+ KIP-455 reassignment state, + topic id)."""

    topic: str
    partitions: Mapping[int, tuple[int, ...]]
    """partition -> replicas, preferred leader first. During a reassignment: target + original."""
    adding_replicas: Mapping[int, tuple[int, ...]] = field(default_factory=dict)
    removing_replicas: Mapping[int, tuple[int, ...]] = field(default_factory=dict)
    topic_id: str | None = None
    version: int = 3
    zk_version: int = UNKNOWN_VERSION
    extra: Mapping[str, Any] = field(default_factory=dict)
    """Keys we do not interpret; written back unchanged so newer writers' data survives a rewrite."""

    def replicas(self, partition: int) -> tuple[int, ...]:
        return self.partitions.get(partition, ())

    @property
    def partition_count(self) -> int:
        return len(self.partitions)

    def is_being_reassigned(self, partition: int) -> bool:
        return bool(self.adding_replicas.get(partition) or self.removing_replicas.get(partition))

    def with_partitions(
        self,
        partitions: Mapping[int, Sequence[int]],
        adding: Mapping[int, Sequence[int]] | None = None,
        removing: Mapping[int, Sequence[int]] | None = None,
    ) -> TopicAssignment:
        """A copy with new replica lists; topic id and unknown keys kept."""
        return replace(
            self,
            partitions={p: tuple(r) for p, r in partitions.items()},
            adding_replicas={p: tuple(r) for p, r in (adding or {}).items()},
            removing_replicas={p: tuple(r) for p, r in (removing or {}).items()},
        )


def validate_replica_assignment(assignment: Mapping[int, Sequence[int]]) -> None:
    """Kafka's checks on a new topic's assignment: partitions 0..n-1, every list non-empty, of the same
    length (replication factor), without duplicate or negative broker ids. Raises
    InvalidReplicaAssignmentError."""
    if not assignment:
        raise InvalidReplicaAssignmentError("a topic needs at least one partition")
    ids = sorted(assignment)
    if ids != list(range(len(ids))):
        raise InvalidReplicaAssignmentError(
            f"partitions must be numbered consecutively from 0, got {ids[:10]}"
            + ("..." if len(ids) > 10 else "")
        )
    rf = len(assignment[0])
    for p in ids:
        replicas = list(assignment[p])
        if not replicas:
            raise InvalidReplicaAssignmentError(f"partition {p} has no replicas")
        if len(replicas) != rf:
            raise InvalidReplicaAssignmentError(
                f"all partitions must have the same replication factor: partition 0 has {rf}, "
                f"partition {p} has {len(replicas)}"
            )
        if len(set(replicas)) != len(replicas):
            raise InvalidReplicaAssignmentError(f"partition {p} lists a broker twice: {replicas}")
        if any(isinstance(b, bool) or not isinstance(b, int) or b < 0 for b in replicas):
            raise InvalidReplicaAssignmentError(f"partition {p} has an invalid broker id: {replicas}")


class LeaderRecoveryState(enum.IntEnum):
    RECOVERED = 0
    RECOVERING = 1
    """The leader was elected uncleanly and is still recovering (KIP-704)."""


NO_LEADER = -1
LEADER_DURING_DELETE = -2
EPOCH_DURING_DELETE = -2
INITIAL_LEADER_EPOCH = 0
INITIAL_PARTITION_ZK_VERSION = 0


def _slot_setters(cls: type, *names: str) -> tuple[Callable[[Any, Any], None], ...]:
    """The `__set__` of each named slot of `cls`: how a frozen slotted class fills its fields in
    its own `__init__`. A slot's descriptor sets the field directly, at ~0.1 us a field, where
    `object.__setattr__` first looks the name up through the class (~0.17 us a field)."""
    return tuple(cls.__dict__[name].__set__ for name in names)


@dataclass(frozen=True, init=False, slots=True)
class LeaderAndIsr:
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    leader_recovery_state: LeaderRecoveryState = LeaderRecoveryState.RECOVERED
    zk_version: int = INITIAL_PARTITION_ZK_VERSION
    """dataVersion of the state znode this value was read from / is expected to replace."""

    def __init__(
        self,
        leader: int,
        leader_epoch: int,
        isr: tuple[int, ...],
        leader_recovery_state: LeaderRecoveryState = LeaderRecoveryState.RECOVERED,
        zk_version: int = INITIAL_PARTITION_ZK_VERSION,
    ) -> None:
        # Slots, not an instance dict: the controller keeps one of these per partition (100,000),
        # and a dict each made its copy of the cluster's states 520 bytes a partition, 160 with
        # slots. A new controller makes one per partition read and per decision: a written-out
        # __init__ through the slots' setters costs ~0.5 us, the generated frozen one several
        # times that.
        _set_leader(self, leader)
        _set_leader_epoch(self, leader_epoch)
        _set_isr(self, isr)
        _set_recovery(self, leader_recovery_state)
        _set_zk_version(self, zk_version)

    @classmethod
    def initial(cls, leader: int, isr: Sequence[int]) -> LeaderAndIsr:
        return cls(leader, INITIAL_LEADER_EPOCH, tuple(isr))

    def new_leader_and_isr(
        self, leader: int, isr: Sequence[int], recovery: LeaderRecoveryState | None = None
    ) -> LeaderAndIsr:
        """A new leadership decision: epoch + 1, zk_version kept as the expected version."""
        # The constructor, not dataclasses.replace: a controller makes one of these per partition
        # per decision (100,000 at failover), and replace() costs several times as much.
        return LeaderAndIsr(
            leader,
            self.leader_epoch + 1,
            tuple(isr),
            self.leader_recovery_state if recovery is None else recovery,
            self.zk_version,
        )

    def new_epoch(self) -> LeaderAndIsr:
        return replace(self, leader_epoch=self.leader_epoch + 1)

    def with_zk_version(self, zk_version: int) -> LeaderAndIsr:
        return LeaderAndIsr(self.leader, self.leader_epoch, self.isr, self.leader_recovery_state, zk_version)

    def same_state(self, other: LeaderAndIsr) -> bool:
        """Equal apart from zk_version (used to recognise a write whose response was lost)."""
        return (self.leader, self.leader_epoch, self.isr, self.leader_recovery_state) == (
            other.leader,
            other.leader_epoch,
            other.isr,
            other.leader_recovery_state,
        )


@dataclass(frozen=True, init=False, slots=True)
class LeaderIsrAndControllerEpoch:
    """`/brokers/topics/<t>/partitions/<p>/state`."""

    leader_and_isr: LeaderAndIsr
    controller_epoch: int

    def __init__(self, leader_and_isr: LeaderAndIsr, controller_epoch: int) -> None:
        # As LeaderAndIsr's: one per partition read (and kept), slots and a written-out __init__.
        _set_state(self, leader_and_isr)
        _set_controller_epoch(self, controller_epoch)

    @property
    def zk_version(self) -> int:
        return self.leader_and_isr.zk_version


_set_leader, _set_leader_epoch, _set_isr, _set_recovery, _set_zk_version = _slot_setters(
    LeaderAndIsr, "leader", "leader_epoch", "isr", "leader_recovery_state", "zk_version"
)
_set_state, _set_controller_epoch = _slot_setters(
    LeaderIsrAndControllerEpoch, "leader_and_isr", "controller_epoch"
)


# --------------------------------------------------------------------------------------------------
# Controller, cluster, features


@dataclass(frozen=True)
class ControllerRegistration:
    """`/controller`. `version` 0 = the legacy bare broker id."""

    broker_id: int
    timestamp_ms: int | None = None
    kraft_controller_epoch: int | None = None
    version: int = 1


class FeatureZNodeStatus(enum.IntEnum):
    DISABLED = 0
    ENABLED = 1


@dataclass(frozen=True)
class FinalizedFeatureLevel:
    max_version_level: int
    min_version_level: int | None = None
    """Only in `/feature` version 1."""


@dataclass(frozen=True)
class FeatureZNodeData:
    """`/feature`; its zkVersion is the finalized features' epoch."""

    status: FeatureZNodeStatus
    features: Mapping[str, FinalizedFeatureLevel] = field(default_factory=dict)
    version: int = 2
    zk_version: int = UNKNOWN_VERSION


# --------------------------------------------------------------------------------------------------
# Config, notifications, producer ids, tokens


class ConfigType(enum.StrEnum):
    """Entity types under `/config/<type>` (Kafka ConfigType.all)."""

    TOPIC = "topics"
    CLIENT = "clients"
    USER = "users"
    BROKER = "brokers"
    IP = "ips"


@dataclass(frozen=True)
class ConfigChangeNotification:
    """`/config/changes/config_change_N`; v1 notifications are converted to an entity path."""

    entity_path: str
    version: int = 2

    @property
    def entity_type(self) -> str:
        return self.entity_path.split("/", 1)[0]

    @property
    def entity_name(self) -> str:
        return self.entity_path.split("/", 1)[1]


LOG_DIR_FAILURE_EVENT = 1


@dataclass(frozen=True)
class LogDirEvent:
    broker_id: int
    event: int = LOG_DIR_FAILURE_EVENT


PRODUCER_ID_BLOCK_SIZE = 1000


@dataclass(frozen=True)
class ProducerIdBlock:
    """`/latest_producer_id_block`: the last block handed out, bounds inclusive."""

    broker_id: int
    block_start: int
    block_end: int


@dataclass(frozen=True)
class DelegationTokenInfo:
    """`/delegation_token/tokens/<id>` (the HMAC is never stored)."""

    token_id: str
    owner: str
    renewers: tuple[str, ...]
    issue_timestamp_ms: int
    max_timestamp_ms: int
    expiry_timestamp_ms: int


# --------------------------------------------------------------------------------------------------
# The old (0.8 - 1.1) ZooKeeper consumer


class SubscriptionPattern(enum.StrEnum):
    STATIC = "static"
    WHITE_LIST = "white_list"
    BLACK_LIST = "black_list"


@dataclass(frozen=True)
class ConsumerRegistration:
    """`/consumers/<group>/ids/<consumer id>`: topic (or regex) -> number of streams."""

    subscription: Mapping[str, int]
    pattern: SubscriptionPattern = SubscriptionPattern.STATIC
    timestamp_ms: int | None = None
    version: int = 1
