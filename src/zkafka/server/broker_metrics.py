"""The broker's Prometheus metrics, wired in (`zkafka.metrics` holds the catalogue, registry and server).

`BrokerMetrics` is what request handlers and the broker's parts bump: they reach it as
`BrokerServices.metrics` (None when `metrics.listener` is unset: then nothing is counted at all).
Each bump is a dict update per request or per partition batch, never per record. Everything else is
read when Prometheus scrapes, from callbacks registered here:

* replica manager: under-replicated, under-min-ISR, partition and leader counts; the size, start and
  end offset of every local log;
* controller: active controller count (1 on the controller only), and, from the active controller,
  offline partitions, preferred-replica imbalance, partition and topic counts; the state of its
  event task and its queue; the time of each event by state (Kafka's ControllerStats timers, the
  broker change's LeaderElectionRateAndTimeMs among them), its queue time and unclean elections
  come in through `Controller.set_observers`;
* ZooKeeper: the latency of every call on the session's thread, the session state, expirations and
  disconnections, bad znodes;
* process_* gauges.

Consumer lag is `server.lag_reporter`'s; `MetricsEndpoint` serves it all on `metrics.listener`.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from zkafka.controller.events import ControllerState
from zkafka.metrics import Registry
from zkafka.metrics.address import parse_metrics_listener
from zkafka.metrics.broker import RequestMetrics, TopicMetrics
from zkafka.metrics.http import MetricsServer
from zkafka.metrics.process import register_process_metrics
from zkafka.protocol import ErrorCode
from zkafka.protocol.api_keys import api_name
from zkafka.server.client_quotas import ThrottleTotals
from zkafka.server.fetch_sessions import FetchSessionCache
from zkafka.server.replica_manager import ReplicaManager
from zkafka.zk.watch_bridge import SessionEvent, SessionState

log = logging.getLogger(__name__)

__all__ = ["BrokerMetrics", "MetricsEndpoint", "request_name"]

BTM = "kafka_server_brokertopicmetrics_"
RPM = "kafka_server_replicamanager_"
KC = "kafka_controller_kafkacontroller_"
CS = "kafka_controller_controllerstats_"
CEM = "kafka_controller_controllereventmanager_"
ZK_LATENCY = "kafka_server_zookeeperclientmetrics_zookeeperrequestlatencyms"
SESSION = "kafka_server_sessionexpirelistener_"

_ERROR_NAMES = {int(e): e.name for e in ErrorCode}
_REQUEST_NAMES: dict[int, str] = {}


def request_name(api_key: int) -> str:
    """Kafka's request name of an api key (`LEADER_AND_ISR` -> `LeaderAndIsr`), the `request` label."""
    name = _REQUEST_NAMES.get(api_key)
    if name is None:
        name = _REQUEST_NAMES[api_key] = "".join(w.capitalize() for w in api_name(api_key).split("_"))
    return name


def error_name(code: int) -> str:
    return _ERROR_NAMES.get(code) or f"UNKNOWN_{code}"


class BrokerMetrics:
    """The counters request handlers and the ISR maintenance bump; one per broker."""

    __slots__ = ("conversions", "isr_expands", "isr_shrinks", "registry", "requests", "topics")

    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self.topics = TopicMetrics(registry)
        self.requests = RequestMetrics(registry)
        self.conversions = registry.counter(f"{BTM}fetchmessageconversions_total").values
        self.isr_shrinks = registry.counter(f"{RPM}isrshrinks_total")
        self.isr_expands = registry.counter(f"{RPM}isrexpands_total")

    def converted(self, topic: str, records: int) -> None:
        """Records of stored batches down-converted for an old Fetch version (counted from the batch
        headers: the conversion itself decodes them, the count does not)."""
        self.conversions[topic] = self.conversions.get(topic, 0) + records

    def forget(self, topic: str) -> None:
        """A topic deleted here: its per-topic series go, as Kafka removes its per-topic MBeans."""
        self.topics.forget(topic)
        self.conversions.pop(topic, None)

    def partition_error(self, request: str, topic: str, code: int, *, produce: bool) -> None:
        """A Produce or Fetch partition answered with an error: Kafka's failed-request count of the
        topic and the error's count under the request."""
        self.topics.failed(topic, produce=produce)
        self.requests.error_seen(request, error_name(code))


