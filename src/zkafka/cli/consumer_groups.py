"""`zkafka consumer-groups`: list, describe, delete and reset consumer groups, with
kafka-consumer-groups' flags, for both kinds of group.

    zkafka consumer-groups --bootstrap-server 127.0.0.1:9092 --list
    zkafka consumer-groups --bootstrap-server 127.0.0.1:9092 --describe --group g
    zkafka consumer-groups --bootstrap-server 127.0.0.1:9092 --delete --group g
    zkafka consumer-groups --bootstrap-server 127.0.0.1:9092 --reset-offsets --group g --topic t \\
        --to-earliest --execute
    zkafka consumer-groups --zookeeper 127.0.0.1:2181/kafka --describe --group old-group

With --bootstrap-server the groups are the brokers' (group coordinator, `__consumer_offsets`);
with --zookeeper they are the ZooKeeper consumer's (`/consumers/<group>`). --describe prints
one row per partition: GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG CONSUMER-ID HOST
CLIENT-ID, where LAG = LOG-END-OFFSET - CURRENT-OFFSET ("-" without a committed offset). Offsets
can only be reset, and groups deleted, while the group has no active members (as in Kafka);
--reset-offsets without --execute only shows the plan.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import IO

from zkafka.cli.errors import CliError
from zkafka.cli.topics import client_errors
from zkafka.client.admin import AdminClient
from zkafka.client.group_consumer import GroupAdmin
from zkafka.client.types import TopicPartition
from zkafka.zk.client import KafkaZkClient
from zkafka.zk.errors import ZkError
from zkafka.zk.model import TopicPartition as ZkTopicPartition
from zkafka.zk.znodes import ConsumerGroupZNodes

ACTIONS = ("list", "describe", "delete", "reset_offsets")
HEADER = (
    "GROUP",
    "TOPIC",
    "PARTITION",
    "CURRENT-OFFSET",
    "LOG-END-OFFSET",
    "LAG",
    "CONSUMER-ID",
    "HOST",
    "CLIENT-ID",
)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "consumer-groups",
        help="list, describe, delete and reset consumer groups (like kafka-consumer-groups)",
        description="List, describe, delete and reset consumer groups, with kafka-consumer-groups' flags.",
    )
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--bootstrap-server", metavar="HOST:PORT[,...]", help="groups of the brokers")
    where.add_argument("--zookeeper", metavar="HOST:PORT[/CHROOT]", help="groups of the ZooKeeper consumer")
    actions = p.add_mutually_exclusive_group(required=True)
    actions.add_argument("--list", action="store_true", help="list every group")
    actions.add_argument("--describe", action="store_true", help="offsets, lag and owners of a group")
    actions.add_argument("--delete", action="store_true", help="delete an inactive group and its offsets")
    actions.add_argument("--reset-offsets", action="store_true", help="move an inactive group's offsets")
    p.add_argument("--group", metavar="GROUP", help="the group")
    p.add_argument("--topic", action="append", metavar="TOPIC", help="--reset-offsets: topic (repeatable)")
    p.add_argument(
        "--all-topics", action="store_true", help="--reset-offsets: every topic the group has offsets of"
    )
    to = p.add_mutually_exclusive_group()
    to.add_argument("--to-earliest", action="store_true", help="reset to the log start")
    to.add_argument("--to-latest", action="store_true", help="reset to the log end")
    to.add_argument("--to-offset", type=int, metavar="N", help="reset to offset N (clamped to the log)")
    run = p.add_mutually_exclusive_group()
    run.add_argument("--execute", action="store_true", help="--reset-offsets: do it")
    run.add_argument("--dry-run", action="store_true", help="--reset-offsets: only show the plan (default)")
    p.set_defaults(func=run_command)


# -- model shared by both kinds ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Row:
    topic: str
    partition: int | None
    current: int | None
    log_end: int | None
    consumer_id: str = "-"
    host: str = "-"
    client_id: str = "-"

    @property
    def lag(self) -> int | None:
        if self.current is None or self.log_end is None:
            return None
        return max(self.log_end - self.current, 0)


def _text(value: object) -> str:
    return "-" if value is None else str(value)


def print_table(group: str, rows: Sequence[Row], out: IO[str]) -> None:
    table = [HEADER] + [
        (
            group,
            r.topic,
            _text(r.partition),
            _text(r.current),
            _text(r.log_end),
            _text(r.lag),
            r.consumer_id,
            r.host,
            r.client_id,
        )
        for r in rows
    ]
    widths = [max(len(line[i]) for line in table) for i in range(len(HEADER))]
    out.write("\n")
    for line in table:
        out.write(" ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip() + "\n")


def run_command(args: argparse.Namespace) -> int:
    action = next(a for a in ACTIONS if getattr(args, a))
    if action != "list" and not args.group:
        raise CliError(f"--{action.replace('_', '-')} needs --group")
    if action == "reset_offsets":
        if not (args.to_earliest or args.to_latest or args.to_offset is not None):
            raise CliError("--reset-offsets needs one of --to-earliest, --to-latest or --to-offset")
        if not args.topic and not args.all_topics:
            raise CliError("--reset-offsets needs --topic or --all-topics")
        if args.to_offset is not None and args.to_offset < 0:
            raise CliError("--to-offset must be >= 0")
    with client_errors():
        if args.zookeeper:
            return _zookeeper(args, action, sys.stdout)
        return asyncio.run(_brokers(args, action, sys.stdout))


def _target(
    args: argparse.Namespace,
    current: Mapping[TopicPartition, int],
    ends: Mapping[TopicPartition, tuple[int, int]],
) -> dict[TopicPartition, int]:
    """The new offset of every partition: earliest/latest, or --to-offset clamped into the log."""
    out = {}
    for tp, (start, end) in ends.items():
        if args.to_earliest:
            out[tp] = start
        elif args.to_latest:
            out[tp] = end
        else:
            out[tp] = min(max(args.to_offset, start), end)
    return out


def _print_plan(group: str, plan: Mapping[TopicPartition, int], out: IO[str], executed: bool) -> None:
    rows = [("GROUP", "TOPIC", "PARTITION", "NEW-OFFSET")] + [
        (group, tp.topic, str(tp.partition), str(o)) for tp, o in sorted(plan.items())
    ]
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    out.write("\n")
    for r in rows:
        out.write(" ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() + "\n")
    if not executed:
        out.write("\nThis is a dry run: add --execute to reset the offsets.\n")


async def _log_ends(
    admin: AdminClient, tps: Iterable[TopicPartition]
) -> dict[TopicPartition, tuple[int, int]]:
    """(log start, log end) per partition."""
    tps = sorted(set(tps))
    if not tps:
        return {}
    starts = await admin.list_offsets(dict.fromkeys(tps, "earliest"))
    ends = await admin.list_offsets(dict.fromkeys(tps, "latest"))
    return {
        tp: (-1 if starts[tp] is None else starts[tp].offset, -1 if ends[tp] is None else ends[tp].offset)  # type: ignore[union-attr]
        for tp in tps
    }


async def _topic_partitions(admin: AdminClient, topics: Iterable[str]) -> list[TopicPartition]:
    metas = await admin.describe_topics(sorted(set(topics)))
    return [TopicPartition(t, p) for t, m in metas.items() for p in sorted(m.partitions)]


# -- broker groups -------------------------------------------------------------------------------------


async def _brokers(args: argparse.Namespace, action: str, out: IO[str]) -> int:
    async with GroupAdmin(args.bootstrap_server) as groups, AdminClient(args.bootstrap_server) as admin:
        if action == "list":
            for group, _ in await groups.list_groups():
                out.write(group + "\n")
            return 0
        group = args.group
        description = await groups.describe_group(group)
        if action == "describe":
            committed = await groups.committed_offsets(group)
            if description.state == "Dead" and not committed:
                raise CliError(f"Consumer group '{group}' does not exist.")
            owners = {
                TopicPartition(t, p): m
                for m in description.members
                for t, parts in m.assignment.items()
                for p in parts
            }
            ends = await _log_ends(admin, set(committed) | set(owners))
            rows = []
            for tp in sorted(set(committed) | set(owners)):
                m = owners.get(tp)
                rows.append(
                    Row(
                        tp.topic,
                        tp.partition,
                        committed.get(tp),
                        ends.get(tp, (None, None))[1],
                        m.member_id if m else "-",
                        m.host if m else "-",
                        m.client_id if m else "-",
                    )
                )
            for m in description.members:
                if not m.assignment:
                    rows.append(Row("-", None, None, None, m.member_id, m.host, m.client_id))
            if description.state in ("Empty", "Dead"):
                out.write(f"\nConsumer group '{group}' has no active members.\n")
            elif description.state != "Stable":
                out.write(f"\nWarning: consumer group '{group}' is rebalancing.\n")
            print_table(group, rows, out)
            return 0
        if description.state not in ("Empty", "Dead"):
            raise CliError(
                f"the group '{group}' still has active members (state {description.state}); "
                "stop its consumers first"
            )
        if action == "delete":
            await groups.delete_group(group)
            out.write(f"Deletion of requested consumer groups ('{group}') was successful.\n")
            return 0
        committed = await groups.committed_offsets(group)
        topics = args.topic or sorted({tp.topic for tp in committed})
        ends = await _log_ends(admin, await _topic_partitions(admin, topics))
        plan = _target(args, committed, ends)
        if args.execute:
            await groups.commit_offsets(group, plan)
        _print_plan(group, plan, out, args.execute)
        return 0


# -- ZooKeeper groups ----------------------------------------------------------------------------------


def _zookeeper(args: argparse.Namespace, action: str, out: IO[str]) -> int:
    try:
        zk = KafkaZkClient(args.zookeeper, create_chroot=False, connection_timeout_ms=10_000)
    except (ZkError, ValueError) as e:
        raise CliError(f"cannot connect to ZooKeeper {args.zookeeper}: {e}") from None
    try:
        if action == "list":
            for group in zk.get_consumer_groups():
                out.write(group + "\n")
            return 0
        group = args.group
        if zk.exists(ConsumerGroupZNodes.group_path(group)) is None:
            raise CliError(f"Consumer group '{group}' does not exist.")
        active = zk.get_consumer_ids(group)
        committed = _zk_offsets(zk, group)
        if action == "describe":
            owners = _zk_owners(zk, group)
            topics = {tp.topic for tp in committed} | {tp.topic for tp in owners}
            tps = [TopicPartition(t, p) for t in sorted(topics) for p in zk.get_partitions_for_topic(t)]
            ends = asyncio.run(_zk_log_ends(args.zookeeper, tps))
            if not active:
                out.write(f"\nConsumer group '{group}' has no active members.\n")
            rows = [
                Row(
                    tp.topic,
                    tp.partition,
                    committed.get(tp),
                    ends.get(tp, (None, None))[1],
                    owners.get(tp, "-"),
                )
                for tp in tps
            ]
            print_table(group, rows, out)
            return 0
        if active:
            raise CliError(
                f"the group '{group}' still has active consumers ({', '.join(active)}); stop them first"
            )
        if action == "delete":
            zk.delete(ConsumerGroupZNodes.group_path(group), recursive=True)
            out.write(f"Deleted all consumer group information for group '{group}' in zookeeper.\n")
            return 0
        topics = args.topic or sorted({tp.topic for tp in committed})
        tps = [TopicPartition(t, p) for t in topics for p in zk.get_partitions_for_topic(t)]
        plan = _target(args, committed, asyncio.run(_zk_log_ends(args.zookeeper, tps)))
        if args.execute:
            for tp, offset in plan.items():
                zk.commit_consumer_offset(group, ZkTopicPartition(*tp), offset)
        _print_plan(group, plan, out, args.execute)
        return 0
    finally:
        zk.close()


def _zk_offsets(zk: KafkaZkClient, group: str) -> dict[TopicPartition, int]:
    out = {}
    for topic in zk.get_children(ConsumerGroupZNodes.offsets_path(group)) or []:
        for p in zk.get_children(ConsumerGroupZNodes.offsets_path(group, topic)) or []:
            if p.isdigit():
                offset = zk.get_consumer_offset(group, ZkTopicPartition(topic, int(p)))
                if offset is not None:
                    out[TopicPartition(topic, int(p))] = offset
    return out


def _zk_owners(zk: KafkaZkClient, group: str) -> dict[TopicPartition, str]:
    out = {}
    for topic in zk.get_children(ConsumerGroupZNodes.owners_path(group)) or []:
        for p in zk.get_children(ConsumerGroupZNodes.owners_path(group, topic)) or []:
            if p.isdigit():
                owner = zk.get_partition_owner(group, ZkTopicPartition(topic, int(p)))
                if owner is not None:
                    out[TopicPartition(topic, int(p))] = owner
    return out


async def _zk_log_ends(
    zookeeper: str, tps: Sequence[TopicPartition]
) -> dict[TopicPartition, tuple[int, int]]:
    async with AdminClient(zookeeper_connect=zookeeper) as admin:
        return await _log_ends(admin, tps)
