"""Consumer groups of both kinds, as the group pages show them: broker-coordinated groups through
`GroupAdmin` (ListGroups, DescribeGroups, OffsetFetch) and the seeds' ZooKeeper consumers from the
doctor's view of `/consumers`; lag is the log end offset minus the committed offset."""

from __future__ import annotations

from dataclasses import dataclass, field

from zkafka.client.types import TopicPartition
from zkafka.console.cluster_data import log_offsets
from zkafka.console.errors import ConsoleError
from zkafka.console.source import ClusterSource
from zkafka.doctor.view import ClusterView

BROKER = "broker"
ZOOKEEPER = "zookeeper"


@dataclass(frozen=True, slots=True)
class GroupRow:
    group_id: str
    kind: str
    """BROKER (coordinated by a broker) or ZOOKEEPER (the seeds' consumers under /consumers)."""
    detail: str
    """The protocol type of a broker group; the member count of a ZooKeeper one."""


@dataclass(frozen=True, slots=True)
class MemberRow:
    member_id: str
    client_id: str
    host: str
    assignment: str


@dataclass(frozen=True, slots=True)
class LagRow:
    topic: str
    partition: int
    committed: int | None
    log_end: int | None
    owner: str = ""

    @property
    def lag(self) -> int | None:
        if self.committed is None or self.log_end is None:
            return None
        return max(self.log_end - self.committed, 0)


@dataclass
class GroupDetail:
    group_id: str
    kind: str
    state: str
    protocol: str
    members: list[MemberRow] = field(default_factory=list)
    lags: list[LagRow] = field(default_factory=list)
    note: str | None = None

    @property
    def total_lag(self) -> int:
        return sum(r.lag or 0 for r in self.lags)


async def list_groups(source: ClusterSource, view: ClusterView | None) -> list[GroupRow]:
    rows = [GroupRow(g, BROKER, kind or "(none)") for g, kind in await source.group_admin.list_groups()]
    if view is not None:
        rows += [GroupRow(g, ZOOKEEPER, f"{len(z.members)} member(s)") for g, z in view.zk_groups.items()]
    return sorted(rows, key=lambda r: (r.group_id, r.kind))


async def describe_group(source: ClusterSource, view: ClusterView | None, group_id: str) -> list[GroupDetail]:
    """The group under each kind it exists as; ConsoleError 404 when it exists as neither."""
    out = []
    broker = await _broker_group(source, group_id)
    if broker is not None:
        out.append(broker)
    if view is not None and group_id in view.zk_groups:
        out.append(await _zookeeper_group(source, view, group_id))
    if not out:
        raise ConsoleError(
            404, f"no consumer group {group_id!r} (neither on the brokers nor under /consumers)"
        )
    return out


async def _broker_group(source: ClusterSource, group_id: str) -> GroupDetail | None:
    admin = source.group_admin
    described = await admin.describe_group(group_id)
    committed = await admin.committed_offsets(group_id)
    if described.state == "Dead" and not committed:
        return None  # DescribeGroups answers an unknown group as an empty Dead one
    owners = {
        TopicPartition(topic, p): m.client_id or m.member_id
        for m in described.members
        for topic, parts in m.assignment.items()
        for p in parts
    }
    members = [
        MemberRow(m.member_id, m.client_id, m.host, _assignment_text(m.assignment)) for m in described.members
    ]
    lags, note = await _lags(source, set(committed) | set(owners), committed, owners)
    return GroupDetail(group_id, BROKER, described.state, described.protocol, members, lags, note)


async def _zookeeper_group(source: ClusterSource, view: ClusterView, group_id: str) -> GroupDetail:
    group = view.zk_groups[group_id]
    members = [
        MemberRow(
            cid, cid, "", ", ".join(f"{t} ({n} stream(s))" for t, n in sorted(reg.subscription.items()))
        )
        for cid, reg in sorted(group.members.items())
    ]
    owners = {tp: node.data.decode("utf-8", "replace") for tp, node in group.owners.items()}
    committed = dict(group.offsets)
    lags, note = await _lags(source, set(committed) | set(owners), committed, owners)
    state = "Stable" if group.members else "Empty"
    return GroupDetail(group_id, ZOOKEEPER, state, "ZooKeeper consumer", members, lags, note)


async def _lags(
    source: ClusterSource,
    partitions: set[TopicPartition],
    committed: dict[TopicPartition, int],
    owners: dict[TopicPartition, str],
) -> tuple[list[LagRow], str | None]:
    ends, note = await log_offsets(source, sorted(partitions))
    rows = [
        LagRow(tp.topic, tp.partition, committed.get(tp), ends.get(tp, (None, None))[1], owners.get(tp, ""))
        for tp in sorted(partitions)
    ]
    return rows, note


def _assignment_text(assignment: object) -> str:
    if not isinstance(assignment, dict) or not assignment:
        return ""
    return "; ".join(f"{t}: {','.join(map(str, sorted(ps)))}" for t, ps in sorted(assignment.items()))
