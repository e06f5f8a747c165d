"""A broker's death as the controller sees it, at scale, in process and without real brokers:
from the dead broker's registration vanishing to its leaders re-elected and to the end of the
controller's reaction (ISR removals and requests queued).

    PYTHONPATH=src .venv/bin/python benchmarks/broker_failure_load.py --partitions 30000 \
        [--rounds 3] [--profile FILE.prof]

The set-up of `controller_failover_load.py`: one ZooKeeper (the project's launcher),
`partitions` partitions (topics of 1,000, RF 2 over brokers 1-3, leader the first replica, both
in the ISR) written straight into it; the brokers are fake endpoints served by a child process
(they answer LeaderAndIsr, UpdateMetadata and StopReplica with success). Per round a `Controller`
for broker 1 starts in this process (brokers 1 and 2 registered on its session) and fails over
(nothing to elect); broker 3 is registered on a session of its own, which is then closed: its
`/brokers/ids/3` goes at once, as when ZooKeeper expires a SIGKILLed broker's session, without
the tick's uncertainty. The round reports, from that close, the wall and CPU seconds of this
process (the controller's event loop and its ZooKeeper threads) until the last of broker 3's
~1/3 leaders is written (what issue 17's "<= 1 s beyond the session timeout" times) and until
the controller's reaction ends, and the collector's CPU over it. Between rounds every state
znode is written back to the initial state. `--profile` writes a cProfile of the last round's
event-loop thread over that span. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import logging
import statistics
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from controller_failover_load import GC, assignment_of, listen_to_zkafka, populate, reset, start_fake_brokers
from controller_harness import config_for

from zkafka.cli.server import _settle_garbage_collector
from zkafka.controller.broker_events import BrokerEvents
from zkafka.controller.controller import Controller
from zkafka.controller.core import ControllerTimings
from zkafka.controller.partition_state_machine import PartitionStateMachine
from zkafka.local.zookeeper import ZooKeeperServer
from zkafka.zk.client import KafkaZkClient
from zkafka.zk.model import BrokerInfo, EndPoint, SecurityProtocol
from zkafka.zk.watch_bridge import AsyncWatcher, ZkExecutor

CONTROLLER, OTHER, VICTIM = 1, 2, 3


class Span:
    """(wall, CPU, collector CPU) from `start` to the end of the first election pass and of
    `on_broker_failure` after it (both wrapped at class level, armed only around the kill)."""

    def __init__(self) -> None:
        self.armed = False
        self.start = (0.0, 0.0, 0.0)
        self.elected: tuple[float, float, float] | None = None
        self.done: asyncio.Future[tuple[float, float, float]] | None = None
        self._wrap(PartitionStateMachine, "trigger_online_partition_state_change", self._on_elected)
        self._wrap(BrokerEvents, "on_broker_failure", self._on_done)

    @staticmethod
    def now() -> tuple[float, float, float]:
        return time.perf_counter(), time.process_time(), GC.total

    def arm(self) -> None:
        self.armed, self.elected = True, None
        self.done = asyncio.get_running_loop().create_future()
        self.start = self.now()

    def since(self, end: tuple[float, float, float]) -> tuple[float, float, float]:
        return tuple(e - s for e, s in zip(end, self.start, strict=True))  # type: ignore[return-value]

    def _on_elected(self) -> None:
        if self.armed and self.elected is None:
            self.elected = self.now()

    def _on_done(self) -> None:
        if self.armed and self.done is not None and not self.done.done():
            self.armed = False
            self.done.set_result(self.now())

    @staticmethod
    def _wrap(cls: type, name: str, after: Callable[[], None]) -> None:
        original: Callable[..., Awaitable[Any]] = getattr(cls, name)

        async def wrapped(self: object, *args: Any, **kwargs: Any) -> Any:
            result = await original(self, *args, **kwargs)
            after()
            return result

        setattr(cls, name, wrapped)


SPAN = Span()


def endpoint(port: int) -> tuple[EndPoint, ...]:
    return (EndPoint("PLAINTEXT", "127.0.0.1", port, SecurityProtocol.PLAINTEXT),)


class Ready(logging.Handler):
    """Set when the controller logs that its failover is done."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.event: asyncio.Event | None = None
        self.loop: asyncio.AbstractEventLoop | None = None

    def emit(self, record: logging.LogRecord) -> None:
        if " ready: brokers " in record.getMessage() and self.event is not None and self.loop is not None:
            self.loop.call_soon_threadsafe(self.event.set)


