"""`zkafka zookeeper-start`: run the embedded (Debian) ZooKeeper server in the foreground.

    zkafka zookeeper-start --port 2181 --data-dir /var/lib/zk       # a standalone server
    zkafka zookeeper-start /etc/zk/zoo.cfg                          # any zoo.cfg: one ensemble member

Like Kafka's `zookeeper-server-start.sh zoo.cfg`, a config file is run as given: with
`server.N=host:quorum:election` lines and a `myid` in its dataDir the server joins that ensemble
(`zkafka cluster up --zookeepers 3` writes such files). The Java server's pid is written to
`zookeeper.pid` next to the config (or in --data-dir).

The JVM compiles as ZooKeeper's own scripts let it (C2 for the hot paths: the throughput a
long-running server wants); `--quick-jit` stops at C1, for short-lived local clusters (`zkafka
cluster up` passes it), which then start on less CPU.
"""

from __future__ import annotations

import argparse
import signal
import threading
from pathlib import Path

from zkafka.cli.errors import CliError
from zkafka.local.zookeeper import ZooKeeperServer


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("zookeeper-start", help="start a local ZooKeeper server (or ensemble member)")
    p.add_argument(
        "config",
        nargs="?",
        type=Path,
        metavar="zoo.cfg",
        help="run this ZooKeeper config as given (standalone or one member of an ensemble)",
    )
    p.add_argument("--port", type=int, default=2181, help="client port (default 2181; 0 = any free port)")
    p.add_argument("--data-dir", type=Path, default=None, help="data directory (default: a temporary one)")
    p.add_argument(
        "--quick-jit",
        action="store_true",
        help="stop the JIT at C1 (-XX:TieredStopAtLevel=1): less CPU for a short-lived server, "
        "lower throughput once warm",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.config is not None:
        if not args.config.is_file():
            raise CliError(f"no such ZooKeeper config: {args.config}")
        server = ZooKeeperServer(config_file=args.config, quick_jit=args.quick_jit)
    else:
        server = ZooKeeperServer(port=args.port, data_dir=args.data_dir, quick_jit=args.quick_jit)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    try:
        server.start()
    except ValueError as e:
        raise CliError(str(e)) from None
    print(f"ZooKeeper listening on {server.connect_string} (data dir {server.data_dir})", flush=True)
    try:
        while not stop.wait(0.5):
            if server.process is None or server.process.poll() is not None:
                print("ZooKeeper exited unexpectedly", flush=True)
                return 1
    finally:
        server.stop()
        print("ZooKeeper stopped", flush=True)
    return 0
