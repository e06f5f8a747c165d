"""Resetting a broker-coordinated group's committed offsets for one topic, as
`kafka-consumer-groups --reset-offsets` does: to the earliest or latest offset, to an offset, or
shifted by N, each target clamped to the partition's log; planned first (the dry run the
confirmation page shows), and refused while the group has live members."""

from __future__ import annotations

from dataclasses import dataclass

from zkafka.client.types import TopicPartition
from zkafka.console.cluster_data import log_offsets
from zkafka.console.errors import ConsoleError
from zkafka.console.source import ClusterSource

TARGETS = ("earliest", "latest", "offset", "shift")
"""--to-earliest, --to-latest, --to-offset N, --shift-by N."""


@dataclass(frozen=True, slots=True)
class PlanRow:
    partition: TopicPartition
    current: int | None
    target: int


async def reset_plan(
    source: ClusterSource, group_id: str, topic: str, to: str, value: int | None
) -> list[PlanRow]:
    if to not in TARGETS:
        raise ConsoleError(400, f"reset to must be one of {', '.join(TARGETS)}, got {to!r}")
    if to in ("offset", "shift") and value is None:
        raise ConsoleError(400, f"resetting to {to} needs a value")
    meta = (await source.admin.describe_topics([topic]))[topic]
    partitions = [TopicPartition(topic, p) for p in sorted(meta.partitions)]
    await _refuse_live_members(source, group_id)
    committed = await source.group_admin.committed_offsets(group_id, partitions)
    ends, note = await log_offsets(source, partitions)
    missing = [tp for tp in partitions if ends.get(tp, (None, None))[0] is None]
    if missing:
        raise ConsoleError(
            503, f"no leader answers for {', '.join(map(str, missing))}" + (f" ({note})" if note else "")
        )
    plan = []
    for tp in partitions:
        start, end = ends[tp]
        assert start is not None and end is not None
        current = committed.get(tp)
        if to == "earliest":
            target = start
        elif to == "latest":
            target = end
        elif to == "offset":
            target = value  # type: ignore[assignment]
        elif current is None:
            raise ConsoleError(400, f"cannot shift the offset of {tp}: the group has no committed offset")
        else:
            target = current + value  # type: ignore[operator]
        plan.append(PlanRow(tp, current, min(max(target, start), end)))
    return plan


async def execute(source: ClusterSource, group_id: str, plan: list[PlanRow]) -> None:
    await _refuse_live_members(source, group_id)
    await source.group_admin.commit_offsets(group_id, {r.partition: r.target for r in plan})


async def _refuse_live_members(source: ClusterSource, group_id: str) -> None:
    described = await source.group_admin.describe_group(group_id)
    if described.members:
        raise ConsoleError(
            409,
            f"group {group_id!r} has {len(described.members)} live member(s) (state {described.state}): "
            "offsets can be reset only while the group is empty, as with kafka-consumer-groups",
        )
