"""`zkafka zookeeper-start`: run the embedded (Debian) ZooKeeper server in the foreground."""

from __future__ import annotations

import argparse
import signal
import threading
from pathlib import Path

from zkafka.local.zookeeper import ZooKeeperServer


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("zookeeper-start", help="start a local ZooKeeper server bound to 127.0.0.1")
    p.add_argument("--port", type=int, default=2181, help="client port (default 2181; 0 = any free port)")
    p.add_argument("--data-dir", type=Path, default=None, help="data directory (default: a temporary one)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    server = ZooKeeperServer(port=args.port, data_dir=args.data_dir)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    server.start()
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
