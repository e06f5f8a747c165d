"""`zkafka chaos`: fault injection against a local cluster, with a verdict.

    zkafka cluster up --brokers 3 --zookeepers 3
    zkafka chaos --dir .zkafka/cluster --duration 120 --faults kill,pause,controller,zk-kill

Runs idempotent acks=all producers and a consumer on a new topic while the faults are applied in
turn (`zkafka.chaos.nemesis`), then reads the topic back and checks it (`zkafka.chaos.checker`).
Prints the faults applied and a verdict table, and the history of every anomaly; exits 0 on a clean
verdict, 1 on any anomaly the configuration does not allow.

`--faults partition` needs a cluster started with `zkafka cluster up --netns`, `disk-full` one
started with `--log-dir-size` (both Linux, as root). `--acks 1` and `--unclean-leader-election`
run a deliberately weak configuration: the checker then counts the losses it allows as expected
(shown, not failing the verdict); `--faults unclean` kills a partition's whole ISR and brings an
out-of-sync replica back first. Only local clusters (`--dir`) for now.
"""

from __future__ import annotations

import argparse
import asyncio
from typing import TYPE_CHECKING

from zkafka.cli.errors import CliError
from zkafka.cli.output import console, print_table, quiet_libraries
from zkafka.cli.target import DEFAULT_CLUSTER_DIR, load_local_cluster

if TYPE_CHECKING:
    from zkafka.chaos.run import ChaosResult
    from zkafka.local.launcher import LocalCluster


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("chaos", help="inject faults into a local cluster under load and check the result")
    p.add_argument(
        "--dir", "--cluster-dir", dest="dir", default=DEFAULT_CLUSTER_DIR, help="the cluster's directory"
    )
    p.add_argument(
        "--duration",
        type=float,
        default=60.0,
        help="seconds of load and faults (default 60; longer if needed to apply every fault once)",
    )
    p.add_argument(
        "--faults",
        default="kill,pause",
        help="comma-separated, applied in turn: kill, pause, controller, zk-kill, partition, "
        "disk-full, unclean (default kill,pause)",
    )
    p.add_argument("--interval", type=float, default=10.0, help="seconds between faults (default 10)")
    p.add_argument("--producers", type=int, default=2, help="producers (default 2)")
    p.add_argument("--rate", type=float, default=200.0, help="records/s per producer (default 200)")
    p.add_argument("--seed", type=int, default=None, help="seed of the random targets")
    p.add_argument(
        "--group-consumers", type=int, default=2, help="members of the run's consumer group (default 2)"
    )
    p.add_argument(
        "--acks",
        choices=("all", "1"),
        default="all",
        help="the producers' acks: all (idempotent, default) or 1 (no idempotence: losses expected)",
    )
    p.add_argument(
        "--unclean-leader-election",
        action="store_true",
        help="the topic allows unclean leader election (losses expected)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from zkafka.chaos.nemesis import NemesisError
    from zkafka.chaos.run import run_chaos

    quiet_libraries()
    if args.duration <= 0 or args.interval <= 0 or args.producers < 1 or args.rate <= 0:
        raise CliError("--duration, --interval, --producers and --rate must be positive")
    if args.group_consumers < 0:
        raise CliError("--group-consumers must be 0 or more")
    cluster = load_local_cluster(Path(args.dir))
    if not all(cluster.broker_alive(b) for b in cluster.brokers):
        raise CliError(f"not every broker of the cluster in {args.dir} runs (`zkafka cluster status`)")
    faults = [f.strip() for f in args.faults.split(",") if f.strip()]
    err = console(stderr=True)
    try:
        result = asyncio.run(
            run_chaos(
                cluster,
                duration=args.duration,
                faults=faults,
                interval=args.interval,
                producers=args.producers,
                rate=args.rate,
                seed=args.seed,
                session_timeout_s=_session_timeout_s(cluster),
                group_consumers=args.group_consumers,
                acks=args.acks,
                unclean=args.unclean_leader_election,
                progress=lambda m: err.print(f"[green]✓[/green] {m}"),
            )
        )
    except NemesisError as e:
        raise CliError(str(e)) from None
    return _report(result)


def _session_timeout_s(cluster: LocalCluster) -> float:
    """The brokers' zookeeper.session.timeout.ms (a pause must outlast it), Kafka's 18 s if unset."""
    from zkafka.config.properties import load_properties

    timeouts = []
    for broker in cluster.brokers.values():
        try:
            timeouts.append(
                int(load_properties(broker.config_path).get("zookeeper.session.timeout.ms", 18000))
            )
        except (OSError, ValueError):
            timeouts.append(18000)
    return max(timeouts, default=18000) / 1000


def _report(result: ChaosResult) -> int:
    from rich.table import Table

    out = console()
    faults = Table(title="Faults", title_justify="left")
    for column in ("Fault", "Target", "From s", "To s"):
        faults.add_column(column)
    for e in result.faults:
        faults.add_row(e.fault, e.target, f"{e.started:.1f}", f"{e.ended:.1f}")
    print_table(out, faults)
    v = result.verdict
    out.print(
        f"topic {result.topic}: {result.sent} sent, {v.acknowledged} acknowledged, {v.in_log} in the log, "
        f"{v.consumed} consumed, {v.commits} group commits, {len(result.errors)} delivery errors"
    )
    table = Table(title="Verdict", title_justify="left")
    table.add_column("Check")
    table.add_column("Anomalies", justify="right")
    table.add_column("Allowed here")
    for kind, count in v.counts().items():
        allowed = "expected" if kind in v.expected else ""
        table.add_row(kind, f"[red]{count}[/red]" if count and not allowed else str(count), allowed)
    print_table(out, table)
    for a in v.anomalies:
        note = " (expected)" if a.kind in v.expected else ""
        out.print(f"{a.kind}{note} (partition {a.partition}): {a.detail}", markup=False, highlight=False)
    allowed_found = sum(n for kind, n in v.totals.items() if kind in v.expected)
    if not v.ok:
        out.print("verdict: ANOMALIES")
    elif allowed_found:
        out.print(f"verdict: clean, with {allowed_found} expected anomalies under this configuration")
    else:
        out.print("verdict: clean")
    return 0 if v.ok else 1
