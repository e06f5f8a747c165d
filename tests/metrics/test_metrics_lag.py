"""Consumer lag as pure functions."""

from __future__ import annotations

from zkafka.metrics import Registry
from zkafka.metrics.lag import (
    GroupSnapshot,
    consumer_group_samples,
    group_lag,
    group_samples,
    lag_samples,
    partition_lag,
    seconds_behind,
)


def test_partition_lag_is_to_the_high_watermark_and_never_negative() -> None:
    assert partition_lag(committed=40, end_offset=100) == 60
    assert partition_lag(committed=100, end_offset=100) == 0
    assert partition_lag(committed=120, end_offset=100) == 0  # high watermark fell (unclean election)


def test_seconds_behind() -> None:
    assert seconds_behind(0, None, 5_000) == 0.0  # caught up: no record is waiting
    assert seconds_behind(3, None, 5_000) is None  # waiting, but how long is unknown
    assert seconds_behind(3, 2_000, 5_000) == 3.0
    assert seconds_behind(3, 9_000, 5_000) == 0.0  # a producer clock ahead of ours
    assert seconds_behind(3, -1, 5_000) is None  # Kafka's "no timestamp"


def test_group_lag_leaves_out_what_it_cannot_know() -> None:
    committed = {("b", 0): 5, ("a", 1): 10, ("a", 0): -1, ("gone", 0): 3}
    end = {("a", 0): 50, ("a", 1): 30, ("b", 0): 5}
    lags = group_lag("g", committed, end, {("a", 1): 1_000}, now_ms=4_000)
    got = [(p.topic, p.partition, p.lag, p.lag_seconds) for p in lags]
    assert got == [("a", 1, 20, 3.0), ("b", 0, 0, 0.0)]


def test_samples_feed_the_registry() -> None:
    registry = Registry()
    lags = group_lag("g", {("t", 0): 7}, {("t", 0): 10})
    for name, found in {**lag_samples(lags), **group_samples([GroupSnapshot("g", {}, "Stable", 2)])}.items():
        registry.register(name, lambda found=found: found)
    text = registry.render()
    assert 'kafka_consumergroup_lag{consumergroup="g",topic="t",partition="0"} 3' in text
    assert 'kafka_consumergroup_current_offset{consumergroup="g",topic="t",partition="0"} 7' in text
    assert 'kafka_consumergroup_state{consumergroup="g",state="Stable"} 1' in text
    assert 'kafka_consumergroup_members{consumergroup="g"} 2' in text
    assert "kafka_consumergroup_lag_seconds{" not in text  # no timestamp, no guess


def test_one_pass_reports_every_group_metric_through_register_group() -> None:
    registry = Registry()
    groups = [
        GroupSnapshot("coordinated", {("t", 0): 90, ("t", 1): 100}, "Stable", 3),
        GroupSnapshot("zk-consumers", {("t", 0): 40}),  # a seeds' ZooKeeper group: no state read
    ]
    calls = []

    def collect() -> dict[str, list[tuple[tuple[str, ...], float]]]:
        calls.append(1)
        return consumer_group_samples(
            groups, {("t", 0): 100, ("t", 1): 100}, {("zk-consumers", "t", 0): 1_000}, now_ms=61_000
        )

    registry.register_group(
        [
            "kafka_consumergroup_lag",
            "kafka_consumergroup_lag_seconds",
            "kafka_consumergroup_current_offset",
            "kafka_consumergroup_members",
            "kafka_consumergroup_state",
        ],
        collect,
    )
    text = registry.render()
    assert len(calls) == 1
    assert 'kafka_consumergroup_lag{consumergroup="coordinated",topic="t",partition="0"} 10' in text
    assert 'kafka_consumergroup_lag{consumergroup="coordinated",topic="t",partition="1"} 0' in text
    assert 'kafka_consumergroup_lag{consumergroup="zk-consumers",topic="t",partition="0"} 60' in text
    seconds = "kafka_consumergroup_lag_seconds"
    assert f'{seconds}{{consumergroup="zk-consumers",topic="t",partition="0"}} 60.0' in text
    assert f'{seconds}{{consumergroup="coordinated",topic="t",partition="1"}} 0.0' in text
    assert 'kafka_consumergroup_members{consumergroup="coordinated"} 3' in text
    assert 'consumergroup="zk-consumers",state' not in text


def test_a_group_callback_naming_metrics_it_did_not_register_is_left_out() -> None:
    registry = Registry()
    wrong = {"kafka_consumergroup_members": [(("g",), 1)]}
    registry.register_group(["kafka_consumergroup_lag"], lambda: wrong)
    registry.register("kafka_server_replicamanager_leadercount", lambda: [((), 1)])
    text = registry.render()
    assert "kafka_consumergroup_members{" not in text and registry.scrape_failures == 1
    assert "kafka_server_replicamanager_leadercount 1" in text
