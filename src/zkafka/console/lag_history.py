"""Lag over time, for the group page's chart: the total lag of each group the console has looked
at, sampled each time its page (or the page's own refresh) asks, kept in memory (bounded: the
newest samples of the most recently looked-at groups), and drawn as an inline SVG by the server
(`chart`: the points and labels; the template draws them; no script, no CDN)."""

from __future__ import annotations

from collections import OrderedDict, deque
from dataclasses import dataclass

MAX_SAMPLES = 360
"""Per group: half an hour of samples at the default 5 s refresh."""
MAX_GROUPS = 200
MIN_SPACING_S = 1.0
"""Samples closer than this (two tabs, a reload) replace the last one instead of piling up."""

Key = tuple[str, str]
"""(kind of group, group id): a broker group and a ZooKeeper one may share a name."""


class LagHistory:
    def __init__(self, max_samples: int = MAX_SAMPLES, max_groups: int = MAX_GROUPS) -> None:
        self._max_samples = max_samples
        self._max_groups = max_groups
        self._groups: OrderedDict[Key, deque[tuple[float, int]]] = OrderedDict()

    def record(self, key: Key, now: float, total_lag: int) -> None:
        samples = self._groups.get(key)
        if samples is None:
            samples = self._groups[key] = deque(maxlen=self._max_samples)
            while len(self._groups) > self._max_groups:
                self._groups.popitem(last=False)  # the group looked at longest ago
        else:
            self._groups.move_to_end(key)
        if samples and now - samples[-1][0] < MIN_SPACING_S:
            samples[-1] = (samples[-1][0], total_lag)
        else:
            samples.append((now, total_lag))

    def samples(self, key: Key) -> list[tuple[float, int]]:
        return list(self._groups.get(key, ()))


@dataclass(frozen=True, slots=True)
class Chart:
    width: int
    height: int
    points: str
    """The polyline's "x,y x,y ..." in the SVG's own coordinates (y grows downwards)."""
    max_lag: int
    last_lag: int
    span_s: float
    samples: int


def chart(samples: list[tuple[float, int]], width: int = 600, height: int = 140) -> Chart | None:
    """The lag line over the samples' time span, scaled to the largest lag (0 at the bottom);
    None until there are two samples to draw a line between."""
    if len(samples) < 2:
        return None
    t0, t1 = samples[0][0], samples[-1][0]
    span = max(t1 - t0, 1e-9)
    top = max(max(lag for _, lag in samples), 1)
    points = " ".join(
        f"{(t - t0) / span * width:.1f},{height - lag / top * height:.1f}" for t, lag in samples
    )
    return Chart(width, height, points, top, samples[-1][1], t1 - t0, len(samples))
