"""A new controller's failover at scale, in process and without real brokers: from winning
`/controller` to the dead controller's partitions re-elected and every replica told.

    PYTHONPATH=src .venv/bin/python benchmarks/controller_failover_load.py --partitions 100000 \
        [--rounds 3] [--profile FILE.prof]

One ZooKeeper (the project's launcher); `partitions` partitions (topics of 1,000, RF 2 over
brokers 1-3, leader the first replica, both in the ISR) written straight into it (batched fenced
multis, as the controller creates them). Brokers 2 and 3 are registered with fake endpoints
served by a child process (they answer LeaderAndIsr, UpdateMetadata and StopReplica with
success, so their decoding does not count here); broker 1 is the dead controller: not registered,
leader of a third of the partitions. Per round a `Controller` for broker 2 starts in this process,
wins `/controller` and fails over; the round reports the wall and CPU time from its win to the
end of the elections (their state znodes written: what the issue's aim times), its own log's
split (context loaded, elections, every replica told), the wall time from its win to ready, and
this process's CPU
seconds over the same span (the controller's event loop plus its ZooKeeper threads) and the
collector's share of them (the process's collector tuned as `zkafka server-start` tunes it). Between
rounds every state znode is written back to the initial state. `--profile` writes a cProfile of
the last round's event-loop thread. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import logging
import multiprocessing
import re
import statistics
import sys
import time
import uuid
from pathlib import Path

from zkafka.cli.server import _settle_garbage_collector
from zkafka.controller.controller import Controller
from zkafka.controller.core import ControllerTimings
from zkafka.controller.partition_state_machine import PartitionStateMachine
from zkafka.local.zookeeper import ZooKeeperServer
from zkafka.zk.client import KafkaZkClient
from zkafka.zk.model import (
    BrokerInfo,
    EndPoint,
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    SecurityProtocol,
    TopicPartition,
)
from zkafka.zk.watch_bridge import AsyncWatcher, ZkExecutor

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "controller"))
from controller_harness import FakeBroker, config_for

READY = re.compile(
    r"context loaded in ([\d.]+) s, (\d+) leader\(s\) elected ([\d.]+) s later, "
    r"every replica told ([\d.]+) s after"
)
BROKERS = (1, 2, 3)
TOPIC_SIZE = 1000


def _serve_fake_brokers(broker_ids: tuple[int, ...], ports: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    async def main() -> None:
        brokers = [FakeBroker(b) for b in broker_ids]
        for broker in brokers:
            await broker.start()
            broker.received = _Discard()  # type: ignore[assignment]
        ports.put([b.port for b in brokers])
        await asyncio.Event().wait()

    asyncio.run(main())


class _Discard(list):  # type: ignore[type-arg]
    """The fake brokers keep nothing of what they receive (100,000 partitions per request)."""

    def append(self, _item: object) -> None:
        pass


def assignment_of(partitions: int) -> dict[str, dict[int, list[int]]]:
    topics: dict[str, dict[int, list[int]]] = {}
    for p in range(partitions):
        first = BROKERS[p % 3]
        second = BROKERS[(p + 1 + (p // 3) % 2) % 3]
        topics.setdefault(f"t{p // TOPIC_SIZE:04d}", {})[p % TOPIC_SIZE] = [first, second]
    return topics


def initial_states(
    topics: dict[str, dict[int, list[int]]], epoch: int
) -> dict[TopicPartition, LeaderIsrAndControllerEpoch]:
    return {
        TopicPartition(t, p): LeaderIsrAndControllerEpoch(LeaderAndIsr.initial(r[0], r), epoch)
        for t, parts in topics.items()
        for p, r in parts.items()
    }


def populate(zk: KafkaZkClient, topics: dict[str, dict[int, list[int]]]) -> None:
    zk.create_top_level_paths()
    epoch, epoch_zk_version = zk.register_controller_and_increment_epoch(1)
    for topic, parts in topics.items():
        zk.create_topic_assignment(topic, parts, validate=False)
        # a topic at a time: all 100,000 at once queue more in the server than its 256 MB heap holds
        zk.create_topic_partition_states(initial_states({topic: parts}, epoch), epoch_zk_version)
    zk.delete_controller(epoch_zk_version)


def reset(zk: KafkaZkClient, topics: dict[str, dict[int, list[int]]]) -> None:
    """Every state znode back to leader = first replica, ISR = both (as the dead controller left it)."""
    epoch, _ = zk.get_controller_epoch() or (0, 0)
    epoch, epoch_zk_version = zk.register_controller_and_increment_epoch(1)
    current = zk.get_partition_states(initial_states(topics, epoch))
    wanted = {
        tp: LeaderAndIsr.initial(r[0], r).with_zk_version(current[tp].leader_and_isr.zk_version)
        for t, parts in topics.items()
        for p, r in parts.items()
        if (tp := TopicPartition(t, p)) in current
    }
    items = list(wanted.items())
    for i in range(0, len(items), TOPIC_SIZE * 10):
        zk.update_leader_and_isr(dict(items[i : i + TOPIC_SIZE * 10]), epoch, epoch_zk_version)
    zk.delete_controller(epoch_zk_version)


class GcClock:
    """CPU seconds spent in the garbage collector (all generations, any thread), from gc.callbacks."""

    def __init__(self) -> None:
        self.total = 0.0
        self._start = 0.0
        gc.callbacks.append(self._on_gc)

    def _on_gc(self, phase: str, _info: dict[str, int]) -> None:
        if phase == "start":
            self._start = time.thread_time()
        else:
            self.total += time.thread_time() - self._start


GC = GcClock()


class ElectionClock:
    """When the failover's elections (`trigger_online_partition_state_change`, which returns
    once their state znodes are written) end: wall and process CPU seconds."""

    def __init__(self) -> None:
        self.wall = self.cpu = 0.0
        original = PartitionStateMachine.trigger_online_partition_state_change

        async def timed(psm: PartitionStateMachine) -> object:
            result = await original(psm)
            if not self.wall:
                self.wall, self.cpu = time.perf_counter(), time.process_time()
            return result

        PartitionStateMachine.trigger_online_partition_state_change = timed  # type: ignore[method-assign,assignment]


ELECTIONS = ElectionClock()


class ReadyLine(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.found: asyncio.Future[tuple[float, ...]] | None = None
        self.won_at = 0.0
        self.won_cpu = 0.0
        self.won_gc = 0.0

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if " is the controller, epoch" in message:
            self.won_at, self.won_cpu, self.won_gc = time.perf_counter(), time.process_time(), GC.total
            ELECTIONS.wall = 0.0
            return
        match = READY.search(message)
        if match and self.found is not None and not self.found.done():
            now, cpu = time.perf_counter(), time.process_time()
            values = (
                now - self.won_at,
                cpu - self.won_cpu,
                *map(float, match.groups()),
                GC.total - self.won_gc,
                ELECTIONS.wall - self.won_at,
                ELECTIONS.cpu - self.won_cpu,
            )
            self.found.get_loop().call_soon_threadsafe(self.found.set_result, values)


async def one_round(
    connect: str, ports: dict[int, int], handler: ReadyLine, profile: str | None
) -> tuple[float, ...]:
    zk = await asyncio.to_thread(KafkaZkClient, connect, session_timeout_ms=30_000)
    executor = ZkExecutor("zk-bench")
    watcher = AsyncWatcher(zk, asyncio.get_running_loop())
    for broker_id in (2, 3):
        endpoint = EndPoint("PLAINTEXT", "127.0.0.1", ports[broker_id], SecurityProtocol.PLAINTEXT)
        await executor.call(zk.register_broker, BrokerInfo(broker_id, (endpoint,)))
    handler.found = asyncio.get_running_loop().create_future()
    controller = Controller(
        2,
        zk,
        executor,
        watcher,
        config_for(connect, 2),
        timings=ControllerTimings(request_timeout_s=120.0),
    )
    profiler = cProfile.Profile() if profile else None
    if profiler is not None:
        profiler.enable()
    await controller.start()
    try:
        return await asyncio.wait_for(handler.found, 600)
    finally:
        if profiler is not None:
            profiler.disable()
            profiler.dump_stats(profile)  # type: ignore[arg-type]
        await controller.stop()
        watcher.close()
        await asyncio.to_thread(zk.close)
        executor.shutdown(wait=False)


def listen_to_zkafka(handler: logging.Handler) -> None:
    """zkafka's INFO lines to `handler` alone (the benchmark reads its progress from them)."""
    logging.basicConfig(level=logging.WARNING)
    logger = logging.getLogger("zkafka")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False


