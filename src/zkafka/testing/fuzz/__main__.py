"""`python -m zkafka.testing.fuzz`: fuzz a broker's wire protocol (see `docs/reliability.md`).

By default ZooKeeper and one broker are started in a temporary directory and stopped afterwards;
`--bootstrap-server host:port` targets a running broker instead (add `--broker-pid` and
`--broker-log` for the crash, RSS and traceback checks). Exit status: 0 when nothing was found,
1 on any finding, 2 when the broker could not be set up.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from zkafka.testing.fuzz import FUZZ_BROKER_OVERRIDES, fuzz, load_frames, summary, target_of
from zkafka.testing.fuzz.mutate import Wire
from zkafka.testing.fuzz.runner import Case, FuzzConfig, Target, metadata_probe, run_case


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m zkafka.testing.fuzz", description=__doc__.splitlines()[0])
    p.add_argument("--frames", type=int, default=100_000, help="frames to send (default 100000)")
    p.add_argument("--seed", type=int, default=1, help="the campaign's seed (default 1)")
    p.add_argument("--budget-s", type=float, default=600.0, help="stop sending after this many seconds")
    p.add_argument("--concurrency", type=int, default=8, help="connections in flight at once")
    p.add_argument("--check-every", type=int, default=500, help="frames between oracle checks")
    p.add_argument("--rss-growth-mb", type=float, default=64.0, help="RSS growth that counts as a finding")
    p.add_argument("--findings-dir", type=Path, default=Path("build/fuzz-findings"))
    p.add_argument("--case", type=int, action="append", help="run only this case of the seed (repeatable)")
    p.add_argument("--replay", type=Path, help="send the frames of a findings' frames.hex, then check")
    p.add_argument("--bootstrap-server", help="host:port of a running broker to fuzz instead")
    p.add_argument("--broker-pid", type=int, help="with --bootstrap-server: the broker's pid")
    p.add_argument("--broker-log", type=Path, help="with --bootstrap-server: the broker's log file")
    p.add_argument(
        "--takeover",
        action="store_true",
        help="let controller-to-broker requests and ControlledShutdown win (default: fenced)",
    )
    p.add_argument("--brokers", type=int, default=1, help="brokers to start (the first is fuzzed)")
    p.add_argument("--keep", action="store_true", help="keep the temporary cluster directory")
    return p


def _replay(target: Target, path: Path) -> int:
    async def go() -> str | None:
        for i, frames in enumerate(load_frames(path)):
            wires = [Wire(f, "replay", -1, -1, None) for f in frames]
            res = await run_case(Case(0, i, wires), target.host, target.port, 1.0)
            print(
                f"connection {i}: {len(frames)} frames, {res.responses} responses, "
                f"{'closed by the broker' if res.closed_by_broker else 'open'}"
            )
        await asyncio.sleep(0.5)
        return await metadata_probe(target.host, target.port)

    problem = asyncio.run(go())
    alive = target.alive()
    print(f"broker alive: {alive if alive is not None else 'unknown'}; metadata: {problem or 'ok'}")
    if target.log_path is not None:
        from zkafka.testing.fuzz.runner import LogWatch

        watch = LogWatch(target.log_path)
        watch.offset = 0
        print(f"tracebacks in the broker log: {len(watch.new_tracebacks())}")
    return 1 if problem or alive is False else 0


def _run(target: Target, args: argparse.Namespace) -> int:
    if args.replay is not None:
        return _replay(target, args.replay)
    config = FuzzConfig(
        frames=args.frames,
        seed=args.seed,
        budget_s=args.budget_s,
        concurrency=args.concurrency,
        check_every=args.check_every,
        rss_growth_mb=args.rss_growth_mb,
        findings_dir=args.findings_dir,
        only_cases=args.case,
        takeover=args.takeover,
    )
    report = fuzz(target, config)
    print()
    print(summary(report))
    if not report.ok and target.log_path is not None and target.log_path.exists():
        args.findings_dir.mkdir(parents=True, exist_ok=True)
        shutil.copy(target.log_path, args.findings_dir / f"server-seed{args.seed}.log")
    return 0 if report.ok else 1


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.bootstrap_server:
        host, _, port = args.bootstrap_server.rpartition(":")
        target = Target(host or "127.0.0.1", int(port), pid=args.broker_pid, log_path=args.broker_log)
        return _run(target, args)

    from zkafka.local.zookeeper import ZooKeeperServer
    from zkafka.testing.cluster import running_cluster

    directory = Path(tempfile.mkdtemp(prefix="zkafka-fuzz-"))
    print(f"starting ZooKeeper and {args.brokers} broker(s) in {directory}")
    try:
        with ZooKeeperServer(data_dir=directory / "zookeeper", force_sync=False) as zk:
            try:
                cm = running_cluster(
                    zk, directory / "cluster", brokers=args.brokers, overrides=FUZZ_BROKER_OVERRIDES
                )
                cluster = cm.__enter__()
            except Exception as e:
                print(f"could not start the broker: {e}", file=sys.stderr)
                return 2
            try:
                target = target_of(cluster)
                print(f"broker 1 on port {target.port}, pid {target.pid}, log {target.log_path}")
                return _run(target, args)
            finally:
                cm.__exit__(None, None, None)
    finally:
        if args.keep:
            print(f"cluster directory kept: {directory}")
        else:
            shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
