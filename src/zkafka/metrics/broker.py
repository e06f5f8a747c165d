"""The broker's hot-path counters as one object per concern, so a handler makes one call per request
(or per partition batch) and the call is a few dict bumps. The server creates these at startup and
calls them (see the wiring notes in `zkafka.metrics`' package docstring)."""

from __future__ import annotations

from zkafka.metrics.registry import Registry

__all__ = ["RequestMetrics", "TopicMetrics"]

BTM = "kafka_server_brokertopicmetrics_"
RM = "kafka_network_requestmetrics_"


class TopicMetrics:
    """kafka_server_brokertopicmetrics_* by topic: bumped once per partition batch."""

    __slots__ = ("bytes_in", "bytes_out", "failed_fetch", "failed_produce", "messages_in",
                 "replication_bytes_in", "replication_bytes_out")

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
    """kafka_network_requestmetrics_*: one `completed` call per response sent."""

    __slots__ = ("errors", "local", "queue", "remote", "requests", "throttle", "total")

    def __init__(self, registry: Registry) -> None:
        self.requests = registry.counter(f"{RM}requests_total").values
        self.errors = registry.counter(f"{RM}errors_total").values
        self.total = registry.histogram(f"{RM}totaltimems")
        self.queue = registry.histogram(f"{RM}requestqueuetimems")
        self.local = registry.histogram(f"{RM}localtimems")
        self.remote = registry.histogram(f"{RM}remotetimems")
        self.throttle = registry.histogram(f"{RM}throttletimems")

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
        """`request` is Kafka's API name (Produce, Fetch, ...), `error` the top-level error name (NONE
        when it succeeded; a request with per-partition errors counts its first, as Kafka counts one
        error per response code it sees: callers with several codes call `error_seen` for the rest)."""
        key = (request, version)
        self.requests[key] = self.requests.get(key, 0) + 1
        self.error_seen(request, error)
        self.queue.observe(request, queue_ms)
        self.local.observe(request, local_ms)
        self.remote.observe(request, remote_ms)
        self.throttle.observe(request, throttle_ms)
        self.total.observe(request, total_ms)

    def error_seen(self, request: str, error: str) -> None:
        key = (request, error)
        self.errors[key] = self.errors.get(key, 0) + 1

