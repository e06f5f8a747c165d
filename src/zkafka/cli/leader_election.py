"""`zkafka leader-election`: elect preferred (or unclean) leaders, with kafka-leader-election's flags.

    zkafka leader-election --bootstrap-server B --election-type preferred --all-topic-partitions
    zkafka leader-election --bootstrap-server B --election-type unclean --topic T --partition P
    zkafka leader-election --bootstrap-server B --election-type preferred --path-to-json-file parts.json
    zkafka leader-election --zookeeper Z --election-type preferred --all-topic-partitions

`--bootstrap-server` (kafka-leader-election's only connection flag) sends ElectLeaders to the
controller named in Metadata, which elects and answers per partition. As with Kafka,
`--all-topic-partitions` asks for "every partition" and the answer lists only the partitions that
needed an election, so a run with nothing to do prints nothing; named partitions whose leader is
already right are reported as "Valid replica already elected".

`--zookeeper` (preferred elections only) writes the partitions to `/admin/preferred_replica_election`
(the legacy ZooKeeper path); the controller reacts to its creation, elects each partition's first
assigned replica if it is alive and in the ISR, and deletes the znode. The command waits for that
deletion, then reads the partition state znodes.

Either way it prints, as kafka-leader-election does, which partitions got their new leader, which had
it already, and which could not get it (exit code 1 if any could not).

The JSON file is Kafka's: `{"partitions":[{"topic":"foo","partition":1},...]}`.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from zkafka.cli.errors import CliError
from zkafka.cli.target import add_command_config_arg, add_target_args, client_security, open_zookeeper
from zkafka.protocol import ErrorCode
from zkafka.zk.client import KafkaZkClient
from zkafka.zk.errors import AdminOperationInProgressError
from zkafka.zk.model import LeaderIsrAndControllerEpoch, TopicPartition

if TYPE_CHECKING:
    from zkafka.client.security import ClientSecurity

__all__ = ["ElectionOutcome", "classify", "parse_partitions_json", "register"]

ELECTION_TYPES = ("preferred", "unclean")
POLL_INTERVAL_S = 0.2
UNCLEAN_NEEDS_BROKERS = (
    "an unclean election needs the ElectLeaders API: use --bootstrap-server HOST:PORT[,...] "
    "(--zookeeper only triggers preferred elections)"
)


def parse_partitions_json(text: str) -> list[TopicPartition]:
    """`{"partitions":[{"topic":"foo","partition":1},...]}` -> partitions, in file order."""
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as e:
        raise CliError(f"the partitions file is not valid JSON: {e}") from None
    entries = obj.get("partitions") if isinstance(obj, dict) else None
    if not isinstance(entries, list):
        raise CliError('the partitions file must be an object with a "partitions" list')
    out: list[TopicPartition] = []
    for entry in entries:
        topic = entry.get("topic") if isinstance(entry, dict) else None
        partition = entry.get("partition") if isinstance(entry, dict) else None
        if not isinstance(topic, str) or not topic:
            raise CliError(f'every partition entry needs a "topic", got {entry!r}')
        if isinstance(partition, bool) or not isinstance(partition, int) or partition < 0:
            raise CliError(f'every partition entry needs a non-negative integer "partition", got {entry!r}')
        tp = TopicPartition(topic, partition)
        if tp in out:
            raise CliError(f"Replica election data contains duplicate partitions: {topic}-{partition}")
        out.append(tp)
    if not out:
        raise CliError("the partitions file lists no partitions")
    return out


@dataclass(frozen=True)
class ElectionOutcome:
    elected: list[TopicPartition]
    """Now led by their preferred replica, which was not the leader before."""
    already: list[TopicPartition]
    """Were led by their preferred replica already."""
    failed: dict[TopicPartition, str]
    """Why the preferred replica does not lead."""


def classify(
    partitions: Iterable[TopicPartition],
    replicas: Mapping[TopicPartition, Sequence[int]],
    before: Mapping[TopicPartition, LeaderIsrAndControllerEpoch],
    after: Mapping[TopicPartition, LeaderIsrAndControllerEpoch],
    live_brokers: set[int],
) -> ElectionOutcome:
    elected, already, failed = [], [], {}
    for tp in sorted(partitions):
        assigned = replicas.get(tp)
        if not assigned:
            failed[tp] = "UNKNOWN_TOPIC_OR_PARTITION: the partition does not exist"
            continue
        preferred = assigned[0]
        now = after.get(tp)
        was = before.get(tp)
        if now is not None and now.leader_and_isr.leader == preferred:
            if was is not None and was.leader_and_isr.leader == preferred:
                already.append(tp)
            else:
                elected.append(tp)
        elif preferred not in live_brokers:
            failed[tp] = f"PREFERRED_LEADER_NOT_AVAILABLE: preferred replica {preferred} is not alive"
        elif now is None or preferred not in now.leader_and_isr.isr:
            failed[tp] = f"PREFERRED_LEADER_NOT_AVAILABLE: preferred replica {preferred} is not in the ISR"
        else:
            failed[tp] = f"PREFERRED_LEADER_NOT_AVAILABLE: leader is still {now.leader_and_isr.leader}"
    return ElectionOutcome(elected, already, failed)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "leader-election",
        help="elect preferred or unclean leaders (like kafka-leader-election)",
        description="Move partition leadership to the preferred replicas (kafka-leader-election's flags).",
    )
    add_target_args(p, zookeeper="the cluster's ZooKeeper")
    add_command_config_arg(p)
    p.add_argument(
        "--election-type",
        required=True,
        type=str.lower,
        choices=ELECTION_TYPES,
        help="preferred, or unclean (with --bootstrap-server)",
    )
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--all-topic-partitions", action="store_true", help="every partition of every topic")
    which.add_argument("--path-to-json-file", type=Path, metavar="FILE", help="the partitions, as JSON")
    which.add_argument("--topic", metavar="TOPIC", help="one partition's topic (with --partition)")
    p.add_argument("--partition", type=int, metavar="P", help="one partition's id (with --topic)")
    p.add_argument(
        "--timeout",
        type=float,
        default=60.0,
        metavar="S",
        help="wait at most S seconds for the controller (60)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if (args.topic is None) != (args.partition is None):
        raise CliError("--topic and --partition must be given together")
    if args.partition is not None and args.partition < 0:
        raise CliError("--partition cannot be negative")
    if args.timeout <= 0:
        raise CliError("--timeout must be positive")
    if args.bootstrap_server is None and args.election_type != "preferred":
        raise CliError(UNCLEAN_NEEDS_BROKERS)
    requested = _requested(args)
    if args.bootstrap_server is not None:
        return _elect_via_brokers(
            args.bootstrap_server,
            args.election_type,
            requested,
            args.timeout,
            client_security(args.command_config),
        )
    with open_zookeeper(args.zookeeper) as zk:
        return _elect(zk, requested, args.timeout)


def _requested(args: argparse.Namespace) -> list[TopicPartition] | None:
    """None = all partitions."""
    if args.all_topic_partitions:
        return None
    if args.topic is not None:
        return [TopicPartition(args.topic, args.partition)]
    try:
        return parse_partitions_json(args.path_to_json_file.read_text())
    except OSError as e:
        raise CliError(f"cannot read {args.path_to_json_file}: {e.strerror or e}") from None


def _elect(zk: KafkaZkClient, requested: list[TopicPartition] | None, timeout_s: float) -> int:
    topics = zk.get_all_topics() if requested is None else sorted({tp.topic for tp in requested})
    assignments = zk.get_topic_assignments(topics)
    replicas = {
        TopicPartition(topic, p): tuple(r)
        for topic, assignment in assignments.items()
        for p, r in assignment.partitions.items()
    }
    partitions = sorted(replicas) if requested is None else requested
    known = [tp for tp in partitions if tp in replicas]
    before = zk.get_partition_states(known)
    if known:
        try:
            zk.create_preferred_replica_election(known)
        except AdminOperationInProgressError:
            raise CliError(
                "A preferred replica leader election is already in progress "
                "(/admin/preferred_replica_election exists); try again when the controller is done"
            ) from None
        deadline = time.monotonic() + timeout_s
        while zk.get_preferred_replica_election() is not None:
            if time.monotonic() > deadline:
                raise CliError(
                    "the controller did not process /admin/preferred_replica_election within "
                    f"{timeout_s:g} s (it stays pending until a controller handles it)"
                )
            time.sleep(POLL_INTERVAL_S)
    after = zk.get_partition_states(known)
    outcome = classify(partitions, replicas, before, after, set(zk.get_all_broker_ids()))
    if outcome.elected:
        print(f"Successfully completed leader election (PREFERRED) for partitions {_names(outcome.elected)}")
    if outcome.already:
        print(f"Valid replica already elected for partitions {_names(outcome.already)}")
    for tp, why in outcome.failed.items():
        print(f"Error completing leader election (PREFERRED) for partition: {tp.topic}-{tp.partition}: {why}")
    if outcome.failed:
        raise CliError(f"{len(outcome.failed)} replica(s) could not be elected")
    return 0


def _elect_via_brokers(
    bootstrap: str,
    election_type: str,
    requested: list[TopicPartition] | None,
    timeout_s: float,
    security: ClientSecurity | None = None,
) -> int:
    from zkafka.cli.topics import client_errors
    from zkafka.client.admin import ElectionType
    from zkafka.client.sync import SyncAdminClient

    kind = ElectionType[election_type.upper()]
    partitions = None if requested is None else list(requested)
    with (
        client_errors(),
        SyncAdminClient(bootstrap, request_timeout_ms=int(timeout_s * 1000), security=security) as admin,
    ):
        results = admin.elect_leaders(partitions, kind, timeout_ms=int(timeout_s * 1000))
    succeeded = sorted(tp for tp, e in results.items() if e is None)
    noop = sorted(
        tp for tp, e in results.items() if e is not None and e.code == ErrorCode.ELECTION_NOT_NEEDED
    )
    failed = {
        tp: e
        for tp, e in sorted(results.items())
        if e is not None and e.code != ErrorCode.ELECTION_NOT_NEEDED
    }
    if succeeded:
        print(f"Successfully completed leader election ({kind.name}) for partitions {_names(succeeded)}")
    if noop:
        print(f"Valid replica already elected for partitions {_names(noop)}")
    for tp, e in failed.items():
        print(
            f"Error completing leader election ({kind.name}) for partition: {tp.topic}-{tp.partition}: "
            f"{e.code.name}: {e.message}"
        )
    if failed:
        raise CliError(f"{len(failed)} replica(s) could not be elected")
    return 0


def _names(tps: Iterable[TopicPartition]) -> str:
    return ", ".join(f"{tp.topic}-{tp.partition}" for tp in tps)