def start_fake_brokers(brokers: tuple[int, ...]) -> tuple[multiprocessing.Process, dict[int, int]]:
    """The child process serving fake brokers (a daemon: it dies with us) and broker id -> port."""
    ports_queue: multiprocessing.Queue = multiprocessing.Queue()  # type: ignore[type-arg]
    fakes = multiprocessing.Process(target=_serve_fake_brokers, args=(brokers, ports_queue), daemon=True)
    fakes.start()
    return fakes, dict(zip(brokers, ports_queue.get(timeout=30), strict=True))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--partitions", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--profile", help="cProfile output of the last round (event-loop thread)")
    args = parser.parse_args()
    handler = ReadyLine()
    listen_to_zkafka(handler)
    fakes, ports = start_fake_brokers((2, 3))
    topics = assignment_of(args.partitions)
    _settle_garbage_collector()  # as a broker process does once started
    with ZooKeeperServer() as server:
        connect = f"{server.connect_string}/bench-{uuid.uuid4().hex[:8]}"
        admin = KafkaZkClient(connect, connection_timeout_ms=60_000)
        t0 = time.perf_counter()
        populate(admin, topics)
        print(f"populated {args.partitions} partitions in {time.perf_counter() - t0:.1f} s", flush=True)
        rows = []
        for i in range(args.rounds):
            if i:
                reset(admin, topics)
            profile = args.profile if i == args.rounds - 1 else None
            row = asyncio.run(one_round(connect, ports, handler, profile))
            rows.append(row)
            wall, cpu, loaded, elected, elections, told, in_gc, to_elected, to_elected_cpu = row
            print(
                f"round {i + 1}: won->elected {to_elected:.2f} s wall, {to_elected_cpu:.2f} s CPU; "
                f"won->ready {wall:.2f} s wall, {cpu:.2f} s CPU; loaded {loaded:.2f} s, "
                f"{int(elected)} elected {elections:.2f} s later, told {told:.2f} s after; "
                f"{in_gc:.2f} s CPU in gc",
                flush=True,
            )
        admin.close()
    fakes.terminate()
    fakes.join()
    names = (
        "won->ready wall",
        "won->ready CPU",
        "context loaded",
        "elected",
        "elections",
        "told",
        "gc CPU",
        "won->elected wall",
        "won->elected CPU",
    )
    medians = (f"{n} {statistics.median(r[k] for r in rows):.2f}" for k, n in enumerate(names))
    print("medians: " + ", ".join(medians))


if __name__ == "__main__":
    main()
