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

Kafka's other habits are accepted: `--topic t:0,2` for some partitions, `--all-groups`, the reset
scenarios --to-current, --shift-by, --to-datetime, --by-duration and --from-file (the CSV that
--export prints), --describe with --members or --state, and --delete-offsets (OffsetDelete).
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import IO

from zkafka.cli.errors import CliError
from zkafka.cli.target import add_command_config_arg, add_target_args, client_security
from zkafka.cli.topics import client_errors
from zkafka.client.admin import AdminClient
from zkafka.client.group_admin import GroupAdmin, GroupDescription
from zkafka.client.types import TopicPartition
from zkafka.zk.client import KafkaZkClient
from zkafka.zk.errors import ZkError
from zkafka.zk.model import TopicPartition as ZkTopicPartition
from zkafka.zk.znodes import ConsumerGroupZNodes

ACTIONS = ("list", "describe", "delete", "reset_offsets", "delete_offsets")
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
    add_target_args(p, bootstrap="groups of the brokers", zookeeper="groups of the ZooKeeper consumer")
    add_command_config_arg(p)
    actions = p.add_mutually_exclusive_group(required=True)
    actions.add_argument("--list", action="store_true", help="list every group")
    actions.add_argument("--describe", action="store_true", help="offsets, lag and owners of a group")
    actions.add_argument("--delete", action="store_true", help="delete an inactive group and its offsets")
    actions.add_argument("--reset-offsets", action="store_true", help="move an inactive group's offsets")
    actions.add_argument(
        "--delete-offsets", action="store_true", help="delete a group's offsets of the given topics (KIP-496)"
    )
    which = p.add_mutually_exclusive_group()
    which.add_argument("--group", metavar="GROUP", help="the group")
    which.add_argument(
        "--all-groups", action="store_true", help="every group (--describe, --delete, --reset-offsets)"
    )
    p.add_argument(
        "--topic",
        action="append",
        metavar="TOPIC[:P,P...]",
        help="topic, or some of its partitions (repeatable; --reset-offsets, --delete-offsets)",
    )
    p.add_argument(
        "--all-topics", action="store_true", help="--reset-offsets: every topic the group has offsets of"
    )
    view = p.add_mutually_exclusive_group()
    view.add_argument("--offsets", action="store_true", help="--describe: offsets and lag (default)")
    view.add_argument("--members", action="store_true", help="--describe: the members and their partitions")
    view.add_argument("--state", action="store_true", help="--describe: coordinator, strategy, state")
    to = p.add_mutually_exclusive_group()
    to.add_argument("--to-earliest", action="store_true", help="reset to the log start")
    to.add_argument("--to-latest", action="store_true", help="reset to the log end")
    to.add_argument("--to-current", action="store_true", help="reset to the committed offset")
    to.add_argument("--to-offset", type=int, metavar="N", help="reset to offset N (clamped to the log)")
    to.add_argument("--shift-by", type=int, metavar="N", help="move the committed offset by N (may be < 0)")
    to.add_argument(
        "--to-datetime", metavar="YYYY-MM-DDTHH:mm:SS.sss", help="the first offset at or after this time"
    )
    to.add_argument("--by-duration", metavar="PnDTnHnMnS", help="the first offset at or after now minus this")
    to.add_argument(
        "--from-file", metavar="CSV", help="offsets from a topic,partition,offset CSV (--export's)"
    )
    run = p.add_mutually_exclusive_group()
    run.add_argument("--execute", action="store_true", help="--reset-offsets: do it")
    run.add_argument("--dry-run", action="store_true", help="--reset-offsets: only show the plan (default)")
    p.add_argument("--export", action="store_true", help="--reset-offsets: print the plan as CSV")
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
    cells = [
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
    write_table([HEADER], cells, out)


SCENARIOS = (
    "to_earliest",
    "to_latest",
    "to_current",
    "to_offset",
    "shift_by",
    "to_datetime",
    "by_duration",
    "from_file",
)
_DURATION = re.compile(
    r"(?P<sign>[-+]?)P(?:(?P<d>\d+(?:\.\d+)?)D)?"
    r"(?:T(?:(?P<h>\d+(?:\.\d+)?)H)?(?:(?P<m>\d+(?:\.\d+)?)M)?(?:(?P<s>\d+(?:\.\d+)?)S)?)?",
    re.IGNORECASE,
)


def run_command(args: argparse.Namespace) -> int:
    action = next(a for a in ACTIONS if getattr(args, a))
    flag = f"--{action.replace('_', '-')}"
    if action != "list" and not (args.group or args.all_groups):
        raise CliError(f"{flag} needs --group or --all-groups")
    if action == "delete_offsets" and (args.all_groups or not args.topic):
        raise CliError("--delete-offsets needs --group and --topic")
    if action == "reset_offsets":
        if scenario(args) is None:
            raise CliError(
                "--reset-offsets needs one of --to-earliest, --to-latest, --to-current, --to-offset, "
                "--shift-by, --to-datetime, --by-duration or --from-file"
            )
        if not args.topic and not args.all_topics and not args.from_file:
            raise CliError("--reset-offsets needs --topic or --all-topics")
        if args.to_offset is not None and args.to_offset < 0:
            raise CliError("--to-offset must be >= 0")
    topic_specs(args.topic or [])  # refuse a bad TOPIC:P,P before anything is sent
    with client_errors():
        if args.zookeeper:
            if action == "delete_offsets" or args.all_groups:
                raise CliError("--delete-offsets and --all-groups need --bootstrap-server")
            return _zookeeper(args, action, sys.stdout)
        return asyncio.run(_brokers(args, action, sys.stdout))


def scenario(args: argparse.Namespace) -> str | None:
    return next((name for name in SCENARIOS if getattr(args, name) not in (None, False)), None)


def topic_specs(values: Iterable[str]) -> dict[str, frozenset[int] | None]:
    """`--topic t` (every partition) and `--topic t:0,2` (some), as kafka-consumer-groups takes them."""
    out: dict[str, frozenset[int] | None] = {}
    for value in values:
        topic, sep, parts = value.partition(":")
        if not topic:
            raise CliError(f"--topic {value!r}: no topic name")
        if not sep:
            out[topic] = None
            continue
        try:
            wanted = frozenset(int(p) for p in parts.split(",") if p.strip())
        except ValueError:
            raise CliError(f"--topic {value!r}: partitions must be numbers, as in {topic}:0,1") from None
        if not wanted or min(wanted) < 0:
            raise CliError(f"--topic {value!r}: give one or more partition numbers >= 0")
        known = out.get(topic, frozenset())
        out[topic] = None if known is None else known | wanted
    return out


def parse_duration_ms(text: str) -> int:
    """An ISO-8601 duration as Java's Duration.parse reads it (PnDTnHnMn.nS), in milliseconds."""
    m = _DURATION.fullmatch(text.strip())
    if m is None or not any(m.group(k) for k in ("d", "h", "m", "s")):
        raise CliError(f"--by-duration {text!r} is not an ISO-8601 duration such as P1DT2H30M or PT15M")
    units = (("d", 86400), ("h", 3600), ("m", 60), ("s", 1))
    seconds = sum(float(m.group(k) or 0) * unit for k, unit in units)
    return int(seconds * 1000) * (-1 if m.group("sign") == "-" else 1)


def parse_datetime_ms(text: str) -> int:
    """Kafka's --to-datetime: YYYY-MM-DDTHH:mm:SS.sss, local time unless a zone is given."""
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise CliError(f"--to-datetime {text!r} is not a date like 2024-05-01T12:00:00.000") from None
    return int(moment.timestamp() * 1000)


def read_offsets_file(path: str) -> dict[TopicPartition, int]:
    """topic,partition,offset lines (what --export writes); an optional leading group column is
    ignored, as are blank lines."""
    try:
        lines = Path(path).read_text().splitlines()
    except OSError as e:
        raise CliError(f"--from-file {path}: {e.strerror}") from None
    out = {}
    for number, line in enumerate(lines, 1):
        cells = [c.strip() for c in line.split(",")]
        if not line.strip():
            continue
        if len(cells) not in (3, 4):
            raise CliError(f"{path}:{number}: expected topic,partition,offset, got {line!r}")
        topic, partition, offset = cells[-3:]
        if not (partition.isdigit() and offset.lstrip("-").isdigit()):
            raise CliError(f"{path}:{number}: partition and offset must be numbers, got {line!r}")
        out[TopicPartition(topic, int(partition))] = int(offset)
    return out


def _target(
    args: argparse.Namespace,
    current: Mapping[TopicPartition, int],
    ends: Mapping[TopicPartition, tuple[int, int]],
    by_time: Mapping[TopicPartition, int | None] | None = None,
) -> dict[TopicPartition, int]:
    """The new offset of every partition, clamped into [log start, log end] as Kafka does."""
    from_file = read_offsets_file(args.from_file) if args.from_file else {}
    out = {}
    for tp, (start, end) in ends.items():
        if args.to_earliest:
            wanted = start
        elif args.to_latest:
            wanted = end
        elif args.to_current:
            wanted = current.get(tp, end)  # no commit yet: the log end, as Kafka's tool
        elif args.shift_by is not None:
            if tp not in current:
                raise CliError(f"cannot shift the offset of {tp}: the group has no committed offset")
            wanted = current[tp] + args.shift_by
        elif args.from_file:
            if tp not in from_file:
                continue
            wanted = from_file[tp]
        elif by_time is not None:
            found = by_time.get(tp)
            wanted = end if found is None else found  # nothing that recent: the log end
        else:
            wanted = args.to_offset
        out[tp] = min(max(wanted, start), end)
    return out


def _timestamp(args: argparse.Namespace) -> int | None:
    if args.to_datetime:
        return parse_datetime_ms(args.to_datetime)
    if args.by_duration:
        return int(time.time() * 1000) - parse_duration_ms(args.by_duration)
    return None


def _selected(
    specs: Mapping[str, frozenset[int] | None], partitions: Iterable[TopicPartition]
) -> list[TopicPartition]:
    out = []
    for tp in partitions:
        wanted = specs.get(tp.topic, frozenset())
        if wanted is None or tp.partition in wanted:
            out.append(tp)
    return out


def _report_plan(
    group: str, plan: Mapping[TopicPartition, int], args: argparse.Namespace, out: IO[str]
) -> None:
    """The plan as a table, or with --export as topic,partition,offset lines (--from-file's input)."""
    if args.export:
        for tp, offset in sorted(plan.items()):
            out.write(f"{tp.topic},{tp.partition},{offset}\n")
    else:
        _print_plan(group, plan, out, args.execute)


def _print_plan(group: str, plan: Mapping[TopicPartition, int], out: IO[str], executed: bool) -> None:
    rows = [(group, tp.topic, str(tp.partition), str(o)) for tp, o in sorted(plan.items())]
    write_table([("GROUP", "TOPIC", "PARTITION", "NEW-OFFSET")], rows, out)
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
    security = client_security(args.command_config)
    async with (
        GroupAdmin(args.bootstrap_server, security=security) as groups,
        AdminClient(args.bootstrap_server, security=security) as admin,
    ):
        if action == "list":
            for group, _ in await groups.list_groups():
                out.write(group + "\n")
            return 0
        names = [g for g, _ in await groups.list_groups()] if args.all_groups else [args.group]
        if action == "delete_offsets":
            return await _delete_offsets(groups, admin, args, out)
        for group in sorted(names):
            description = await groups.describe_group(group)
            if action == "describe":
                await _describe(groups, admin, args, description, out)
                continue
            if description.state not in ("Empty", "Dead"):
                raise CliError(
                    f"the group '{group}' still has active members (state {description.state}); "
                    "stop its consumers first"
                )
            if action == "delete":
                await groups.delete_group(group)
                out.write(f"Deletion of requested consumer groups ('{group}') was successful.\n")
                continue
            committed = await groups.committed_offsets(group)
            specs = topic_specs(args.topic or [])
            if args.from_file:
                specs = {tp.topic: None for tp in read_offsets_file(args.from_file)}
            elif not specs:  # --all-topics: what the group has offsets of
                specs = {tp.topic: None for tp in committed}
            tps = _selected(specs, await _topic_partitions(admin, specs))
            ends, by_time = await _ends_and_times(admin, tps, _timestamp(args))
            plan = _target(args, committed, ends, by_time)
            if args.execute:
                await groups.commit_offsets(group, plan)
            _report_plan(group, plan, args, out)
        return 0


async def _describe(
    groups: GroupAdmin,
    admin: AdminClient,
    args: argparse.Namespace,
    description: GroupDescription,
    out: IO[str],
) -> None:
    group = description.group_id
    committed = await groups.committed_offsets(group)
    if description.state == "Dead" and not committed:
        raise CliError(f"Consumer group '{group}' does not exist.")
    if description.state in ("Empty", "Dead"):
        out.write(f"\nConsumer group '{group}' has no active members.\n")
    elif description.state != "Stable":
        out.write(f"\nWarning: consumer group '{group}' is rebalancing.\n")
    if args.state:
        coordinator = await groups.coordinator(group)
        write_table(
            [("GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS")],
            [
                (
                    group,
                    f"({coordinator})",
                    description.protocol or "-",
                    description.state,
                    str(len(description.members)),
                )
            ],
            out,
        )
        return
    if args.members:
        write_table(
            [("GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS")],
            [
                (group, m.member_id, m.host, m.client_id, str(sum(len(ps) for ps in m.assignment.values())))
                for m in description.members
            ],
            out,
        )
        return
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
    print_table(group, rows, out)


async def _delete_offsets(
    groups: GroupAdmin, admin: AdminClient, args: argparse.Namespace, out: IO[str]
) -> int:
    specs = topic_specs(args.topic)
    tps = _selected(specs, await _topic_partitions(admin, specs))
    results = await groups.delete_offsets(args.group, tps)
    rows = [
        (tp.topic, str(tp.partition), "Successful" if error is None else f"Error: {error.code.message}")
        for tp, error in sorted(results.items())
    ]
    write_table([("TOPIC", "PARTITION", "STATUS")], rows, out)
    return 0 if all(e is None for e in results.values()) else 1


def write_table(header: Sequence[tuple[str, ...]], rows: Sequence[tuple[str, ...]], out: IO[str]) -> None:
    """Columns padded to their widest cell, never wrapped (the output may be piped)."""
    table = list(header) + list(rows)
    widths = [max(len(line[i]) for line in table) for i in range(len(table[0]))]
    out.write("\n")
    for line in table:
        out.write(" ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip() + "\n")


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
            ends, _ = asyncio.run(_zk_log_ends(args.zookeeper, tps))
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
        specs = topic_specs(args.topic or [])
        if args.from_file:
            specs = {tp.topic: None for tp in read_offsets_file(args.from_file)}
        elif not specs:
            specs = {tp.topic: None for tp in committed}
        tps = _selected(
            specs, [TopicPartition(t, p) for t in sorted(specs) for p in zk.get_partitions_for_topic(t)]
        )
        ends, by_time = asyncio.run(_zk_log_ends(args.zookeeper, tps, _timestamp(args)))
        plan = _target(args, committed, ends, by_time)
        if args.execute:
            for tp, offset in plan.items():
                zk.commit_consumer_offset(group, ZkTopicPartition(*tp), offset)
        _report_plan(group, plan, args, out)
        return 0
    finally:
        zk.close()


def _zk_offsets(zk: KafkaZkClient, group: str) -> dict[TopicPartition, int]:
    return {TopicPartition(tp.topic, tp.partition): o for tp, o in zk.get_consumer_offsets(group).items()}


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
    zookeeper: str, tps: Sequence[TopicPartition], at: int | None = None
) -> tuple[dict[TopicPartition, tuple[int, int]], dict[TopicPartition, int | None] | None]:
    """(log start, log end) per partition, and with `at` the first offset at or after that time."""
    async with AdminClient(zookeeper_connect=zookeeper) as admin:
        return await _ends_and_times(admin, tps, at)


async def _ends_and_times(
    admin: AdminClient, tps: Iterable[TopicPartition], at: int | None
) -> tuple[dict[TopicPartition, tuple[int, int]], dict[TopicPartition, int | None] | None]:
    ends = await _log_ends(admin, tps)
    if at is None:
        return ends, None
    found = await admin.list_offsets(dict.fromkeys(ends, at))
    return ends, {tp: (None if r is None else r.offset) for tp, r in found.items()}
