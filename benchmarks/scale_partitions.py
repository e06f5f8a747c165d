"""Partition scale: what a 3-broker cluster costs with many partitions, against issue 17's aims.

    PYTHONPATH=src .venv/bin/python benchmarks/scale_partitions.py [--partitions 2000 10000]
        [--topic-size 1000] [--replication-factor 2] [--brokers 3] [--session-timeout-ms 6000]
        [--skip failover,shutdown,...] [--override zkafka.log.max.open.files=500 ...]

For each size in `--partitions` (a fresh ZooKeeper chroot and cluster each):
1. **create**: topics of `--topic-size` partitions through confluent-kafka's AdminClient, timed
   until every partition's state znode names a leader: the last such state's mtime (ZooKeeper's
   clock, this machine's), found by pipelined reads, whose own time is printed apart. Aim >= 5,000
   partitions/s.
   Then `--records-per-partition` records (default 1) are written to every partition, acks=all:
   a replica that was never written has no directory, and the start-ups below would load nothing.
2. **idle**: each broker's RSS growth per replica it holds (RSS after creation minus before, over
   its replicas), open descriptors, CPU while idle. Aim <= 8 KiB RSS per replica.
3. **controller SIGKILL**: the controller (which leads about a third) is killed; from the moment the
   next controller wins `/controller` (its znode's ctime) to the last of the dead broker's leaders
   re-elected (state znode mtimes; both ZooKeeper's clock). Aim <= 5 s at 100,000 partitions.
4. **start-up after SIGKILL**: the killed broker is started again (log recovery): time until it is
   registered and until it is back in the ISR of every partition it holds. Aim <= 30 s.
5. **broker SIGKILL**: the broker (not the controller) leading the most is killed: from the kill to
   the last of its leaders re-elected (state znode mtimes), less `zookeeper.session.timeout.ms`
   (the controller learns of the death when the session expires). Aim <= 1 s. ZooKeeper expires
   sessions on its tick, up to a tick (and a ping interval) either side of kill + timeout, so the
   same is also timed from the expiry itself (a watch on the victim's `/brokers/ids/<id>` sees its
   deletion), with the controller process's CPU seconds over that span. A ZooKeeper write is not
   yet a leader that serves: the last figure runs from the expiry until the surviving brokers
   have applied the LeaderAndIsr that makes them leaders of all those partitions (the line each
   logs once it has, read from their logs). Then it is started again, timed as in 4.
6. **controlled shutdown**: SIGTERM to the broker leading the most partitions: signal to the last
   leader moved (state znode mtimes, polled from the signal on: a later write, such as the ISR
   removal after the exit, would replace the move's mtime) and signal to exit. Aim: 10,000
   leaders in <= 1.5 s, i.e. >= 6,667 leaders moved/s.
7. **clean start-up**: that broker started again, timed as in 4.
8. **cluster down**: every broker stopped with SIGTERM (controller last), as `cluster down` does.

Prints one table per size with each figure and its ratio to the aim (>= 1 meets it), and a summary.
Nothing is asserted. The ZooKeeper server is the project's launcher (`jute.maxbuffer` 4 MB).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from _cluster import (
    ControllerWork,
    CpuSampler,
    cpu_seconds,
    create_topics,
    open_fds,
    raise_nofile_limit,
    read_states,
    rss_bytes,
    state_path,
    watch_deletion,
)
from rich.console import Console
from rich.table import Table

from zkafka.local.launcher import LocalCluster
from zkafka.local.zookeeper import ZooKeeperServer
from zkafka.testing.cluster import running_cluster
from zkafka.zk.client import KafkaZkClient
from zkafka.zk.model import LeaderAndIsr, LeaderIsrAndControllerEpoch, TopicPartition
from zkafka.zk.ops import DeleteOp
from zkafka.zk.znodes import TopicPartitionStateZNode, TopicPartitionsZNode, TopicPartitionZNode, TopicZNode

CREATE_AIM = 5000.0  # partitions/s
SHUTDOWN_AIM = 10_000 / 1.5  # leaders moved/s
FAILOVER_AIM_S = 5.0
BROKER_KILL_AIM_S = 1.0  # beyond zookeeper.session.timeout.ms
STARTUP_AIM_S = 30.0
RSS_AIM = 8 * 1024  # bytes per replica


@dataclass
class Figure:
    name: str
    value: float
    unit: str
    aim: float | None = None
    higher_is_better: bool = True
    note: str = ""

    @property
    def ratio(self) -> float | None:
        """>= 1 meets the aim."""
        if self.aim is None or self.value <= 0:
            return None
        return self.value / self.aim if self.higher_is_better else self.aim / self.value


@dataclass
class Run:
    partitions: int
    figures: list[Figure] = field(default_factory=list)

    def add(self, *args: object, **kwargs: object) -> None:
        self.figures.append(Figure(*args, **kwargs))  # type: ignore[arg-type]


def add_profile_arguments(ap: argparse.ArgumentParser, what: str, profile_dir: str) -> None:
    """The options `profiled` reads: --py-spy, --py-spy-rate and --profile-dir."""
    ap.add_argument("--py-spy", help=f"path of py-spy: profile {what}")
    ap.add_argument("--py-spy-rate", type=int, default=50, help="samples per second (py-spy -r)")
    ap.add_argument(
        "--py-spy-gil",
        action="store_true",
        help="sample only the thread holding the GIL (py-spy --gil): CPU shares, not waits",
    )
    ap.add_argument("--profile-dir", default=profile_dir, help="where --py-spy writes")


@contextlib.contextmanager
def profiled(args: argparse.Namespace, phase: str, pids: dict[str, int]) -> Iterator[None]:
    """With `--py-spy`, sample `pids` (label -> pid) during the phase into
    `<profile-dir>/<phase>-<label>.txt` (py-spy's raw collapsed stacks)."""
    if not args.py_spy:
        yield
        return
    out = Path(args.profile_dir)
    out.mkdir(parents=True, exist_ok=True)
    procs = [
        subprocess.Popen(
            [
                args.py_spy,
                *("record", "-p", str(pid), "-r", str(args.py_spy_rate), "-f", "raw", "--nonblocking"),
                *(["--gil"] if args.py_spy_gil else []),
                *("-o", str(out / f"{phase}-{label}.txt")),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for label, pid in pids.items()
    ]
    try:
        yield
    finally:
        for proc in procs:
            proc.send_signal(signal.SIGINT)  # py-spy writes its output on SIGINT
        for proc in procs:
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def wait_leaders(zk: KafkaZkClient, paths: list[str], timeout: float) -> tuple[float, float]:
    """(seconds until a read found every path's state znode naming a leader (polled), the latest
    mtime among those states: when the last leader landed in ZooKeeper, seconds since the epoch
    on ZooKeeper's clock, this machine's). A state that changed again meanwhile (an ISR change)
    gives its later mtime: never an earlier time than the truth."""
    t0 = time.perf_counter()
    pending = list(paths)
    last = 0.0
    while pending:
        states = read_states(zk, pending)
        led = [p for p in pending if p in states and states[p]["leader"] >= 0]
        last = max([last, *(states[p]["mtime"] for p in led)])
        done = set(led)
        pending = [p for p in pending if p not in done]
        if not pending:
            break
        if time.perf_counter() - t0 > timeout:
            raise TimeoutError(f"{len(pending):,} partitions without a leader after {timeout:.0f} s")
        time.sleep(0.2)
    return time.perf_counter() - t0, last


def wait_full_isr(zk: KafkaZkClient, paths: list[str], rf: int, timeout: float) -> float:
    """Seconds until every path's ISR has `rf` members (a healthy cluster before anything is
    killed: a partition whose only in-sync replica dies stays offline, as in Kafka), and the
    controller has taken in every ISR change notification the leaders wrote for them: a restarted
    broker's rejoining makes tens of thousands, and a phase begun while the controller still reads
    their states would measure that work too."""
    t0 = time.perf_counter()
    pending = list(paths)
    while pending:
        states = read_states(zk, pending)
        pending = [p for p in pending if p not in states or len(states[p]["isr"]) < rf]
        if not pending:
            break
        if time.perf_counter() - t0 > timeout:
            raise TimeoutError(f"{len(pending):,} partitions with an incomplete ISR after {timeout:.0f} s")
        time.sleep(0.5)
    full = time.perf_counter() - t0
    while zk.get_isr_change_notifications():
        if time.perf_counter() - t0 > timeout:
            raise TimeoutError(f"ISR change notifications still pending after {timeout:.0f} s")
        time.sleep(0.2)
    return full


def wait_moved(
    zk: KafkaZkClient,
    paths: list[str],
    away_from: int,
    timeout: float,
    later: list[str] | None = None,
    new_leaders: dict[int, int] | None = None,
) -> dict[str, float]:
    """path -> mtime of the write that moved its leader away from `away_from` (polled). A state
    first seen with `away_from` back in its ISR was written again after the move (the new leader
    re-admitted the follower, or the controller took it out later): its mtime is that later
    write's, and the path goes to `later` when given. `new_leaders`, when given, counts the moved
    partitions by the broker now leading them."""
    pending = set(paths)
    moved: dict[str, float] = {}
    deadline = time.monotonic() + timeout
    while pending and time.monotonic() < deadline:
        for path, state in read_states(zk, sorted(pending)).items():
            if state["leader"] not in (away_from, -1):
                pending.discard(path)
                moved[path] = state["mtime"]
                if later is not None and away_from in state["isr"]:
                    later.append(path)
                if new_leaders is not None:
                    new_leaders[state["leader"]] = new_leaders.get(state["leader"], 0) + 1
        if pending:
            time.sleep(0.1)
    if pending:
        raise TimeoutError(f"{len(pending):,} leaders still on broker {away_from} after {timeout:.0f} s")
    return moved


LEADER_AND_ISR_LINE = re.compile(
    rb"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3}) INFO zkafka\.server\.replica_manager: "
    rb"LeaderAndIsr \(controller epoch \d+\): leader of (\d+) partition"
)


def wait_leaders_applied(
    logs: dict[int, Path], offsets: dict[int, int], expected: dict[int, int], timeout: float
) -> float:
    """Wall time at which every broker in `expected` had become leader of as many partitions as it
    names, read from its log's one line per applied LeaderAndIsr ("leader of N partition(s)"),
    past `offsets` (each log's size before the kill). The line is written once the request is
    applied: from then on the new leader answers produce and fetch requests. Counted per broker,
    each up to its own number: the controller's later LeaderAndIsr requests (the dead broker taken
    out of the ISRs it followed, a new leader epoch each) log "leader of" lines too, after the
    elections' on each broker, and must not stand in for another broker's election. Reading logs
    costs the brokers nothing, where polling their Metadata or /metrics at 100,000 partitions
    would take CPU from the very work being timed."""
    deadline = time.monotonic() + timeout
    positions = dict(offsets)
    led = dict.fromkeys(expected, 0)
    reached: dict[int, float] = {}
    while True:
        for broker, log_path in logs.items():
            if broker not in expected or broker in reached:
                continue
            with open(log_path, "rb") as f:
                f.seek(positions[broker])
                for line in f:
                    if not line.endswith(b"\n"):
                        break  # still being written: read it whole at the next poll
                    positions[broker] += len(line)
                    m = LEADER_AND_ISR_LINE.match(line)
                    if m:
                        led[broker] += int(m.group(3))
                        if led[broker] >= expected[broker]:
                            stamp = time.mktime(time.strptime(m.group(1).decode(), "%Y-%m-%d %H:%M:%S"))
                            reached[broker] = stamp + int(m.group(2)) / 1000
                            break
        if len(reached) == len(expected):
            return max(reached.values())
        if time.monotonic() > deadline:
            raise TimeoutError(f"the new leaders logged {led} of {expected} after {timeout:.0f} s")
        time.sleep(0.2)


WARM_UP_ROOT = "/zkafka-benchmark-warm-up"


def warm_up_zookeeper(connect: str, partitions: int, console: Console) -> None:
    """Have a fresh ZooKeeper run the controller's writes once before anything is measured:
    `partitions` partitions' znodes created as a creation makes them, their states rewritten as an
    election does, then all of it deleted, below a chroot of its own. A long-running ZooKeeper has
    compiled those paths long ago; a fresh one compiles them during the first creation (its JIT
    took ~3 s of CPU more at 100,000 partitions, on the same two cores as the brokers), and only
    the first size of a run paid for it."""
    if partitions <= 0:
        return
    t0 = time.perf_counter()
    zk = KafkaZkClient(f"{connect}{WARM_UP_ROOT}", connection_timeout_ms=30_000)
    try:
        zk.create_top_level_paths()
        _epoch, epoch_version = zk.register_controller_and_increment_epoch(1)
        state = LeaderAndIsr(leader=1, leader_epoch=0, isr=(1, 2))
        created: list[TopicPartition] = []
        for first in range(0, partitions, 10_000):
            tps = [
                TopicPartition(f"warm-up-{p // 1000:04d}", p % 1000)
                for p in range(first, min(partitions, first + 10_000))
            ]
            for topic in sorted({tp.topic for tp in tps}):
                zk.ensure_path(TopicZNode.path(topic))
            zk.create_topic_partition_states(
                {tp: LeaderIsrAndControllerEpoch(state, 1) for tp in tps}, epoch_version
            )
            zk.update_leader_and_isr(
                ((tp, LeaderAndIsr(2, 1, (2,), zk_version=0)) for tp in tps), 1, epoch_version
            )
            created.extend(tps)
        topics = sorted({tp.topic for tp in created})
        deletes = [
            *((tp, DeleteOp(TopicPartitionStateZNode.path(tp))) for tp in created),
            *((tp, DeleteOp(TopicPartitionZNode.path(tp))) for tp in created),
            *((t, DeleteOp(TopicPartitionsZNode.path(t))) for t in topics),
        ]
        zk.batched_multis(deletes)
    finally:
        zk.close()
    wipe = KafkaZkClient(connect, connection_timeout_ms=30_000)
    try:
        wipe.kazoo.delete(WARM_UP_ROOT, recursive=True)  # what is left: a few dozen znodes
    finally:
        wipe.close()
    console.print(
        f"ZooKeeper warmed up: {partitions:,} partitions' znodes written and deleted "
        f"in {time.perf_counter() - t0:.1f} s"
    )


def restart_unmeasured(cluster: LocalCluster, broker: int, console: Console, total: int) -> None:
    """With `--skip startup` a stopped broker is still started again (the next phase waits for
    every ISR to be complete, and would wait in vain), only not measured."""
    console.print(f"[{total:,}] restarting broker {broker} (not measured: --skip startup)")
    cluster.start_broker(broker)


def time_startup(
    cluster: LocalCluster,
    zk: KafkaZkClient,
    broker: int,
    paths: list[str],
    args: argparse.Namespace,
    phase: str,
    run: Run,
    label: str,
    zk_pid: int | None = None,
) -> None:
    """Start `broker` and add to `run`: seconds until it is registered and until it is in the ISR
    of every path that assigns it a replica (`paths`), and the broker's CPU seconds until each
    (less dependent on the machine's load than the wall clock), and the other brokers' CPU over
    the same span (the leaders add it back to the ISRs). "In the ISR of all" is the mtime of the
    last state znode write that put it back (ZooKeeper's clock, this machine's), so the figure does
    not depend on how often this poller looks: it reads the states still pending at intervals of
    twice what the last read took (66,000 znodes at first: read every 0.2 s, the poller and
    ZooKeeper serving it took ~0.7 of the two cores away from the brokers being timed). With
    `--py-spy` the broker is sampled
    from its start until it is back in every ISR (`<phase>-b<broker>.txt`), and so are the
    others (`<phase>-leader-b<id>.txt`)."""
    others = {b: cluster.brokers[b].pid for b in cluster.brokers if b != broker and cluster.broker_alive(b)}
    others_cpu0 = sum(cpu_seconds(p) for p in others.values())
    zk_cpu0 = cpu_seconds(zk_pid) if zk_pid else 0.0
    own_cpu0 = time.process_time()  # this poller's own share of the 2 cores (its reads of ZooKeeper)
    t0 = time.perf_counter()
    started = time.time()
    cluster.start_broker(broker)
    pid = cluster.brokers[broker].pid
    registered = registered_cpu = None
    pending = list(paths)
    back_in = started  # the latest mtime of a state that put the broker back in its ISR
    sampled = {f"b{broker}": pid, **{f"leader-b{b}": p for b, p in others.items()}}
    with profiled(args, phase, sampled):
        while time.perf_counter() - t0 < args.timeout:
            if not cluster.broker_alive(broker):
                raise RuntimeError(f"broker {broker} exited; see {cluster.brokers[broker].log_path}")
            if registered is None and broker in zk.get_all_broker_ids():
                registered = time.perf_counter() - t0
                registered_cpu = cpu_seconds(pid)
            pause = 0.2
            if registered is not None:
                began = time.perf_counter()
                states = read_states(zk, pending)
                still = []
                for p in pending:
                    state = states.get(p)
                    if state is None or broker not in state["isr"]:
                        still.append(p)
                    else:
                        back_in = max(back_in, state["mtime"])
                pending = still
                pause = max(pause, 2 * (time.perf_counter() - began))
                if not pending:
                    isr, isr_cpu = back_in - started, cpu_seconds(pid)
                    others_cpu = sum(cpu_seconds(p) for p in others.values()) - others_cpu0
                    zk_cpu = f", ZooKeeper's {cpu_seconds(zk_pid) - zk_cpu0:.1f} s" if zk_pid else ""
                    own_cpu = time.process_time() - own_cpu0
                    run.add(
                        f"{label}: registered", registered, "s", note=f"broker CPU {registered_cpu:.1f} s"
                    )
                    run.add(
                        f"{label}: in ISR of all {len(paths):,}",
                        isr,
                        "s",
                        STARTUP_AIM_S,
                        False,
                        note=(
                            f"broker CPU {isr_cpu:.1f} s, the others' {others_cpu:.1f} s{zk_cpu}, "
                            f"this poller's {own_cpu:.1f} s"
                        ),
                    )
                    return
            time.sleep(pause)
    raise TimeoutError(
        f"broker {broker}: {len(pending):,} partitions without it in the ISR after {args.timeout} s"
    )


def write_every_partition(bootstrap: str, names: list[str], size: int, records: int, timeout: float) -> float:
    """Seconds to write `records` 100 B records to every partition (acks=all, so every replica in
    the ISR holds them): a replica that was never written has no directory, so without this the
    start-ups below would load nothing but the internal topics."""
    from confluent_kafka import Producer

    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "linger.ms": 50,
            "queue.buffering.max.messages": 2_000_000,
            "message.timeout.ms": int(timeout * 1000),
        }
    )
    value = b"x" * 100
    failed: list[str] = []

    def delivered(err: object, _msg: object) -> None:
        if err is not None:  # a settled message is not an acknowledged one
            failed.append(str(err))

    t0 = time.perf_counter()
    for _ in range(records):
        for name in names:
            for p in range(size):
                producer.produce(name, value, partition=p, on_delivery=delivered)
            producer.poll(0)
    left = producer.flush(timeout)
    if left:
        raise TimeoutError(f"{left:,} records not acknowledged after {timeout:.0f} s")
    if failed:
        raise RuntimeError(f"{len(failed):,} records failed, first: {failed[0]}")
    return time.perf_counter() - t0


def run_size(args: argparse.Namespace, zkserver: ZooKeeperServer, total: int, console: Console) -> Run:
    run = Run(total)
    topic_size = min(args.topic_size, total)
    topics = max(1, total // topic_size)
    total = topics * topic_size
    run.partitions = total
    overrides = {
        "zookeeper.session.timeout.ms": str(args.session_timeout_ms),
        "auto.leader.rebalance.enable": "false",
        "default.replication.factor": str(args.replication_factor),
        **dict(kv.split("=", 1) for kv in args.override),
    }
    rf = args.replication_factor
    with (
        (
            contextlib.nullcontext(tempfile.mkdtemp(dir=args.work_dir))
            if args.keep_logs
            else tempfile.TemporaryDirectory(dir=args.work_dir)
        ) as tmp,
        running_cluster(zkserver, Path(tmp), brokers=args.brokers, overrides=overrides) as cluster,
    ):
        if args.keep_logs:
            console.print(f"[{total:,}] broker logs under {tmp}")
        zk = KafkaZkClient(cluster.zookeeper_connect, connection_timeout_ms=30_000)
        try:
            pids = {b: cluster.brokers[b].pid for b in cluster.brokers}
            rss0 = {b: rss_bytes(pid) for b, pid in pids.items()}
            names = [f"scale-{i:04d}" for i in range(topics)]
            paths = [state_path(t, p) for t in names for p in range(topic_size)]

            console.print(f"[{total:,}] creating {topics} topics x {topic_size:,} partitions, RF {rf}")
            controller = zk.get_controller_id()
            assert controller is not None and controller > 0
            # CPU seconds over creation, less dependent on the machine's load than the wall clock
            zk_pid = zkserver.process.pid if zkserver.process is not None else None
            cpu_pids = {**{f"b{b}": pid for b, pid in pids.items()}, **({"zk": zk_pid} if zk_pid else {})}
            cpu_before = {k: cpu_seconds(pid) for k, pid in cpu_pids.items()}
            topic_changes = ControllerWork(cluster.brokers[controller].metrics, "topicchange")
            with profiled(args, f"{total}-create", {f"b{b}": pid for b, pid in pids.items()}):
                started = time.time()
                t0 = time.perf_counter()
                create_topics(cluster.bootstrap_servers, names, topic_size, rf, args.create_batch)
                answered = time.perf_counter() - t0
                # read before this process's own full read of the states, which is 2-3 s of
                # ZooKeeper's CPU at 100,000 partitions and no part of the creation
                cpu = {k: cpu_seconds(pid) - cpu_before[k] for k, pid in cpu_pids.items()}
                polled, last_mtime = wait_leaders(zk, paths, args.timeout)
            # The last leader's state znode mtime, not when this process's read of 100,000 znodes
            # found it (that read takes ~2 s at 100,000 partitions): ms resolution, same clock.
            led = max(last_mtime - started, 0.001)
            run.add("create: CreateTopics answered", answered, "s")
            run.add("create: every leader in ZooKeeper (last state's mtime)", led, "s")
            run.add("create: every leader seen by a full read", answered + polled, "s")
            run.add(
                "create rate",
                total / led,
                "partitions/s",
                CREATE_AIM,
                note=topic_changes.note(),
            )
            brokers_cpu = sum(v for k, v in cpu.items() if k != "zk")
            run.add(
                "create: brokers' CPU per 1,000 partitions (to the answer)",
                brokers_cpu * 1000 / total,
                "s",
                note=", ".join(f"{k} {v:.1f} s" for k, v in sorted(cpu.items())),
            )

            full = wait_full_isr(zk, paths, rf, args.timeout)
            run.add("create: then every ISR complete", full, "s")
            if args.records_per_partition > 0:
                each = args.records_per_partition
                console.print(f"[{total:,}] writing {each} record(s) to every partition")
                with profiled(args, f"{total}-write", {f"b{b}": pid for b, pid in pids.items()}):
                    written = write_every_partition(
                        cluster.bootstrap_servers, names, topic_size, args.records_per_partition, args.timeout
                    )
                run.add(
                    f"write {args.records_per_partition} record(s) to every partition, acks=all", written, "s"
                )
            time.sleep(args.idle_seconds)  # let the followers' first fetches settle
            states = read_states(zk, paths)
            replicas_on = {b: sum(1 for s in states.values() if b in s["isr"]) for b in pids}
            cpu0 = {b: cpu_seconds(pid) for b, pid in pids.items()}
            with profiled(args, f"{total}-idle", {f"b{b}": pid for b, pid in pids.items()}):
                time.sleep(args.idle_seconds)
            for b, pid in pids.items():
                per_replica = (rss_bytes(pid) - rss0[b]) / max(1, replicas_on[b])
                run.add(f"idle b{b}: RSS per replica ({replicas_on[b]:,})", per_replica, "B", RSS_AIM, False)
            idle = [(cpu_seconds(pid) - cpu0[b]) / args.idle_seconds for b, pid in pids.items()]
            run.add("idle: CPU, max of brokers", max(idle), "cores")
            run.add("idle: open descriptors, max of brokers", max(open_fds(p) for p in pids.values()), "")

            if "failover" not in args.skip:
                wait_full_isr(zk, paths, rf, args.timeout)
                states = read_states(zk, paths)
                controller = zk.get_controller_id()
                assert controller is not None and controller > 0
                victim_paths = [p for p, s in states.items() if s["leader"] == controller]
                held = [p for p, s in states.items() if controller in s["isr"]]
                console.print(f"[{total:,}] SIGKILL controller {controller} (leads {len(victim_paths):,})")
                survivors = {f"b{b}": cluster.brokers[b].pid for b in cluster.brokers if b != controller}
                changes = {
                    b: ControllerWork(cluster.brokers[b].metrics, "controllerchange")
                    for b in cluster.brokers
                    if b != controller
                }
                with profiled(args, f"{total}-failover", survivors):
                    cluster.signal_broker(controller, signal.SIGKILL)
                    cluster.wait_broker_exit(controller, 10)
                    moved = wait_moved(
                        zk, victim_paths, controller, args.timeout + args.session_timeout_ms / 1000
                    )
                found = zk.get_data("/controller")
                assert found is not None
                won = found[1].ctime / 1000
                last = max(moved.values()) - won
                winner = int(json.loads(found[0])["brokerid"])
                run.add(
                    f"controller SIGKILL: won /controller to last of {len(moved):,} leaders elected",
                    last,
                    "s",
                    FAILOVER_AIM_S,
                    False,
                    note=changes[winner].note(),
                )
                if "startup" not in args.skip:
                    console.print(f"[{total:,}] restarting broker {controller} (recovery after SIGKILL)")
                    time_startup(
                        cluster,
                        zk,
                        controller,
                        held,
                        args,
                        f"{total}-startup",
                        run,
                        "start-up after SIGKILL",
                        zk_pid,
                    )
                else:
                    restart_unmeasured(cluster, controller, console, total)

            if "brokerkill" not in args.skip:
                wait_full_isr(zk, paths, rf, args.timeout)
                states = read_states(zk, paths)
                controller = zk.get_controller_id()
                counts = {b: 0 for b in cluster.brokers if b != controller and cluster.broker_alive(b)}
                for s in states.values():
                    if s["leader"] in counts:
                        counts[s["leader"]] += 1
                victim = max(counts, key=lambda b: counts[b])
                victim_paths = [p for p, s in states.items() if s["leader"] == victim]
                held = [p for p, s in states.items() if victim in s["isr"]]
                console.print(f"[{total:,}] SIGKILL broker {victim} (leads {len(victim_paths):,})")
                controller_pid = cluster.brokers[controller].pid
                survivors = [b for b in cluster.brokers if b != victim and cluster.broker_alive(b)]
                survivor_logs = {b: cluster.brokers[b].log_path for b in survivors}
                log_offsets = {b: p.stat().st_size for b, p in survivor_logs.items()}
                expired = watch_deletion(zk, f"/brokers/ids/{victim}")
                profile = {
                    ("controller" if b == controller else f"b{b}"): cluster.brokers[b].pid for b in survivors
                }
                broker_changes = ControllerWork(cluster.brokers[controller].metrics, "leaderelection")
                with (
                    profiled(args, f"{total}-brokerkill", profile),
                    CpuSampler(controller_pid) as controller_cpu,
                ):
                    killed = time.time()
                    cluster.signal_broker(victim, signal.SIGKILL)
                    cluster.wait_broker_exit(victim, 10)
                    # Nothing moves before the expiry, and the figure is the states' mtimes, not
                    # when a read finds them: read them once the controller's broker change has
                    # ended. Reading 33,000 states in a loop meanwhile (~1 s of a core each, and
                    # ZooKeeper's) took the two cores from the elections being timed.
                    expired.result(args.timeout + args.session_timeout_ms / 1000)
                    broker_changes.wait_done(args.timeout)
                    new_leaders: dict[int, int] = {}
                    moved = wait_moved(zk, victim_paths, victim, args.timeout, new_leaders=new_leaders)
                    applied = wait_leaders_applied(survivor_logs, log_offsets, new_leaders, args.timeout)
                last = max(moved.values())
                beyond = last - killed - args.session_timeout_ms / 1000
                run.add(
                    f"broker SIGKILL: last of {len(moved):,} leaders elected, beyond the session timeout",
                    beyond,
                    "s",
                    BROKER_KILL_AIM_S,
                    False,
                    note=f"session expired {expired.result(5) - killed:.2f} s after the kill",
                )
                # ZooKeeper expires a session on its own tick, up to a tick before or after the
                # SIGKILL plus the timeout: counted from the expiry itself (the victim's
                # registration seen deleted) the figure is what the controller took.
                run.add(
                    f"broker SIGKILL: session expired to last of {len(moved):,} leaders elected",
                    last - expired.result(5),
                    "s",
                    BROKER_KILL_AIM_S,
                    False,
                    note=f"controller CPU {controller_cpu.between(expired.result(5), last):.2f} s; "
                    + broker_changes.note(),
                )
                run.add(
                    f"broker SIGKILL: session expired to the new leaders of all {len(moved):,} serving",
                    applied - expired.result(5),
                    "s",
                    note="their brokers applied the LeaderAndIsr (logged)",
                )
                if "startup" not in args.skip:
                    console.print(f"[{total:,}] restarting broker {victim} (recovery after SIGKILL)")
                    time_startup(
                        cluster,
                        zk,
                        victim,
                        held,
                        args,
                        f"{total}-brokerkill-startup",
                        run,
                        "start-up after broker SIGKILL",
                        zk_pid,
                    )
                else:
                    restart_unmeasured(cluster, victim, console, total)

            if "shutdown" not in args.skip:
                wait_full_isr(zk, paths, rf, args.timeout)
                states = read_states(zk, paths)
                controller = zk.get_controller_id()
                counts = {b: 0 for b in cluster.brokers if cluster.broker_alive(b)}
                for s in states.values():
                    counts[s["leader"]] = counts.get(s["leader"], 0) + 1
                victim = max((b for b in counts if b != controller), key=lambda b: counts[b])
                victim_paths = [p for p, s in states.items() if s["leader"] == victim]
                held = [p for p, s in states.items() if victim in s["isr"]]
                console.print(f"[{total:,}] SIGTERM broker {victim} (leads {len(victim_paths):,})")
                profile = {
                    "controller": cluster.brokers[controller].pid,
                    "victim": cluster.brokers[victim].pid,
                }
                shutdowns = ControllerWork(cluster.brokers[controller].metrics, "controlledshutdown")
                with profiled(args, f"{total}-shutdown", profile):
                    signalled = time.time()
                    t0 = time.perf_counter()
                    cluster.signal_broker(victim, signal.SIGTERM)
                    # Polled from the signal on, not after the exit: a state znode's mtime is its
                    # last write's, and once the broker is gone the controller takes it out of the
                    # ISRs its new leaders re-admitted it to while it still fetched (a later write).
                    later: list[str] = []
                    with ThreadPoolExecutor(1) as pool:
                        polled = pool.submit(wait_moved, zk, victim_paths, victim, args.timeout, later)
                        exited = cluster.wait_broker_exit(victim, args.timeout)
                        to_exit = time.perf_counter() - t0
                        moved = polled.result()
                last = max(moved.values()) - signalled
                run.add(
                    f"controlled shutdown: signal to last of {len(moved):,} leaders moved",
                    last,
                    "s",
                    note=f"{len(later):,} first seen rewritten after the move" if later else "",
                )
                run.add(
                    "controlled shutdown: leaders moved/s",
                    len(moved) / max(last, 1e-3),
                    "/s",
                    SHUTDOWN_AIM,
                    note=shutdowns.note(),
                )
                run.add("controlled shutdown: signal to exit", to_exit, "s", note="" if exited else "killed")
                if "startup" not in args.skip:
                    console.print(f"[{total:,}] restarting broker {victim} (clean)")
                    time_startup(
                        cluster,
                        zk,
                        victim,
                        held,
                        args,
                        f"{total}-clean-startup",
                        run,
                        "clean start-up",
                        zk_pid,
                    )
                else:
                    restart_unmeasured(cluster, victim, console, total)

            if "down" not in args.skip:
                console.print(f"[{total:,}] cluster down")
                t0 = time.perf_counter()
                cluster.down(timeout=args.timeout)
                run.add("cluster down (SIGTERM each, controller last)", time.perf_counter() - t0, "s")
        finally:
            zk.close()
    return run


def fmt(value: float, unit: str) -> str:
    if unit == "B":
        return f"{value / 1024:,.1f} KiB"
    if unit in ("s", "cores"):
        return f"{value:,.2f} {unit}"
    return f"{value:,.0f} {unit}".strip()


def print_run(console: Console, run: Run, args: argparse.Namespace) -> None:
    table = Table(
        title=f"{run.partitions:,} partitions, RF {args.replication_factor}, {args.brokers} brokers, "
        f"zookeeper.session.timeout.ms={args.session_timeout_ms}"
    )
    table.add_column("measure")
    table.add_column("value", justify="right")
    table.add_column("aim", justify="right")
    table.add_column("ratio to aim", justify="right")
    for f in run.figures:
        aim = "" if f.aim is None else ("<= " if not f.higher_is_better else ">= ") + fmt(f.aim, f.unit)
        ratio = "" if f.ratio is None else f"{f.ratio:.2f}"
        table.add_row(f.name, fmt(f.value, f.unit) + (f" ({f.note})" if f.note else ""), aim, ratio)
    console.print(table)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--partitions", type=int, nargs="+", default=[2000, 10_000], help="sizes to run")
    ap.add_argument("--topic-size", type=int, default=1000, help="partitions per topic")
    ap.add_argument("--replication-factor", type=int, default=2)
    ap.add_argument("--brokers", type=int, default=3)
    ap.add_argument("--session-timeout-ms", type=int, default=6000)
    ap.add_argument("--create-batch", type=int, default=10, help="topics per CreateTopics request")
    ap.add_argument(
        "--zookeeper-warm-up",
        type=int,
        default=30_000,
        help="partitions' znodes written and deleted before the first size, so ZooKeeper's JIT has "
        "compiled the controller's writes as a long-running one has (0: measure a cold ZooKeeper)",
    )
    ap.add_argument(
        "--records-per-partition",
        type=int,
        default=1,
        help="records written to every partition after creation (0: none; a never-written replica has "
        "no directory, so the start-ups then load nothing)",
    )
    ap.add_argument(
        "--idle-seconds",
        type=float,
        default=10.0,
        help="idle CPU is measured over this long, after as long again to settle",
    )
    ap.add_argument("--work-dir", help="where the brokers' directories go (default: the temp dir)")
    ap.add_argument("--keep-logs", action="store_true", help="print the cluster directory and keep it")
    add_profile_arguments(
        ap, "the brokers in each phase (create, write, kills, starts)", "build/scale-profiles"
    )
    ap.add_argument(
        "--override",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a broker config for every broker (repeatable), e.g. zkafka.log.max.open.files=500",
    )
    ap.add_argument("--timeout", type=float, default=600.0, help="give up a wait after")
    ap.add_argument(
        "--skip",
        type=lambda s: set(s.split(",")),
        default=set(),
        help="of failover,brokerkill,startup,shutdown,down",
    )
    args = ap.parse_args()
    console = Console(width=150)
    before, now = raise_nofile_limit()
    console.print(
        f"open files limit {now} (was {before}); cpus {os.cpu_count()}; load average {os.getloadavg()[0]:.2f}"
    )
    runs = []
    with ZooKeeperServer(quick_jit=False) as zkserver:
        warm_up_zookeeper(zkserver.connect_string, args.zookeeper_warm_up, console)
        for size in args.partitions:
            run = run_size(args, zkserver, size, console)
            print_run(console, run, args)
            runs.append(run)
    console.print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
