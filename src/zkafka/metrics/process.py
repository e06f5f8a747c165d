"""process_* gauges (the names every Prometheus client library uses), read from /proc at scrape time;
elsewhere (macOS development) from `resource`, with what it cannot tell left out."""

from __future__ import annotations

import os
import resource
import time
from pathlib import Path

from zkafka.metrics.registry import Registry

__all__ = ["register_process_metrics"]

_PROC = Path("/proc/self")
_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
_PAGE = resource.getpagesize()


def _boot_time() -> float | None:
    try:
        for line in Path("/proc/stat").read_text().splitlines():
            if line.startswith("btime "):
                return float(line.split()[1])
    except OSError:
        pass
    return None


def _stat_fields() -> list[str] | None:
    try:
        text = (_PROC / "stat").read_text()
    except OSError:
        return None
    # The command name (field 2) is in parentheses and may contain spaces: split after its end.
    return text[text.rindex(")") + 2 :].split()


def _cpu_seconds() -> float:
    fields = _stat_fields()
    if fields is None:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return usage.ru_utime + usage.ru_stime
    return (int(fields[11]) + int(fields[12])) / _TICKS  # utime, stime (fields 14 and 15 of stat)


def _memory() -> tuple[int, int] | None:
    """(virtual, resident) bytes."""
    try:
        size, resident, *_ = (_PROC / "statm").read_text().split()
    except OSError:
        return None
    return int(size) * _PAGE, int(resident) * _PAGE


def _open_fds() -> int | None:
    try:
        return len(os.listdir(_PROC / "fd"))
    except OSError:
        return None


def register_process_metrics(registry: Registry) -> None:
    start = _start_time()

    def gauge(name: str, read: object) -> None:
        def samples() -> list[tuple[tuple[()], float]]:
            value = read() if callable(read) else read
            return [] if value is None else [((), value)]

        registry.register(name, samples)

    gauge("process_cpu_seconds_total", _cpu_seconds)
    gauge("process_resident_memory_bytes", lambda: None if (m := _memory()) is None else m[1])
    gauge("process_virtual_memory_bytes", lambda: None if (m := _memory()) is None else m[0])
    gauge("process_open_fds", _open_fds)
    gauge("process_max_fds", resource.getrlimit(resource.RLIMIT_NOFILE)[0])
    gauge("process_start_time_seconds", start)


def _start_time() -> float:
    fields = _stat_fields()
    boot = _boot_time()
    if fields is None or boot is None:
        return time.time()  # registered at startup, so close enough where /proc is missing
    return boot + int(fields[19]) / _TICKS  # starttime (field 22), in ticks since boot