class RequestTiming:
    """One request's times, in `time.perf_counter` seconds, reported once its response is written
    (the network layer calls `sent`). Kafka's split: local = handling, remote = parked (acks=all,
    long-poll), queue = waiting behind earlier pipelined responses, total = arrival to written."""

    __slots__ = ("error", "local_end", "metrics", "ready", "request", "start", "throttle_ms", "version")

    def __init__(
        self, metrics: RequestMetrics, request: str, version: int, start: float, local_end: float
    ) -> None:
        self.metrics = metrics
        self.request = request
        self.version = version
        self.start = start
        self.local_end = local_end
        self.ready = local_end
        self.error = "NONE"
        self.throttle_ms = 0

    def response(self, response: Any, ready: float) -> None:
        """The handler's response (a protocol message) is ready: its top-level error and throttle."""
        self.ready = ready
        code = getattr(response, "error_code", 0)
        if code:
            self.error = error_name(code)
        self.throttle_ms = getattr(response, "throttle_time_ms", 0) or 0

    def sent(self, now: float) -> None:
        start, local_end, ready = self.start, self.local_end, self.ready
        self.metrics.completed(
            self.request,
            self.version,
            self.error,
            queue_ms=(now - ready) * 1000,
            local_ms=(local_end - start) * 1000,
            remote_ms=(ready - local_end) * 1000,
            throttle_ms=self.throttle_ms,
            total_ms=(now - start) * 1000,
        )


def register_replica_gauges(registry: Registry, replicas: ReplicaManager) -> None:
    """The replica manager's gauges and the local logs' sizes and offsets, read at scrape time."""

    def counts() -> dict[str, list[tuple[tuple[str, ...], float]]]:
        partitions = under_replicated = under_min_isr = leaders = 0
        for p in replicas.partitions.values():
            if p.state is None:
                continue
            partitions += 1
            if p.is_leader:
                leaders += 1
                isr = len(p.state.isr)
                if isr < len(p.state.replicas):
                    under_replicated += 1
                if isr < p.log.config.min_insync_replicas:
                    under_min_isr += 1
        return {
            f"{RPM}underreplicatedpartitions": [((), under_replicated)],
            f"{RPM}underminisrpartitioncount": [((), under_min_isr)],
            f"{RPM}partitioncount": [((), partitions)],
            f"{RPM}leadercount": [((), leaders)],
        }

    def logs() -> dict[str, list[tuple[tuple[str, ...], float]]]:
        size: list[tuple[tuple[str, ...], float]] = []
        start: list[tuple[tuple[str, ...], float]] = []
        end: list[tuple[tuple[str, ...], float]] = []
        for tp, p in replicas.partitions.items():
            key = (tp.topic, str(tp.partition))
            log_ = p.log
            size.append((key, log_.size))
            start.append((key, log_.log_start_offset))
            end.append((key, log_.log_end_offset))
        return {
            "kafka_log_log_size": size,
            "kafka_log_log_logstartoffset": start,
            "kafka_log_log_logendoffset": end,
        }

    registry.register_group(
        [
            f"{RPM}underreplicatedpartitions",
            f"{RPM}underminisrpartitioncount",
            f"{RPM}partitioncount",
            f"{RPM}leadercount",
        ],
        counts,
    )
    registry.register_group(
        ["kafka_log_log_size", "kafka_log_log_logstartoffset", "kafka_log_log_logendoffset"], logs
    )


def register_fetch_session_metrics(registry: Registry, cache: FetchSessionCache) -> None:
    """Kafka's FetchSessionCache metrics, read at scrape time."""
    names = {
        "sessions": "kafka_server_fetchsessioncache_numincrementalfetchsessions",
        "partitions": "kafka_server_fetchsessioncache_numincrementalfetchpartitionscached",
        "evictions": "kafka_server_fetchsessioncache_incrementalfetchsessionevictions_total",
    }

    def samples() -> dict[str, list[tuple[tuple[str, ...], float]]]:
        return {
            names["sessions"]: [((), len(cache))],
            names["partitions"]: [((), cache.total_partitions)],
            names["evictions"]: [((), cache.evictions)],
        }

    registry.register_group(names.values(), samples)


class ControllerGauges(Protocol):
    """What the controller module reports: `metrics_counts()` is (offline partitions,
    preferred-replica imbalance, partitions, topics) while it is active, else None; `state` what its
    event task is processing, `queue_size` the events waiting for it."""

    @property
    def is_active(self) -> bool: ...

    @property
    def state(self) -> ControllerState: ...

    @property
    def queue_size(self) -> int: ...

    def metrics_counts(self) -> tuple[int, int, int, int] | None: ...


_TIMER_NAMES = {
    # Kafka kept these two states' older timer names
    ControllerState.BROKER_CHANGE: "leaderelection",
    ControllerState.ALTER_PARTITION_REASSIGNMENT: "partitionreassignment",
}


def state_timer(state: ControllerState) -> str:
    """The ControllerStats timer of a controller state: Kafka's `<State>RateAndTimeMs`, as the JMX
    exporter names it."""
    name = _TIMER_NAMES.get(state) or state.name.replace("_", "").lower()
    return f"{CS}{name}rateandtimems"


QUOTA_THROTTLE_MS = "kafka_server_clientquota_throttletimems_total"
QUOTA_THROTTLED = "kafka_server_clientquota_throttledresponses_total"


