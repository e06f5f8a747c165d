"""One chaos run against a local cluster (or one found through ZooKeeper,
`targets.ProcessCluster`): create a topic, run the workload, apply the faults in turn
(`interval` seconds after the previous one healed), for `duration` seconds and at least until every
listed fault was applied once; then stop, read the whole log back and check it."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from zkafka.chaos.checker import Verdict, check, expected_kinds
from zkafka.chaos.nemesis import ChaosCluster, FaultEvent, LocalNemesis, check_faults
from zkafka.chaos.workload import Workload, read_all
from zkafka.client import AdminClient


@dataclass
class ChaosResult:
    verdict: Verdict
    faults: list[FaultEvent] = field(default_factory=list)
    sent: int = 0
    errors: list[str] = field(default_factory=list)
    topic: str = ""


async def run_chaos(
    cluster: ChaosCluster,
    *,
    duration: float,
    faults: list[str],
    interval: float = 10.0,
    producers: int = 2,
    rate: float = 200.0,
    partitions: int = 3,
    seed: int | None = None,
    session_timeout_s: float = 6.0,
    group_consumers: int = 2,
    acks: str = "all",
    unclean: bool = False,
    min_insync_replicas: int | None = None,
    topic_configs: dict[str, str] | None = None,
    progress: Callable[[str], None] | None = None,
) -> ChaosResult:
    say = progress or (lambda _m: None)
    check_faults(faults, cluster)
    replication = min(3, len(cluster.brokers))
    topic = f"chaos-{uuid.uuid4().hex[:8]}"
    nemesis = LocalNemesis(cluster, topic=topic, seed=seed, session_timeout_s=session_timeout_s)
    async with AdminClient(cluster.bootstrap_servers) as admin:
        min_isr = min_insync_replicas if min_insync_replicas is not None else (2 if replication >= 3 else 1)
        configs = dict(topic_configs or {})
        configs["min.insync.replicas"] = str(min_isr)
        configs["unclean.leader.election.enable"] = "true" if unclean else "false"
        await admin.create_topic(topic, partitions, replication, configs=configs)
    say(
        f"topic {topic}: {partitions} partitions, replication factor {replication}, "
        + ", ".join(f"{k}={v}" for k, v in sorted(configs.items()))
        + f"; producers acks={acks}"
    )
    workload = Workload(
        cluster.bootstrap_servers,
        topic,
        producers=producers,
        rate=rate,
        group_consumers=group_consumers,
        acks=acks,
    )
    stop = asyncio.Event()
    running = asyncio.create_task(workload.run(stop))
    events: list[FaultEvent] = []
    try:
        deadline = time.monotonic() + duration
        turn = 0
        # `duration` is a minimum: the run goes on until every listed fault was applied once
        while not running.done() and (time.monotonic() < deadline or turn < len(faults)):
            await asyncio.sleep(interval)
            if not faults or (time.monotonic() >= deadline and turn >= len(faults)):
                continue
            fault = faults[turn % len(faults)]
            turn += 1
            event = await asyncio.to_thread(nemesis.apply, fault)
            events.append(event)
            say(f"{event.fault} {event.target}: {event.started:.1f}-{event.ended:.1f} s")
    finally:
        stop.set()
        await asyncio.to_thread(nemesis.heal)
        await running
    say(f"{len(workload.acked)} of {workload.sent} records acknowledged; reading the log back")
    final = await read_all(cluster.bootstrap_servers, topic)
    verdict = check(
        workload.acked,
        final,
        reads=workload.reads,
        commits=workload.commits,
        expected=expected_kinds(
            acks=acks, unclean=unclean, power_loss="power-loss" in faults, min_insync_replicas=min_isr
        ),
    )
    return ChaosResult(verdict, events, workload.sent, workload.errors, topic)
