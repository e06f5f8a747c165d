"""A broker's start-up with many idle replicas, in one process: log loading and the first
LeaderAndIsr (issue 17 item 1).

    PYTHONPATH=src .venv/bin/python benchmarks/replica_startup.py --replicas 33000 [--unclean] \
        [--written 3000] [--rounds 3] [--work-dir DIR | --log-dir DIR] [--profile FILE]

Makes `--replicas` logs under a temporary log dir, of which `--written` (spread evenly) get a
few small batches (a replica never written has no directory, as after a topic's creation), and
closes the log manager cleanly, or, with `--unclean`, as a SIGKILL leaves it: the maker is a
forked child that exits without closing anything after checkpointing the recovery points, and
half of the written logs get more batches after that checkpoint (a tail recovery must
re-validate). Then, timed, once per `--rounds`, each in a fresh forked process so nothing is
cached in the interpreter: opening the log manager (every log loaded), and applying one
LeaderAndIsr that makes this broker leader of half the replicas and follower of the other half
(partitions created, producer state rebuilt, leader epochs assigned), with the collector settled
as a started broker's is. With `--written 0` that LeaderAndIsr is what a topic's creation costs a
broker per new replica, less the request's decoding and the replica fetchers. The timed process
exits without closing (a clean round puts the clean-shutdown marker back first), so every round
loads the same files. Printed per phase and round: wall and CPU seconds (`time.process_time`) and
replicas/s. `--profile` writes a cProfile of both phases of the first round (`python -m pstats
FILE`). What the network, ZooKeeper and the replica fetchers add is `scale_partitions.py`'s
start-up figures.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import shutil
import sys
import tempfile
import time
import traceback
from pathlib import Path

from zkafka.cli.server import _settle_garbage_collector
from zkafka.records.batch import validate_batches
from zkafka.records.record import simple_batch
from zkafka.server.partition import LeaderState
from zkafka.server.replica_manager import PartitionStateChange, ReplicaManager
from zkafka.storage.checkpoint import CLEAN_SHUTDOWN_FILE
from zkafka.storage.config import LogConfig
from zkafka.storage.log import Log
from zkafka.storage.manager import LogManager
from zkafka.storage.naming import TopicPartition

TOPIC_SIZE = 1000
BATCHES_FLUSHED = 5
BATCHES_TAIL = 3


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


def append_some(lg: Log, batches: int) -> None:
    for i in range(batches):
        buf = bytearray(simple_batch([(b"k%d" % i, b"v" * 100)] * 10, timestamp=int(time.time() * 1000)))
        lg.append(buf, validate_batches(buf), leader_epoch=0)


def in_child(fn) -> None:  # type: ignore[no-untyped-def]
    """Run `fn` in a forked process that ends with `os._exit`: nothing is closed, as a SIGKILL."""
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            fn()
            code = 0
        except BaseException:
            traceback.print_exc()
        finally:
            sys.stdout.flush()
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    if status:
        raise SystemExit(f"child failed ({status})")


def make(log_dir: Path, tps: list[TopicPartition], written: int, unclean: bool) -> None:
    config = LogConfig()
    lm = LogManager([log_dir], config, broker_id=1)
    rm = ReplicaManager(1, lm)
    rm.create_logs(tps)
    step = max(1, len(tps) // written) if written else 0
    chosen = [lm.log_or_raise(*tps[i]) for i in range(0, len(tps), step)][:written] if written else []
    for lg in chosen:
        append_some(lg, BATCHES_FLUSHED)
        lg.flush()
    lm.checkpoint_recovery_points()
    if not unclean:
        lm.shutdown()
        return
    for lg in chosen[::2]:  # past the checkpointed recovery point: re-validated by the next load
        append_some(lg, BATCHES_TAIL)


def start(
    log_dir: Path, tps: list[TopicPartition], unclean: bool, profile_to: str | None, recovery_threads: int
) -> None:
    if not unclean:
        (log_dir / CLEAN_SHUTDOWN_FILE).touch()
    config = LogConfig()
    n = len(tps)
    profile = cProfile.Profile() if profile_to else None
    # passed only when set: the base tree of an A/B run may not take it
    extra = {"recovery_threads": recovery_threads} if recovery_threads != 1 else {}
    lm = timed("log manager opened", n, lambda: LogManager([log_dir], config, broker_id=1, **extra), profile)
    rm = ReplicaManager(1, lm)
    _settle_garbage_collector()  # as a broker process does once started (logs loaded)
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
    if profile is not None and profile_to:
        profile.dump_stats(profile_to)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--replicas", type=int, default=33_000)
    ap.add_argument("--written", type=int, default=0, help="replicas holding a few batches")
    ap.add_argument("--unclean", action="store_true", help="as a SIGKILL leaves it: recovery")
    ap.add_argument(
        "--recovery-threads", type=int, default=1, help="num.recovery.threads.per.data.dir (listing threads)"
    )
    ap.add_argument("--rounds", type=int, default=1, help="timed start-ups of the same files")
    ap.add_argument("--work-dir", help="where the log dir goes (default: the temp dir)")
    ap.add_argument("--profile", help="write a cProfile of the first round here")
    ap.add_argument(
        "--log-dir",
        help="use (and keep) this log dir; made only if missing (A/B runs of two trees on the same files)",
    )
    args = ap.parse_args()
    n = args.replicas
    tmp = None if args.log_dir else Path(tempfile.mkdtemp(dir=args.work_dir))
    log_dir = Path(args.log_dir) if args.log_dir else tmp / "logs"  # type: ignore[operator]
    tps = [TopicPartition(f"scale-{i // TOPIC_SIZE:04d}", i % TOPIC_SIZE) for i in range(n)]
    try:
        kind = "unclean (as after SIGKILL)" if args.unclean else "clean"
        print(f"{n:,} replicas ({args.written:,} written) under {log_dir}, {kind} restart", flush=True)
        if not log_dir.exists():
            in_child(lambda: make(log_dir, tps, args.written, args.unclean))
        for r in range(args.rounds):
            print(f" round {r + 1}", flush=True)
            profile_to = args.profile if r == 0 else None
            in_child(lambda: start(log_dir, tps, args.unclean, profile_to, args.recovery_threads))  # noqa: B023 - run now
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
