"""`zkafka doctor`: check a whole cluster from its ZooKeeper tree (`zkafka.doctor`).

    zkafka doctor --zookeeper 127.0.0.1:2181            # a table of findings, worst first
    zkafka doctor --zookeeper 127.0.0.1:2181 --json     # the same as one JSON document
    zkafka doctor --zookeeper 127.0.0.1:2181 --fix      # then apply the safe fixes, after asking
    zkafka doctor --zookeeper Z --bootstrap-server B    # also what only the brokers know

With `--bootstrap-server` (given, or the local `cluster up` cluster's when its ZooKeeper is the one
checked) every live broker is also asked for its log dirs (offline, nearly full) and for the
settings that must agree across the cluster (DescribeConfigs; `zkafka.doctor.checks_broker_configs`
lists them), and the seeds' ZooKeeper consumers' offsets are held against their partitions' log
start and end.

Exit status as monitoring plugins use it: 0 healthy, 1 warnings only, 2 anything critical (after
`--fix`: of what is left), 3 when the cluster could not be checked at all.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from zkafka.cli.errors import CliError
from zkafka.cli.output import console, print_table
from zkafka.cli.target import (
    add_command_config_arg,
    add_target_args,
    client_security,
    local_cluster,
    open_zookeeper,
)
from zkafka.doctor import DoctorSettings, Finding, diagnose, exit_status
from zkafka.doctor.checks_broker_configs import CONFIG_KEYS, BrokerSetting
from zkafka.doctor.checks_brokers import BrokerFacts, LogDirFacts
from zkafka.doctor.repair import apply_repairs
from zkafka.doctor.view import ClusterView

if TYPE_CHECKING:
    from zkafka.client.sync import SyncAdminClient

UNKNOWN = 3
"""Monitoring plugins' "could not check" status."""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "doctor",
        help="check the cluster's ZooKeeper metadata and partitions; exit 0 healthy, 1 warnings, 2 critical",
    )
    add_target_args(p, bootstrap=None, zookeeper="ZooKeeper connect string, with the cluster's chroot")
    p.add_argument(
        "--bootstrap-server",
        metavar="HOST:PORT[,...]",
        help="also ask the brokers: log dirs offline or nearly full, configs that disagree on "
        "cluster-wide settings, ZooKeeper consumers' offsets outside the log (default: the local "
        "cluster's brokers when checking its ZooKeeper)",
    )
    add_command_config_arg(p)
    p.add_argument("--json", action="store_true", help="print the findings as one JSON document")
    p.add_argument("--fix", action="store_true", help="apply the safe fixes after confirmation")
    p.add_argument("--yes", action="store_true", help="with --fix: do not ask")
    p.add_argument(
        "--stale-minutes",
        type=float,
        default=DoctorSettings.stale_request_minutes,
        help="admin requests older than this are reported as stuck (default %(default)s)",
    )
    p.add_argument(
        "--min-insync-replicas",
        type=int,
        default=DoctorSettings.min_insync_replicas,
        help="the brokers' min.insync.replicas, for topics without their own (default %(default)s; "
        "a cluster-wide dynamic value in /config/brokers/<default> wins)",
    )
    p.add_argument(
        "--leader-imbalance-per-broker-percentage",
        type=int,
        default=DoctorSettings.leader_imbalance_per_broker_percentage,
        help="the brokers' leader.imbalance.per.broker.percentage (default %(default)s)",
    )
    p.add_argument(
        "--disk-warning-percent",
        type=float,
        default=DoctorSettings.disk_warning_percent,
        help="a log dir's disk used at or above this is a warning (default %(default)s; 95 is critical)",
    )
    p.add_argument(
        "--cluster-partitions-warning",
        type=int,
        default=DoctorSettings.cluster_partitions_warning,
        help="more partitions than this in the cluster is a warning: ZooKeeper's heap, a new "
        "controller's load (default %(default)s)",
    )
    p.add_argument("--timeout", type=float, default=10.0, help="seconds to wait for ZooKeeper (default 10)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    settings = DoctorSettings(
        min_insync_replicas=args.min_insync_replicas,
        leader_imbalance_per_broker_percentage=args.leader_imbalance_per_broker_percentage,
        stale_request_minutes=args.stale_minutes,
        disk_warning_percent=args.disk_warning_percent,
        cluster_partitions_warning=args.cluster_partitions_warning,
    )
    ask = _broker_facts(args)
    try:
        with open_zookeeper(args.zookeeper, args.timeout) as zk:
            view, findings = diagnose(zk, settings, ask)
            if args.fix and any(f.repair for f in findings) and _confirmed(findings, args.yes):
                for finding, outcome in apply_repairs(zk, findings):
                    print(f"{finding.repair.description}: {outcome}", file=sys.stderr)  # type: ignore[union-attr]
                view, findings = diagnose(zk, settings, ask)
    except CliError as e:
        print(f"zkafka doctor: {e}", file=sys.stderr)
        return UNKNOWN
    summary = (
        f"{len(view.brokers)} broker(s), {len(view.topics)} topic(s), {len(view.states)} partition state(s)"
    )
    if args.json:
        json.dump(
            {
                "summary": summary,
                "status": exit_status(findings),
                "findings": [f.as_json() for f in findings],
            },
            sys.stdout,
            indent=2,
        )
        print()
    else:
        _print_table(summary, findings)
    return exit_status(findings)


