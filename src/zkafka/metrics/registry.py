"""`Registry`: the broker's metrics. Counting is a dict bump on the owner's hot path; everything else
(gauges, cumulating histogram buckets, formatting) happens when Prometheus scrapes.

* Counters and histograms live here: owners hold the `Counter`/`Histogram` object and bump it once
  per request or per batch, never per record.
* Values owned elsewhere (a partition's size, the ISR counts, the session state) are read from
  callbacks registered with `register`, called only at scrape time.

Everything runs on the broker's event loop (bumps and scrapes alike), so nothing is locked. Names
must be in `catalogue.CATALOGUE`, which fixes kind, labels and help text.
"""

from __future__ import annotations

import logging
from bisect import bisect_left
from collections.abc import Callable, Iterable, Mapping

from zkafka.metrics.catalogue import BY_NAME, MS_BUCKETS, Kind, MetricDef
from zkafka.metrics.exposition import LabelCache, LabelKey, escape_help, format_labels, format_value

__all__ = ["Counter", "Histogram", "Registry", "SampleCallback", "Samples"]

log = logging.getLogger("zkafka.metrics")

Samples = Iterable[tuple[LabelKey, float]]
SampleCallback = Callable[[], Samples]
GroupCallback = Callable[[], Mapping[str, Samples]]
"""Samples of several metrics computed together (consumer lag: one pass gives lag, offsets, lag seconds)."""


class Counter:
    """Monotonic counts by label values. `values` may be bumped directly where even a call matters."""

    __slots__ = ("definition", "values")

    def __init__(self, definition: MetricDef) -> None:
        self.definition = definition
        # An unlabelled counter reads 0 before its first event: alerts can tell "none" from "absent".
        self.values: dict[LabelKey, int] = {} if definition.labels else {(): 0}

    def inc(self, key: LabelKey = (), amount: int = 1) -> None:
        values = self.values
        values[key] = values.get(key, 0) + amount


class Histogram:
    """Observations by label values; each series is a list of per-bucket counts (not cumulative, so an
    observation touches one slot) followed by the +Inf count and the sum."""

    __slots__ = ("bounds", "definition", "series")

    def __init__(self, definition: MetricDef, bounds: tuple[float, ...]) -> None:
        self.definition = definition
        # Floats only: bisecting a float among mixed ints and floats costs twice as much.
        self.bounds = tuple(float(b) for b in bounds)
        self.series: dict[LabelKey, list[float]] = {}

    def observe(self, key: LabelKey, value: float) -> None:
        series = self.series.get(key)
        if series is None:
            series = self.series_of(key)
        series[bisect_left(self.bounds, value)] += 1  # the first bound >= value: Prometheus' `le`
        series[-1] += value

    def series_of(self, key: LabelKey) -> list[float]:
        """The series of `key`, created empty if new (callers on a hot path may keep it and update it
        as `observe` does)."""
        series = self.series.get(key)
        if series is None:
            series = self.series[key] = [0] * (len(self.bounds) + 2)
        return series


