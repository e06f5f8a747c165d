"""`zkafka reassign-partitions`: move partition replicas between brokers, with kafka-reassign-partitions'
flags and JSON formats.

    zkafka reassign-partitions --zookeeper Z --generate --topics-to-move-json-file topics.json \\
        --broker-list 1,2,3
    zkafka reassign-partitions --zookeeper Z --execute --reassignment-json-file plan.json [--wait]
    zkafka reassign-partitions --zookeeper Z --verify --reassignment-json-file plan.json

* `--generate` prints the current assignment of the topics and a proposal spreading them over
  `--broker-list` with Kafka's placement (`zkafka.admin.placement`, rack-aware when the brokers
  have racks). It changes nothing. Works with `--zookeeper` and `--bootstrap-server`.
* `--execute` writes `/admin/reassign_partitions` (the legacy ZooKeeper path: the controller reacts to
  its creation, moves the replicas, rewrites the znode as partitions complete and deletes it at the
  end). It refuses while that znode exists. `--wait` then shows the progress per partition until the
  controller has deleted the znode.
* `--verify` reports each partition of the plan as completed, still in progress, or failed (replicas
  differ from the plan and nothing is moving) and exits 1 unless all are completed.
* `--throttle B/S` (with `--execute`) limits replication of the moving replicas to B/S bytes/s as
  Kafka does (KIP-73: `leader/follower.replication.throttled.rate` on the brokers taking part,
  `leader/follower.replication.throttled.replicas` on the topics; `zkafka.admin.throttles`);
  `--verify` removes them from every broker and the plan's topics once all is done.

With `--bootstrap-server` (Kafka's way since 2.4, KIP-455) the plan goes to the controller through
AlterPartitionReassignments and the progress comes from ListPartitionReassignments plus Metadata:
`--execute` refuses while other reassignments run unless `--additional` is given, `--verify` reports
as above, and `--cancel` reverts the plan's partitions that are still moving to their original
replicas. `--zookeeper` has no `--cancel` (the legacy znode cannot cancel).

JSON formats (Kafka's): topics to move `{"version":1,"topics":[{"topic":"foo"}]}`; a plan
`{"version":1,"partitions":[{"topic":"foo","partition":0,"replicas":[1,2],"log_dirs":["any","any"]}]}`
(`log_dirs` optional; zkafka cannot place replicas on particular log dirs, so only "any" is accepted).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Container, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from zkafka.admin.reassignment import (
    PartitionProgress,
    Plan,
    PlanError,
    Status,
    format_plan,
    parse_broker_list,
    parse_reassignment_plan,
    parse_topics_to_move,
    partition_progress,
    propose_assignment,
)
from zkafka.admin.throttles import ConfigChanges, clear_throttles, set_throttles, zk_config_changes
from zkafka.cli.errors import CliError
from zkafka.cli.target import add_command_config_arg, add_target_args, client_security, open_zookeeper
from zkafka.zk.client import KafkaZkClient
from zkafka.zk.errors import AdminOperationInProgressError
from zkafka.zk.model import ConfigType, TopicPartition

if TYPE_CHECKING:
    from zkafka.client.security import ClientSecurity

__all__ = ["progress_from_brokers", "register", "run"]

POLL_INTERVAL_S = 0.5
METADATA_GRACE_S = 5.0
"""--wait with --bootstrap-server: how long a finished reassignment may still look unfinished in
Metadata (the brokers learn the final replicas a moment after the controller is done)."""


def _topic_assignments_from_zk(
    zk: KafkaZkClient, topics: Sequence[str]
) -> dict[TopicPartition, tuple[int, ...]]:
    found = zk.get_topic_assignments(topics)
    missing = [t for t in topics if t not in found]
    if missing:
        raise CliError(f"topics not found: {', '.join(missing)}")
    out = {}
    for topic, assignment in found.items():
        for partition, replicas in assignment.partitions.items():
            # During a reassignment the znode lists target + original replicas: show the target.
            removing = set(assignment.removing_replicas.get(partition, ()))
            out[TopicPartition(topic, partition)] = tuple(r for r in replicas if r not in removing)
    return out


# -- the command -----------------------------------------------------------------------------------------


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "reassign-partitions",
        help="move partition replicas between brokers (like kafka-reassign-partitions)",
        description="Generate, execute and verify partition reassignments, with kafka-reassign-partitions' "
        "flags and JSON formats.",
    )
    add_target_args(p, zookeeper="the cluster's ZooKeeper")
    add_command_config_arg(p)
    action = p.add_mutually_exclusive_group(required=True)
    action.add_argument("--generate", action="store_true", help="propose an assignment (changes nothing)")
    action.add_argument("--execute", action="store_true", help="start the reassignment of a plan")
    action.add_argument("--verify", action="store_true", help="report the progress of a plan")
    action.add_argument(
        "--cancel", action="store_true", help="cancel the plan's reassignments (--bootstrap-server only)"
    )
    p.add_argument("--topics-to-move-json-file", type=Path, metavar="FILE", help="--generate: the topics")
    p.add_argument("--broker-list", metavar="1,2,3", help="--generate: the brokers to place replicas on")
    p.add_argument("--disable-rack-aware", action="store_true", help="--generate: ignore broker racks")
    p.add_argument("--reassignment-json-file", type=Path, metavar="FILE", help="--execute/--verify: the plan")
    p.add_argument("--wait", action="store_true", help="--execute: show progress until it is done")
    p.add_argument(
        "--additional",
        action="store_true",
        help="--execute with --bootstrap-server: start even though other reassignments are running",
    )
    p.add_argument(
        "--throttle",
        type=int,
        default=-1,
        metavar="B/S",
        help="--execute: limit replication between the brokers taking part to B/S bytes/s while the "
        "plan runs (--verify removes the limit once it has finished)",
    )
    p.add_argument(
        "--timeout", type=float, default=300.0, metavar="S", help="--wait: give up after S seconds (300)"
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        return _run(args)
    except PlanError as e:
        raise CliError(str(e)) from None


def _run(args: argparse.Namespace) -> int:
    _check_args(args)
    if args.generate:
        if args.topics_to_move_json_file is None or args.broker_list is None:
            raise CliError("--generate needs --topics-to-move-json-file and --broker-list")
        return _generate(args)
    action = "execute" if args.execute else "verify" if args.verify else "cancel"
    if args.reassignment_json_file is None:
        raise CliError(f"--{action} needs --reassignment-json-file")
    if args.wait and not args.execute:
        raise CliError("--wait is only valid with --execute")
    if args.additional and not args.execute:
        raise CliError("--additional is only valid with --execute")
    if args.timeout <= 0:
        raise CliError("--timeout must be positive")
    if args.throttle != -1 and (not args.execute or args.throttle <= 0):
        raise CliError("--throttle is only valid with --execute, as a positive number of bytes/s")
    if args.bootstrap_server is None and (args.cancel or args.additional):
        raise CliError(f"--{'cancel' if args.cancel else 'additional'} needs --bootstrap-server")
    plan = parse_reassignment_plan(_read(args.reassignment_json_file))
    if args.bootstrap_server is not None:
        return _run_via_brokers(args, plan)
    with open_zookeeper(args.zookeeper) as zk:
        if args.execute:
            return _execute(zk, plan, wait=args.wait, timeout_s=args.timeout, throttle=args.throttle)
        return _verify(zk, plan)


def _check_args(args: argparse.Namespace) -> None:
    if not args.generate:
        for flag in ("topics_to_move_json_file", "broker_list"):
            if getattr(args, flag) is not None:
                raise CliError(f"--{flag.replace('_', '-')} is only valid with --generate")
        if args.disable_rack_aware:
            raise CliError("--disable-rack-aware is only valid with --generate")
    elif args.reassignment_json_file is not None:
        raise CliError("--reassignment-json-file is not valid with --generate")


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError as e:
        raise CliError(f"cannot read {path}: {e.strerror or e}") from None


def _generate(args: argparse.Namespace) -> int:
    topics = parse_topics_to_move(_read(args.topics_to_move_json_file))
    wanted = parse_broker_list(args.broker_list)
    if args.zookeeper is not None:
        with open_zookeeper(args.zookeeper) as zk:
            current = _topic_assignments_from_zk(zk, topics)
            racks = {b.id: b.rack for b in zk.get_all_brokers()}
    else:
        current, racks = _from_brokers(args.bootstrap_server, topics, client_security(args.command_config))
    unknown = [b for b in wanted if b not in racks]
    if unknown:
        raise CliError(f"brokers {unknown} in --broker-list are not registered in the cluster")
    proposal = propose_assignment(
        current, {b: racks[b] for b in wanted}, rack_aware=not args.disable_rack_aware
    )
    print("Current partition replica assignment")
    print(format_plan(current))
    print()
    print("Proposed partition reassignment configuration")
    print(format_plan(proposal))
    return 0


def _from_brokers(
    bootstrap: str, topics: Sequence[str], security: ClientSecurity | None = None
) -> tuple[dict[TopicPartition, tuple[int, ...]], dict[int, str | None]]:
    from zkafka.cli.topics import client_errors
    from zkafka.client.sync import SyncAdminClient
    from zkafka.protocol import ErrorCode

    with client_errors(), SyncAdminClient(bootstrap, security=security) as admin:
        described = admin.describe_topics(topics)
        cluster = admin.describe_cluster()
    missing = [t for t in topics if t not in described or described[t].error != ErrorCode.NONE]
    if missing:
        raise CliError(f"topics not found: {', '.join(missing)}")
    current = {
        TopicPartition(t, p): tuple(m.replicas) for t in topics for p, m in described[t].partitions.items()
    }
    return current, {b.node_id: b.rack for b in cluster.brokers}


def _check_partitions_exist(plan: Plan, partitions: Mapping[str, Container[int]]) -> None:
    missing = sorted(
        f"{tp.topic}-{tp.partition}"
        for tp in plan
        if tp.topic not in partitions or tp.partition not in partitions[tp.topic]
    )
    if missing:
        raise CliError(f"The proposed assignment contains non-existent partitions: {', '.join(missing)}")


def _check_brokers_exist(plan: Plan, brokers: set[int]) -> None:
    unknown = sorted({b for replicas in plan.values() for b in replicas} - brokers)
    if unknown:
        raise CliError(f"The proposed assignment contains non-existent brokerIDs: {unknown}")


def _print_rollback_plan(current: Plan) -> None:
    print("Current partition replica assignment")
    print()
    print(format_plan(current))
    print()
    print("Save this to use as the --reassignment-json-file option during rollback")


def _execute(zk: KafkaZkClient, plan: Plan, *, wait: bool, timeout_s: float, throttle: int = -1) -> int:
    assignments = zk.get_topic_assignments({tp.topic for tp in plan})
    _check_partitions_exist(plan, {t: a.partitions for t, a in assignments.items()})
    # Kafka's order: a running reassignment is reported before the plan's brokers are checked
    if zk.get_partition_reassignment() is not None:
        raise CliError(_in_progress_message())
    _check_brokers_exist(plan, set(zk.get_all_broker_ids()))
    current = {tp: tuple(assignments[tp.topic].replicas(tp.partition)) for tp in plan}
    _print_rollback_plan(current)
    if throttle > 0:
        _throttle(zk_config_changes(zk), current, plan, throttle)
    try:
        zk.create_partition_reassignment(plan)
    except AdminOperationInProgressError:
        raise CliError(_in_progress_message()) from None
    print(f"Successfully started partition reassignments for {_names(plan)}")
    if not wait:
        return 0
    return _wait(zk, plan, timeout_s)


def _in_progress_message() -> str:
    return (
        "There is an existing assignment running: /admin/reassign_partitions exists. Wait until the "
        "controller has finished it (check with --verify)."
    )


def _names(tps: Iterable[TopicPartition]) -> str:
    return ",".join(f"{tp.topic}-{tp.partition}" for tp in sorted(tps))


def _wait(zk: KafkaZkClient, plan: Plan, timeout_s: float) -> int:
    """Live table until the controller deleted /admin/reassign_partitions and no partition of the plan
    is moving; then the verify report."""

    def poll() -> tuple[list[PartitionProgress], bool]:
        progress = partition_progress(zk, plan)
        moving = any(p.status is Status.IN_PROGRESS for p in progress)
        return progress, not moving and zk.get_partition_reassignment() is None

    return _show_progress(poll, timeout_s)


def _show_progress(poll: Callable[[], tuple[list[PartitionProgress], bool]], timeout_s: float) -> int:
    """Live progress table, refreshed from `poll()` (progress, finished) until finished or the
    timeout; then the verify report."""
    from rich.live import Live

    from zkafka.cli.output import console as make_console

    console = make_console(stderr=True)  # progress on stderr; the report goes to stdout
    deadline = time.monotonic() + timeout_s
    progress, done = poll()
    with Live(_progress_table(progress), console=console, refresh_per_second=4, transient=False) as live:
        while not done:
            if time.monotonic() > deadline:
                live.update(_progress_table(progress))
                console.print(f"[red]reassignment not finished after {timeout_s:g} s[/red]")
                return 1
            time.sleep(POLL_INTERVAL_S)
            progress, done = poll()
            live.update(_progress_table(progress))
    return _report(progress)


def _progress_table(progress: Sequence[PartitionProgress]) -> Any:
    from rich.table import Table

    table = Table(title="Partition reassignment")
    for column in ("Partition", "Target", "Replicas", "Adding", "Removing", "Leader", "ISR", "Status"):
        table.add_column(column)
    colour = {Status.COMPLETED: "green", Status.IN_PROGRESS: "yellow", Status.FAILED: "red"}
    for p in progress:
        table.add_row(
            f"{p.tp.topic}-{p.tp.partition}",
            _ids(p.target),
            _ids(p.replicas),
            _ids(p.adding),
            _ids(p.removing),
            "none" if p.leader is None or p.leader < 0 else str(p.leader),
            _ids(p.isr),
            f"[{colour[p.status]}]{p.status.value}[/]",
        )
    return table


def _ids(ids: Sequence[int]) -> str:
    return ",".join(map(str, ids)) or "-"


def _throttle(alter: ConfigChanges, current: Plan, plan: Plan, rate: int) -> None:
    set_throttles(alter, current, plan, rate)
    print("Warning: You must run --verify periodically, until the reassignment completes, to ensure "
          "the throttle is removed.")  # fmt: skip
    print(f"The inter-broker throttle limit was set to {rate} B/s")


def _clear_throttles(alter: ConfigChanges, plan: Plan, brokers: Iterable[int]) -> None:
    """What kafka-reassign-partitions --verify does once everything is done: no throttle stays."""
    ids = sorted(brokers)
    clear_throttles(alter, sorted({tp.topic for tp in plan}), ids)
    print(f"Clearing broker-level throttles on brokers {','.join(map(str, ids))}")
    for topic in sorted({tp.topic for tp in plan}):
        print(f"Clearing topic-level throttles on topic {topic}")


def _verify(zk: KafkaZkClient, plan: Plan) -> int:
    code = _report(partition_progress(zk, plan))
    if code == 0 and zk.get_partition_reassignment() is None:
        _clear_throttles(zk_config_changes(zk), plan, zk.get_all_broker_ids())
    return code


def _report(progress: Sequence[PartitionProgress]) -> int:
    print("Status of partition reassignment:")
    for p in progress:
        name = f"{p.tp.topic}-{p.tp.partition}"
        if p.status is Status.COMPLETED:
            print(f"Reassignment of partition {name} is completed.")
        elif p.status is Status.IN_PROGRESS:
            print(f"Reassignment of partition {name} is still in progress.")
        else:
            print(
                f"Reassignment of partition {name} failed: replicas are {list(p.replicas)}, "
                f"the plan asks for {list(p.target)}."
            )
    return 0 if all(p.status is Status.COMPLETED for p in progress) else 1


# -- through the brokers (KIP-455 APIs) -----------------------------------------------------------------


def _run_via_brokers(args: argparse.Namespace, plan: Plan) -> int:
    from zkafka.cli.topics import client_errors
    from zkafka.client.sync import SyncAdminClient

    security = client_security(args.command_config)
    with client_errors(), SyncAdminClient(args.bootstrap_server, security=security) as admin:
        if args.execute:
            return _execute_via_brokers(
                admin, plan, additional=args.additional, wait=args.wait, timeout_s=args.timeout,
                throttle=args.throttle,
            )  # fmt: skip
        if args.cancel:
            return _cancel_via_brokers(admin, plan)
        code = _report(progress_from_brokers(admin, plan))
        if code == 0 and not admin.list_partition_reassignments(list(plan)):
            brokers = [b.node_id for b in admin.describe_cluster().brokers]
            _clear_throttles(_admin_config_changes(admin), plan, brokers)
        return code


def _admin_config_changes(admin: Any) -> ConfigChanges:
    """`ConfigChanges` through the brokers (IncrementalAlterConfigs)."""
    from zkafka.client.admin import ConfigResource

    def alter(config_type: ConfigType, name: str, changes: Mapping[str, str | None]) -> None:
        resource = (
            ConfigResource.topic(name) if config_type is ConfigType.TOPIC else ConfigResource.broker(name)
        )
        admin.alter_configs(resource, changes)

    return alter


def _failures(results: Mapping[Any, Any]) -> list[str]:
    return [
        f"  {tp.topic}-{tp.partition}: {e.code.name}: {e.message}"
        for tp, e in sorted(results.items())
        if e is not None
    ]


def _execute_via_brokers(
    admin: Any, plan: Plan, *, additional: bool, wait: bool, timeout_s: float, throttle: int = -1
) -> int:
    described = admin.describe_topics(None)
    _check_partitions_exist(plan, {t: d.partitions for t, d in described.items()})
    if admin.list_partition_reassignments() and not additional:
        raise CliError(
            "Cannot execute because there is an existing partition assignment. Use --additional to "
            "override this and create a new partition assignment in addition to the existing one."
        )
    _check_brokers_exist(plan, {b.node_id for b in admin.describe_cluster().brokers})
    current = {tp: tuple(described[tp.topic].partitions[tp.partition].replicas) for tp in plan}
    _print_rollback_plan(current)
    if throttle > 0:
        _throttle(_admin_config_changes(admin), current, plan, throttle)
    targets = dict(zip(list(plan), plan.values(), strict=True))
    errors = _failures(admin.alter_partition_reassignments(targets))
    if errors:
        raise CliError("Error reassigning partition(s):\n" + "\n".join(errors))
    print(f"Successfully started partition reassignments for {_names(plan)}")
    if not wait:
        return 0
    settled_since: list[float] = []

    def poll() -> tuple[list[PartitionProgress], bool]:
        progress = progress_from_brokers(admin, plan)
        if any(p.status is Status.IN_PROGRESS for p in progress):
            settled_since.clear()
            return progress, False
        if all(p.status is Status.COMPLETED for p in progress):
            return progress, True
        # Nothing moves any more, but this broker's metadata may not show the final replicas yet.
        settled_since[:] = settled_since or [time.monotonic()]
        return progress, time.monotonic() - settled_since[0] > METADATA_GRACE_S

    return _show_progress(poll, timeout_s)


def _cancel_via_brokers(admin: Any, plan: Plan) -> int:
    ongoing = admin.list_partition_reassignments(list(plan))
    if ongoing:
        errors = _failures(admin.alter_partition_reassignments(dict.fromkeys(ongoing)))
        if errors:
            raise CliError("Error cancelling partition reassignment(s):\n" + "\n".join(errors))
    cancelled = list(ongoing)
    if cancelled:
        print(f"Successfully cancelled partition reassignments for: {_names(cancelled)}")
    else:
        print("None of the specified partition reassignments are active.")
    return 0


def progress_from_brokers(
    admin: Any, plan: Mapping[TopicPartition, Sequence[int]]
) -> list[PartitionProgress]:
    """`partition_progress` from the brokers: ListPartitionReassignments names the partitions in
    progress, Metadata their replicas, leader and ISR."""
    ongoing = admin.list_partition_reassignments(list(plan))
    described = admin.describe_topics(None)
    out = []
    for tp in sorted(plan):
        target = tuple(plan[tp])
        topic = described.get(tp.topic)
        meta = topic.partitions.get(tp.partition) if topic is not None else None
        moving = ongoing.get(tp)
        if moving is not None:
            replicas, adding, removing = moving.replicas, moving.adding_replicas, moving.removing_replicas
            status = Status.IN_PROGRESS
        else:
            replicas = tuple(meta.replicas) if meta is not None else ()
            adding = removing = ()
            status = Status.COMPLETED if replicas == target else Status.FAILED
        out.append(
            PartitionProgress(
                tp,
                target,
                tuple(replicas),
                tuple(adding),
                tuple(removing),
                meta.leader if meta is not None else None,
                tuple(meta.isr) if meta is not None else (),
                status,
            )
        )
    return out
