"""The controller's ZooKeeper work per partition, without brokers: state znodes read, written by the
controller (fenced multis) and written by leaders (pipelined conditional setData), in znodes/s.

    PYTHONPATH=src .venv/bin/python benchmarks/zk_partition_states.py [--partitions 10000 100000]
        [--rounds 3] [--setups kazoo poll multiread]

One ZooKeeper (the project's launcher), a fresh chroot per setup and size: the state znodes of
`partitions` partitions (topics of 1,000) created with `create_topic_partition_states`, then per round
`get_partition_states` of all (what a new controller reads at failover), `update_leader_and_isr` of
all (an election), `conditional_update_partition_states` of all (leaders' ISR changes). Setups:
`kazoo`, kazoo's own selector-per-call threading handler and pipelined getData (zkafka before
these changes); `poll`, zkafka's handler (`zk.poll_handler`) and pipelined getData; `multiread`,
zkafka's handler and multiRead (`zk.multi_read`, what the session does on ZooKeeper 3.6+).
Prints the median of the rounds and the client's CPU seconds per 10,000 znodes read and per
10,000 leader writes (CPU, unlike wall time, hardly depends on what else the machine runs).
Nothing is asserted.
"""

from __future__ import annotations

import argparse
import statistics
import time
import uuid

from kazoo.handlers.threading import SequentialThreadingHandler
from rich.console import Console
from rich.table import Table

from zkafka.local.zookeeper import ZooKeeperServer
from zkafka.zk import session as zk_session
from zkafka.zk.client import KafkaZkClient
from zkafka.zk.model import LeaderAndIsr, LeaderIsrAndControllerEpoch, TopicPartition


def run(connect: str, partitions: int, rounds: int, multi_read: bool) -> dict[str, float]:
    zk = KafkaZkClient(f"{connect}/bench-{uuid.uuid4().hex[:8]}", connection_timeout_ms=30_000)
    try:
        if not multi_read:
            zk._multi_read_supported = lambda: False  # type: ignore[method-assign]
        zk.create_top_level_paths()
        epoch, epoch_zk_version = zk.register_controller_and_increment_epoch(1)
        tps = [TopicPartition(f"t{p // 1000:03d}", p % 1000) for p in range(partitions)]
        for topic in sorted({tp.topic for tp in tps}):
            size = sum(1 for tp in tps if tp.topic == topic)
            zk.create_topic_assignment(topic, {p: [1, 2] for p in range(size)}, validate=False)
        initial = LeaderAndIsr.initial(1, [1, 2])
        zk.create_topic_partition_states(
            {tp: LeaderIsrAndControllerEpoch(initial, epoch) for tp in tps}, epoch_zk_version
        )
        timings: dict[str, list[float]] = {"read": [], "controller write": [], "leader write": []}
        read_cpu: list[float] = []
        leader_cpu: list[float] = []
        for _ in range(rounds):
            t0, c0 = time.perf_counter(), time.process_time()
            states = zk.get_partition_states(tps)
            timings["read"].append(time.perf_counter() - t0)
            read_cpu.append(time.process_time() - c0)
            assert len(states) == partitions
            elected = {
                tp: s.leader_and_isr.new_leader_and_isr(2, [2]).with_zk_version(s.zk_version)
                for tp, s in states.items()
            }
            t0 = time.perf_counter()
            written = zk.update_leader_and_isr(elected, epoch, epoch_zk_version)
            timings["controller write"].append(time.perf_counter() - t0)
            assert len(written.successful) == partitions
            grown = {
                tp: (LeaderAndIsr(2, lai.leader_epoch, (2, 1), zk_version=written.successful[tp]), epoch)
                for tp, lai in elected.items()
            }
            t0, c0 = time.perf_counter(), time.process_time()
            results = zk.conditional_update_partition_states(grown)
            timings["leader write"].append(time.perf_counter() - t0)
            leader_cpu.append(time.process_time() - c0)
            assert all(ok for ok, _ in results.values())
        rates = {k: partitions / statistics.median(v) for k, v in timings.items()}
        return {
            **rates,
            "read CPU": statistics.median(read_cpu) * 10_000 / partitions,
            "leader write CPU": statistics.median(leader_cpu) * 10_000 / partitions,
        }
    finally:
        zk.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--partitions", type=int, nargs="+", default=[10_000])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument(
        "--setups", nargs="+", choices=["kazoo", "poll", "multiread"], default=["kazoo", "poll", "multiread"]
    )
    args = ap.parse_args()
    console = Console(width=120)
    table = Table(title="partition state znodes per second (median of rounds)")
    columns = (
        "setup",
        "partitions",
        "read",
        "read CPU per 10,000",
        "controller write",
        "leader write",
        "leader write CPU per 10,000",
    )
    for column in columns:
        table.add_column(column, justify="right")
    original = zk_session.PollHandler
    with ZooKeeperServer() as server:
        for setup in args.setups:
            # the session module builds its kazoo client with this class
            handler = SequentialThreadingHandler if setup == "kazoo" else original
            zk_session.PollHandler = handler  # type: ignore[misc]
            try:
                for size in args.partitions:
                    r = run(server.connect_string, size, args.rounds, multi_read=setup == "multiread")
                    table.add_row(
                        setup,
                        f"{size:,}",
                        f"{r['read']:,.0f}/s",
                        f"{r['read CPU']:.2f} s",
                        f"{r['controller write']:,.0f}/s",
                        f"{r['leader write']:,.0f}/s",
                        f"{r['leader write CPU']:.2f} s",
                    )
            finally:
                zk_session.PollHandler = original  # type: ignore[misc]
    console.print(table)


if __name__ == "__main__":
    main()