async def one_round(
    connect: str, ports: dict[int, int], ready: Ready, profile: str | None
) -> tuple[float, ...]:
    zk = await asyncio.to_thread(KafkaZkClient, connect, session_timeout_ms=30_000)
    victim = await asyncio.to_thread(KafkaZkClient, connect, session_timeout_ms=30_000)
    executor = ZkExecutor("zk-bench")
    watcher = AsyncWatcher(zk, asyncio.get_running_loop())
    for broker_id in (CONTROLLER, OTHER):
        await executor.call(zk.register_broker, BrokerInfo(broker_id, endpoint(ports[broker_id])))
    await asyncio.to_thread(victim.register_broker, BrokerInfo(VICTIM, endpoint(ports[VICTIM])))
    ready.event, ready.loop = asyncio.Event(), asyncio.get_running_loop()
    controller = Controller(
        CONTROLLER,
        zk,
        executor,
        watcher,
        config_for(connect, CONTROLLER),
        timings=ControllerTimings(request_timeout_s=120.0),
    )
    await controller.start()
    try:
        await asyncio.wait_for(ready.event.wait(), 600)
        await asyncio.sleep(2.0)  # the failover's LeaderAndIsr answers processed
        profiler = cProfile.Profile() if profile else None
        SPAN.arm()
        if profiler is not None:
            profiler.enable()
        await asyncio.to_thread(victim.close)  # /brokers/ids/3 deleted when this returns
        assert SPAN.done is not None
        done = await asyncio.wait_for(SPAN.done, 600)
        if profiler is not None:
            profiler.disable()
            profiler.dump_stats(profile)  # type: ignore[arg-type]
        assert SPAN.elected is not None
        return (*SPAN.since(SPAN.elected), *SPAN.since(done))
    finally:
        await controller.stop()
        watcher.close()
        await asyncio.to_thread(zk.close)
        executor.shutdown(wait=False)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--partitions", type=int, default=30_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--profile", help="cProfile output of the last round (event-loop thread)")
    args = parser.parse_args()
    ready = Ready()
    listen_to_zkafka(ready)
    fakes, ports = start_fake_brokers((CONTROLLER, OTHER, VICTIM))
    topics = assignment_of(args.partitions)
    _settle_garbage_collector()  # as a broker process does once started
    rows = []
    try:
        with ZooKeeperServer() as server:
            connect = f"{server.connect_string}/bench-{uuid.uuid4().hex[:8]}"
            admin = KafkaZkClient(connect, connection_timeout_ms=60_000)
            t0 = time.perf_counter()
            populate(admin, topics)
            print(f"populated {args.partitions} partitions in {time.perf_counter() - t0:.1f} s", flush=True)
            for i in range(args.rounds):
                if i:
                    reset(admin, topics)
                profile = args.profile if i == args.rounds - 1 else None
                row = asyncio.run(one_round(connect, ports, ready, profile))
                rows.append(row)
                e_wall, e_cpu, e_gc, d_wall, d_cpu, d_gc = row
                print(
                    f"round {i + 1}: registration gone -> leaders elected {e_wall:.3f} s wall, "
                    f"{e_cpu:.3f} s CPU ({e_gc:.3f} in gc); -> reaction done {d_wall:.3f} s wall, "
                    f"{d_cpu:.3f} s CPU ({d_gc:.3f} in gc)",
                    flush=True,
                )
            admin.close()
    finally:
        fakes.terminate()
        fakes.join()
    names = ("elected wall", "elected CPU", "elected gc", "done wall", "done CPU", "done gc")
    medians = (f"{n} {statistics.median(r[k] for r in rows):.3f}" for k, n in enumerate(names))
    print("medians: " + ", ".join(medians))


if __name__ == "__main__":
    main()
