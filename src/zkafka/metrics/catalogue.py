"""Every metric a broker exposes, as data: name, kind, labels, help, and an alert for the critical ones.

Names are what the Prometheus JMX exporter's usual Kafka rules make of Kafka's MBeans
(`kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec,topic=t` ->
`kafka_server_brokertopicmetrics_bytesin_total{topic="t"}`), so existing dashboards and alerts work
unchanged. The registry refuses a name that is not here, and docs/operations.md's metrics list is
generated from this table (tests/metrics/test_metrics_docs.py keeps them equal).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import Enum

__all__ = ["BY_NAME", "CATALOGUE", "MS_BUCKETS", "SECONDS_BUCKETS", "STATE_TIMERS", "Kind", "MetricDef"]


class Kind(Enum):
    COUNTER = "counter"
    GAUGE = "gauge"
    HISTOGRAM = "histogram"


MS_BUCKETS: tuple[float, ...] = (0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000)
"""Request and ZooKeeper latencies: sub-millisecond local produce up to a 30 s long-poll."""
SECONDS_BUCKETS: tuple[float, ...] = (0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60)


@dataclass(frozen=True, slots=True)
class MetricDef:
    name: str
    kind: Kind
    labels: tuple[str, ...]
    help: str
    alert: str | None = None
    """A suggested alert (PromQL-ish condition and why), for docs/operations.md."""
    group: str = ""
    """The section of docs/operations.md it is listed under."""


def _group(group: str, *defs: MetricDef) -> list[MetricDef]:
    return [replace(d, group=group) for d in defs]


def _m(name: str, kind: Kind, labels: tuple[str, ...], help: str, alert: str | None = None) -> MetricDef:
    return MetricDef(name, kind, labels, help, alert)


C, G, H = Kind.COUNTER, Kind.GAUGE, Kind.HISTOGRAM
TOPIC = ("topic",)
TP = ("topic", "partition")
GTP = ("consumergroup", "topic", "partition")
BTM = "kafka_server_brokertopicmetrics_"
RM = "kafka_network_requestmetrics_"
RPM = "kafka_server_replicamanager_"
FSC = "kafka_server_fetchsessioncache_"
KC = "kafka_controller_kafkacontroller_"
CS = "kafka_controller_controllerstats_"
CEM = "kafka_controller_controllereventmanager_"
STATE_TIMERS = (
    # Kafka's ControllerStats timer of each controller state, in its value order (the broker change
    # keeps the older name, LeaderElectionRateAndTimeMs)
    ("controllerchangerateandtimems", "controller change (election, failover, resignation)"),
    ("leaderelectionrateandtimems", "broker change (brokers gone or back, their leaders elected)"),
    ("topicchangerateandtimems", "topic change (new topics or partitions brought online)"),
    ("topicdeletionrateandtimems", "topic deletion step"),
    ("partitionreassignmentrateandtimems", "partition reassignment step"),
    ("autoleaderbalancerateandtimems", "periodic preferred-leader check"),
    ("manualleaderbalancerateandtimems", "requested leader election"),
    ("controlledshutdownrateandtimems", "broker's controlled shutdown"),
    ("isrchangerateandtimems", "batch of ISR change notifications"),
    ("leaderandisrresponsereceivedrateandtimems", "LeaderAndIsr response handled"),
    ("logdirchangerateandtimems", "log dir failure notification"),
    ("controllershutdownrateandtimems", "shutdown of the controller"),
)
"""(metric name after the prefix, what one observation times) for each controller state but idle."""

CATALOGUE: tuple[MetricDef, ...] = tuple(
    _group(
        "Topics (per broker)",
        _m(
            f"{BTM}messagesin_total",
            C,
            TOPIC,
            "Records appended by this broker as leader (counted per batch).",
        ),
        _m(f"{BTM}bytesin_total", C, TOPIC, "Bytes of record batches produced to this broker as leader."),
        _m(f"{BTM}bytesout_total", C, TOPIC, "Bytes of record batches sent to consumers (not followers)."),
        _m(f"{BTM}replicationbytesin_total", C, TOPIC, "Bytes this broker appended as a follower."),
        _m(f"{BTM}replicationbytesout_total", C, TOPIC, "Bytes this broker sent to followers."),
        _m(
            f"{BTM}failedproducerequests_total",
            C,
            TOPIC,
            "Produce requests answered with an error, per topic.",
            "rate > 0 for 5m: producers are failing (see the errors_total by error code)",
        ),
        _m(f"{BTM}failedfetchrequests_total", C, TOPIC, "Fetch requests answered with an error, per topic."),
        _m(
            f"{BTM}fetchmessageconversions_total",
            C,
            TOPIC,
            "Records down-converted to magic 0/1 for Fetch v0-v3 clients (counted from batch headers).",
            "a steady rate: old clients make the broker decode and re-encode what it serves",
        ),
    )
    + _group(
        "Requests",
        _m(f"{RM}requests_total", C, ("request", "version"), "Requests handled, by API name and version."),
        _m(
            f"{RM}errors_total",
            C,
            ("request", "error"),
            "Error codes in responses, by API name and error name (NONE counts successes, as in Kafka).",
        ),
        _m(
            f"{RM}totaltimems",
            H,
            ("request",),
            "Time from a request's arrival to its response being sent (ms).",
            "p99 of Produce above 100 ms (acks=all) for 10m: slow disk or slow followers",
        ),
        _m(
            f"{RM}requestqueuetimems",
            H,
            ("request",),
            "Time a request waited behind earlier pipelined ones (ms).",
        ),
        _m(f"{RM}localtimems", H, ("request",), "Time spent handling a request on this broker (ms)."),
        _m(
            f"{RM}remotetimems",
            H,
            ("request",),
            "Time a request was parked waiting on others: acks=all replication, fetch long-poll (ms).",
        ),
        _m(f"{RM}throttletimems", H, ("request",), "Time a response was held back by a client quota (ms)."),
    )
    + _group(
        "Replicas",
        _m(
            f"{RPM}underreplicatedpartitions",
            G,
            (),
            "Partitions led here whose ISR is smaller than the replicas.",
            "> 0 for 5m: a follower is down or cannot keep up; the next failure may lose availability",
        ),
        _m(
            f"{RPM}underminisrpartitioncount",
            G,
            (),
            "Partitions led here whose ISR is below min.insync.replicas (acks=all writes are refused).",
            "> 0 for 1m: acks=all producers are failing with NOT_ENOUGH_REPLICAS",
        ),
        _m(f"{RPM}partitioncount", G, (), "Partitions with a replica on this broker."),
        _m(
            f"{RPM}leadercount",
            G,
            (),
            "Partitions led by this broker.",
            "0 on a live broker for 15m while others lead many: leadership is unbalanced",
        ),
        _m(
            f"{RPM}isrshrinks_total",
            C,
            (),
            "Times a follower was removed from an ISR led here.",
            "rate above 0 that persists: replicas are flapping in and out of sync",
        ),
        _m(f"{RPM}isrexpands_total", C, (), "Times a follower was added back to an ISR led here."),
        _m(f"{FSC}numincrementalfetchsessions", G, (), "Incremental fetch sessions (KIP-227) cached here."),
        _m(
            f"{FSC}numincrementalfetchpartitionscached",
            G,
            (),
            "Partitions cached in this broker's incremental fetch sessions.",
        ),
        _m(
            f"{FSC}incrementalfetchsessionevictions_total",
            C,
            (),
            "Fetch sessions evicted to make room for new ones.",
            "a steady rate: more fetchers than max.incremental.fetch.session.cache.slots, each falling "
            "back to full fetches",
        ),
    )
    + _group(
        "Controller",
        _m(
            f"{KC}activecontrollercount",
            G,
            (),
            "1 on the broker that holds /controller, 0 elsewhere.",
            "sum over brokers != 1 for 1m: no controller (or a split), nothing changes leaders",
        ),
        _m(
            f"{KC}offlinepartitionscount",
            G,
            (),
            "Partitions without a live leader (reported by the controller).",
            "> 0: those partitions can be neither written nor read",
        ),
        _m(f"{KC}preferredreplicaimbalancecount", G, (), "Partitions not led by their preferred replica."),
        _m(f"{KC}globalpartitioncount", G, (), "Partitions in the cluster (reported by the controller)."),
        _m(f"{KC}globaltopiccount", G, (), "Topics in the cluster (reported by the controller)."),
        _m(
            f"{CS}uncleanleaderelections_total",
            C,
            (),
            "Leaders elected from outside the ISR (data may be lost).",
            "increase > 0: records acknowledged before the election may be gone",
        ),
        _m(
            f"{KC}controllerstate",
            G,
            (),
            "What the controller's event task is processing, Kafka's ControllerState: 0 idle, 1 controller "
            "change, 2 broker change, 3 topic change, 4 topic deletion, 5 reassignment, 6 and 7 automatic "
            "and requested leader balance, 8 controlled shutdown, 9 ISR change, 10 LeaderAndIsr response, "
            "11 log dir change, 12 shutdown.",
        ),
        _m(
            f"{CEM}eventqueuesize",
            G,
            (),
            "Events waiting for the controller's event task.",
            "> 100 for 5m on the active controller: it is falling behind, leader changes wait",
        ),
        _m(f"{CEM}eventqueuetimems", H, (), "Time (ms) each event waited in the controller's queue."),
        *(
            _m(f"{CS}{name}", H, (), f"Time (ms) the controller took for each {what}.")
            for name, what in STATE_TIMERS
        ),
    )
    + _group(
        "Logs",
        _m("kafka_log_log_size", G, TP, "Bytes of a partition's log on this broker."),
        _m("kafka_log_log_logstartoffset", G, TP, "First offset of a partition's log on this broker."),
        _m("kafka_log_log_logendoffset", G, TP, "Offset the next record appended to a partition's log gets."),
    )
    + _group(
        "Consumer groups",
        _m(
            "kafka_consumergroup_lag",
            G,
            GTP,
            "Records between a group's committed offset and the partition's high watermark.",
            "growing for 15m (deriv > 0): the group cannot keep up",
        ),
        _m(
            "kafka_consumergroup_lag_seconds",
            G,
            GTP,
            "Age of the oldest record the group has not consumed yet (0 when caught up).",
            "> the group's processing SLO: consumers are late, whatever the record rate",
        ),
        _m(
            "kafka_consumergroup_current_offset",
            G,
            GTP,
            "A group's committed offset (the next record it reads).",
        ),
        _m("kafka_consumergroup_members", G, ("consumergroup",), "Members of a group."),
        _m("kafka_consumergroup_state", G, ("consumergroup", "state"), "1 for a group's current state."),
    )
    + _group(
        "Quotas",
        _m(
            "kafka_server_clientquota_throttletimems_total",
            C,
            ("quota", "user", "client_id"),
            "Milliseconds responses to a client were throttled, by quota type (produce, fetch, request).",
        ),
        _m(
            "kafka_server_clientquota_throttledresponses_total",
            C,
            ("quota", "user", "client_id"),
            "Responses that carried a non-zero throttle time.",
        ),
    )
    + _group(
        "ZooKeeper",
        _m(
            "kafka_server_zookeeperclientmetrics_zookeeperrequestlatencyms",
            H,
            (),
            "Latency of this broker's ZooKeeper requests (ms).",
            "p99 above 1000 ms for 5m: ZooKeeper is overloaded or far away; sessions may expire",
        ),
        _m(
            "kafka_server_sessionexpirelistener_sessionstate",
            G,
            ("state",),
            "1 for the current ZooKeeper session state (CONNECTED, SUSPENDED, LOST).",
            "state!=CONNECTED for 1m: the broker cannot change or learn metadata",
        ),
        _m(
            "kafka_server_sessionexpirelistener_zookeeperexpires_total",
            C,
            (),
            "ZooKeeper session expirations.",
            "increase > 0: the broker re-registered; check GC pauses and ZooKeeper latency",
        ),
        _m(
            "kafka_server_sessionexpirelistener_zookeeperdisconnects_total",
            C,
            (),
            "ZooKeeper disconnections.",
        ),
        _m(
            "zkafka_zk_bad_znode_decodes_total",
            C,
            (),
            "Znode reads whose data did not decode (each is logged once).",
            "increase > 0: someone wrote bad data into ZooKeeper; the log line names the znode",
        ),
    )
    + _group(
        "Process",
        _m("process_cpu_seconds_total", C, (), "User and system CPU time of the broker process (s)."),
        _m("process_resident_memory_bytes", G, (), "Resident memory of the broker process."),
        _m("process_virtual_memory_bytes", G, (), "Virtual memory of the broker process."),
        _m(
            "process_open_fds",
            G,
            (),
            "Open file descriptors (sockets and segment files).",
            "> 80% of process_max_fds: the broker will soon fail to accept connections or open segments",
        ),
        _m("process_max_fds", G, (), "The open file descriptor limit."),
        _m("process_start_time_seconds", G, (), "Start time of the process (Unix seconds)."),
    )
)

BY_NAME: dict[str, MetricDef] = {d.name: d for d in CATALOGUE}
if len(BY_NAME) != len(CATALOGUE):  # pragma: no cover - a table edit gone wrong, caught at import
    raise ValueError("duplicate metric names in the catalogue")
