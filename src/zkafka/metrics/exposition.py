"""Prometheus text exposition format 0.0.4, written by hand: the format is a few lines of rules, and
owning the writer keeps the scrape free of per-sample objects (10k partitions render in milliseconds,
`benchmarks/metrics_bench.py`). tests/metrics check the output with `prometheus_client.parser`."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

__all__ = ["CONTENT_TYPE", "LabelKey", "escape_help", "format_labels", "format_value"]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

LabelKey = tuple[str, ...] | str
"""The label values of one series, in the metric's label order. A plain str stands for the value of a
metric's only label, so the hot path of per-topic counters builds no tuple."""


def escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def _escape_value(value: str) -> str:
    if "\\" in value or '"' in value or "\n" in value:
        return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return value


def format_labels(names: Sequence[str], key: LabelKey, extra: str = "") -> str:
    """`{a="x",b="y"}` (with `extra`, already formatted, appended), or "" when there is nothing."""
    values: Iterable[object] = (key,) if isinstance(key, str) else key
    parts = [f'{n}="{_escape_value(str(v))}"' for n, v in zip(names, values, strict=True)]
    if extra:
        parts.append(extra)
    return "{" + ",".join(parts) + "}" if parts else ""


def format_value(value: float) -> str:
    if type(value) is int:
        return str(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value))


class LabelCache:
    """The formatted label sets of one metric, remembered between scrapes: a broker's series (its
    partitions, topics, API names) hardly change, so most scrapes format no label at all. Entries of
    series that went away are dropped when the cache grows past twice the last scrape's series."""

    __slots__ = ("_formatted", "names")

    def __init__(self, names: Sequence[str]) -> None:
        self.names = tuple(names)
        self._formatted: dict[LabelKey, str] = {}

    def get(self, key: LabelKey) -> str:
        found = self._formatted.get(key)
        if found is None:
            found = self._formatted[key] = format_labels(self.names, key)
        return found

    def trim(self, live: int) -> None:
        if len(self._formatted) > 2 * live + 1024:
            self._formatted.clear()
