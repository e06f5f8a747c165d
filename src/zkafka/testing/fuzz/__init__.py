"""A wire-protocol fuzzer for a real broker process (issue 11, item 7; `docs/reliability.md`).

`generate.py` builds valid requests for every (api, version) the broker advertises from the
schemas, `mutate.py` corrupts them (structure-aware and blind) or makes noise, `runner.py`
sends them (one or many frames per connection) and runs the oracle (crash, hang, tracebacks in
the broker log, RSS). `python -m zkafka.testing.fuzz` (`make fuzz`) starts ZooKeeper and one
broker, or targets a running broker with `--bootstrap-server`; the test suite runs a short
fixed-seed campaign (tests/server/test_server_fuzz.py).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Final

from zkafka.local.launcher import LocalCluster
from zkafka.testing.fuzz.generate import FUZZ_TOPICS, RequestGenerator
from zkafka.testing.fuzz.runner import FuzzConfig, Fuzzer, Report, Target, load_frames, run_case, summary

FUZZ_BROKER_OVERRIDES: Final = {
    # CreateTopics, CreatePartitions and auto-creation from fuzzed requests stay bounded: a
    # legitimate request for 100,000 partitions would otherwise be granted, and the run would
    # measure a broker busy creating them instead of one under attack.
    "max.partitions": "2000",
    "max.broker.partitions": "2000",
}
"""Broker settings for fuzz runs (on top of the test defaults)."""

__all__ = [
    "FUZZ_BROKER_OVERRIDES",
    "FuzzConfig",
    "Fuzzer",
    "Report",
    "RequestGenerator",
    "Target",
    "fuzz",
    "load_frames",
    "prepare",
    "run_case",
    "summary",
    "target_of",
]


def target_of(cluster: LocalCluster, broker_id: int = 1) -> Target:
    broker = cluster.brokers[broker_id]
    return Target(
        "127.0.0.1",
        broker.port,
        pid=broker.pid,
        log_path=broker.log_path,
        exit_code=lambda: cluster.broker_exit_code(broker_id),
    )


async def prepare(bootstrap: str) -> None:
    """The fuzz topics with a few records, so Produce, Fetch, ListOffsets and the rest reach real
    logs (already there from an earlier run against the same broker: fine)."""
    from zkafka.client.admin import AdminClient
    from zkafka.client.producer import Producer

    async with AdminClient(bootstrap) as admin:
        existing = set(await admin.list_topics())
        for topic, partitions in zip(FUZZ_TOPICS, (3, 1, 2), strict=True):
            if topic not in existing:
                with contextlib.suppress(Exception):
                    await admin.create_topic(topic, partitions, 1)
    async with Producer(bootstrap, linger_ms=5) as producer:
        for i in range(30):
            await producer.send(FUZZ_TOPICS[i % 2], b"record-%d" % i)
        await producer.flush()


def fuzz(target: Target, config: FuzzConfig, *, setup: bool = True) -> Report:
    if setup:
        asyncio.run(prepare(f"{target.host}:{target.port}"))
    return asyncio.run(Fuzzer(target, config).run())
