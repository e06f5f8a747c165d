"""The part of a cluster's ZooKeeper tree the checks read, read once.

Reads are pipelined in chunks (`get_data_many`), so a tree of 100,000 partitions costs a few round
trips per thousand znodes rather than one each. Nothing is decoded here: a znode whose data is
garbage is still read, and `view` reports it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from kazoo.protocol.states import ZnodeStat

from zkafka.zk.session import chunked
from zkafka.zk.znodes import (
    BrokerIdsZNode,
    ConsumersZNode,
    ControllerEpochZNode,
    ControllerZNode,
    DeleteTopicsZNode,
    PreferredReplicaElectionZNode,
    ReassignPartitionsZNode,
    TopicsZNode,
)

READ_CHUNK = 2000
"""Reads in flight at once: enough to hide the round trip, few enough to bound kazoo's queue."""


class ZkReader(Protocol):
    """What the doctor needs of a ZooKeeper session (`zkafka.zk.session.ZkSession` has it)."""

    def get_children(self, path: str) -> list[str] | None: ...

    def get_data_many(self, paths: Sequence[str]) -> dict[str, tuple[bytes, ZnodeStat] | None]: ...


@dataclass(frozen=True, slots=True)
class RawZnode:
    path: str
    data: bytes
    stat: ZnodeStat


@dataclass
class ClusterSnapshot:
    znodes: dict[str, RawZnode] = field(default_factory=dict)
    """Every znode read, by path (those that vanished between listing and reading are absent)."""
    children: dict[str, list[str]] = field(default_factory=dict)
    """The children listed, by parent path (absent parents are absent)."""

    def get(self, path: str) -> RawZnode | None:
        return self.znodes.get(path)

    def kids(self, path: str) -> list[str]:
        return self.children.get(path, [])


def read_snapshot(zk: ZkReader) -> ClusterSnapshot:
    snap = ClusterSnapshot()

    def list_children(parent: str) -> list[str]:
        names = zk.get_children(parent)
        if names is None:
            return []
        names = sorted(names)
        snap.children[parent] = names
        return names

    def read(paths: Iterable[str]) -> None:
        for chunk in chunked(list(paths), READ_CHUNK):
            for path, got in zk.get_data_many(chunk).items():
                if got is not None:
                    snap.znodes[path] = RawZnode(path, got[0], got[1])

    ids = BrokerIdsZNode.path()
    topics = TopicsZNode.path()
    deletes = DeleteTopicsZNode.path()
    read(
        [
            ControllerZNode.path(),
            ControllerEpochZNode.path(),
            ReassignPartitionsZNode.path(),
            PreferredReplicaElectionZNode.path(),
        ]
    )
    read(f"{ids}/{name}" for name in list_children(ids))
    topic_names = list_children(topics)
    read(f"{topics}/{t}" for t in topic_names)
    read(f"{deletes}/{t}" for t in list_children(deletes))
    states: list[str] = []
    for t in topic_names:
        parent = f"{topics}/{t}/partitions"
        states.extend(f"{parent}/{p}/state" for p in list_children(parent))
    read(states)
    for entity_type in ("topics", "brokers"):
        parent = f"/config/{entity_type}"
        read(f"{parent}/{name}" for name in list_children(parent))
    consumer_paths: list[str] = []
    for group in list_children(ConsumersZNode.path()):
        base = f"{ConsumersZNode.path()}/{group}"
        consumer_paths.extend(f"{base}/ids/{c}" for c in list_children(f"{base}/ids"))
        for kind in ("owners", "offsets"):
            for topic in list_children(f"{base}/{kind}"):
                parent = f"{base}/{kind}/{topic}"
                consumer_paths.extend(f"{parent}/{p}" for p in list_children(parent))
    read(consumer_paths)
    return snap
