"""A broker's start-up with many idle replicas, in one process: log loading and the first
LeaderAndIsr (issue 17 item 1).

    PYTHONPATH=src .venv/bin/python benchmarks/replica_startup.py --replicas 33000 [--unclean] \
        [--profile FILE]

Creates `--replicas` empty logs (as topic creation leaves them) under a temporary log dir and
closes the log manager cleanly, or, with `--unclean`, as a SIGKILL leaves it (no clean-shutdown
marker: every log is recovered from its recovery point). Then, timed: opening the log manager
(every log loaded), and applying one LeaderAndIsr that makes this broker leader of half the
replicas and follower of the other half (partitions created, producer state rebuilt, leader
epochs assigned). Printed per phase: wall and CPU seconds and replicas/s. `--profile` writes a
cProfile of both timed phases (`python -m pstats FILE`). What the network, ZooKeeper and the
replica fetchers add is `scale_partitions.py`'s start-up figures.
"""

from __future__ import annotations

import argparse
import cProfile
import shutil
import tempfile
import time
from pathlib import Path

from zkafka.server.partition import LeaderState
from zkafka.server.replica_manager import PartitionStateChange, ReplicaManager
from zkafka.storage.checkpoint import CLEAN_SHUTDOWN_FILE
from zkafka.storage.config import LogConfig
from zkafka.storage.manager import LogManager
from zkafka.storage.naming import TopicPartition

TOPIC_SIZE = 1000


def timed(label: str, n: int, fn, profile: cProfile.Profile | None):  # type: ignore[no-untyped-def]
    w0, c0 = time.perf_counter(), time.process_time()
    if profile is not None:
        profile.enable()
    out = fn()
    if profile is not None:
        profile.disable()
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    print(f"  {label}: {wall:.2f} s wall, {cpu:.2f} s CPU, {n / wall:,.0f} replicas/s", flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--replicas", type=int, default=33_000)
    ap.add_argument("--unclean", action="store_true", help="no clean-shutdown marker: recovery")
    ap.add_argument("--work-dir", help="where the log dir goes (default: the temp dir)")
    ap.add_argument("--profile", help="write a cProfile of the timed phases here")
    args = ap.parse_args()
    n = args.replicas
    tmp = Path(tempfile.mkdtemp(dir=args.work_dir))
    log_dir = tmp / "logs"
    tps = [TopicPartition(f"scale-{i // TOPIC_SIZE:04d}", i % TOPIC_SIZE) for i in range(n)]
    config = LogConfig()
    try:
        print(f"{n:,} replicas under {log_dir}, {'unclean' if args.unclean else 'clean'} restart")
        lm = LogManager([log_dir], config, broker_id=1)
        rm = ReplicaManager(1, lm)
        rm.create_logs(tps)
        lm.checkpoint_recovery_points()
        lm.shutdown()
        if args.unclean:
            (log_dir / CLEAN_SHUTDOWN_FILE).unlink()
        profile = cProfile.Profile() if args.profile else None
        lm = timed("log manager opened", n, lambda: LogManager([log_dir], config, broker_id=1), profile)
        rm = ReplicaManager(1, lm)
        changes = [
            PartitionStateChange(
                tp,
                LeaderState(
                    leader=1 if i % 2 else 2,
                    leader_epoch=1,
                    isr=(1, 2),
                    replicas=(1, 2),
                    zk_version=1,
                    controller_epoch=1,
                ),
            )
            for i, tp in enumerate(tps)
        ]
        timed("first LeaderAndIsr applied", n, lambda: rm.become_leader_or_follower(1, changes), profile)
        if profile is not None:
            profile.dump_stats(args.profile)
        lm.shutdown()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
