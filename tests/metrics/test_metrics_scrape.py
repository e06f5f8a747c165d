"""zkafka.metrics.scrape, the reader the demo uses, against prometheus_client's parser on the same
rendered registry (escaped label values included)."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from zkafka.metrics import Registry
from zkafka.metrics.broker import RequestMetrics, TopicMetrics
from zkafka.metrics.scrape import parse_text


def test_parse_text_reads_what_prometheus_client_reads() -> None:
    registry = Registry()
    topics = TopicMetrics(registry)
    topics.produced('we"ird\\topic\nname', 7, 700)
    topics.produced("plain", 3, 30)
    RequestMetrics(registry).completed(
        "Produce", 9, "NONE", queue_ms=0.1, local_ms=1, remote_ms=0, throttle_ms=0, total_ms=1.1
    )
    registry.register("kafka_server_replicamanager_underreplicatedpartitions", lambda: [((), 2)])
    text = registry.render()
    ours = {(s.name, tuple(sorted(s.labels.items()))): s.value for s in parse_text(text)}
    theirs = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }
    assert ours == theirs
    assert (
        ours[("kafka_server_brokertopicmetrics_messagesin_total", (("topic", 'we"ird\\topic\nname'),))] == 7
    )


def test_malformed_lines_are_skipped() -> None:
    assert parse_text('a 1\nb{x="1" 2\nc{x="1"} notanumber\n# c\nd{y="2"} 4\n') == [
        *parse_text("a 1"),
        *parse_text('d{y="2"} 4'),
    ]
