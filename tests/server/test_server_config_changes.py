"""The pure parts of the config write path and dynamic broker configs: IncrementalAlterConfigs'
operations, which broker keys may change at run time and the synonym chain DescribeConfigs lists,
and DescribeLogDirs' answer for an offline log dir. No broker process."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from zkafka.config import BrokerConfig
from zkafka.protocol import ErrorCode, KafkaError
from zkafka.protocol.messages import DescribeLogDirsRequest, IncrementalAlterConfigsRequest
from zkafka.server.apis import log_dirs
from zkafka.server.apis.config_changes import LIST_TOPIC_CONFIGS, Resource, incremental, replace_all
from zkafka.server.dynamic_config import (
    DEFAULT_CONFIG,
    DYNAMIC_BROKER_CONFIG,
    DYNAMIC_DEFAULT_BROKER_CONFIG,
    STATIC_BROKER_CONFIG,
    DynamicBrokerConfig,
    DynamicConfigError,
)

Op = IncrementalAlterConfigsRequest.AlterableConfig
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
TOPIC = Resource(
    "topic",
    lambda k: k in ("cleanup.policy", "retention.ms", "follower.replication.throttled.replicas"),
    lambda k: k in LIST_TOPIC_CONFIGS,
    lambda k: {"cleanup.policy": "delete"}.get(k, ""),
)


def apply(current: dict[str, str], *ops: tuple[str, int, str | None]) -> dict[str, str]:
    return incremental([Op(name=n, config_operation=o, value=v) for n, o, v in ops])(current, TOPIC)


def test_incremental_operations() -> None:
    assert apply({"retention.ms": "1"}, ("segment.ms", SET, "5")) == {"retention.ms": "1", "segment.ms": "5"}
    assert apply({"retention.ms": "1"}, ("retention.ms", DELETE, None)) == {}
    assert apply({}, ("retention.ms", DELETE, None)) == {}  # deleting what is not set is no error
    assert apply({}, ("cleanup.policy", APPEND, "compact")) == {"cleanup.policy": "delete,compact"}
    assert apply({"cleanup.policy": "compact"}, ("cleanup.policy", APPEND, "compact")) == {
        "cleanup.policy": "compact"
    }
    assert apply({}, ("cleanup.policy", SUBTRACT, "delete")) == {"cleanup.policy": ""}
    assert apply({}, ("follower.replication.throttled.replicas", APPEND, "0:1,1:1")) == {
        "follower.replication.throttled.replicas": "0:1,1:1"
    }
    assert replace_all([Op(name="a", value="1"), Op(name="b", value=None)])({"c": "2"}, TOPIC) == {"a": "1"}


@pytest.mark.parametrize(
    ("ops", "code", "text"),
    [
        (
            [("retention.ms", SET, "1"), ("retention.ms", DELETE, None)],
            ErrorCode.INVALID_REQUEST,
            "duplicate",
        ),
        ([("retention.ms", 7, "1")], ErrorCode.INVALID_REQUEST, "operation type"),
        ([("retention.ms", SET, None)], ErrorCode.INVALID_REQUEST, "Null value"),
        ([("retention.ms", APPEND, "1")], ErrorCode.INVALID_REQUEST, "append is not allowed"),
        ([("retention.ms", SUBTRACT, "1")], ErrorCode.INVALID_REQUEST, "subtract is not allowed"),
        ([("no.such", APPEND, "1")], ErrorCode.INVALID_CONFIG, "Unknown topic config name"),
    ],
)
def test_incremental_refusals(ops: list[tuple[str, int, str | None]], code: ErrorCode, text: str) -> None:
    with pytest.raises(KafkaError) as e:
        apply({}, *ops)
    assert e.value.code == code and text in e.value.message


def dynamic(static: dict[str, str] | None = None) -> DynamicBrokerConfig:
    cfg = BrokerConfig.from_properties({"zookeeper.connect": "zk:2181", "broker.id": "1", **(static or {})})
    logs = SimpleNamespace(default_config=cfg.log_config())
    return DynamicBrokerConfig(cfg, 1, None, logs, None, lambda c: c.close())  # type: ignore[arg-type]


def test_only_dynamic_keys_with_good_values_are_accepted() -> None:
    d = dynamic()
    assert d.check({"log.retention.ms": "1000", "num.io.threads": "4"}, per_broker=True).retention_ms == 1000
    for bad in ({"broker.id": "2"}, {"no.such.key": "1"}, {"log.dirs": "/x"}):
        with pytest.raises(DynamicConfigError, match="Cannot update these configs dynamically"):
            d.check(bad, per_broker=True)
    for bad in ({"num.io.threads": "0"}, {"log.retention.ms": "soon"}, {"log.cleanup.policy": "shred"}):
        with pytest.raises(DynamicConfigError):
            d.check(bad, per_broker=False)


def test_synonyms_in_kafkas_order() -> None:
    d = dynamic({"log.retention.hours": "48"})
    d.per_broker, d.defaults = {"log.retention.ms": "1000"}, {"log.retention.minutes": "30"}
    assert d.synonyms("log.retention.ms") == [
        ("log.retention.ms", "1000", DYNAMIC_BROKER_CONFIG),
        ("log.retention.minutes", "30", DYNAMIC_DEFAULT_BROKER_CONFIG),
        ("log.retention.hours", "48", STATIC_BROKER_CONFIG),
        ("log.retention.hours", "168", DEFAULT_CONFIG),
    ]
    # a lower-precedence synonym drops what comes before its own name, as Kafka's dropWhile does
    assert d.synonyms("log.retention.hours") == [
        ("log.retention.hours", "48", STATIC_BROKER_CONFIG),
        ("log.retention.hours", "168", DEFAULT_CONFIG),
    ]
    assert d.synonyms("log.retention.minutes", per_broker=False)[0] == (
        "log.retention.minutes",
        "30",
        DYNAMIC_DEFAULT_BROKER_CONFIG,
    )
    assert d.synonyms("log.retention.ms", per_broker=False) == []  # dropped up to its own name
    assert d.synonyms("num.io.threads") == [("num.io.threads", "8", DEFAULT_CONFIG)]
    assert d.synonyms("advertised.listeners") == []  # Kafka's default is null: no synonym


def test_describe_log_dirs_reports_an_offline_dir(tmp_path: Path) -> None:
    online, offline = tmp_path / "a", tmp_path / "gone"
    online.mkdir()
    logs: Any = SimpleNamespace(log_dirs=[online, offline], all_logs=dict, log_dir_of=lambda t, p: None)
    ctx: Any = SimpleNamespace(services=SimpleNamespace(logs=logs))
    answer = log_dirs.handle(ctx, DescribeLogDirsRequest(topics=None))
    assert [(r.log_dir, r.error_code, r.topics) for r in answer.results] == [
        (str(online), ErrorCode.NONE, []),
        (str(offline), ErrorCode.KAFKA_STORAGE_ERROR, []),
    ]
