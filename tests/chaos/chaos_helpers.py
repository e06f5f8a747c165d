"""What the `zkafka chaos` tests share: quick failure detection for their brokers, and the CLI run
in a subprocess."""

from __future__ import annotations

import subprocess
import sys

FAST = {
    "zookeeper.session.timeout.ms": "4000",
    "replica.lag.time.max.ms": "2000",
    "replica.fetch.backoff.ms": "200",
    "controlled.shutdown.retry.backoff.ms": "200",
}


def chaos(*args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "zkafka.cli.main", "chaos", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def verdict_count(output: str, kind: str) -> int:
    """The count of `kind` in the verdict table."""
    line = next(line for line in output.splitlines() if line.startswith(f"│ {kind} "))
    return int(line.split("│")[2])
