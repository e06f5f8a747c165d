"""The seeds' ZooKeeper consumer groups: partitions owned by consumers that are no longer
registered (nobody consumes them until the owner znode goes), and offsets for partitions that do
not exist or are negative."""

from __future__ import annotations

from collections.abc import Iterator

from zkafka.doctor.findings import Finding, Repair, Severity
from zkafka.doctor.view import ClusterView


def _owner_member(owner: str, members: set[str]) -> bool:
    """Owner znodes hold `<consumer id>-<thread number>`; consumer ids contain dashes themselves."""
    return any(owner == m or owner.startswith(m + "-") for m in members)


def check_zk_consumers(view: ClusterView) -> Iterator[Finding]:
    for name, group in sorted(view.zk_groups.items()):
        members = set(group.members)
        for tp, node in sorted(group.owners.items()):
            owner = node.data.decode("utf-8", "replace")
            if _owner_member(owner, members):
                continue
            persistent = node.stat.ephemeralOwner == 0
            yield Finding(
                Severity.WARNING,
                "stale-partition-owner",
                node.path,
                f"group {name!r}: {tp.topic}-{tp.partition} is owned by {owner!r}, which is not a "
                "registered consumer, so no member of the group consumes it",
                "delete the owner znode; the group's next rebalance assigns the partition"
                if persistent
                else "it goes when its ZooKeeper session expires; if it does not, restart the consumer "
                "that holds it",
                Repair(node.path, node.stat.version) if persistent else None,
            )
        for tp, offset in sorted(group.offsets.items()):
            assignment = view.topics.get(tp.topic)
            path = f"/consumers/{name}/offsets/{tp.topic}/{tp.partition}"
            if assignment is None or tp.partition not in assignment.partitions:
                yield Finding(
                    Severity.WARNING,
                    "offset-for-unknown-partition",
                    path,
                    f"group {name!r} has an offset for {tp.topic}-{tp.partition}, which does not exist",
                    "delete it if the topic is gone for good "
                    "(zkafka consumer-groups --delete for the whole group)",
                )
            elif offset < 0:
                yield Finding(
                    Severity.WARNING,
                    "offset-negative",
                    path,
                    f"group {name!r} has offset {offset} for {tp.topic}-{tp.partition}",
                    "reset it: zkafka consumer-groups --reset-offsets --to-earliest",
                )
