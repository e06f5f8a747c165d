"""The broker's hot-path counters as one object per concern, so a handler makes one call per request
(or per partition batch) and the call is a few dict bumps. The server creates these at startup and
calls them (see the wiring notes in `zkafka.metrics`' package docstring)."""

from __future__ import annotations

from bisect import bisect_left

from zkafka.metrics.registry import Registry

__all__ = ["RequestMetrics", "TopicMetrics"]

BTM = "kafka_server_brokertopicmetrics_"
RM = "kafka_network_requestmetrics_"


class TopicMetrics:
    """kafka_server_brokertopicmetrics_* by topic: bumped once per partition batch."""

    __slots__ = (
        "bytes_in",
        "bytes_out",
        "failed_fetch",
        "failed_produce",
        "messages_in",
        "replication_bytes_in",
        "replication_bytes_out",
    )

    def __init__(self, registry: Registry) -> None:
        # The counters' own dicts, keyed by the bare topic name (see exposition.LabelKey).
        self.messages_in = registry.counter(f"{BTM}messagesin_total").values
        self.bytes_in = registry.counter(f"{BTM}bytesin_total").values
        self.bytes_out = registry.counter(f"{BTM}bytesout_total").values
        self.replication_bytes_in = registry.counter(f"{BTM}replicationbytesin_total").values
        self.replication_bytes_out = registry.counter(f"{BTM}replicationbytesout_total").values
        self.failed_produce = registry.counter(f"{BTM}failedproducerequests_total").values
        self.failed_fetch = registry.counter(f"{BTM}failedfetchrequests_total").values

    def produced(self, topic: str, records: int, nbytes: int) -> None:
        """A batch appended as leader; `records` is the batch header's count (no record is decoded)."""
        self.messages_in[topic] = self.messages_in.get(topic, 0) + records
        self.bytes_in[topic] = self.bytes_in.get(topic, 0) + nbytes

    def fetched(self, topic: str, nbytes: int, *, follower: bool) -> None:
        counts = self.replication_bytes_out if follower else self.bytes_out
        counts[topic] = counts.get(topic, 0) + nbytes

    def replicated(self, topic: str, nbytes: int) -> None:
        """Bytes appended as a follower."""
        self.replication_bytes_in[topic] = self.replication_bytes_in.get(topic, 0) + nbytes

    def failed(self, topic: str, *, produce: bool) -> None:
        counts = self.failed_produce if produce else self.failed_fetch
        counts[topic] = counts.get(topic, 0) + 1

    def forget(self, topic: str) -> None:
        """A deleted topic's series go away, as Kafka removes its per-topic MBeans."""
        for name in self.__slots__:
            getattr(self, name).pop(topic, None)


class RequestMetrics:
    """kafka_network_requestmetrics_*: one `completed` call per response sent.

    The five timing histograms' series of one request name are looked up once and kept together, so a
    call is one dict lookup plus, per histogram, a bisect and two list updates (inlined: a method call
    per histogram would double the cost)."""

    __slots__ = ("_bounds", "_histograms", "_series", "errors", "requests")

    def __init__(self, registry: Registry) -> None:
        self.requests = registry.counter(f"{RM}requests_total").values
        self.errors = registry.counter(f"{RM}errors_total").values
        # The order of `completed`'s timing arguments.
        self._histograms = tuple(
            registry.histogram(f"{RM}{name}")
            for name in ("requestqueuetimems", "localtimems", "remotetimems", "throttletimems", "totaltimems")
        )
        self._bounds = self._histograms[0].bounds
        if any(h.bounds != self._bounds for h in self._histograms):
            raise ValueError("request timing histograms must share their buckets")
        self._series: dict[str, tuple[list[float], ...]] = {}

    def completed(
        self,
        request: str,
        version: int,
        error: str,
        *,
        queue_ms: float,
        local_ms: float,
        remote_ms: float,
        throttle_ms: float,
        total_ms: float,
    ) -> None:
        """`request` is Kafka's API name (Produce, Fetch, ...), `error` the response's top-level error name
        (NONE when it succeeded); a response with more error codes reports the others with `error_seen`.
        Times are Kafka's RequestMetrics split: queue (waiting behind earlier pipelined requests), local
        (handling), remote (parked on replication or long-poll), throttle, total."""
        key = (request, version)
        self.requests[key] = self.requests.get(key, 0) + 1
        errors_key = (request, error)
        self.errors[errors_key] = self.errors.get(errors_key, 0) + 1
        series = self._series.get(request)
        if series is None:
            series = self._new_series(request)
        bounds = self._bounds
        queue, local, remote, throttle, total = series
        queue[bisect_left(bounds, queue_ms)] += 1
        queue[-1] += queue_ms
        local[bisect_left(bounds, local_ms)] += 1
        local[-1] += local_ms
        remote[bisect_left(bounds, remote_ms)] += 1
        remote[-1] += remote_ms
        throttle[bisect_left(bounds, throttle_ms)] += 1
        throttle[-1] += throttle_ms
        total[bisect_left(bounds, total_ms)] += 1
        total[-1] += total_ms

    def error_seen(self, request: str, error: str) -> None:
        key = (request, error)
        self.errors[key] = self.errors.get(key, 0) + 1

    def _new_series(self, request: str) -> tuple[list[float], ...]:
        series = tuple(h.series_of(request) for h in self._histograms)
        self._series[request] = series
        return series
