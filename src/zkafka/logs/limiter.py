"""`RateLimitedLog`: one line per kind of event per window, with a count of what was held back."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass

__all__ = ["RateLimitedLog"]

DEFAULT_WINDOW_S = 60.0
MAX_KINDS = 4096
"""Kinds remembered at once; beyond that the oldest are forgotten (a hostile peer can invent kinds)."""


@dataclass
class _Window:
    opened: float
    held_back: int = 0


class _Windows:
    """One window per kind: `admit` says whether an event opens a new window (and how many events
    the closed one held back), else counts it. Bounded to MAX_KINDS kinds; thread-safe."""

    def __init__(self, window_s: float, clock: Callable[[], float]) -> None:
        self.window_s = window_s
        self.clock = clock
        self.by_kind: dict[Hashable, _Window] = {}
        self.lock = threading.Lock()

    def admit(self, kind: Hashable) -> int | None:
        """None: held back. Otherwise the count the previous window of `kind` held back."""
        now = self.clock()
        with self.lock:
            window = self.by_kind.get(kind)
            if window is not None and now - window.opened < self.window_s:
                window.held_back += 1
                return None
            held_back = 0 if window is None else window.held_back
            self.by_kind.pop(kind, None)
            if len(self.by_kind) >= MAX_KINDS:
                self.by_kind.pop(next(iter(self.by_kind)))
            self.by_kind[kind] = _Window(opened=now)
        return held_back


class RateLimitedLog:
    """Logs the first event of each kind per `window_s`; counts the rest and reports the count with
    the first event logged after the window closes (or on `flush`). Thread-safe.

    `kind` is any hashable that says "the same problem again": ("connection refused", peer) per peer,
    or just "bad frame" for one summary across all peers."""

    def __init__(
        self,
        logger: logging.Logger,
        window_s: float = DEFAULT_WINDOW_S,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._logger = logger
        self._window_s = window_s
        self._clock = clock
        self._windows = _Windows(window_s, clock)

    def warning(self, kind: Hashable, msg: str, *args: object) -> bool:
        return self.log(logging.WARNING, kind, msg, *args)

    def info(self, kind: Hashable, msg: str, *args: object) -> bool:
        return self.log(logging.INFO, kind, msg, *args)

    def error(self, kind: Hashable, msg: str, *args: object) -> bool:
        return self.log(logging.ERROR, kind, msg, *args)

    def log(self, level: int, kind: Hashable, msg: str, *args: object) -> bool:
        """Log `msg % args` unless an event of `kind` was logged less than a window ago. Returns whether
        the line was written."""
        if not self._logger.isEnabledFor(level):
            return False
        held_back = self._windows.admit(kind)
        if held_back is None:
            return False
        if held_back:
            msg += " (%s more like this in the last %s)"
            args = (*args, f"{held_back:,}", _span(self._window_s))
        self._logger.log(level, msg, *args)
        return True

    def flush(self, level: int = logging.WARNING) -> int:
        """Report every count still held back whose window has closed; returns how many were reported.
        Call from a periodic task so a burst that stopped is still summarised."""
        now = self._clock()
        due: list[tuple[Hashable, int]] = []
        with self._windows.lock:
            for kind, window in list(self._windows.by_kind.items()):
                if now - window.opened >= self._window_s:
                    del self._windows.by_kind[kind]
                    if window.held_back:
                        due.append((kind, window.held_back))
        for kind, count in due:
            span = _span(self._window_s)
            self._logger.log(level, "%s more like %r in the last %s", f"{count:,}", kind, span)
        return len(due)


def _span(seconds: float) -> str:
    return f"{seconds:g} s"


class RepeatFilter(logging.Filter):
    """A `logging.Filter` for chatty libraries (kazoo warns once per reconnect attempt while ZooKeeper is
    down), meant for handlers: warnings from loggers under `prefix` with the same logger and message
    template pass once per window; the next one to pass carries the count of those held back."""

    def __init__(
        self,
        prefix: str = "",
        window_s: float = DEFAULT_WINDOW_S,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__()
        self._prefix = prefix
        self._window_s = window_s
        self._windows = _Windows(window_s, clock)

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING or not record.name.startswith(self._prefix):
            return True
        held_back = self._windows.admit((record.name, str(record.msg)))
        if held_back is None:
            return False
        if held_back:
            record.msg = f"{record.msg} ({held_back:,} more like this in the last {_span(self._window_s)})"
        return True
