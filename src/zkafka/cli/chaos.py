"""`zkafka chaos`: fault injection against a cluster under load, with a verdict.

    zkafka cluster up --brokers 3 --zookeepers 3
    zkafka chaos --dir .zkafka/cluster --duration 120 --faults kill,pause,controller,zk-kill
    zkafka chaos --bootstrap-server localhost:9092 --zookeeper localhost:2181 --faults kill,pause

Runs idempotent acks=all producers and a consumer on a new topic while the faults are applied in
turn (`zkafka.chaos.nemesis`), then reads the topic back and checks it (`zkafka.chaos.checker`).
Prints the faults applied and a verdict table, and the history of every anomaly; exits 0 on a clean
verdict, 1 on any anomaly the configuration does not allow.

`--faults partition` needs a cluster started with `zkafka cluster up --netns`, `disk-full` one
started with `--log-dir-size` (both Linux, as root). `--acks 1` and `--unclean-leader-election`
run a deliberately weak configuration: the checker then counts the losses it allows as expected
(shown, not failing the verdict); `--faults unclean` kills a partition's whole ISR and brings an
out-of-sync replica back first; `--faults power-loss` makes a partition's leader the last replica
standing, SIGKILLs it and cuts its unflushed tail (`--min-insync-replicas 1` then loses what it
acknowledged alone, counted as expected; with 2, the default, any loss fails the verdict).

With `--bootstrap-server` and `--zookeeper` instead of `--dir`, any cluster it can reach: brokers
are found in ZooKeeper's `/brokers/ids`, and those whose advertised host is an address of this
machine are controlled through their processes (found by their listening port: SIGKILL,
SIGSTOP/SIGCONT, a restart re-executing the captured command line: `zkafka.chaos.targets`).
Faults the cluster cannot take (a broker on another machine; partition, disk-full and power-loss,
which need a `cluster up` cluster; zk-kill without a local ensemble) are refused up front, one
line per fault; `--faults none` runs the workload and the checker alone.
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
    from zkafka.chaos.targets import ProcessCluster
    from zkafka.local.launcher import LocalCluster


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("chaos", help="inject faults into a cluster under load and check the result")
    p.add_argument(
        "--dir", "--cluster-dir", dest="dir", default=DEFAULT_CLUSTER_DIR, help="a local cluster's directory"
    )
    p.add_argument(
        "--bootstrap-server",
        help="a cluster reached over the network instead of --dir (with --zookeeper); process faults "
        "apply to its brokers that run on this machine",
    )
    p.add_argument(
        "--zookeeper", help="its zookeeper.connect (host:port[,...][/chroot]), to find the brokers"
    )
    p.add_argument(
        "--zookeeper-session-timeout-ms",
        type=int,
        default=None,
        help="the brokers' zookeeper.session.timeout.ms (a pause outlasts it; read from the brokers' "
        "configs with --dir, else Kafka's 18000)",
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
        "disk-full, unclean, power-loss; or none (default kill,pause)",
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
    p.add_argument(
        "--min-insync-replicas",
        type=int,
        default=None,
        help="the topic's min.insync.replicas (default 2 with 3 brokers or more, else 1); 1 with "
        "power-loss makes its losses expected",
    )
    p.add_argument(
        "--topic-config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a config of the run's topic (repeatable), e.g. flush.ms=2000",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from zkafka.chaos.nemesis import NemesisError, check_faults
    from zkafka.chaos.run import run_chaos
    from zkafka.chaos.targets import ProcessCluster

    quiet_libraries()
    if args.duration <= 0 or args.interval <= 0 or args.producers < 1 or args.rate <= 0:
        raise CliError("--duration, --interval, --producers and --rate must be positive")
    if args.group_consumers < 0:
        raise CliError("--group-consumers must be 0 or more")
    if args.min_insync_replicas is not None and args.min_insync_replicas < 1:
        raise CliError("--min-insync-replicas must be 1 or more")
    topic_configs = {}
    for item in args.topic_config:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise CliError(f"--topic-config takes KEY=VALUE, got {item!r}")
        topic_configs[key.strip()] = value.strip()
    faults = [f.strip() for f in args.faults.split(",") if f.strip() and f.strip() != "none"]
    cluster: LocalCluster | ProcessCluster
    if args.bootstrap_server or args.zookeeper:
        if not (args.bootstrap_server and args.zookeeper):
            raise CliError(
                "--bootstrap-server and --zookeeper go together (the brokers are found in ZooKeeper)"
            )
        try:
            cluster = ProcessCluster.discover(args.bootstrap_server, args.zookeeper)
        except Exception as e:  # ZooKeeper unreachable, nothing registered
            raise CliError(f"cannot find the cluster's brokers through {args.zookeeper}: {e}") from None
        session_timeout_s = (args.zookeeper_session_timeout_ms or 18000) / 1000
    else:
        cluster = load_local_cluster(Path(args.dir))
        if not all(cluster.broker_alive(b) for b in cluster.brokers):
            raise CliError(f"not every broker of the cluster in {args.dir} runs (`zkafka cluster status`)")
        session_timeout_s = (
            args.zookeeper_session_timeout_ms / 1000
            if args.zookeeper_session_timeout_ms
            else _session_timeout_s(cluster)
        )
    err = console(stderr=True)
    try:
        check_faults(faults, cluster)
        result = asyncio.run(
            run_chaos(
                cluster,
                duration=args.duration,
                faults=faults,
                interval=args.interval,
                producers=args.producers,
                rate=args.rate,
                seed=args.seed,
                session_timeout_s=session_timeout_s,
                group_consumers=args.group_consumers,
                acks=args.acks,
                unclean=args.unclean_leader_election,
                min_insync_replicas=args.min_insync_replicas,
                topic_configs=topic_configs,
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
