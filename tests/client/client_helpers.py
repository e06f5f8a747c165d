"""Shared by the client end-to-end tests: real broker processes on the session ZooKeeper."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import uuid
from collections.abc import Coroutine, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from zkafka.local.launcher import LocalCluster
from zkafka.local.zookeeper import ZooKeeperServer
from zkafka.testing.cluster import TEST_BROKER_DEFAULTS
from zkafka.testing.zookeeper import chrooted

T = TypeVar("T")
ASYNC_TIMEOUT = 60.0


@contextmanager
def local_cluster(
    zookeeper: ZooKeeperServer, directory: Path, brokers: int, overrides: dict[str, str] | None = None
) -> Iterator[LocalCluster]:
    """`brokers` broker processes in a fresh chroot; always stopped (SIGTERM, then SIGKILL)."""
    with chrooted(zookeeper) as connect:
        cluster = LocalCluster(directory)
        cluster.broker_overrides.update(TEST_BROKER_DEFAULTS)
        try:
            cluster.up(brokers, zookeeper=connect, overrides=overrides, timeout=60)
            yield cluster
        finally:
            cluster.down(timeout=20)


def run(coro: Coroutine[Any, Any, T], timeout: float = ASYNC_TIMEOUT) -> T:
    """Run one test coroutine with a deadline (a hang fails the test instead of the session)."""
    return asyncio.run(asyncio.wait_for(coro, timeout))


def topic_name(prefix: str = "t") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def zkafka_cli(
    *args: str, stdin: bytes | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[bytes]:
    """`python -m zkafka.cli.main ARGS` with captured output."""
    return subprocess.run(
        [sys.executable, "-m", "zkafka.cli.main", *args],
        input=stdin,
        capture_output=True,
        timeout=timeout,
        check=False,
    )
