"""Kafka's `Rate` over a `SampledStat` (org.apache.kafka.common.metrics.stats), integer milliseconds.

The measurement keeps `samples` windows of `window_ms` each. Recording goes into the current window;
a window is complete once `window_ms` has passed since it started, and the next record then starts a
new window, reusing the oldest once there are `samples` of them. A window older than
`samples * window_ms` counts as empty (it is reset when measured).

The rate is the sum over the windows divided by the time they span: from the start of the oldest
window to now, but never less than `samples - 1` full windows. That floor is what keeps a client's
first burst from reading as an enormous rate (one 1 MB request 1 ms after start is 1 MB over 10 s with
Kafka's defaults, not 1 GB/s), and it is why KIP-219's throttle time comes out proportional to the
window: throttle = (rate - bound) / bound * window span.

This is Kafka 2.8's SampledStat (the protocol generation zkafka speaks): a new window starts at the
record that opens it. Kafka 3.x later aligns new windows to multiples of `window_ms` after the previous
one; for a client sending steadily the two measure the same rate.
"""

from __future__ import annotations

__all__ = ["SampledRate"]


class _Sample:
    __slots__ = ("start_ms", "value")

    def __init__(self, start_ms: int) -> None:
        self.start_ms = start_ms
        self.value = 0.0

    def reset(self, now_ms: int) -> None:
        self.start_ms = now_ms
        self.value = 0.0


class SampledRate:
    """Units per second over the sampled windows (Kafka's Rate with a WindowedSum, seconds unit)."""

    __slots__ = ("_current", "_samples", "samples", "window_ms")

    def __init__(self, samples: int, window_ms: int) -> None:
        if samples < 1 or window_ms < 1:
            raise ValueError("a rate needs at least one sample window of at least 1 ms")
        self.samples = samples
        self.window_ms = window_ms
        self._samples: list[_Sample] = []
        self._current = 0

    def record(self, value: float, now_ms: int) -> None:
        if not self._samples:
            self._samples.append(_Sample(now_ms))
        sample = self._samples[self._current]
        if now_ms - sample.start_ms >= self.window_ms:  # Kafka's Sample.isComplete (no event window)
            sample = self._advance(now_ms)
        sample.value += value

    def _advance(self, now_ms: int) -> _Sample:
        self._current = (self._current + 1) % self.samples
        if self._current >= len(self._samples):
            self._samples.append(_Sample(now_ms))
        else:
            self._samples[self._current].reset(now_ms)
        return self._samples[self._current]

    def _purge_obsolete(self, now_ms: int) -> None:
        expire_age = self.samples * self.window_ms
        for sample in self._samples:
            if now_ms - sample.start_ms >= expire_age:
                sample.reset(now_ms)

    def window_span_ms(self, now_ms: int) -> int:
        """Kafka's Rate.windowSize: the time the measurement divides by."""
        self._purge_obsolete(now_ms)
        oldest = min((s.start_ms for s in self._samples), default=now_ms)
        elapsed = now_ms - oldest
        full_windows = elapsed // self.window_ms
        if full_windows < self.samples - 1:
            elapsed += (self.samples - 1 - full_windows) * self.window_ms
        return elapsed

    def total(self, now_ms: int) -> float:
        self._purge_obsolete(now_ms)
        return sum(s.value for s in self._samples)

    def measure(self, now_ms: int) -> float:
        """Units per second now."""
        span_ms = self.window_span_ms(now_ms)
        return self.total(now_ms) / (span_ms / 1000) if span_ms > 0 else 0.0

    def last_recorded_ms(self) -> int | None:
        """Start of the current window (for expiring idle measurements)."""
        return self._samples[self._current].start_ms if self._samples else None
