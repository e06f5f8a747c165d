"""The snapshot decoded with Kafka's schema for each path: the cluster as the checks see it, and
the `znode-schema` / `znode-not-ephemeral` findings for what does not decode or should not last.

Every znode is decoded on its own (a hostile tree is expected): what fails becomes a finding and is
left out of the view, exactly as the brokers' own readers leave it out (`zkafka.zk.bad_znodes`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from zkafka.doctor.findings import Finding, Repair, Severity
from zkafka.doctor.snapshot import ClusterSnapshot, RawZnode
from zkafka.protocol.topic_partition import TopicPartition
from zkafka.zk.model import BrokerInfo, ConsumerRegistration, LeaderIsrAndControllerEpoch, TopicAssignment
from zkafka.zk.znodes import (
    BrokerIdsZNode,
    BrokerIdZNode,
    ConfigEntityZNode,
    ConsumerIdZNode,
    ConsumerOffsetZNode,
    ConsumerOwnerZNode,
    ConsumersZNode,
    ControllerEpochZNode,
    ControllerZNode,
    DeleteTopicsZNode,
    PreferredReplicaElectionZNode,
    ReassignPartitionsZNode,
    TopicPartitionStateZNode,
    TopicsZNode,
    TopicZNode,
)

T = TypeVar("T")


@dataclass
class ZkConsumerGroup:
    """A seeds-style ZooKeeper consumer group (`/consumers/<group>`)."""

    name: str
    members: dict[str, ConsumerRegistration] = field(default_factory=dict)
    owners: dict[TopicPartition, RawZnode] = field(default_factory=dict)
    """Partition -> its owner znode (data: the owning thread id, `<consumer id>-<n>`)."""
    offsets: dict[TopicPartition, int] = field(default_factory=dict)


@dataclass
class ClusterView:
    brokers: dict[int, BrokerInfo] = field(default_factory=dict)
    """Registered brokers whose registration decodes: the live ones."""
    controller: int | None = None
    controller_epoch: int | None = None
    topics: dict[str, TopicAssignment] = field(default_factory=dict)
    states: dict[TopicPartition, LeaderIsrAndControllerEpoch] = field(default_factory=dict)
    unreadable_states: set[TopicPartition] = field(default_factory=set)
    reassignment: dict[TopicPartition, tuple[int, ...]] | None = None
    preferred_election: frozenset[TopicPartition] | None = None
    pending_deletes: list[str] = field(default_factory=list)
    topic_configs: dict[str, dict[str, str]] = field(default_factory=dict)
    broker_configs: dict[str, dict[str, str]] = field(default_factory=dict)
    zk_groups: dict[str, ZkConsumerGroup] = field(default_factory=dict)
    raw: ClusterSnapshot = field(default_factory=ClusterSnapshot)


SCHEMA_FIX = (
    "rewrite the znode with the JSON Kafka expects at this path (docs/zookeeper.md), "
    "or delete it if nothing needs it"
)


def decode_snapshot(snap: ClusterSnapshot) -> tuple[ClusterView, list[Finding]]:
    view = ClusterView(raw=snap)
    findings: list[Finding] = []

    def decode(node: RawZnode, fn: Callable[[RawZnode], T], severity: Severity, what: str) -> T | None:
        try:
            return fn(node)
        except Exception as e:  # hostile data: any failure of one znode is that znode's finding
            problem = getattr(e, "problem", None) or f"{type(e).__name__}: {e}"
            findings.append(
                Finding(severity, "znode-schema", node.path, f"{what} does not decode: {problem}", SCHEMA_FIX)
            )
            return None

    def must_be_ephemeral(node: RawZnode, what: str) -> None:
        if node.stat.ephemeralOwner == 0:
            findings.append(
                Finding(
                    Severity.CRITICAL,
                    "znode-not-ephemeral",
                    node.path,
                    f"{what} is persistent: it outlives the session that should own it",
                    "delete it; its owner re-creates it as an ephemeral znode",
                    Repair(node.path, node.stat.version),
                )
            )

    controller = snap.get(ControllerZNode.path())
    if controller is not None:
        must_be_ephemeral(controller, "the controller registration")
        reg = decode(
            controller,
            lambda n: ControllerZNode.decode(n.data, n.path, n.stat),
            Severity.CRITICAL,
            "/controller",
        )
        view.controller = None if reg is None else reg.broker_id
    epoch = snap.get(ControllerEpochZNode.path())
    if epoch is not None:
        view.controller_epoch = decode(
            epoch,
            lambda n: ControllerEpochZNode.decode(n.data, n.path),
            Severity.CRITICAL,
            "the controller epoch",
        )

    ids = BrokerIdsZNode.path()
    for name in snap.kids(ids):
        node = snap.get(f"{ids}/{name}")
        if node is None:
            continue
        must_be_ephemeral(node, f"broker {name}'s registration")
        info = decode(
            node,
            lambda n: BrokerIdZNode.decode(n.data, n.path, n.stat),
            Severity.CRITICAL,
            "a broker registration",
        )
        if info is not None:
            view.brokers[info.id] = info

    topics = TopicsZNode.path()
    for topic in snap.kids(topics):
        node = snap.get(f"{topics}/{topic}")
        if node is not None:
            assignment = decode(
                node,
                lambda n: TopicZNode.decode(n.data, n.path, n.stat),
                Severity.CRITICAL,
                "a topic assignment",
            )
            if assignment is not None:
                view.topics[topic] = assignment
        for p in snap.kids(f"{topics}/{topic}/partitions"):
            state = snap.get(f"{topics}/{topic}/partitions/{p}/state")
            if state is None or not p.isdigit():
                continue
            tp = TopicPartition(topic, int(p))
            decoded = decode(
                state,
                lambda n: TopicPartitionStateZNode.decode(n.data, n.path, n.stat),
                Severity.CRITICAL,
                "a partition state",
            )
            if decoded is None:
                view.unreadable_states.add(tp)
            else:
                view.states[tp] = decoded

    reassign = snap.get(ReassignPartitionsZNode.path())
    if reassign is not None:
        view.reassignment = decode(
            reassign,
            lambda n: ReassignPartitionsZNode.decode(n.data, n.path),
            Severity.WARNING,
            "a reassignment request",
        )
    preferred = snap.get(PreferredReplicaElectionZNode.path())
    if preferred is not None:
        view.preferred_election = decode(
            preferred,
            lambda n: PreferredReplicaElectionZNode.decode(n.data, n.path),
            Severity.WARNING,
            "a preferred election request",
        )
    view.pending_deletes = list(snap.kids(DeleteTopicsZNode.path()))

    for entity_type, target in (("topics", view.topic_configs), ("brokers", view.broker_configs)):
        for name in snap.kids(f"/config/{entity_type}"):
            node = snap.get(f"/config/{entity_type}/{name}")
            if node is not None:
                config = decode(
                    node,
                    lambda n: ConfigEntityZNode.decode(n.data, n.path),
                    Severity.WARNING,
                    "a config entity",
                )
                if config is not None:
                    target[name] = config

    _decode_zk_groups(snap, view, decode)
    return view, findings


def _decode_zk_groups(snap: ClusterSnapshot, view: ClusterView, decode: Callable[..., object]) -> None:
    root = ConsumersZNode.path()
    for group in snap.kids(root):
        g = view.zk_groups[group] = ZkConsumerGroup(group)
        base = f"{root}/{group}"
        for cid in snap.kids(f"{base}/ids"):
            node = snap.get(f"{base}/ids/{cid}")
            if node is not None:
                reg = decode(
                    node,
                    lambda n: ConsumerIdZNode.decode(n.data, n.path),
                    Severity.WARNING,
                    "a consumer registration",
                )
                if isinstance(reg, ConsumerRegistration):
                    g.members[cid] = reg
        for topic in snap.kids(f"{base}/owners"):
            for p in snap.kids(f"{base}/owners/{topic}"):
                node = snap.get(f"{base}/owners/{topic}/{p}")
                if node is None or not p.isdigit():
                    continue
                owner = decode(
                    node,
                    lambda n: ConsumerOwnerZNode.decode(n.data, n.path),
                    Severity.WARNING,
                    "a partition owner",
                )
                if owner is not None:
                    g.owners[TopicPartition(topic, int(p))] = node
        for topic in snap.kids(f"{base}/offsets"):
            for p in snap.kids(f"{base}/offsets/{topic}"):
                node = snap.get(f"{base}/offsets/{topic}/{p}")
                if node is not None and p.isdigit():
                    offset = decode(
                        node,
                        lambda n: ConsumerOffsetZNode.decode(n.data, n.path),
                        Severity.WARNING,
                        "a committed offset",
                    )
                    if isinstance(offset, int):
                        g.offsets[TopicPartition(topic, int(p))] = offset