def register_quota_metrics(registry: Registry, totals: Callable[[], ThrottleTotals]) -> None:
    """Per-client throttle totals of the client quotas (`ClientQuotas.throttle_totals`), read at
    scrape time: the quota managers keep them as plain counts."""

    def read() -> dict[str, list[tuple[tuple[str, ...], float]]]:
        now = totals()
        return {
            QUOTA_THROTTLE_MS: [(key, ms) for key, ms in now.throttle_time_ms.items()],
            QUOTA_THROTTLED: [(key, n) for key, n in now.throttled.items()],
        }

    registry.register_group([QUOTA_THROTTLE_MS, QUOTA_THROTTLED], read)


def register_controller_metrics(
    registry: Registry, controller: ControllerGauges
) -> tuple[Callable[[ControllerState, float, float], None], Callable[[int], None]]:
    """The controller's gauges as callbacks; returns its observers for `Controller.set_observers`:
    of each event (state, ms queued, ms processing) and of unclean elections (how many)."""

    # The cheap gauges each on their own: a scrape that names only them (a dashboard's refresh, a
    # benchmark waiting for an idle controller) must not pay for the walk of every partition below.
    registry.register(f"{KC}activecontrollercount", lambda: [((), 1 if controller.is_active else 0)])
    registry.register(f"{KC}controllerstate", lambda: [((), int(controller.state))])
    registry.register(f"{CEM}eventqueuesize", lambda: [((), controller.queue_size)])

    def counts() -> dict[str, list[tuple[tuple[str, ...], float]]]:
        counted = controller.metrics_counts()  # one walk of the partitions for the four
        offline, imbalance, partitions, topics = counted if counted is not None else (0, 0, 0, 0)
        out = {
            f"{KC}offlinepartitionscount": [((), offline)],
            f"{KC}preferredreplicaimbalancecount": [((), imbalance)],
        }
        if counted is not None:  # the cluster-wide counts only from the one that knows them
            out[f"{KC}globalpartitioncount"] = [((), partitions)]
            out[f"{KC}globaltopiccount"] = [((), topics)]
        return out

    registry.register_group(
        [
            f"{KC}offlinepartitionscount",
            f"{KC}preferredreplicaimbalancecount",
            f"{KC}globalpartitioncount",
            f"{KC}globaltopiccount",
        ],
        counts,
    )
    queue_time = registry.histogram(f"{CEM}eventqueuetimems")
    timers = {s: registry.histogram(state_timer(s)) for s in ControllerState if s is not ControllerState.IDLE}
    unclean = registry.counter(f"{CS}uncleanleaderelections_total")

    def processed(state: ControllerState, queued_ms: float, processing_ms: float) -> None:
        queue_time.observe((), queued_ms)
        timer = timers.get(state)
        if timer is not None:
            timer.observe((), processing_ms)

    def elected_unclean(n: int) -> None:
        unclean.inc((), n)

    return processed, elected_unclean


class ZooKeeperMetrics:
    """Session state, expirations and disconnections (from the session listener, on the loop) and
    the latency of each call on the ZooKeeper thread (`observe_ms`)."""

    def __init__(self, registry: Registry, bad_decodes: Callable[[], int]) -> None:
        self.state = "CONNECTED"  # the broker starts with a connected session
        self._latency = registry.histogram(ZK_LATENCY)
        self._expires = registry.counter(f"{SESSION}zookeeperexpires_total")
        self._disconnects = registry.counter(f"{SESSION}zookeeperdisconnects_total")
        registry.register(f"{SESSION}sessionstate", lambda: [((self.state,), 1)])
        registry.register("zkafka_zk_bad_znode_decodes_total", lambda: [((), bad_decodes())])

    def observe_ms(self, elapsed_ms: float) -> None:
        self._latency.observe((), elapsed_ms)

    def on_session_event(self, event: SessionEvent) -> None:
        if event.state == SessionState.CONNECTED:
            self.state = "CONNECTED"
        elif event.state == SessionState.SUSPENDED:
            self.state = "SUSPENDED"
            self._disconnects.inc()
        else:
            self.state = "LOST" if event.state == SessionState.LOST else "EXPIRED"
            if event.state == SessionState.EXPIRED:
                self._expires.inc()


class MetricsEndpoint:
    """GET /metrics on `metrics.listener`: a scrape first lets `refresh` (consumer lag, which needs
    other brokers' offsets) update what it reports, the `refreshed` metrics, bounded by
    `REFRESH_TIMEOUT_S`, then renders."""

    REFRESH_TIMEOUT_S = 3.0

    def __init__(
        self,
        registry: Registry,
        listener: str,
        refresh: Callable[[], Awaitable[None]] | None = None,
        refreshed: frozenset[str] = frozenset(),
    ) -> None:
        host, port = parse_metrics_listener(listener)
        register_process_metrics(registry)
        self.server = MetricsServer(
            registry.render,
            host,
            port,
            refresh=refresh,
            refresh_timeout_s=self.REFRESH_TIMEOUT_S,
            refreshed=refreshed,
        )

    async def start(self) -> int:
        return await self.server.start()

    async def stop(self) -> None:
        await self.server.stop()
