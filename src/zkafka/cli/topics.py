"""`zkafka topics`: create, list, describe, alter and delete topics, with kafka-topics' flags.

    zkafka topics --bootstrap-server 127.0.0.1:9092 --create --topic t --partitions 3 \\
        --replication-factor 2 --config cleanup.policy=compact
    zkafka topics --bootstrap-server 127.0.0.1:9092 --describe [--topic 'events.*'] [--table]
    zkafka topics --bootstrap-server 127.0.0.1:9092 --alter --topic t --partitions 6
    zkafka topics --bootstrap-server 127.0.0.1:9092 --alter --topic t --config retention.ms=1000
    zkafka topics --bootstrap-server 127.0.0.1:9092 --delete --topic t
    zkafka topics --zookeeper 127.0.0.1:2181 --create --topic t --partitions 3 --replication-factor 2
    zkafka topics --list                    # the `zkafka cluster up` cluster, see zkafka.cli.target

As in kafka-topics, `--topic` of --list/--describe/--alter/--delete is a regular expression
matched against whole topic names (a comma separates alternatives); --create takes the name
literally. Describe prints kafka-topics' lines by default, `--table` prints rich tables.
With `--zookeeper` every action reads and writes ZooKeeper directly, as kafka-topics.sh did before
Kafka 3 (`zkafka.cli.topics_zk`); --create then needs --partitions and --replication-factor (or
--replica-assignment), since there is no broker to supply defaults.

This module also holds `client_errors()`, which the other client-based commands use to turn
client and broker errors into one-line CLI errors.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, TypeAlias, TypeGuard

from zkafka.cli.errors import CliError
from zkafka.cli.target import add_command_config_arg, add_target_args, client_security, open_zookeeper
from zkafka.client.admin import ConfigEntry, NewTopic
from zkafka.client.cluster import NO_LEADER, TopicMetadata
from zkafka.client.config import parse_key_values
from zkafka.client.connection import ConnectionError_
from zkafka.client.errors import ClientError
from zkafka.client.sync import SyncAdminClient
from zkafka.protocol import ErrorCode, KafkaError

if TYPE_CHECKING:  # the ZooKeeper path (and the server's validation it uses) loads only when used
    from zkafka.cli.topics_zk import ZkTopicAdmin

    TopicAdmin: TypeAlias = SyncAdminClient | ZkTopicAdmin

ACTIONS = ("create", "list", "describe", "delete", "alter")


@contextmanager
def client_errors() -> Iterator[None]:
    """Client and broker failures as a one-line CliError."""
    try:
        yield
    except KafkaError as e:
        raise CliError(f"{e.code.name}: {e.message}") from None
    except (ClientError, ConnectionError_) as e:
        raise CliError(str(e)) from None
    except TimeoutError as e:
        raise CliError(f"timed out: {e}") from None


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "topics",
        help="create, list, describe, alter and delete topics (like kafka-topics)",
        description="Create, list, describe, alter and delete topics, with kafka-topics' flags.",
    )
    add_target_args(
        p, zookeeper="work on ZooKeeper directly, as kafka-topics --zookeeper did (no broker needed)"
    )
    add_command_config_arg(p)
    actions = p.add_mutually_exclusive_group(required=True)
    for action in ACTIONS:
        actions.add_argument(f"--{action}", action="store_true", help=f"{action} topics")
    p.add_argument("--topic", metavar="TOPIC", help="topic name (a regex for all actions but --create)")
    p.add_argument(
        "--partitions", type=int, metavar="N", help="partition count (create, or grow with --alter)"
    )
    p.add_argument("--replication-factor", type=int, metavar="R", help="replicas per partition (create)")
    p.add_argument(
        "--replica-assignment",
        metavar="B1:B2,B3:B4,...",
        help="manual replicas: partitions separated by ',', replica broker ids by ':'",
    )
    p.add_argument(
        "--config", action="append", metavar="KEY=VALUE", help="topic config override (repeatable)"
    )
    p.add_argument(
        "--delete-config", action="append", metavar="KEY", help="remove a topic override (--alter)"
    )
    p.add_argument("--if-not-exists", action="store_true", help="--create: do nothing if the topic exists")
    p.add_argument(
        "--if-exists", action="store_true", help="--alter/--delete/--describe: do nothing if absent"
    )
    p.add_argument(
        "--exclude-internal", action="store_true", help="leave internal topics out of --list/--describe"
    )
    p.add_argument(
        "--under-replicated-partitions",
        action="store_true",
        help="--describe: only partitions with ISR < replicas",
    )
    p.add_argument(
        "--unavailable-partitions", action="store_true", help="--describe: only partitions without leader"
    )
    p.add_argument(
        "--under-min-isr-partitions",
        action="store_true",
        help="--describe: only partitions whose ISR is below min.insync.replicas",
    )
    p.add_argument(
        "--at-min-isr-partitions",
        action="store_true",
        help="--describe: only partitions whose ISR is exactly min.insync.replicas",
    )
    p.add_argument(
        "--topics-with-overrides", action="store_true", help="--describe: only topics with config overrides"
    )
    p.add_argument(
        "--table", action="store_true", help="--describe: print rich tables instead of kafka-topics lines"
    )
    p.add_argument(
        "--timeout-ms", type=int, default=30_000, metavar="MS", help="admin request timeout (default 30000)"
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    action = next(a for a in ACTIONS if getattr(args, a))
    _check_args(action, args)
    handler = {
        "create": _create,
        "list": _list,
        "describe": _describe,
        "delete": _delete,
        "alter": _alter,
    }[action]
    if args.zookeeper is not None:
        from zkafka.cli.topics_zk import ZkTopicAdmin

        with open_zookeeper(args.zookeeper) as zk, client_errors():
            return handler(ZkTopicAdmin(zk), args)
    security = client_security(args.command_config)
    with (
        client_errors(),
        SyncAdminClient(
            args.bootstrap_server, request_timeout_ms=args.timeout_ms, security=security
        ) as admin,
    ):
        return handler(admin, args)


def _check_args(action: str, args: argparse.Namespace) -> None:
    if action in ("create", "alter", "delete") and not args.topic:
        raise CliError(f"--{action} requires --topic")
    if args.partitions is not None and action not in ("create", "alter"):
        raise CliError("--partitions is only valid with --create or --alter")
    if args.replication_factor is not None and action != "create":
        raise CliError("--replication-factor is only valid with --create")
    if args.config and action not in ("create", "alter"):
        raise CliError("--config is only valid with --create or --alter")
    if args.delete_config and action != "alter":
        raise CliError("--delete-config is only valid with --alter")
    if args.if_not_exists and action != "create":
        raise CliError("--if-not-exists is only valid with --create")
    if args.if_exists and action not in ("alter", "delete", "describe"):
        raise CliError("--if-exists is only valid with --alter, --delete or --describe")
    if args.replica_assignment and action not in ("create", "alter"):
        raise CliError("--replica-assignment is only valid with --create or --alter")
    if args.replica_assignment and action == "create" and (args.partitions or args.replication_factor):
        raise CliError("--replica-assignment replaces --partitions and --replication-factor")
    if action == "alter" and args.partitions is None and not args.config and not args.delete_config:
        raise CliError("--alter needs --partitions, --config or --delete-config")
    if action == "create" and args.zookeeper is not None and not args.replica_assignment:
        missing = [f for f in ("partitions", "replication_factor") if getattr(args, f) is None]
        if missing:
            raise CliError(
                f"--create with --zookeeper needs --{' and --'.join(m.replace('_', '-') for m in missing)} "
                "(or --replica-assignment): there is no broker to supply defaults"
            )


def parse_replica_assignment(text: str) -> dict[int, list[int]]:
    """``"1:2,2:3"`` -> {0: [1, 2], 1: [2, 3]} (kafka-topics' format)."""
    out: dict[int, list[int]] = {}
    for index, part in enumerate(text.split(",")):
        try:
            brokers = [int(b) for b in part.split(":")]
        except ValueError:
            raise CliError(f"bad --replica-assignment {text!r}: broker ids must be integers") from None
        if len(set(brokers)) != len(brokers):
            raise CliError(f"bad --replica-assignment: partition {index} lists a broker twice ({part})")
        if out and len(brokers) != len(out[0]):
            raise CliError("bad --replica-assignment: every partition needs the same number of replicas")
        out[index] = brokers
    return out


def _matching(admin: TopicAdmin, pattern: str | None, exclude_internal: bool) -> list[str]:
    topics = admin.list_topics(include_internal=not exclude_internal)
    if pattern is None:
        return topics
    try:
        regex = re.compile(pattern.replace(",", "|"))
    except re.error:
        return [t for t in topics if t == pattern]
    return [t for t in topics if regex.fullmatch(t)]


def _configs(args: argparse.Namespace) -> dict[str, str]:
    try:
        return parse_key_values(args.config, what="--config")
    except ClientError as e:
        raise CliError(str(e)) from None


def _create(admin: TopicAdmin, args: argparse.Namespace) -> int:
    name = args.topic
    if "." in name or "_" in name:
        print(
            "WARNING: Due to limitations in metric names, topics with a period ('.') or underscore ('_') "
            "could collide. To avoid issues it is best to use either, but not both.",
            file=sys.stderr,
        )
    assignment = parse_replica_assignment(args.replica_assignment) if args.replica_assignment else None
    try:
        topic = NewTopic(
            name,
            -1 if args.partitions is None or assignment else args.partitions,
            -1 if args.replication_factor is None or assignment else args.replication_factor,
            _configs(args),
            assignment,
        )
    except ClientError as e:
        raise CliError(str(e)) from None
    result = admin.create_topics([topic], timeout_ms=args.timeout_ms)[name]
    if result is not None:
        if result.code == ErrorCode.TOPIC_ALREADY_EXISTS and args.if_not_exists:
            return 0
        raise result
    print(f"Created topic {name}.")
    return 0


def _list(admin: TopicAdmin, args: argparse.Namespace) -> int:
    # kafka-topics --zookeeper shows deletions under way; brokers no longer list those topics
    marked = admin.marked_for_deletion() if _through_zookeeper(admin) else set()
    for name in _matching(admin, args.topic, args.exclude_internal):
        print(f"{name} - marked for deletion" if name in marked else name)
    return 0


def _through_zookeeper(admin: TopicAdmin) -> TypeGuard[ZkTopicAdmin]:
    return not isinstance(admin, SyncAdminClient)


def _existing(admin: TopicAdmin, args: argparse.Namespace) -> list[str]:
    names = _matching(admin, args.topic, args.exclude_internal)
    if not names and args.topic and not args.if_exists:
        raise CliError(f"Topic '{args.topic}' does not exist as expected")
    return names


def _delete(admin: TopicAdmin, args: argparse.Namespace) -> int:
    names = _existing(admin, args)
    internal = [n for n, t in admin.describe_topics(names).items() if t.is_internal] if names else []
    if internal:
        raise CliError(
            f"Topic {internal[0]} is a kafka internal topic and is not allowed to be marked for deletion."
        )
    if not names:
        return 0
    results = admin.delete_topics(names, timeout_ms=args.timeout_ms)
    failed = {
        n: e for n, e in results.items() if e is not None and e.code != ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    }
    if failed:
        name, error = next(iter(failed.items()))
        raise CliError(f"deleting {name}: {error.code.name}: {error.message}")
    if _through_zookeeper(admin):  # kafka-topics --zookeeper's lines
        for name in names:
            print(f"Topic {name} is marked for deletion.")
        print("Note: This will have no impact if delete.topic.enable is not set to true.")
    return 0


def _alter(admin: TopicAdmin, args: argparse.Namespace) -> int:
    from zkafka.client.admin import ConfigResource, NewPartitions

    names = _existing(admin, args)
    if not names:
        return 0
    if args.partitions is not None:
        assignments = None
        if args.replica_assignment:
            assignment = parse_replica_assignment(args.replica_assignment)
            assignments = [assignment[p] for p in sorted(assignment)]
        results = admin.create_partitions(
            {n: NewPartitions(args.partitions, assignments) for n in names}, timeout_ms=args.timeout_ms
        )
        for name, error in results.items():
            if error is not None:
                raise CliError(f"altering {name}: {error.code.name}: {error.message}")
        print("Adding partitions succeeded!")
    changes: dict[str, str | None] = dict(_configs(args))
    for key in args.delete_config or ():
        changes[key] = None
    if changes:
        for name in names:
            admin.alter_configs(ConfigResource.topic(name), changes)
            print(f"Completed updating config for topic {name}.")
    return 0


def _describe(admin: TopicAdmin, args: argparse.Namespace) -> int:
    names = _existing(admin, args)
    if not names:
        return 0
    topics = admin.describe_topics(names)
    from zkafka.client.admin import ConfigResource

    configs = admin.describe_configs([ConfigResource.topic(n) for n in names])
    overrides = {r.name: [e for e in entries.values() if e.is_override] for r, entries in configs.items()}
    min_isr = {r.name: _min_isr(entries) for r, entries in configs.items()}
    if args.topics_with_overrides:
        names = [n for n in names if overrides[n]]
        topics = {n: topics[n] for n in names}
    only_partitions = (
        args.under_replicated_partitions
        or args.unavailable_partitions
        or args.under_min_isr_partitions
        or args.at_min_isr_partitions
    )
    if args.table:
        _print_tables(topics, overrides, min_isr, args)
        return 0
    for name in names:
        topic = topics[name]
        if not only_partitions:
            print(
                f"Topic: {name}\tPartitionCount: {topic.partition_count}\t"
                f"ReplicationFactor: {topic.replication_factor}\tConfigs: {_config_text(overrides[name])}"
            )
        if args.topics_with_overrides:
            continue  # kafka-topics prints only the topic line
        for part in _selected_partitions(topic, args, min_isr[name]):
            line = (
                f"\tTopic: {name}\tPartition: {part.partition}\tLeader: {_leader(part.leader)}\t"
                f"Replicas: {_ids(part.replicas)}\tIsr: {_ids(part.isr)}"
            )
            if part.offline_replicas:
                line += f"\tOffline: {_ids(part.offline_replicas)}"
            print(line)
    return 0


def _selected_partitions(topic: TopicMetadata, args: argparse.Namespace, min_isr: int = 1) -> list:
    parts = [topic.partitions[p] for p in sorted(topic.partitions)]
    if args.under_replicated_partitions:
        parts = [p for p in parts if len(p.isr) < len(p.replicas)]
    if args.unavailable_partitions:
        parts = [p for p in parts if p.leader == NO_LEADER]
    if args.under_min_isr_partitions:
        parts = [p for p in parts if len(p.isr) < min_isr]
    if args.at_min_isr_partitions:
        parts = [p for p in parts if len(p.isr) == min_isr]
    return parts


def _min_isr(entries: Mapping[str, ConfigEntry]) -> int:
    """The topic's effective min.insync.replicas (1 if it cannot be read)."""
    entry = entries.get("min.insync.replicas")
    try:
        return int(entry.value) if entry is not None and entry.value is not None else 1
    except ValueError:
        return 1


def _config_text(entries: Sequence[ConfigEntry]) -> str:
    return ",".join(f"{e.name}={'<sensitive>' if e.is_sensitive else e.value}" for e in entries)


def _leader(leader: int) -> str:
    return "none" if leader == NO_LEADER else str(leader)


def _ids(ids: Sequence[int]) -> str:
    return ",".join(str(i) for i in ids)


def _print_tables(
    topics: dict[str, TopicMetadata],
    overrides: dict[str, list[ConfigEntry]],
    min_isr: Mapping[str, int],
    args: argparse.Namespace,
) -> None:
    from rich.table import Table

    from zkafka.cli.output import console

    out = console()
    table = Table()
    for column in ("Topic", "Partitions", "RF", "Partition", "Leader", "Replicas", "Isr"):
        table.add_column(
            column, justify="right" if column in ("Partitions", "RF", "Partition", "Leader") else "left"
        )
    for name, topic in topics.items():
        first = True
        for part in _selected_partitions(topic, args, min_isr.get(name, 1)):
            under = len(part.isr) < len(part.replicas)
            table.add_row(
                name if first else "",
                str(topic.partition_count) if first else "",
                str(topic.replication_factor) if first else "",
                str(part.partition),
                _leader(part.leader) if part.leader != NO_LEADER else "[red]none[/red]",
                _ids(part.replicas),
                f"[yellow]{_ids(part.isr)}[/yellow]" if under else _ids(part.isr),
                end_section=part.partition == max(topic.partitions),
            )
            first = False
    out.print(table)
    for name in topics:
        out.out(f"Configs of {name}: {_config_text(overrides[name]) or '(defaults)'}")
