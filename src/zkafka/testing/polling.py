"""Waiting on a condition in tests and benchmarks, with a failure that names what was awaited."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

from kazoo.exceptions import NoNodeError

T = TypeVar("T")


def wait_for(check: Callable[[], T], timeout: float, what: str, interval: float = 0.1) -> T:
    """Poll `check` until it returns something truthy (which is returned); fail naming `what`.
    A znode not there yet or a connection refused counts as not yet."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while True:
        try:
            last = check()
            if last:
                return last
        except (NoNodeError, ConnectionError, OSError) as e:
            last = e
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g}s waiting for {what} (last: {last!r})")
        time.sleep(interval)
