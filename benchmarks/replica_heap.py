"""What one idle replica holds on the heap, by allocation site and by type (issue 17 item 1).

    PYTHONPATH=src .venv/bin/python benchmarks/replica_heap.py [--replicas 10000]

In one process, under tracemalloc: `--replicas` logs created (as a LeaderAndIsr's new partitions
are), then one LeaderAndIsr applied that makes this broker leader of half of them and follower
of the other half; then each end's fetch-session entries for them (a follower's
`FetchSessionHandler`, a leader's follower session). Printed: bytes per replica after each step,
the top allocation sites and the gc-tracked objects per replica by type. The broker's RSS per
replica (`scale_partitions.py`) adds the metadata cache, the controller's context on the
controller, and the allocator's fragmentation.
"""

from __future__ import annotations

import argparse
import collections
import gc
import shutil
import tempfile
import tracemalloc
from pathlib import Path

from zkafka.client.fetch_session import FetchSessionHandler
from zkafka.protocol.messages import FetchRequest
from zkafka.server.fetch_sessions import FetchSessionCache, new_context
from zkafka.server.partition import LeaderState
from zkafka.server.replica_manager import PartitionStateChange, ReplicaManager
from zkafka.storage.config import LogConfig
from zkafka.storage.manager import LogManager
from zkafka.storage.naming import TopicPartition


def per_replica(a: tracemalloc.Snapshot, b: tracemalloc.Snapshot, n: int) -> float:
    return sum(st.size_diff for st in b.compare_to(a, "filename")) / n


def top(a: tracemalloc.Snapshot, b: tracemalloc.Snapshot, n: int, count: int) -> None:
    for st in b.compare_to(a, "lineno")[:count]:
        print(f"  {st.size_diff / n:7.0f} B {st.count_diff / n:5.2f} objects  {st.traceback[0]}")


def position(tp: TopicPartition) -> FetchRequest.FetchPartition:
    return FetchRequest.FetchPartition(
        partition=tp.partition,
        current_leader_epoch=1,
        fetch_offset=0,
        log_start_offset=0,
        partition_max_bytes=1 << 20,
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--replicas", type=int, default=10_000)
    ap.add_argument("--top", type=int, default=20)
    args = ap.parse_args()
    n = args.replicas
    tmp = Path(tempfile.mkdtemp())
    try:
        lm = LogManager([tmp], LogConfig(), broker_id=1)
        rm = ReplicaManager(1, lm)
        tps = [TopicPartition(f"scale-{i // 1000:04d}", i % 1000) for i in range(n)]
        gc.collect()
        tracemalloc.start()
        s0 = tracemalloc.take_snapshot()
        types0 = collections.Counter(type(o).__name__ for o in gc.get_objects())
        rm.create_logs(tps)
        gc.collect()
        s1 = tracemalloc.take_snapshot()
        print(f"{n:,} logs created: {per_replica(s0, s1, n):,.0f} B per replica")
        isr = (1, 2)
        changes = [
            PartitionStateChange(
                tp,
                LeaderState(
                    leader=1 if i % 2 else 2,
                    leader_epoch=0,
                    isr=isr,
                    replicas=isr,
                    zk_version=0,
                    controller_epoch=1,
                ),
                True,
            )
            for i, tp in enumerate(tps)
        ]
        rm.become_leader_or_follower(1, changes)
        del changes
        gc.collect()
        s2 = tracemalloc.take_snapshot()
        types2 = collections.Counter(type(o).__name__ for o in gc.get_objects())
        print(f"then the LeaderAndIsr: {per_replica(s0, s2, n):,.0f} B per replica; top sites:")
        top(s0, s2, n, args.top)
        print("gc-tracked objects per replica:")
        for name, c in (types2 - types0).most_common(args.top):
            print(f"  {c / n:5.2f} {name}")
        handler = FetchSessionHandler()
        handler.build({tp: position(tp) for tp in tps[0::2]})
        cache = FetchSessionCache(10)
        context = new_context(
            cache,
            session_id=0,
            epoch=0,
            owner=("User:ANONYMOUS", 2),
            uses_topic_ids=False,
            requested=lambda: {(tp.topic, tp.partition): position(tp) for tp in tps[1::2]},
            forgotten=list,
            now_ms=0,
        )
        context.create_session(0, {})  # type: ignore[union-attr]
        del context
        gc.collect()
        s3 = tracemalloc.take_snapshot()
        print(f"fetch sessions, both ends: {per_replica(s2, s3, n):,.0f} B per replica")
        lm.shutdown()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
