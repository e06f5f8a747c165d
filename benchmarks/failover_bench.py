"""Failover time with many partitions: SIGKILL a broker, time until all its partitions have new leaders.

    .venv/bin/python benchmarks/failover_bench.py [--partitions 10000] [--topics 100]
        [--replication-factor 2] [--brokers 3] [--session-timeout-ms 6000]

1. Starts ZooKeeper and `brokers` broker processes (the project's launcher) with a short
   `zookeeper.session.timeout.ms`, and raises the soft open-files limit to the hard one (the brokers
   inherit it: every replica keeps its segment file open).
2. Creates `topics` topics of partitions/topics partitions each with confluent-kafka's AdminClient
   (`create-batch` topics per CreateTopics request) and times it: until the requests are answered and
   until every partition's state znode names a leader (ZooKeeper, pipelined reads).
3. Measures the brokers' idle CPU for a few seconds (replica fetchers polling every partition).
4. SIGKILLs the broker leading the most partitions (ties: not the controller), and polls the state
   znodes of the partitions it led (pipelined reads) until none names it as leader. The moment each
   leader changed is the znode's mtime (ZooKeeper's clock, this machine), so the figure does not
   depend on the polling interval.
5. Reads the controller's server.log for when it saw the broker leave (`brokers joined .. left`).
Prints a table. The aim: all new leaders within 5 s beyond the ZooKeeper session timeout. Nothing
here is asserted.
"""

from __future__ import annotations

import argparse
import os
import re
import tempfile
import time
from datetime import datetime
from pathlib import Path

from _cluster import (
    cpu_seconds,
    create_topics,
    open_fds,
    raise_nofile_limit,
    read_states,
    rss_mib,
    state_path,
)
from rich.console import Console
from rich.table import Table

from zkafka.local.zookeeper import ZooKeeperServer
from zkafka.testing.cluster import running_cluster
from zkafka.zk.client import KafkaZkClient

LOG_TIME = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) ")


def leaders(zk: KafkaZkClient, paths: list[str]) -> dict[str, tuple[int, float]]:
    """path -> (leader, mtime in s since the epoch); absent znodes are left out."""
    return {p: (s["leader"], s["mtime"]) for p, s in read_states(zk, paths).items()}


def log_time(line: str) -> float | None:
    m = LOG_TIME.match(line)
    if m is None:
        return None
    return datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()


def controller_saw_leave(log_path: Path, victim: int, after: float) -> float | None:
    pattern = re.compile(r"brokers joined \[.*?\], left \[([^\]]*)\]")
    for line in log_path.read_text(errors="replace").splitlines():
        m = pattern.search(line)
        if m and str(victim) in [s.strip() for s in m.group(1).split(",")]:
            t = log_time(line)
            if t is not None and t >= after - 1:
                return t
    return None


