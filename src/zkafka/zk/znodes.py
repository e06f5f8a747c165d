"""Every znode zkafka reads or writes: its path and its data codec (our analogue of Kafka's ZkData).

Rule: no other module builds a znode path by hand. Each znode is a small class of static methods:
`path(...)`, `encode(...) -> bytes` and `decode(data, path, stat=None)`. Decoders raise
`ZNodeDataError` (naming the path) for anything they cannot interpret and take the kazoo `ZnodeStat`
where its version (zkVersion) or czxid is part of the value.

Compatibility rules (see reference zk-layout.md):
* all versions Kafka ever wrote are read, the current version is written;
* key order never matters; unknown keys are ignored, and kept where we rewrite a node
  (`/brokers/topics/<t>`);
* some numbers are JSON strings on purpose ("timestamp", the producer-id block bounds, `/cluster/id`'s
  version) and are written that way;
* compact JSON like Jackson's.

Path components built from outside input (topic, group, resource names...) are checked so that a
name can never escape its parent (no "/", not "." or "..").
"""

from __future__ import annotations

import functools
import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from kazoo.protocol.states import ZnodeStat

from zkafka.zk.acls import (
    AclEntry,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from zkafka.zk.errors import ZNodeDataError
from zkafka.zk.json_codec import JsonObject, encode_json, parse_json, parse_json_object
from zkafka.zk.model import (
    UNKNOWN_VERSION,
    BrokerInfo,
    ConfigChangeNotification,
    ConfigType,
    ConsumerRegistration,
    ControllerRegistration,
    DelegationTokenInfo,
    EndPoint,
    FeatureZNodeData,
    FeatureZNodeStatus,
    FinalizedFeatureLevel,
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    LeaderRecoveryState,
    LogDirEvent,
    ProducerIdBlock,
    SecurityProtocol,
    SubscriptionPattern,
    SupportedVersionRange,
    TopicAssignment,
    TopicPartition,
    is_uuid_base64,
)
from zkafka.zk.sanitizer import DEFAULT_ENTITY, desanitize, sanitize

# --------------------------------------------------------------------------------------------------
# helpers

T = TypeVar("T")


MAX_ZNODE_BYTES = 1_000_000
"""Largest znode zkafka writes. ZooKeeper refuses a packet beyond its `jute.maxbuffer` (1 MiB by
default; the servers zkafka starts allow 4 MB) by dropping the connection, which would cost the
writer's session every ZooKeeper call in flight: a topic whose assignment would not fit is refused
up front instead (about 50,000 partitions at replication factor 3)."""


def path_component(value: str, what: str) -> str:
    """A single znode name taken from outside input; ValueError if it could escape its parent."""
    if not isinstance(value, str):
        raise ValueError(f"{what} must be a string, got {type(value).__name__}")
    if not value:
        raise ValueError(f"{what} must not be empty")
    if "/" in value or value in (".", "..") or "\x00" in value:
        raise ValueError(f"{what} {value!r} cannot be used as a znode name")
    return value


def _non_negative(value: int, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{what} must be a non-negative integer, got {value!r}")
    return value


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def _zk_version(stat: ZnodeStat | None) -> int:
    return stat.version if stat is not None else UNKNOWN_VERSION


def _text(data: bytes | None, path: str) -> str:
    if data is None:
        raise ZNodeDataError(path, "no data")
    try:
        return bytes(data).decode("utf-8")
    except UnicodeDecodeError as e:
        raise ZNodeDataError(path, f"data is not valid UTF-8 ({e.reason} at byte {e.start})") from None


_DECIMAL_RE = re.compile(r"-?[0-9]+")


def decode_decimal(data: bytes | None, path: str, *, long: bool = True) -> int:
    """Plain decimal text (`/controller_epoch`, old consumer offsets)."""
    text = _text(data, path)
    if not _DECIMAL_RE.fullmatch(text):
        shown = text if len(text) <= 40 else text[:37] + "..."
        raise ZNodeDataError(path, f"expected a decimal number as plain text, got {shown!r}")
    value = int(text)
    bits = 63 if long else 31
    if not -(2**bits) <= value < 2**bits:
        raise ZNodeDataError(path, f"{value} is out of range for a {bits + 1}-bit integer")
    return value


_PARTITION_KEY_RE = re.compile(r"0|[1-9][0-9]{0,9}")


def _partition_map(obj: JsonObject, key: str) -> dict[int, tuple[int, ...]]:
    """`{"0":[1,2],"1":[2,3]}`: partition ids are JSON object keys, hence strings."""
    raw = obj.int_list_map(key)
    out: dict[int, tuple[int, ...]] = {}
    for k, replicas in raw.items():
        if not _PARTITION_KEY_RE.fullmatch(k) or int(k) > 2**31 - 1:
            obj.fail(key, f"partition id {k!r} is not a non-negative integer")
        out[int(k)] = replicas
    return out


def _encode_partition_map(
    m: Mapping[int, Sequence[int]], *, skip_empty: bool = False
) -> dict[str, list[int]]:
    return {str(p): list(m[p]) for p in sorted(m) if not (skip_empty and not m[p])}


def _topic_partitions(obj: JsonObject, key: str) -> list[tuple[TopicPartition, JsonObject]]:
    out = []
    for entry in obj.objects(key):
        tp = TopicPartition(entry.req_str("topic"), entry.req_int("partition"))
        out.append((tp, entry))
    return out


def _parse_field(obj: JsonObject, key: str, parse: Callable[[str], T]) -> T:
    """A string field converted by `parse`; its ValueError becomes a ZNodeDataError for that field."""
    text = obj.req_str(key)
    try:
        return parse(text)
    except ValueError as e:
        obj.fail(key, str(e))


def _encode_topic_partitions(tps: Iterable[TopicPartition]) -> list[dict[str, Any]]:
    return [{"topic": tp.topic, "partition": tp.partition} for tp in sorted(set(tps))]


# --------------------------------------------------------------------------------------------------
# Sequential notification queues


@dataclass(frozen=True)
class SequentialZNodes:
    """A directory of PERSISTENT_SEQUENTIAL children `<prefix>NNNNNNNNNN` (10-digit ZooKeeper suffix)."""

    root: str
    prefix: str

    @property
    def path_prefix(self) -> str:
        """What to pass to a sequential create."""
        return f"{self.root}/{self.prefix}"

    def path(self, name_or_number: str | int) -> str:
        if isinstance(name_or_number, int):
            return f"{self.path_prefix}{name_or_number:010d}"
        return f"{self.root}/{path_component(name_or_number, 'notification name')}"

    def is_notification(self, name: str) -> bool:
        suffix = name[len(self.prefix) :]
        return name.startswith(self.prefix) and len(suffix) >= 10 and suffix.isascii() and suffix.isdigit()

    def sequence_number(self, name: str) -> int:
        """`isr_change_0000000042` -> 42 (also accepts a full path)."""
        name = name.rsplit("/", 1)[-1]
        if not self.is_notification(name):
            raise ValueError(f"{name!r} is not a {self.prefix}NNNNNNNNNN notification")
        return int(name[len(self.prefix) :])


# --------------------------------------------------------------------------------------------------
# Cluster-wide coordination


class ControllerZNode:
    """`/controller` (ephemeral): v1 written; v1/v2 and the legacy bare broker id read."""

    VERSIONS = (1, 2)

    @staticmethod
    def path() -> str:
        return "/controller"

    @staticmethod
    def encode(broker_id: int, timestamp_ms: int | None = None) -> bytes:
        ts = now_ms() if timestamp_ms is None else timestamp_ms
        return encode_json({"version": 1, "brokerid": broker_id, "timestamp": str(ts)})

    @staticmethod
    def decode(
        data: bytes | None, path: str = "/controller", stat: ZnodeStat | None = None
    ) -> ControllerRegistration:
        value = parse_json(data, path)
        if isinstance(value, int) and not isinstance(value, bool):
            # Brokers up to 0.8.1 stored just the id as text.
            return ControllerRegistration(broker_id=decode_decimal(data, path, long=False), version=0)
        if not isinstance(value, dict):
            raise ZNodeDataError(path, "expected a JSON object or a bare broker id")
        obj = JsonObject(value, path)
        # Kafka's decoder only needs "brokerid"; "version" is checked when present.
        version = obj.version(ControllerZNode.VERSIONS, required=False) or 1
        return ControllerRegistration(
            broker_id=obj.req_int("brokerid"),
            timestamp_ms=obj.decimal_str("timestamp", required=False, accept_int=True),
            kraft_controller_epoch=obj.opt_int("kraftControllerEpoch"),
            version=version,
        )


class ControllerEpochZNode:
    """`/controller_epoch`: plain decimal text; its zkVersion fences every controller write."""

    INITIAL_EPOCH = 0

    @staticmethod
    def path() -> str:
        return "/controller_epoch"

    @staticmethod
    def encode(epoch: int) -> bytes:
        return str(epoch).encode("ascii")

    @staticmethod
    def decode(data: bytes | None, path: str = "/controller_epoch") -> int:
        return decode_decimal(data, path, long=False)


class ClusterZNode:
    @staticmethod
    def path() -> str:
        return "/cluster"


class ClusterIdZNode:
    """`/cluster/id`: `{"version":"1","id":...}` with the version as a *string*."""

    @staticmethod
    def path() -> str:
        return "/cluster/id"

    @staticmethod
    def encode(cluster_id: str) -> bytes:
        return encode_json({"version": "1", "id": cluster_id})

    @staticmethod
    def decode(data: bytes | None, path: str = "/cluster/id") -> str:
        obj = parse_json_object(data, path)
        if "version" in obj and obj.raw["version"] not in ("1", 1):
            obj.fail("version", f'unsupported version {obj.raw["version"]!r} (expected "1")')
        cluster_id = obj.req_str("id")
        if not cluster_id:
            obj.fail("id", "cluster id is empty")
        return cluster_id


class FeatureZNode:
    """`/feature` (2.7+): finalized features; v1 levels carry min and max, v2 only max."""

    VERSIONS = (1, 2)

    @staticmethod
    def path() -> str:
        return "/feature"

    @staticmethod
    def encode(data: FeatureZNodeData) -> bytes:
        if data.version not in FeatureZNode.VERSIONS:
            raise ValueError(f"cannot write /feature version {data.version}")
        features: dict[str, dict[str, int]] = {}
        for name in sorted(data.features):
            level = data.features[name]
            if data.version == 1:
                low = level.max_version_level if level.min_version_level is None else level.min_version_level
                features[name] = {"min_version_level": low, "max_version_level": level.max_version_level}
            else:
                features[name] = {"max_version_level": level.max_version_level}
        return encode_json({"version": data.version, "status": int(data.status), "features": features})

    @staticmethod
    def decode(data: bytes | None, path: str = "/feature", stat: ZnodeStat | None = None) -> FeatureZNodeData:
        obj = parse_json_object(data, path)
        version = obj.version(FeatureZNode.VERSIONS)
        assert version is not None
        status_value = obj.req_int("status")
        try:
            status = FeatureZNodeStatus(status_value)
        except ValueError:
            obj.fail("status", f"unknown status {status_value} (0 = disabled, 1 = enabled)")
        features_obj = obj.req_obj("features")
        features = {}
        for name in features_obj:
            level = features_obj.req_obj(name)
            low = level.req_int("min_version_level") if version == 1 else level.opt_int("min_version_level")
            features[name] = FinalizedFeatureLevel(level.req_int("max_version_level"), low)
        return FeatureZNodeData(
            status=status, features=features, version=version, zk_version=_zk_version(stat)
        )


class ProducerIdBlockZNode:
    """`/latest_producer_id_block`: the last block handed out, bounds as JSON *strings*."""

    @staticmethod
    def path() -> str:
        return "/latest_producer_id_block"

    @staticmethod
    def encode(block: ProducerIdBlock) -> bytes:
        return encode_json(
            {
                "version": 1,
                "broker": block.broker_id,
                "block_start": str(block.block_start),
                "block_end": str(block.block_end),
            }
        )

    @staticmethod
    def decode(data: bytes | None, path: str = "/latest_producer_id_block") -> ProducerIdBlock | None:
        """None for the empty node pre-created at bootstrap (no block handed out yet)."""
        if not data:
            return None
        obj = parse_json_object(data, path)
        obj.version((1,))
        start = obj.decimal_str("block_start")
        end = obj.decimal_str("block_end")
        assert start is not None and end is not None
        if start < 0 or end < start:
            raise ZNodeDataError(path, f"bad producer id block [{start}, {end}]")
        return ProducerIdBlock(broker_id=obj.req_int("broker"), block_start=start, block_end=end)


# --------------------------------------------------------------------------------------------------
# Brokers


class BrokersZNode:
    @staticmethod
    def path() -> str:
        return "/brokers"


class BrokerIdsZNode:
    @staticmethod
    def path() -> str:
        return "/brokers/ids"


class BrokerSequenceIdZNode:
    """`/brokers/seqid`: empty; its dataVersion generates broker ids when `broker.id` is unset."""

    @staticmethod
    def path() -> str:
        return "/brokers/seqid"


class BrokerIdZNode:
    """`/brokers/ids/<id>` (ephemeral): versions 1-5 read, 5 written by default (2 and 4 on request,
    like older inter-broker protocol versions)."""

    VERSIONS = (1, 2, 3, 4, 5)
    WRITE_VERSIONS = (2, 4, 5)
    _KNOWN = ("version", "host", "port", "jmx_port", "timestamp", "endpoints", "rack",
              "listener_security_protocol_map", "features")  # fmt: skip

    @staticmethod
    def path(broker_id: int) -> str:
        return f"/brokers/ids/{_non_negative(broker_id, 'broker id')}"

    @staticmethod
    def broker_id(path_or_name: str) -> int:
        name = path_or_name.rsplit("/", 1)[-1]
        if not name.isascii() or not name.isdigit():
            raise ValueError(f"{name!r} is not a broker id")
        return int(name)

    @staticmethod
    def encode(info: BrokerInfo, *, version: int | None = None) -> bytes:
        v = info.version if version is None else version
        if v not in BrokerIdZNode.WRITE_VERSIONS:
            raise ValueError(f"cannot write broker registration version {v} (writable: 2, 4, 5)")
        # Legacy clients read only host/port: the first PLAINTEXT endpoint, else null/-1.
        plain = next((e for e in info.endpoints if e.security_protocol is SecurityProtocol.PLAINTEXT), None)
        ts = now_ms() if info.timestamp_ms is None else info.timestamp_ms
        doc: dict[str, Any] = {
            "version": v,
            "host": plain.host if plain else None,
            "port": plain.port if plain else -1,
            "jmx_port": info.jmx_port,
            "timestamp": str(ts),
            "endpoints": [e.connection_string for e in info.endpoints],
        }
        if v >= 4:
            doc["listener_security_protocol_map"] = {
                e.listener_name: e.security_protocol.name for e in info.endpoints
            }
        if v >= 3 and info.rack is not None:
            doc["rack"] = info.rack
        if v >= 5:
            doc["features"] = {
                name: {"min_version": r.min_version, "max_version": r.max_version}
                for name, r in sorted(info.features.items())
            }
        return encode_json(doc)

    @staticmethod
    def decode(data: bytes | None, path: str, stat: ZnodeStat | None = None) -> BrokerInfo:
        try:
            broker_id = BrokerIdZNode.broker_id(path)
        except ValueError as e:
            raise ZNodeDataError(path, str(e)) from None
        obj = parse_json_object(data, path)
        version = obj.version(BrokerIdZNode.VERSIONS)
        assert version is not None
        jmx_port = obj.req_int("jmx_port")
        timestamp = obj.decimal_str("timestamp", required=False, accept_int=True)
        if version == 1:
            host = obj.opt_str("host")
            if host is None:
                obj.fail("host", "a version 1 registration needs a host")
            endpoints: tuple[EndPoint, ...] = (
                EndPoint("PLAINTEXT", host, obj.req_int("port"), SecurityProtocol.PLAINTEXT),
            )
        else:
            endpoints = BrokerIdZNode._decode_endpoints(obj)
        features: dict[str, SupportedVersionRange] = {}
        if version >= 5:
            features_obj = obj.opt_obj("features")
            for name in features_obj if features_obj else ():
                assert features_obj is not None
                r = features_obj.req_obj(name)
                low, high = r.req_int("min_version"), r.req_int("max_version")
                try:
                    features[name] = SupportedVersionRange(low, high)
                except ValueError as e:
                    features_obj.fail(name, str(e))
        return BrokerInfo(
            id=broker_id,
            endpoints=endpoints,
            rack=obj.opt_str("rack"),
            features=features,
            jmx_port=jmx_port,
            timestamp_ms=timestamp,
            version=version,
            epoch=stat.czxid if stat is not None else None,
        )

    @staticmethod
    def _decode_endpoints(obj: JsonObject) -> tuple[EndPoint, ...]:
        protocol_map: dict[str, SecurityProtocol] | None = None
        map_obj = obj.opt_obj("listener_security_protocol_map")
        if map_obj is not None:
            protocol_map = {}
            for listener, proto in obj.str_map("listener_security_protocol_map").items():
                try:
                    protocol_map[listener.upper()] = SecurityProtocol.parse(proto)
                except ValueError as e:
                    map_obj.fail(listener, str(e))
        endpoints = []
        for i, text in enumerate(obj.str_list("endpoints")):
            try:
                endpoints.append(EndPoint.parse(text, protocol_map))
            except ValueError as e:
                obj.fail(f"endpoints[{i}]", str(e))
        return tuple(endpoints)


# --------------------------------------------------------------------------------------------------
# Topics and partitions


class TopicsZNode:
    @staticmethod
    def path() -> str:
        return "/brokers/topics"


class TopicZNode:
    """`/brokers/topics/<topic>`: v1-v3 decoded by field presence; v3 written with `adding_replicas`
    and `removing_replicas` always present and the topic id / unknown keys preserved."""

    VERSIONS = (1, 2, 3)
    CURRENT_VERSION = 3
    _KNOWN = ("version", "partitions", "adding_replicas", "removing_replicas", "topic_id")

    @staticmethod
    def path(topic: str) -> str:
        return f"/brokers/topics/{path_component(topic, 'topic')}"

    @staticmethod
    def encode(assignment: TopicAssignment) -> bytes:
        doc: dict[str, Any] = {
            "version": TopicZNode.CURRENT_VERSION,
            "partitions": _encode_partition_map(assignment.partitions),
            "adding_replicas": _encode_partition_map(assignment.adding_replicas, skip_empty=True),
            "removing_replicas": _encode_partition_map(assignment.removing_replicas, skip_empty=True),
        }
        if assignment.topic_id is not None:
            doc["topic_id"] = assignment.topic_id
        for key, value in assignment.extra.items():
            if key not in TopicZNode._KNOWN:
                doc[key] = value
        return encode_json(doc)

    @staticmethod
    def decode(data: bytes | None, path: str, stat: ZnodeStat | None = None) -> TopicAssignment:
        topic = path.rsplit("/", 1)[-1]
        obj = parse_json_object(data, path)
        version = obj.version(TopicZNode.VERSIONS)
        assert version is not None
        partitions = _partition_map(obj, "partitions")
        adding = _partition_map(obj, "adding_replicas") if obj.raw.get("adding_replicas") is not None else {}
        removing = (
            _partition_map(obj, "removing_replicas") if obj.raw.get("removing_replicas") is not None else {}
        )
        topic_id = obj.opt_str("topic_id")
        if topic_id is not None and not is_uuid_base64(topic_id):
            obj.fail("topic_id", f"{topic_id!r} is not a 22-character base64 topic id")
        return TopicAssignment(
            topic=topic,
            partitions=partitions,
            adding_replicas={p: r for p, r in adding.items() if r},
            removing_replicas={p: r for p, r in removing.items() if r},
            topic_id=topic_id,
            version=version,
            zk_version=_zk_version(stat),
            extra=obj.unknown(TopicZNode._KNOWN),
        )


class TopicPartitionsZNode:
    @staticmethod
    @functools.lru_cache(maxsize=16384)
    def path(topic: str) -> str:
        # Kept per topic: a controller writes thousands of state znodes of the same few topics at
        # once (a broker's death: 10,000 at 30,000 partitions), each path re-validating the name.
        # A name that does not validate raises, and raising is not cached.
        return f"{TopicZNode.path(topic)}/partitions"


class TopicPartitionZNode:
    @staticmethod
    def path(tp: TopicPartition) -> str:
        # One call per new partition, and per partition an election writes (through the state's
        # path: 33,000 at once when a broker dies at 100,000 partitions): the topic's part is
        # cached, the partition checked inline.
        partition = tp.partition
        if type(partition) is not int or partition < 0:
            _non_negative(partition, "partition")  # raises, with the message
        return f"{TopicPartitionsZNode.path(tp.topic)}/{partition}"


def _state_pattern(*fields: tuple[str, bytes]) -> re.Pattern[bytes]:
    parts = [b'"' + name.encode() + b'":' + value for name, value in fields]
    return re.compile(b"\\{" + b",".join(parts) + b"\\}")


_INT9 = rb"-?(?:0|[1-9][0-9]{0,8})"
"""A JSON integer of at most 9 digits: always inside int32, so no range check is needed."""
_STATE_FIELDS = {
    "version": b"1",
    "leader": rb"(?P<leader>" + _INT9 + rb")",
    "leader_epoch": rb"(?P<leader_epoch>" + _INT9 + rb")",
    "isr": rb"\[(?P<isr>" + _INT9 + rb"(?:," + _INT9 + rb")*)?\]",
    "controller_epoch": rb"(?P<controller_epoch>" + _INT9 + rb")",
}
_STATE_ZKAFKA = _state_pattern(
    *((k, _STATE_FIELDS[k]) for k in ("version", "leader", "leader_epoch", "isr", "controller_epoch"))
)
"""The state znode as `TopicPartitionStateZNode.encode` writes it."""
_STATE_KAFKA = _state_pattern(
    *((k, _STATE_FIELDS[k]) for k in ("controller_epoch", "leader", "version", "leader_epoch", "isr"))
)
"""The state znode as Kafka's controller writes it (Jackson over a Java HashMap)."""


class TopicPartitionStateZNode:
    """`.../partitions/<p>/state`: leader, leader epoch, ISR, controller epoch; zkVersion from the stat;
    `leader_recovery_state` only written while RECOVERING (KIP-704)."""

    @staticmethod
    def path(tp: TopicPartition) -> str:
        return TopicPartitionZNode.path(tp) + "/state"

    @staticmethod
    def encode(leader_and_isr: LeaderAndIsr, controller_epoch: int) -> bytes:
        if leader_and_isr.leader_recovery_state is LeaderRecoveryState.RECOVERED:
            # The bytes encode_json makes of the document below, without its generic encoder
            # (json.dumps costs several times this; elections write 33,000 at once at 100,000).
            # int.__repr__ is "%d" for ints (and bools: 1, not True) without a generator
            return b'{"version":1,"leader":%d,"leader_epoch":%d,"isr":[%s],"controller_epoch":%d}' % (
                leader_and_isr.leader,
                leader_and_isr.leader_epoch,
                ",".join(map(int.__repr__, leader_and_isr.isr)).encode(),
                controller_epoch,
            )
        doc: dict[str, Any] = {
            "version": 1,
            "leader": leader_and_isr.leader,
            "leader_epoch": leader_and_isr.leader_epoch,
            "isr": list(leader_and_isr.isr),
            "controller_epoch": controller_epoch,
        }
        if leader_and_isr.leader_recovery_state is LeaderRecoveryState.RECOVERING:
            doc["leader_recovery_state"] = int(LeaderRecoveryState.RECOVERING)
        return encode_json(doc)

    @staticmethod
    def decode(data: bytes | None, path: str, stat: ZnodeStat | None = None) -> LeaderIsrAndControllerEpoch:
        # A new controller decodes every state znode (100,000 at the issue's scale): the layouts
        # zkafka and Kafka write are matched whole by one regex, and anything else (other key
        # orders, spaces, leader_recovery_state, big or malformed numbers, bad data) gets the
        # strict decoder and its error messages. The fast path accepts nothing the strict one
        # refuses: every number is at most 9 digits (inside int32), no leading zeros, version 1.
        if type(data) is bytes:
            found = _STATE_ZKAFKA.fullmatch(data) or _STATE_KAFKA.fullmatch(data)
            if found is not None:
                leader, leader_epoch, isr, controller_epoch = found.group(
                    "leader", "leader_epoch", "isr", "controller_epoch"
                )
                return LeaderIsrAndControllerEpoch(
                    LeaderAndIsr(
                        int(leader),
                        int(leader_epoch),
                        tuple(map(int, isr.split(b","))) if isr else (),
                        LeaderRecoveryState.RECOVERED,
                        stat.version if stat is not None else UNKNOWN_VERSION,
                    ),
                    int(controller_epoch),
                )
        return TopicPartitionStateZNode.decode_strict(data, path, stat)

    @staticmethod
    def decode_strict(
        data: bytes | None, path: str, stat: ZnodeStat | None = None
    ) -> LeaderIsrAndControllerEpoch:
        """Field by field, with an error that names the field (`decode` without its fast path)."""
        obj = parse_json_object(data, path)
        obj.version((1,))
        recovery_value = obj.opt_int("leader_recovery_state", int(LeaderRecoveryState.RECOVERED))
        try:
            recovery = LeaderRecoveryState(recovery_value)
        except ValueError:
            obj.fail("leader_recovery_state", f"unknown leader recovery state {recovery_value}")
        leader_and_isr = LeaderAndIsr(
            leader=obj.req_int("leader"),
            leader_epoch=obj.req_int("leader_epoch"),
            isr=obj.int_list("isr"),
            leader_recovery_state=recovery,
            zk_version=_zk_version(stat),
        )
        return LeaderIsrAndControllerEpoch(leader_and_isr, obj.req_int("controller_epoch"))


# --------------------------------------------------------------------------------------------------
# Admin request znodes


class AdminZNode:
    @staticmethod
    def path() -> str:
        return "/admin"


class DeleteTopicsZNode:
    @staticmethod
    def path() -> str:
        return "/admin/delete_topics"


class DeleteTopicsTopicZNode:
    """`/admin/delete_topics/<topic>`: empty marker."""

    @staticmethod
    def path(topic: str) -> str:
        return f"{DeleteTopicsZNode.path()}/{path_component(topic, 'topic')}"

    @staticmethod
    def encode() -> bytes:
        return b""


class ReassignPartitionsZNode:
    """`/admin/reassign_partitions` (legacy tool): partition -> target replicas."""

    @staticmethod
    def path() -> str:
        return "/admin/reassign_partitions"

    @staticmethod
    def encode(reassignment: Mapping[TopicPartition, Sequence[int]]) -> bytes:
        entries = [
            {"topic": tp.topic, "partition": tp.partition, "replicas": list(reassignment[tp])}
            for tp in sorted(reassignment)
        ]
        return encode_json({"version": 1, "partitions": entries})

    @staticmethod
    def decode(
        data: bytes | None, path: str = "/admin/reassign_partitions"
    ) -> dict[TopicPartition, tuple[int, ...]]:
        obj = parse_json_object(data, path)
        obj.version((1,))
        out: dict[TopicPartition, tuple[int, ...]] = {}
        for tp, entry in _topic_partitions(obj, "partitions"):
            if tp in out:
                raise ZNodeDataError(path, f"partition {tp} is listed more than once")
            out[tp] = entry.int_list("replicas")
        return out


class PreferredReplicaElectionZNode:
    """`/admin/preferred_replica_election` (legacy tool): the partitions to elect."""

    @staticmethod
    def path() -> str:
        return "/admin/preferred_replica_election"

    @staticmethod
    def encode(partitions: Iterable[TopicPartition]) -> bytes:
        return encode_json({"version": 1, "partitions": _encode_topic_partitions(partitions)})

    @staticmethod
    def decode(
        data: bytes | None, path: str = "/admin/preferred_replica_election"
    ) -> frozenset[TopicPartition]:
        obj = parse_json_object(data, path)
        obj.version((1,))
        return frozenset(tp for tp, _ in _topic_partitions(obj, "partitions"))


# --------------------------------------------------------------------------------------------------
# Dynamic configuration


class ConfigZNode:
    @staticmethod
    def path() -> str:
        return "/config"


class ConfigEntityTypeZNode:
    @staticmethod
    def path(entity_type: ConfigType | str) -> str:
        return f"/config/{ConfigType(entity_type).value}"


def config_entity_name(entity_type: ConfigType | str, name: str) -> str:
    """The znode name of a config entity: users and clients are sanitized (`<default>` stays raw),
    broker names must be an id or `<default>`, topic and ip names are used raw."""
    entity_type = ConfigType(entity_type)
    if name == DEFAULT_ENTITY:
        if entity_type is ConfigType.TOPIC:
            raise ValueError("topics have no <default> config entity")
        return name
    if entity_type in (ConfigType.USER, ConfigType.CLIENT):
        return sanitize(name)
    if entity_type is ConfigType.BROKER and not (name.isascii() and name.isdigit()):
        raise ValueError(f"broker config entity must be a broker id or {DEFAULT_ENTITY}, got {name!r}")
    return path_component(name, f"{entity_type.value} entity name")


def user_client_entity_name(user: str, client_id: str) -> str:
    """`users/<user>/clients/<client>`'s name below `/config/users` (quotas per user and client)."""
    user_name = config_entity_name(ConfigType.USER, user)
    return f"{user_name}/clients/{config_entity_name(ConfigType.CLIENT, client_id)}"


def config_entity_display_name(entity_type: ConfigType | str, znode_name: str) -> str:
    """Inverse of `config_entity_name` for display (desanitizes users and clients)."""
    entity_type = ConfigType(entity_type)
    if znode_name == DEFAULT_ENTITY or entity_type not in (ConfigType.USER, ConfigType.CLIENT):
        return znode_name
    return desanitize(znode_name)


class ConfigEntityZNode:
    """`/config/<type>/<znode name>`: `{"version":1,"config":{...}}`, all values strings. The name is
    the already sanitized znode name (see `config_entity_name`), or `<user>/clients/<client>`."""

    @staticmethod
    def path(entity_type: ConfigType | str, znode_name: str) -> str:
        entity_type = ConfigType(entity_type)
        parts = znode_name.split("/")
        if entity_type is ConfigType.USER and len(parts) == 3 and parts[1] == "clients":
            path_component(parts[0], "user entity name")
            path_component(parts[2], "client entity name")
        else:
            path_component(znode_name, f"{entity_type.value} entity name")
        return f"{ConfigEntityTypeZNode.path(entity_type)}/{znode_name}"

    @staticmethod
    def encode(config: Mapping[str, str]) -> bytes:
        for key, value in config.items():
            if not isinstance(key, str) or not isinstance(value, str):
                raise TypeError(f"config entries must be strings, got {key!r}: {value!r}")
        return encode_json({"version": 1, "config": dict(config)})

    @staticmethod
    def decode(data: bytes | None, path: str) -> dict[str, str]:
        """Empty data (a bare entity node) means no overrides."""
        if not data:
            return {}
        obj = parse_json_object(data, path)
        obj.version((1,))
        return obj.str_map("config")


class UserClientsZNode:
    """`/config/users/<user>/clients`: the parent of one user's per-client-id quota entities."""

    @staticmethod
    def path(user_znode_name: str) -> str:
        return f"{ConfigEntityZNode.path(ConfigType.USER, user_znode_name)}/clients"


CONFIG_CHANGES = SequentialZNodes("/config/changes", "config_change_")


class ConfigEntityChangeNotificationZNode:
    """`/config/changes/config_change_N`: v2 `{"version":2,"entity_path":"topics/foo"}` written;
    v1 `{"version":1,"entity_type":"topics"|"clients","entity_name":...}` read."""

    SEQUENCE = CONFIG_CHANGES

    @staticmethod
    def path() -> str:
        return CONFIG_CHANGES.root

    @staticmethod
    def encode(entity_path: str) -> bytes:
        entity_type, _, name = entity_path.partition("/")
        ConfigEntityZNode.path(entity_type, name)  # validates
        return encode_json({"version": 2, "entity_path": entity_path})

    @staticmethod
    def decode(data: bytes | None, path: str) -> ConfigChangeNotification:
        obj = parse_json_object(data, path)
        version = obj.version((1, 2))
        if version == 1:
            entity_type = obj.req_str("entity_type")
            if entity_type not in (ConfigType.TOPIC.value, ConfigType.CLIENT.value):
                obj.fail(
                    "entity_type",
                    f"version 1 notifications are only for topics or clients, got {entity_type!r}",
                )
            entity_path = f"{entity_type}/{obj.req_str('entity_name')}"
        else:
            entity_path = obj.req_str("entity_path")
        entity_type, _, name = entity_path.partition("/")
        try:
            ConfigEntityZNode.path(entity_type, name)
        except ValueError as e:
            raise ZNodeDataError(path, f"bad entity path {entity_path!r}: {e}") from None
        return ConfigChangeNotification(entity_path=entity_path, version=version or 2)


# --------------------------------------------------------------------------------------------------
# Notification queues consumed by the controller

ISR_CHANGES = SequentialZNodes("/isr_change_notification", "isr_change_")
LOG_DIR_EVENTS = SequentialZNodes("/log_dir_event_notification", "log_dir_event_")


class IsrChangeNotificationZNode:
    """`/isr_change_notification/isr_change_N`: partitions whose ISR a leader changed."""

    SEQUENCE = ISR_CHANGES

    @staticmethod
    def path() -> str:
        return ISR_CHANGES.root

    @staticmethod
    def encode(partitions: Iterable[TopicPartition]) -> bytes:
        return encode_json({"version": 1, "partitions": _encode_topic_partitions(partitions)})

    @staticmethod
    def decode(data: bytes | None, path: str) -> frozenset[TopicPartition]:
        obj = parse_json_object(data, path)
        obj.version((1,))
        return frozenset(tp for tp, _ in _topic_partitions(obj, "partitions"))


class LogDirEventNotificationZNode:
    """`/log_dir_event_notification/log_dir_event_N`: `{"version":1,"broker":id,"event":1}`."""

    SEQUENCE = LOG_DIR_EVENTS

    @staticmethod
    def path() -> str:
        return LOG_DIR_EVENTS.root

    @staticmethod
    def encode(event: LogDirEvent) -> bytes:
        return encode_json({"version": 1, "broker": event.broker_id, "event": event.event})

    @staticmethod
    def decode(data: bytes | None, path: str) -> LogDirEvent:
        obj = parse_json_object(data, path)
        obj.version((1,))
        return LogDirEvent(broker_id=obj.req_int("broker"), event=obj.req_int("event"))


# --------------------------------------------------------------------------------------------------
# ACLs

LITERAL_ACL_CHANGES = SequentialZNodes("/kafka-acl-changes", "acl_changes_")
EXTENDED_ACL_CHANGES = SequentialZNodes("/kafka-acl-extended-changes", "acl_changes_")


class AclZNodes:
    """`/kafka-acl/<Type>/<name>` (literal) and `/kafka-acl-extended/prefixed/<Type>/<prefix>`."""

    LITERAL_ROOT = "/kafka-acl"
    EXTENDED_ROOT = "/kafka-acl-extended"

    @staticmethod
    def store_root(pattern_type: PatternType) -> str:
        if pattern_type is PatternType.LITERAL:
            return AclZNodes.LITERAL_ROOT
        # The extended store's directory is the lower-cased pattern type.
        return f"{AclZNodes.EXTENDED_ROOT}/{pattern_type.value.lower()}"

    @staticmethod
    def type_path(pattern_type: PatternType, resource_type: ResourceType) -> str:
        return f"{AclZNodes.store_root(pattern_type)}/{resource_type.pascal}"

    @staticmethod
    def path(pattern: ResourcePattern) -> str:
        name = path_component(pattern.name, "resource name")
        return f"{AclZNodes.type_path(pattern.pattern_type, pattern.resource_type)}/{name}"

    @staticmethod
    def change_queue(pattern_type: PatternType) -> SequentialZNodes:
        return LITERAL_ACL_CHANGES if pattern_type is PatternType.LITERAL else EXTENDED_ACL_CHANGES

    @staticmethod
    def all_paths() -> list[str]:
        """Created on authorizer startup: every store root and type directory, both change queues."""
        paths = [AclZNodes.LITERAL_ROOT, AclZNodes.EXTENDED_ROOT]
        for pattern_type in PatternType:
            paths.append(AclZNodes.store_root(pattern_type))
            paths.extend(AclZNodes.type_path(pattern_type, rt) for rt in ResourceType)
        paths += [LITERAL_ACL_CHANGES.root, EXTENDED_ACL_CHANGES.root]
        return list(dict.fromkeys(paths))

    @staticmethod
    def encode(acls: Iterable[AclEntry]) -> bytes:
        entries = [
            {
                "principal": a.principal,
                "permissionType": a.permission_type.pascal,
                "operation": a.operation.pascal,
                "host": a.host,
            }
            for a in sorted(
                set(acls), key=lambda a: (a.principal, a.permission_type.pascal, a.operation.pascal, a.host)
            )
        ]
        return encode_json({"version": 1, "acls": entries})

    @staticmethod
    def decode(data: bytes | None, path: str) -> frozenset[AclEntry]:
        obj = parse_json_object(data, path)
        obj.version((1,))
        out = set()
        for entry in obj.objects("acls"):
            permission = _parse_field(entry, "permissionType", AclPermissionType.parse)
            operation = _parse_field(entry, "operation", AclOperation.parse)
            assert isinstance(permission, AclPermissionType) and isinstance(operation, AclOperation)
            out.add(AclEntry(entry.req_str("principal"), permission, operation, entry.req_str("host")))
        return frozenset(out)


class LiteralAclChangeZNode:
    """`/kafka-acl-changes/acl_changes_N`: plain text `<Type>:<name>` (2.0-2.3 wrote `Topic:foo`,
    2.4+ writes `TOPIC:foo`; both read)."""

    SEQUENCE = LITERAL_ACL_CHANGES

    @staticmethod
    def encode(pattern: ResourcePattern) -> bytes:
        if pattern.pattern_type is not PatternType.LITERAL:
            raise ValueError("literal ACL change notifications are only for LITERAL patterns")
        return f"{pattern.resource_type.enum_name}:{pattern.name}".encode()

    @staticmethod
    def decode(data: bytes | None, path: str) -> ResourcePattern:
        text = _text(data, path)
        type_name, sep, name = text.partition(":")
        if not sep:
            raise ZNodeDataError(path, f"expected <ResourceType>:<name>, got {text[:60]!r}")
        try:
            resource_type = ResourceType.parse(type_name)
        except ValueError as e:
            raise ZNodeDataError(path, str(e)) from None
        assert isinstance(resource_type, ResourceType)
        return ResourcePattern(resource_type, name, PatternType.LITERAL)


class ExtendedAclChangeZNode:
    """`/kafka-acl-extended-changes/acl_changes_N`: JSON with enum names."""

    SEQUENCE = EXTENDED_ACL_CHANGES

    @staticmethod
    def encode(pattern: ResourcePattern) -> bytes:
        return encode_json(
            {
                "version": 1,
                "resourceType": pattern.resource_type.enum_name,
                "name": pattern.name,
                "patternType": pattern.pattern_type.value,
            }
        )

    @staticmethod
    def decode(data: bytes | None, path: str) -> ResourcePattern:
        obj = parse_json_object(data, path)
        obj.version((1,))
        resource_type = _parse_field(obj, "resourceType", ResourceType.parse)
        pattern_type = _parse_field(obj, "patternType", PatternType.parse)
        assert isinstance(resource_type, ResourceType)
        return ResourcePattern(resource_type, obj.req_str("name"), pattern_type)


# --------------------------------------------------------------------------------------------------
# Delegation tokens

TOKEN_CHANGES = SequentialZNodes("/delegation_token/token_changes", "token_change_")


class DelegationTokenZNodes:
    ROOT = "/delegation_token"
    TOKENS = "/delegation_token/tokens"

    @staticmethod
    def all_paths() -> list[str]:
        return [DelegationTokenZNodes.ROOT, DelegationTokenZNodes.TOKENS, TOKEN_CHANGES.root]


class DelegationTokenInfoZNode:
    """`/delegation_token/tokens/<id>`; owner and renewers are stored sanitized."""

    @staticmethod
    def path(token_id: str) -> str:
        return f"{DelegationTokenZNodes.TOKENS}/{path_component(token_id, 'token id')}"

    @staticmethod
    def encode(info: DelegationTokenInfo) -> bytes:
        return encode_json(
            {
                "version": 1,
                "owner": sanitize(info.owner),
                "renewers": [sanitize(r) for r in info.renewers],
                "issueTimestamp": info.issue_timestamp_ms,
                "maxTimestamp": info.max_timestamp_ms,
                "expiryTimestamp": info.expiry_timestamp_ms,
                "tokenId": info.token_id,
            }
        )

    @staticmethod
    def decode(data: bytes | None, path: str) -> DelegationTokenInfo:
        obj = parse_json_object(data, path)
        obj.version((1,))
        owner = _parse_field(obj, "owner", desanitize)
        renewers = []
        for i, renewer in enumerate(obj.str_list("renewers")):
            try:
                renewers.append(desanitize(renewer))
            except ValueError as e:
                obj.fail(f"renewers[{i}]", str(e))
        return DelegationTokenInfo(
            token_id=obj.req_str("tokenId"),
            owner=owner,
            renewers=tuple(renewers),
            issue_timestamp_ms=obj.req_int("issueTimestamp", long=True),
            max_timestamp_ms=obj.req_int("maxTimestamp", long=True),
            expiry_timestamp_ms=obj.req_int("expiryTimestamp", long=True),
        )


class TokenChangeZNode:
    """`/delegation_token/token_changes/token_change_N`: the token id as plain text."""

    SEQUENCE = TOKEN_CHANGES

    @staticmethod
    def encode(token_id: str) -> bytes:
        return token_id.encode("utf-8")

    @staticmethod
    def decode(data: bytes | None, path: str) -> str:
        return _text(data, path)


# --------------------------------------------------------------------------------------------------
# The old ZooKeeper consumer (0.8 - 1.1)


class ConsumersZNode:
    @staticmethod
    def path() -> str:
        return "/consumers"


class ConsumerGroupZNodes:
    """Paths below `/consumers/<group>`: ids (ephemeral registrations), owners (ephemeral partition
    claims), offsets (persistent committed offsets)."""

    @staticmethod
    def group_path(group: str) -> str:
        return f"/consumers/{path_component(group, 'consumer group')}"

    @staticmethod
    def ids_path(group: str) -> str:
        return f"{ConsumerGroupZNodes.group_path(group)}/ids"

    @staticmethod
    def owners_path(group: str, topic: str | None = None) -> str:
        base = f"{ConsumerGroupZNodes.group_path(group)}/owners"
        return base if topic is None else f"{base}/{path_component(topic, 'topic')}"

    @staticmethod
    def offsets_path(group: str, topic: str | None = None) -> str:
        base = f"{ConsumerGroupZNodes.group_path(group)}/offsets"
        return base if topic is None else f"{base}/{path_component(topic, 'topic')}"


class ConsumerIdZNode:
    """`/consumers/<group>/ids/<consumer id>` (ephemeral)."""

    @staticmethod
    def path(group: str, consumer_id: str) -> str:
        return f"{ConsumerGroupZNodes.ids_path(group)}/{path_component(consumer_id, 'consumer id')}"

    @staticmethod
    def encode(registration: ConsumerRegistration) -> bytes:
        ts = now_ms() if registration.timestamp_ms is None else registration.timestamp_ms
        return encode_json(
            {
                "version": 1,
                "subscription": dict(registration.subscription),
                "pattern": SubscriptionPattern(registration.pattern).value,
                "timestamp": str(ts),
            }
        )

    @staticmethod
    def decode(data: bytes | None, path: str) -> ConsumerRegistration:
        obj = parse_json_object(data, path)
        obj.version((1,))
        pattern_text = obj.req_str("pattern")
        try:
            pattern = SubscriptionPattern(pattern_text)
        except ValueError:
            obj.fail("pattern", f"expected static, white_list or black_list, got {pattern_text!r}")
        subscription = obj.int_map("subscription")
        for topic, streams in subscription.items():
            if streams < 1:
                obj.req_obj("subscription").fail(topic, f"number of streams must be positive, got {streams}")
        return ConsumerRegistration(
            subscription=subscription,
            pattern=pattern,
            timestamp_ms=obj.decimal_str("timestamp", required=False, accept_int=True),
            version=1,
        )


class ConsumerOwnerZNode:
    """`/consumers/<group>/owners/<topic>/<partition>` (ephemeral): owning thread id, plain text."""

    @staticmethod
    def path(group: str, tp: TopicPartition) -> str:
        return (
            f"{ConsumerGroupZNodes.owners_path(group, tp.topic)}/{_non_negative(tp.partition, 'partition')}"
        )

    @staticmethod
    def encode(thread_id: str) -> bytes:
        return path_component(thread_id, "consumer thread id").encode("utf-8")

    @staticmethod
    def decode(data: bytes | None, path: str) -> str:
        text = _text(data, path)
        if not text:
            raise ZNodeDataError(path, "owner thread id is empty")
        return text


class ConsumerOffsetZNode:
    """`/consumers/<group>/offsets/<topic>/<partition>`: next offset to consume, decimal text."""

    @staticmethod
    def path(group: str, tp: TopicPartition) -> str:
        return (
            f"{ConsumerGroupZNodes.offsets_path(group, tp.topic)}/{_non_negative(tp.partition, 'partition')}"
        )

    @staticmethod
    def encode(offset: int) -> bytes:
        return str(int(offset)).encode("ascii")

    @staticmethod
    def decode(data: bytes | None, path: str) -> int:
        return decode_decimal(data, path, long=True)


# --------------------------------------------------------------------------------------------------
# Bootstrap

PERSISTENT_TOP_LEVEL_PATHS: tuple[str, ...] = (
    ConsumersZNode.path(),
    BrokerIdsZNode.path(),
    TopicsZNode.path(),
    CONFIG_CHANGES.root,
    DeleteTopicsZNode.path(),
    BrokerSequenceIdZNode.path(),
    ISR_CHANGES.root,
    ProducerIdBlockZNode.path(),
    LOG_DIR_EVENTS.root,
    *(ConfigEntityTypeZNode.path(t) for t in ConfigType),
)
"""What every broker creates (if absent, with empty data) at startup, in this order (ZD PersistentZkPaths).
Parents (`/brokers`, `/config`, `/admin`) come into existence with their children."""
