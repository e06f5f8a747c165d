"""The controller's ZooKeeper work per partition, without brokers: state znodes read, written by the
controller (fenced multis) and written by leaders (pipelined conditional setData), in znodes/s.

    PYTHONPATH=src .venv/bin/python benchmarks/zk_partition_states.py [--partitions 10000 100000]
        [--rounds 3] [--handler poll kazoo]

A fresh ZooKeeper (the project's launcher) and chroot per handler; per size: the state znodes of
`partitions` partitions (topics of 1,000) created with `create_topic_partition_states`, then per round
`get_partition_states` of all (what a new controller reads at failover), `update_leader_and_isr` of
all (an election), `conditional_update_partition_states` of all (leaders' ISR changes). `--handler
kazoo` uses kazoo's own selector-per-call threading handler, `poll` zkafka's (`zk.poll_handler`).
Prints the median of the rounds. Nothing is asserted.
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


def run(connect: str, partitions: int, rounds: int) -> dict[str, float]:
    zk = KafkaZkClient(f"{connect}/bench-{uuid.uuid4().hex[:8]}", connection_timeout_ms=30_000)
    try:
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
        for _ in range(rounds):
            t0 = time.perf_counter()
            states = zk.get_partition_states(tps)
            timings["read"].append(time.perf_counter() - t0)
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
            t0 = time.perf_counter()
            results = zk.conditional_update_partition_states(grown)
            timings["leader write"].append(time.perf_counter() - t0)
            assert all(ok for ok, _ in results.values())
        return {k: partitions / statistics.median(v) for k, v in timings.items()}
    finally:
        zk.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--partitions", type=int, nargs="+", default=[10_000])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--handler", nargs="+", choices=["poll", "kazoo"], default=["kazoo", "poll"])
    args = ap.parse_args()
    console = Console(width=120)
    table = Table(title="partition state znodes per second (median of rounds)")
    for column in ("handler", "partitions", "read", "controller write", "leader write"):
        table.add_column(column, justify="right")
    original = zk_session.PollHandler
    with ZooKeeperServer() as server:
        for handler in args.handler:
            # the session module builds its kazoo client with this class
            zk_session.PollHandler = original if handler == "poll" else SequentialThreadingHandler  # type: ignore[misc]
            try:
                for size in args.partitions:
                    rates = run(server.connect_string, size, args.rounds)
                    table.add_row(handler, f"{size:,}", *(f"{rates[k]:,.0f}/s" for k in rates))
            finally:
                zk_session.PollHandler = original  # type: ignore[misc]
    console.print(table)


if __name__ == "__main__":
    main()
