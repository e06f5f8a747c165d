"""The registry's exposition, read back by an independent parser (prometheus_client's)."""

from __future__ import annotations

import logging

import pytest
from hypothesis import given
from hypothesis import strategies as st
from prometheus_client.parser import text_string_to_metric_families

from zkafka.metrics import CATALOGUE, Kind, Registry
from zkafka.metrics.broker import RequestMetrics, TopicMetrics
from zkafka.metrics.process import register_process_metrics

BYTES_IN = "kafka_server_brokertopicmetrics_bytesin_total"
SIZE = "kafka_log_log_size"


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def test_topic_and_request_counters_move() -> None:
    registry = Registry()
    topics, requests = TopicMetrics(registry), RequestMetrics(registry)
    topics.produced("orders", 10, 1000)
    topics.produced("orders", 5, 500)
    topics.fetched("orders", 700, follower=False)
    topics.fetched("orders", 1500, follower=True)
    topics.replicated("orders", 1500)
    topics.failed("orders", produce=True)
    timing = {"queue_ms": 0.2, "local_ms": 1.5, "remote_ms": 3.0, "throttle_ms": 0.0, "total_ms": 4.7}
    requests.completed("Produce", 9, "NONE", **timing)
    requests.completed("Produce", 9, "NOT_LEADER_OR_FOLLOWER", **timing)
    got = samples(registry.render())
    t = (("topic", "orders"),)
    assert got[("kafka_server_brokertopicmetrics_messagesin_total", t)] == 15
    assert got[(BYTES_IN, t)] == 1500
    assert got[("kafka_server_brokertopicmetrics_bytesout_total", t)] == 700
    assert got[("kafka_server_brokertopicmetrics_replicationbytesout_total", t)] == 1500
    assert got[("kafka_server_brokertopicmetrics_replicationbytesin_total", t)] == 1500
    assert got[("kafka_server_brokertopicmetrics_failedproducerequests_total", t)] == 1
    requests_total = "kafka_network_requestmetrics_requests_total"
    assert got[(requests_total, (("request", "Produce"), ("version", "9")))] == 2
    errors = "kafka_network_requestmetrics_errors_total"
    assert got[(errors, (("error", "NOT_LEADER_OR_FOLLOWER"), ("request", "Produce")))] == 1
    total = "kafka_network_requestmetrics_totaltimems"
    assert got[(f"{total}_count", (("request", "Produce"),))] == 2
    assert got[(f"{total}_sum", (("request", "Produce"),))] == pytest.approx(9.4)
    assert got[(f"{total}_bucket", (("le", "2.5"), ("request", "Produce")))] == 0
    assert got[(f"{total}_bucket", (("le", "5.0"), ("request", "Produce")))] == 2
    assert got[(f"{total}_bucket", (("le", "+Inf"), ("request", "Produce")))] == 2
    topics.forget("orders")
    assert (BYTES_IN, t) not in samples(registry.render())


def test_histogram_buckets_are_cumulative_and_inclusive() -> None:
    registry = Registry()
    h = registry.histogram("kafka_server_zookeeperclientmetrics_zookeeperrequestlatencyms", (1, 10))
    for value in (0.5, 1, 1.0001, 10, 11):
        h.observe((), value)
    got = samples(registry.render())
    name = "kafka_server_zookeeperclientmetrics_zookeeperrequestlatencyms_bucket"
    assert [got[(name, (("le", le),))] for le in ("1.0", "10.0", "+Inf")] == [2, 4, 5]


def test_gauges_come_from_callbacks_at_scrape_time() -> None:
    registry = Registry()
    sizes = {("t", "0"): 100}
    unregister = registry.register(SIZE, lambda: sizes.items())
    assert samples(registry.render())[(SIZE, (("partition", "0"), ("topic", "t")))] == 100
    sizes[("t", "0")] = 250
    assert samples(registry.render())[(SIZE, (("partition", "0"), ("topic", "t")))] == 250
    unregister()
    assert SIZE not in registry.render()


def test_a_failing_callback_costs_only_its_own_samples(caplog: pytest.LogCaptureFixture) -> None:
    registry = Registry()
    registry.register(SIZE, lambda: 1 / 0)  # type: ignore[arg-type, return-value]
    registry.register("kafka_server_replicamanager_leadercount", lambda: [((), 3)])
    with caplog.at_level(logging.ERROR, "zkafka.metrics"):
        text = registry.render()
    assert samples(text)[("kafka_server_replicamanager_leadercount", ())] == 3
    assert registry.scrape_failures == 1 and "kafka_log_log_size" in caplog.text


def test_names_kinds_and_labels_are_the_catalogues() -> None:
    registry = Registry()
    with pytest.raises(ValueError):
        registry.counter("kafka_made_up_total")
    with pytest.raises(ValueError):
        registry.counter(SIZE)  # a gauge
    with pytest.raises(ValueError):
        registry.register("kafka_network_requestmetrics_totaltimems", lambda: [])
    assert registry.counter(BYTES_IN) is registry.counter(BYTES_IN)
    registry.counter(BYTES_IN).inc(("a", "b"))  # two values for one label: a bug in the owner...
    registry.register("kafka_server_replicamanager_leadercount", lambda: [((), 3)])
    text = registry.render()  # ...which costs that metric only
    assert BYTES_IN not in text and "kafka_server_replicamanager_leadercount 3" in text
    assert registry.scrape_failures == 1


def test_catalogue_names_follow_prometheus_conventions() -> None:
    for d in CATALOGUE:
        assert d.name.replace("_", "a").isalnum() and d.name.islower(), d.name
        assert d.name.endswith("_total") == (d.kind is Kind.COUNTER), d.name
        assert d.help.endswith("."), d.name


def test_unlabelled_counters_read_zero_before_any_event() -> None:
    registry = Registry()
    registry.counter("kafka_server_replicamanager_isrshrinks_total")
    assert samples(registry.render())[("kafka_server_replicamanager_isrshrinks_total", ())] == 0


def test_process_metrics() -> None:
    registry = Registry()
    register_process_metrics(registry)
    got = samples(registry.render())
    assert got[("process_resident_memory_bytes", ())] > 1 << 20
    assert got[("process_open_fds", ())] >= 3
    assert got[("process_cpu_seconds_total", ())] > 0
    assert got[("process_max_fds", ())] >= got[("process_open_fds", ())]


@given(st.text(min_size=0, max_size=30))
def test_any_label_value_round_trips(value: str) -> None:
    registry = Registry()
    registry.counter(BYTES_IN).inc(value, 7)
    assert samples(registry.render())[(BYTES_IN, (("topic", value),))] == 7
