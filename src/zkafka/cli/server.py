"""`zkafka server-start server.properties`: run one broker in the foreground until SIGTERM/SIGINT."""

from __future__ import annotations

import argparse
import asyncio
import gc
import logging
import resource
import signal
from pathlib import Path

from zkafka.cli.errors import CliError
from zkafka.config import ConfigError, load_broker_config
from zkafka.zk.errors import ZkError

log = logging.getLogger("zkafka.server")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("server-start", help="run a broker with a Kafka server.properties file")
    p.add_argument("config", type=Path, help="path to server.properties")
    p.add_argument("--override", action="append", default=[], metavar="KEY=VALUE", help="override a property")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        config = load_broker_config(args.config)
        if args.override:
            config = config.with_overrides(dict(_split(o) for o in args.override))
    except (ConfigError, OSError) as e:
        raise CliError(f"cannot start: {e}") from None
    _raise_open_files_limit()
    try:
        import uvloop

        uvloop.install()
    except ImportError:  # pragma: no cover - uvloop is a dependency; stay runnable without it
        pass
    return asyncio.run(_serve(config))


def _raise_open_files_limit() -> None:
    """Soft RLIMIT_NOFILE up to the hard limit, as the JVM does for a Kafka broker by default
    (-XX:+MaxFDLimit): every replica keeps its active segment open and every client a socket, so
    a broker with thousands of partitions needs more than the usual soft limit of 1,024."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard and (hard == resource.RLIM_INFINITY or soft < hard):
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        except (ValueError, OSError) as e:  # a container may refuse; run with what we have
            log.warning("could not raise the open files limit from %d to %d: %s", soft, hard, e)
            return
    log.info("open files limit: %d", resource.getrlimit(resource.RLIMIT_NOFILE)[0])


GC_YOUNG_THRESHOLD = 10_000
"""Allocations between collections of the youngest generation (CPython's default is 700)."""


def _settle_garbage_collector() -> None:
    """Once started, the broker's code, protocol schemas and codecs, configs and loaded logs live
    as long as the process: they go to the permanent generation (`gc.freeze`), so the collector's
    full passes walk only what was made since instead of the 60,000-odd objects of start-up (each
    such pass stalled a broker's event loop for tens of milliseconds, 450+ ms on a loaded
    machine: every request in flight waited). The youngest generation is collected every 10,000
    allocations, not 700: a request's objects die young and reference counting frees them, so
    fewer are walked and promoted while still in flight."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(GC_YOUNG_THRESHOLD, *gc.get_threshold()[1:])


def _split(text: str) -> tuple[str, str]:
    if "=" not in text:
        raise CliError(f"--override expects KEY=VALUE, got {text!r}")
    k, v = text.split("=", 1)
    return k.strip(), v.strip()


async def _serve(config) -> int:  # type: ignore[no-untyped-def]
    from zkafka.security.tls import SslConfigError
    from zkafka.server.broker import Broker
    from zkafka.server.security import SecurityConfigError

    broker = Broker(config)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        await broker.start()
    except Exception as e:
        # Expected failures (ZooKeeper unreachable, broker id in use, a bad log dir) are one line;
        # a traceback only says more for the unexpected ones.
        expected = isinstance(e, ZkError | OSError | SecurityConfigError | SslConfigError)
        log.error("broker failed to start: %s", e, exc_info=None if expected else e)
        await broker.stop()
        raise CliError(f"broker failed to start: {e}") from None
    _settle_garbage_collector()
    print(f"zkafka broker {broker.broker_id} started (cluster {broker.cluster_id})", flush=True)
    await stop.wait()
    await broker.stop()
    return 0