def new_controller_elected(log_path: Path, after: float) -> float | None:
    for line in log_path.read_text(errors="replace").splitlines():
        if " is the controller, epoch " in line:
            t = log_time(line)
            if t is not None and t >= after:
                return t
    return None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--partitions", type=int, default=10_000, help="partitions in the cluster (total)")
    ap.add_argument("--topics", type=int, default=100)
    ap.add_argument("--replication-factor", type=int, default=2)
    ap.add_argument("--brokers", type=int, default=3)
    ap.add_argument("--session-timeout-ms", type=int, default=6000)
    ap.add_argument("--create-batch", type=int, default=10, help="topics per CreateTopics request")
    ap.add_argument("--idle-seconds", type=float, default=5.0, help="idle CPU measurement before the kill")
    ap.add_argument(
        "--kill",
        choices=["most", "controller", "non-controller"],
        default="most",
        help="which broker to SIGKILL: the one leading the most partitions (ties: not the controller), "
        "the controller, or the non-controller leading the most",
    )
    ap.add_argument("--timeout", type=float, default=300.0, help="give up waiting for new leaders after")
    args = ap.parse_args()
    console = Console()
    per_topic = max(1, args.partitions // args.topics)
    total = per_topic * args.topics

    soft, nofile = raise_nofile_limit()
    console.print(
        f"setup: {args.brokers} brokers, {args.topics} topics x {per_topic} partitions = {total:,} "
        f"partitions, replication factor {args.replication_factor}, "
        f"zookeeper.session.timeout.ms={args.session_timeout_ms}, open files limit {nofile} "
        f"(was {soft}), load average {os.getloadavg()[0]:.2f}"
    )
    overrides = {
        "zookeeper.session.timeout.ms": str(args.session_timeout_ms),
        "auto.leader.rebalance.enable": "false",
        "default.replication.factor": str(args.replication_factor),
    }
    rows: list[tuple[str, str]] = []
    with (
        tempfile.TemporaryDirectory() as tmp,
        ZooKeeperServer() as zkserver,
        running_cluster(zkserver, Path(tmp), brokers=args.brokers, overrides=overrides) as cluster,
    ):
        zk = KafkaZkClient(cluster.zookeeper_connect, connection_timeout_ms=30_000)
        try:
            names = [f"fo-{i:04d}" for i in range(args.topics)]
            paths = {state_path(t, p): (t, p) for t in names for p in range(per_topic)}
            all_paths = list(paths)

            t0 = time.perf_counter()
            create_topics(
                cluster.bootstrap_servers, names, per_topic, args.replication_factor, args.create_batch
            )
            t_answered = time.perf_counter() - t0
            console.print(f"CreateTopics answered after {t_answered:.1f} s; waiting for leaders")
            while True:
                states = leaders(zk, all_paths)
                led = sum(1 for leader, _ in states.values() if leader >= 0)
                if led == total:
                    break
                if time.perf_counter() - t0 > 1800:
                    raise TimeoutError(f"only {led}/{total} partitions have a leader after 30 min")
                time.sleep(0.5)
            t_leaders = time.perf_counter() - t0
            console.print(f"all {total:,} partitions have leaders after {t_leaders:.1f} s")
            rows.append(("topic creation: CreateTopics answered", f"{t_answered:.1f} s"))
            rows.append(("topic creation: every partition has a leader (ZooKeeper)", f"{t_leaders:.1f} s"))
            rows.append(("topic creation rate", f"{total / t_leaders:,.0f} partitions/s"))

            pids = {b: cluster.brokers[b].pid for b in cluster.brokers}
            cpu0 = {b: cpu_seconds(pid) for b, pid in pids.items()}
            time.sleep(args.idle_seconds)
            idle = {b: (cpu_seconds(pid) - cpu0[b]) / args.idle_seconds for b, pid in pids.items()}
            rows.append(
                (
                    "brokers idle CPU (cores), " + ", ".join(f"b{b}" for b in pids),
                    ", ".join(f"{idle[b]:.2f}" for b in pids),
                )
            )
            rows.append(("brokers RSS MiB", ", ".join(f"{rss_mib(pid):.0f}" for pid in pids.values())))
            rows.append(("brokers open fds", ", ".join(str(open_fds(pid)) for pid in pids.values())))

            states = leaders(zk, all_paths)
            counts = {b: 0 for b in cluster.brokers}
            for leader, _ in states.values():
                counts[leader] = counts.get(leader, 0) + 1
            controller = zk.get_controller_id()
            candidates = {
                "most": list(counts),
                "controller": [controller],
                "non-controller": [b for b in counts if b != controller],
            }[args.kill]
            victim = max(candidates, key=lambda b: (counts[b], b != controller))
            victim_paths = [p for p, (leader, _) in states.items() if leader == victim]
            rows.append(("partitions in cluster", f"{total:,}"))
            rows.append(("leaders per broker", ", ".join(f"b{b}: {c}" for b, c in sorted(counts.items()))))
            rows.append(("controller", f"broker {controller}"))
            rows.append(
                (
                    "killed (SIGKILL)",
                    f"broker {victim}" + (" (the controller)" if victim == controller else ""),
                )
            )
            rows.append(("partitions led by the killed broker", f"{len(victim_paths):,}"))
            rows.append(("zookeeper.session.timeout.ms", f"{args.session_timeout_ms}"))

            console.print(
                f"killing broker {victim} (leads {len(victim_paths):,}; controller is {controller})"
            )
            kill_wall = time.time()
            kill_perf = time.perf_counter()
            cluster.kill_broker(victim)
            pending = set(victim_paths)
            changed: dict[str, float] = {}
            polls = 0
            while pending:
                polls += 1
                for path, (leader, mtime) in leaders(zk, sorted(pending)).items():
                    if leader != victim:
                        pending.discard(path)
                        changed[path] = mtime
                if pending:
                    if time.perf_counter() - kill_perf > args.timeout:
                        break
                    time.sleep(0.1)
            observed = time.perf_counter() - kill_perf
            st = args.session_timeout_ms / 1000
            if pending:
                rows.append(
                    (
                        "time to new leaders after SIGKILL",
                        f"NOT DONE: {len(pending):,} left after {observed:.1f} s",
                    )
                )
            else:
                first = min(changed.values()) - kill_wall
                last = max(changed.values()) - kill_wall
                rows.append(("first new leader written (znode mtime), after SIGKILL", f"{first:.2f} s"))
                rows.append(
                    ("time to new leaders after SIGKILL (last znode mtime)", f"[bold]{last:.2f} s[/]")
                )
                rows.append(("time beyond the session timeout", f"[bold]{last - st:.2f} s[/] (aim <= 5 s)"))
                rows.append(("controller writing, first to last state znode", f"{last - first:.2f} s"))
                rows.append(
                    ("observed by polling (wall, incl. poll interval)", f"{observed:.2f} s ({polls} polls)")
                )
            ctl = controller if controller != victim else zk.get_controller_id()
            if ctl is not None and ctl in cluster.brokers:
                if controller == victim:
                    saw = new_controller_elected(cluster.brokers[ctl].log_path, kill_wall)
                    what = f"broker {ctl} logged becoming the controller, after SIGKILL"
                else:
                    saw = controller_saw_leave(cluster.brokers[ctl].log_path, victim, kill_wall)
                    what = f"controller (broker {ctl}) logged the broker leaving, after SIGKILL"
                if saw is not None:
                    rows.append((what, f"{saw - kill_wall:.2f} s"))
                    if changed:
                        rows.append(
                            ("  from then to the last new leader", f"{max(changed.values()) - saw:.2f} s")
                        )
        finally:
            zk.close()
    table = Table(
        title=f"failover: {total:,} partitions, RF {args.replication_factor}, {args.brokers} brokers"
    )
    table.add_column("measure")
    table.add_column("value", justify="right")
    for name, value in rows:
        table.add_row(name, value)
    console.print(table)
    console.print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