class Registry:
    def __init__(self) -> None:
        self._counters: dict[str, Counter] = {}
        self._histograms: dict[str, Histogram] = {}
        self._callbacks: dict[str, list[SampleCallback]] = {}
        self._groups: list[tuple[frozenset[str], GroupCallback]] = []
        self._labels = {d.name: LabelCache(d.labels) for d in BY_NAME.values()}
        self.scrape_failures = 0

    def counter(self, name: str) -> Counter:
        """The counter `name` (the same object on every call)."""
        found = self._counters.get(name)
        if found is None:
            found = self._counters[name] = Counter(_definition(name, Kind.COUNTER))
        return found

    def histogram(self, name: str, bounds: tuple[float, ...] = MS_BUCKETS) -> Histogram:
        found = self._histograms.get(name)
        if found is None:
            if list(bounds) != sorted(set(bounds)):
                raise ValueError(f"histogram bounds must increase: {bounds}")
            found = self._histograms[name] = Histogram(_definition(name, Kind.HISTOGRAM), bounds)
        return found

    def register(self, name: str, callback: SampleCallback) -> Callable[[], None]:
        """Read `name` (a gauge, or a counter owned elsewhere) from `callback` at every scrape. Several
        callbacks may feed one name (one per log dir, say). Returns the function that unregisters it."""
        _check_readable(name)
        callbacks = self._callbacks.setdefault(name, [])
        callbacks.append(callback)
        return lambda: callbacks.remove(callback) if callback in callbacks else None

    def register_group(self, names: Iterable[str], callback: GroupCallback) -> Callable[[], None]:
        """Like `register` for several metrics at once: `callback` is called once per scrape and returns
        samples by metric name (names it leaves out have no samples this time)."""
        wanted = frozenset(names)
        for name in wanted:
            _check_readable(name)
        entry = (wanted, callback)
        self._groups.append(entry)
        return lambda: self._groups.remove(entry) if entry in self._groups else None

    # -- scrape --------------------------------------------------------------------------------------
    def render(self, names: frozenset[str] | None = None) -> str:
        """The exposition, catalogue order: every metric, or only those in `names` (a scrape's
        `name[]=`, as Prometheus' own clients take it; the others' callbacks are not even called, so
        a broker with 100,000 partitions answers a question about its controller cheaply). A
        callback that fails, or a metric whose samples do not fit its labels (a bug in its owner),
        costs that metric's samples only."""
        out: list[str] = []
        grouped = self._call_groups(names)
        for definition in BY_NAME.values():
            if names is not None and definition.name not in names:
                continue
            try:
                lines = self._lines(definition, grouped)
            except Exception:
                self.scrape_failures += 1
                log.exception("rendering %s failed; it is left out of this scrape", definition.name)
                continue
            if lines is None:
                continue
            out.append(f"# HELP {definition.name} {escape_help(definition.help)}")
            out.append(f"# TYPE {definition.name} {definition.kind.value}")
            out.extend(lines)
        out.append("")
        return "\n".join(out)

    def _lines(
        self, definition: MetricDef, grouped: Mapping[str, list[tuple[LabelKey, float]]]
    ) -> list[str] | None:
        """The sample lines of one metric; None when it has no samples (nothing is written for it)."""
        name = definition.name
        if name in self._histograms:
            return _histogram_lines(self._histograms[name])
        samples: list[tuple[LabelKey, float]] = []
        counter = self._counters.get(name)
        if counter is not None:
            samples.extend(counter.values.items())
        for callback in self._callbacks.get(name, ()):
            samples.extend(self._call(name, callback))
        samples.extend(grouped.get(name, ()))
        if not samples:
            return None
        labels = self._labels[name]
        lines = [f"{name}{labels.get(key)} {format_value(v)}" for key, v in samples]
        labels.trim(len(samples))
        return lines

    def _call_groups(self, wanted: frozenset[str] | None) -> dict[str, list[tuple[LabelKey, float]]]:
        out: dict[str, list[tuple[LabelKey, float]]] = {}
        for names, callback in list(self._groups):
            if wanted is not None and names.isdisjoint(wanted):
                continue
            try:
                found = {name: list(samples) for name, samples in callback().items()}
                unexpected = set(found) - names
                if unexpected:
                    raise ValueError(f"returned metrics it did not register: {sorted(unexpected)}")
            except Exception:
                self.scrape_failures += 1
                log.exception("metrics callback for %s failed; its samples are left out", sorted(names))
                continue
            for name, samples in found.items():
                out.setdefault(name, []).extend(samples)
        return out

    def _call(self, name: str, callback: SampleCallback) -> list[tuple[LabelKey, float]]:
        try:
            return list(callback())
        except Exception:
            self.scrape_failures += 1
            log.exception("metrics callback for %s failed; its samples are left out of this scrape", name)
            return []


def _check_readable(name: str) -> None:
    definition = BY_NAME.get(name)
    if definition is None or definition.kind is Kind.HISTOGRAM:
        raise ValueError(f"{name!r} is not a gauge or counter of the catalogue")


def _definition(name: str, kind: Kind) -> MetricDef:
    definition = BY_NAME.get(name)
    if definition is None or definition.kind is not kind:
        raise ValueError(f"{name!r} is not a {kind.value} of the catalogue")
    return definition


def _histogram_lines(histogram: Histogram) -> list[str]:
    definition = histogram.definition
    name, labels = definition.name, definition.labels
    bounds = [*(format_value(b) for b in histogram.bounds), "+Inf"]
    lines = []
    for key, series in histogram.series.items():
        cumulative = 0
        for bound, count in zip(bounds, series, strict=False):
            cumulative += int(count)
            le = f'le="{bound}"'
            lines.append(f"{name}_bucket{format_labels(labels, key, le)} {cumulative}")
        plain = format_labels(labels, key)
        lines.append(f"{name}_sum{plain} {format_value(float(series[-1]))}")
        lines.append(f"{name}_count{plain} {cumulative}")
    return lines
