"""The partition assignors a consumer-group leader runs (Java's RangeAssignor and
RoundRobinAssignor over member subscriptions and partition counts), chosen by the group's vote.
The seeds' ZooKeeper consumers use their own, older rules: `zk_consumer.range_assignment` and
`roundrobin_assignment`."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence


def range_assign(
    subscriptions: Mapping[str, Sequence[str]], partitions: Mapping[str, int]
) -> dict[str, dict[str, list[int]]]:
    """Java's RangeAssignor: per topic, its subscribers sorted by member id share the partitions
    in contiguous blocks, the first `count % members` getting one more."""
    out: dict[str, dict[str, list[int]]] = {m: {} for m in subscriptions}
    for topic in sorted({t for ts in subscriptions.values() for t in ts}):
        members = sorted(m for m, ts in subscriptions.items() if topic in ts)
        n, r = divmod(partitions.get(topic, 0), len(members))
        for i, m in enumerate(members):
            start = n * i + min(i, r)
            count = n + (1 if i < r else 0)
            if count:
                out[m][topic] = list(range(start, start + count))
    return out


def roundrobin_assign(
    subscriptions: Mapping[str, Sequence[str]], partitions: Mapping[str, int]
) -> dict[str, dict[str, list[int]]]:
    """Java's RoundRobinAssignor: every partition, by topic then number, dealt to the members in
    member-id order, skipping members not subscribed to its topic."""
    out: dict[str, dict[str, list[int]]] = {m: {} for m in subscriptions}
    members = sorted(subscriptions)
    if not members:
        return out
    i = 0
    for topic in sorted({t for ts in subscriptions.values() for t in ts}):
        for p in range(partitions.get(topic, 0)):
            for _ in range(len(members)):
                m = members[i % len(members)]
                i += 1
                if topic in subscriptions[m]:
                    out[m].setdefault(topic, []).append(p)
                    break
    return out


ASSIGNORS: dict[
    str, Callable[[Mapping[str, Sequence[str]], Mapping[str, int]], dict[str, dict[str, list[int]]]]
] = {
    "range": range_assign,
    "roundrobin": roundrobin_assign,
}