def _print_table(summary: str, findings: list[Finding]) -> None:
    from rich.table import Table

    out = console()
    if not findings:
        out.print(f"healthy: {summary}, no findings")
        return
    table = Table(title=f"{len(findings)} finding(s) on {summary}")
    for column in ("SEVERITY", "CHECK", "SUBJECT", "MESSAGE", "FIX"):
        table.add_column(column, overflow="fold" if out.is_terminal else "ignore")
    for f in findings:
        fix = f.fix + (" [--fix: " + f.repair.description + "]" if f.repair else "")
        table.add_row(f.severity.label, f.check, f.subject, f.message, fix)
    print_table(out, table)


def _confirmed(findings: list[Finding], yes: bool) -> bool:
    repairs = [f.repair for f in findings if f.repair is not None]
    for r in repairs:
        print(f"would {r.description}", file=sys.stderr)
    if yes:
        return True
    if not sys.stdin.isatty():
        print(
            "zkafka doctor: not applying fixes without a terminal to confirm on; pass --yes", file=sys.stderr
        )
        return False
    answer = input(f"apply {len(repairs)} fix(es)? [y/N] ")
    return answer.strip().lower() in ("y", "yes")


def _bootstrap(args: argparse.Namespace) -> str | None:
    if args.bootstrap_server:
        return args.bootstrap_server
    try:  # the local cluster's brokers, when it is its ZooKeeper being checked
        local = local_cluster(args.cluster_dir)
    except CliError:
        return None
    return local.bootstrap_servers or None if local.zookeeper_connect == args.zookeeper else None


def _broker_facts(args: argparse.Namespace) -> Callable[[ClusterView], BrokerFacts] | None:
    bootstrap = _bootstrap(args)
    if bootstrap is None:
        return None
    security = client_security(args.command_config)

    def ask(view: ClusterView) -> BrokerFacts:
        from zkafka.client.sync import SyncAdminClient

        facts = BrokerFacts()
        with SyncAdminClient(
            bootstrap, security=security, request_timeout_ms=int(args.timeout * 1000)
        ) as admin:
            for broker in sorted(view.brokers):
                try:
                    dirs = admin.describe_log_dirs([broker])[broker]
                except Exception:  # one broker that does not answer is a finding, not the end of the run
                    facts.unreachable.append(broker)
                    continue
                facts.log_dirs[broker] = [
                    LogDirFacts(d.path, d.error_code, d.total_bytes, d.usable_bytes) for d in dirs
                ]
                _ask_configs(admin, broker, facts)
            wanted = {
                tp
                for g in view.zk_groups.values()
                for tp in g.offsets
                if tp.partition in getattr(view.topics.get(tp.topic), "partitions", {})
            }
            if wanted:
                try:
                    first = admin.list_offsets(dict.fromkeys(wanted, "earliest"))
                    last = admin.list_offsets(dict.fromkeys(wanted, "latest"))
                except Exception:  # offline partitions are already findings of their own
                    return facts
                facts.log_offsets = {
                    tp: (first[tp].offset, last[tp].offset)
                    for tp in wanted
                    if first.get(tp) is not None and last.get(tp) is not None
                }
        return facts

    return ask


def _ask_configs(admin: SyncAdminClient, broker: int, facts: BrokerFacts) -> None:
    """The broker's own view of the cluster-wide settings (only those keys: no secrets asked)."""
    from zkafka.client.admin import ConfigResource, ConfigSource

    resource = ConfigResource.broker(broker)
    try:
        entries = admin.describe_configs([resource], keys=list(CONFIG_KEYS))[resource]
    except Exception as e:  # e.g. no DescribeConfigs ACL: a finding, the other checks go on
        facts.configs_unavailable[broker] = str(e) or type(e).__name__
        return
    facts.configs[broker] = {
        name: BrokerSetting(
            value=None if e.is_sensitive else e.value,
            dynamic=not e.read_only,
            override=e.source == ConfigSource.DYNAMIC_BROKER_CONFIG,
            sensitive=e.is_sensitive,
        )
        for name, e in entries.items()
    }
