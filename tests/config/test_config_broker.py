"""Broker config: Kafka's keys, defaults, precedence rules, checks and output (zkafka.config.broker)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from zkafka.config import (
    BROKER_CONFIG_KEYS,
    BrokerConfig,
    ConfigError,
    Endpoint,
    format_properties,
    load_broker_config,
    parse_properties,
)
from zkafka.config.broker import LOG_CONFIG_SOURCES
from zkafka.storage.config import TOPIC_CONFIG_KEYS, LogConfig

LONG_MAX = 9223372036854775807
ZK = {"zookeeper.connect": "127.0.0.1:2181/kafka"}


def load(**overrides: str) -> BrokerConfig:
    """Config from ZK plus `overrides` given with underscores for dots (log_segment_bytes=...)."""
    return BrokerConfig.from_properties({**ZK, **{k.replace("_", "."): v for k, v in overrides.items()}})


def props(**entries: str) -> dict[str, str]:
    return {**ZK, **entries}


# -- defaults ------------------------------------------------------------------------------------

SEED_1_4_DEFAULTS = [
    ("replica.lag.time.max.ms", "replica_lag_time_max_ms", 30000),
    ("auto.leader.rebalance.enable", "auto_leader_rebalance_enable", True),
    ("leader.imbalance.per.broker.percentage", "leader_imbalance_per_broker_percentage", 10),
    ("leader.imbalance.check.interval.seconds", "leader_imbalance_check_interval_seconds", 300),
    ("log.segment.bytes", "log_segment_bytes", 1073741824),
    ("log.index.interval.bytes", "log_index_interval_bytes", 4096),
    ("log.retention.hours", "log_retention_hours", 168),
    ("log.retention.minutes", "log_retention_minutes", None),
    ("log.retention.ms", "log_retention_ms", None),
    ("log.retention.check.interval.ms", "log_retention_check_interval_ms", 300000),
    ("log.retention.bytes", "log_retention_bytes", -1),
    ("log.cleanup.policy", "log_cleanup_policy", ("delete",)),
    ("num.io.threads", "num_io_threads", 8),
    ("num.replica.fetchers", "num_replica_fetchers", 1),
    ("num.network.threads", "num_network_threads", 3),
    ("log.flush.interval.messages", "log_flush_interval_messages", LONG_MAX),
]


@pytest.mark.parametrize(("key", "attr", "default"), SEED_1_4_DEFAULTS)
def test_seed_section_1_4_defaults(key: str, attr: str, default: object) -> None:
    config = load()
    assert getattr(config, attr) == default
    assert BROKER_CONFIG_KEYS[key].default == default
    assert BROKER_CONFIG_KEYS[key].attr == attr


def test_log_flush_interval_ms_defaults_to_never() -> None:
    config = load()
    assert BROKER_CONFIG_KEYS["log.flush.interval.ms"].default is None
    assert config.log_flush_interval_ms == LONG_MAX  # from log.flush.scheduler.interval.ms
    assert load(log_flush_scheduler_interval_ms="1000").log_flush_interval_ms == 1000
    assert load(log_flush_interval_ms="5", log_flush_scheduler_interval_ms="1000").log_flush_interval_ms == 5


OTHER_DEFAULTS = {
    "broker_id": -1,
    "listeners": (Endpoint("PLAINTEXT", "", 9092, "PLAINTEXT"),),
    "advertised_listeners": (Endpoint("PLAINTEXT", "127.0.0.1", 9092, "PLAINTEXT"),),
    "inter_broker_listener_name": "PLAINTEXT",
    "log_dirs": ("/tmp/kafka-logs",),
    "zookeeper_session_timeout_ms": 18000,
    "zookeeper_connection_timeout_ms": 18000,
    "num_partitions": 1,
    "default_replication_factor": 1,
    "min_insync_replicas": 1,
    "unclean_leader_election_enable": False,
    "auto_create_topics_enable": True,
    "delete_topic_enable": True,
    "message_max_bytes": 1048588,
    "offsets_topic_replication_factor": 3,
    "offsets_topic_num_partitions": 50,
    "broker_rack": None,
    "reserved_broker_max_id": 1000,
    "log_roll_hours": 168,
    "log_index_size_max_bytes": 10485760,
    "log_cleaner_enable": True,
    "log_cleaner_delete_retention_ms": 86400000,
    "log_cleaner_min_cleanable_ratio": 0.5,
    "log_cleaner_backoff_ms": 15000,
    "log_segment_delete_delay_ms": 60000,
    "log_flush_offset_checkpoint_interval_ms": 60000,
    "log_flush_start_offset_checkpoint_interval_ms": 60000,
    "log_message_timestamp_type": "CreateTime",
    "compression_type": "producer",
    "num_recovery_threads_per_data_dir": 1,
    "replica_fetch_max_bytes": 1048576,
    "replica_fetch_wait_max_ms": 500,
    "replica_fetch_min_bytes": 1,
    "replica_fetch_response_max_bytes": 10485760,
    "replica_high_watermark_checkpoint_interval_ms": 5000,
    "replica_fetch_backoff_ms": 1000,
    "socket_request_max_bytes": 104857600,
    "request_timeout_ms": 30000,
    "group_initial_rebalance_delay_ms": 3000,
    "group_min_session_timeout_ms": 6000,
    "group_max_session_timeout_ms": 1800000,
    "offsets_retention_minutes": 10080,
    "offsets_topic_segment_bytes": 104857600,
    "controlled_shutdown_enable": True,
    "controlled_shutdown_max_retries": 3,
    "controlled_shutdown_retry_backoff_ms": 5000,
    "controller_socket_timeout_ms": 30000,
    "queued_max_requests": 500,
    "connections_max_idle_ms": 600000,
    "zookeeper_set_acl": False,
}


def test_other_defaults() -> None:
    config = load()
    assert {attr: getattr(config, attr) for attr in OTHER_DEFAULTS} == OTHER_DEFAULTS
    assert config.zookeeper_connect == "127.0.0.1:2181/kafka"
    assert config.protocol_map == {p: p for p in ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")}


def test_direct_construction_matches_loaded_defaults() -> None:
    loaded = load()
    direct = BrokerConfig(zookeeper_connect=loaded.zookeeper_connect, explicit_keys=loaded.explicit_keys)
    assert direct == loaded


def test_every_row_is_consistent() -> None:
    for name, row in BROKER_CONFIG_KEYS.items():
        assert row.doc and "\n" not in row.doc
        assert row.type.kafka_type in {
            "INT",
            "LONG",
            "SHORT",
            "DOUBLE",
            "BOOLEAN",
            "STRING",
            "LIST",
            "PASSWORD",
        }
        if row.default is not None:  # Kafka's default is itself a valid value, and formats canonically
            text = row.format(row.default)
            assert text is not None and row.format(row.parse(text)) == text, name


# -- precedence ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ({}, 168 * 3600000),
        ({"log.retention.hours": "1"}, 3600000),
        ({"log.retention.hours": "1", "log.retention.minutes": "2"}, 120000),
        ({"log.retention.hours": "1", "log.retention.minutes": "2", "log.retention.ms": "3"}, 3),
        ({"log.retention.minutes": "2", "log.retention.ms": "-1"}, -1),
        ({"log.retention.hours": "-1"}, -1),
        ({"log.retention.minutes": "-5"}, -1),  # every negative value means unlimited
        ({"log.retention.ms": "-1", "log.retention.hours": "0"}, -1),  # hours is not consulted
    ],
)
def test_retention_precedence(given: dict[str, str], expected: int) -> None:
    config = BrokerConfig.from_properties(props(**given))
    assert config.retention_ms == expected
    assert config.log_config().retention_ms == expected


def test_roll_and_jitter_precedence() -> None:
    assert load().roll_ms == 168 * 3600000
    assert load().roll_jitter_ms == 0
    assert load(log_roll_hours="2").roll_ms == 7200000
    assert load(log_roll_hours="2", log_roll_ms="10").roll_ms == 10
    assert load(log_roll_jitter_hours="1").roll_jitter_ms == 3600000
    assert load(log_roll_jitter_hours="1", log_roll_jitter_ms="7").roll_jitter_ms == 7


def test_log_dirs_wins_over_log_dir() -> None:
    assert load(log_dir="/a").log_dirs == ("/a",)
    assert load(log_dir="/a, /b").log_dirs == ("/a", "/b")
    assert load(log_dir="/a", log_dirs="/x, /y,,").log_dirs == ("/x", "/y")


def test_zookeeper_connection_timeout_falls_back_to_session_timeout() -> None:
    assert load(zookeeper_session_timeout_ms="6000").zookeeper_connection_timeout_ms == 6000
    config = load(zookeeper_session_timeout_ms="6000", zookeeper_connection_timeout_ms="100")
    assert config.zookeeper_connection_timeout_ms == 100


def test_zookeeper_connect_is_kept_raw() -> None:
    raw = "zk1:2181,zk2:2182,[::1]:2183/kafka/prod"
    assert BrokerConfig.from_properties({"zookeeper.connect": raw}).zookeeper_connect == raw


def test_values_are_trimmed_and_normalised() -> None:
    config = BrokerConfig.from_properties(
        props(
            **{
                "num.partitions": " 3 ",
                "log.cleanup.policy": "Compact, delete",
                "compression.type": "ZSTD",
                "unclean.leader.election.enable": "TRUE",
                "log.cleaner.min.cleanable.ratio": "0.25",
                "broker.rack": " r1 ",
            }
        )
    )
    assert config.num_partitions == 3
    assert config.log_cleanup_policy == ("compact", "delete")
    assert config.compression_type == "zstd"
    assert config.unclean_leader_election_enable is True
    assert config.log_cleaner_min_cleanable_ratio == 0.25
    assert config.broker_rack == "r1"


# -- unknown keys --------------------------------------------------------------------------------


def test_unknown_key_warns_and_loads(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="zkafka.config"):
        config = BrokerConfig.from_properties(
            props(
                **{
                    "ssl.keystore.lokation": "/ks",
                    "num.partitions": "2",
                    "listener.name.sasl_ssl.ssl.key.password": "secret",
                }
            )
        )
    assert config.num_partitions == 2
    assert config.unknown_properties == (
        ("ssl.keystore.lokation", "/ks"),
        ("listener.name.sasl_ssl.ssl.key.password", "secret"),
    )
    warnings = [r for r in caplog.records if r.name == "zkafka.config" and r.levelno == logging.WARNING]
    # per-listener keys are Kafka's dynamic prefixes: kept without a warning
    assert len(warnings) == 1 and "ssl.keystore.lokation" in warnings[0].getMessage()


def test_password_keys_are_never_shown() -> None:
    from zkafka.config.broker import is_sensitive

    config = BrokerConfig.from_properties(
        props(
            **{
                "ssl.key.password": "s3cret",
                "sasl.jaas.config": 'x required password="s3cret";',
                "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config": "y",
            }
        )
    )
    assert "s3cret" not in repr(config)
    described = {k: (v, d) for k, v, d in config.describe()}
    assert described["ssl.key.password"] == (None, False)
    assert described["sasl.jaas.config"] == (None, False)
    assert described["ssl.client.auth"] == ("none", True)
    assert is_sensitive("ssl.key.password")
    assert is_sensitive("listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config")
    assert not is_sensitive("ssl.client.auth")
    assert config.security_properties()["ssl.key.password"] == "s3cret"


def test_unknown_zkafka_key_is_an_error() -> None:
    with pytest.raises(ConfigError, match=r"^zkafka\.typo: expected a known zkafka\.\* key") as info:
        BrokerConfig.from_properties(props(**{"zkafka.typo": "1"}))
    assert info.value.key == "zkafka.typo"


def test_known_zkafka_key() -> None:
    config = BrokerConfig.from_properties(props(**{"zkafka.advertised.default.host": "broker-1.local"}))
    assert config.advertised_listeners == (Endpoint("PLAINTEXT", "broker-1.local", 9092, "PLAINTEXT"),)


def test_missing_zookeeper_connect() -> None:
    with pytest.raises(ConfigError, match=r"^zookeeper\.connect: expected a value \(required"):
        BrokerConfig.from_properties({"broker.id": "1"})


# -- bad values ----------------------------------------------------------------------------------

BAD_VALUES = [
    ("log.segment.bytes", "big", "an integer >= 14"),
    ("log.segment.bytes", "13", "an integer >= 14"),
    ("log.segment.bytes", "1_000", "an integer >= 14"),
    ("log.segment.bytes", "4294967296", "32-bit"),
    ("broker.id", "-2", "an integer >= -1"),
    ("broker.id", "1001", "reserved.broker.max.id"),
    ("reserved.broker.max.id", "-1", "an integer >= 0"),
    ("num.partitions", "0", "an integer >= 1"),
    ("default.replication.factor", "0", "an integer >= 1"),
    ("min.insync.replicas", "0", "an integer >= 1"),
    ("leader.imbalance.per.broker.percentage", "101", "an integer in [0, 100]"),
    ("leader.imbalance.per.broker.percentage", "-1", "an integer in [0, 100]"),
    ("leader.imbalance.check.interval.seconds", "0", "an integer >= 1"),
    ("log.cleaner.min.cleanable.ratio", "1.5", "a number in [0, 1]"),
    ("log.cleaner.min.cleanable.ratio", "nan", "a number in [0, 1]"),
    ("log.index.interval.bytes", "-1", "an integer >= 0"),
    ("log.index.size.max.bytes", "3", "an integer >= 4"),
    ("log.retention.ms", "0", "a positive retention time"),
    ("log.retention.minutes", "0", "a positive retention time"),
    ("log.retention.hours", "0", "a positive retention time"),
    ("log.retention.hours", "1.5", "an integer"),
    ("log.retention.check.interval.ms", "0", "an integer >= 1"),
    ("log.retention.bytes", "lots", "an integer"),
    ("log.roll.hours", "0", "an integer >= 1"),
    ("log.roll.ms", "0", "an integer >= 1"),
    ("log.roll.jitter.ms", "-1", "an integer >= 0"),
    ("log.cleanup.policy", "remove", "a comma-separated list of compact, delete"),
    ("log.cleanup.policy", "", "a comma-separated list of compact, delete"),
    ("log.flush.interval.messages", "0", "an integer >= 1"),
    ("log.flush.interval.messages", "9223372036854775808", "64-bit"),
    ("log.message.timestamp.type", "createtime", "one of CreateTime, LogAppendTime"),
    ("compression.type", "brotli", "one of uncompressed, zstd, lz4, snappy, gzip, producer"),
    ("num.io.threads", "0", "an integer >= 1"),
    ("num.network.threads", "0", "an integer >= 1"),
    ("num.replica.fetchers", "0", "an integer >= 1"),
    ("auto.leader.rebalance.enable", "yes", "true or false"),
    ("unclean.leader.election.enable", "1", "true or false"),
    ("message.max.bytes", "-1", "an integer >= 0"),
    ("offsets.topic.replication.factor", "0", "an integer >= 1"),
    ("offsets.topic.replication.factor", "40000", "16-bit"),
    ("offsets.topic.num.partitions", "0", "an integer >= 1"),
    ("offsets.topic.compression.codec", "5", "an integer in [0, 4]"),
    ("zookeeper.connect", "", "a string, not empty"),
    ("zookeeper.session.timeout.ms", "0", "an integer >= 1"),
    ("replica.fetch.wait.max.ms", "40000", "at most replica.socket.timeout.ms"),
    ("listeners", "PLAINTEXT://:70000", "NAME://host:port"),
    ("listeners", "PLAINTEXT://:-1", "NAME://host:port"),
    ("listeners", "PLAINTEXT://host", "NAME://host:port"),
    ("listeners", "localhost:9092", "NAME://host:port"),
    ("listeners", "", "NAME://host:port"),
    ("listeners", "PLAINTEXT://:9092,PLAINTEXT://:9093", "NAME://host:port"),
    ("listeners", "PLAINTEXT://:9092,SSL://:9092", "distinct ports"),
    ("listeners", "CLIENT://:9092", "listener.security.protocol.map"),
    ("advertised.listeners", "PLAINTEXT://0.0.0.0:9092", "a routable host"),
    ("advertised.listeners", "PLAINTEXT://[::]:9092", "a routable host"),
    ("advertised.listeners", "PLAINTEXT://h:1,SSL://h:2", "listener names that listeners also defines"),
    ("listener.security.protocol.map", "PLAINTEXT:TLS", "LISTENER_NAME:SECURITY_PROTOCOL"),
    ("listener.security.protocol.map", "PLAINTEXT", "LISTENER_NAME:SECURITY_PROTOCOL"),
    ("listener.security.protocol.map", "A:SSL,a:SSL", "LISTENER_NAME:SECURITY_PROTOCOL"),
    ("inter.broker.listener.name", "REPLICATION", "a listener name in advertised.listeners"),
    ("security.inter.broker.protocol", "TLS", "one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL"),
    ("log.dirs", ",", "at least one directory"),
    ("log.dir", " , ", "at least one directory"),
    ("zkafka.advertised.default.host", "0.0.0.0", "a routable host"),
    ("zkafka.advertised.default.host", "bad host", "a host name or IP address"),
    ("group.max.size", "0", "an integer >= 1"),
    ("transaction.state.log.min.isr", "0", "an integer >= 1"),
    ("socket.send.buffer.bytes", "-2", "an integer >= -1"),
]


@pytest.mark.parametrize(("key", "value", "expected"), BAD_VALUES)
def test_bad_value_names_key_value_and_expectation(key: str, value: str, expected: str) -> None:
    with pytest.raises(ConfigError) as info:
        BrokerConfig.from_properties(props(**{key: value}))
    message = str(info.value)
    assert message.startswith(f"{key}: expected ")
    assert expected in message
    assert f"got {value!r}" in message
    assert (info.value.key, info.value.value) == (key, value)


# A value that is fine on its own but breaks a rule involving a key left at its default: the error
# names the key whose (default) value conflicts.
@pytest.mark.parametrize(
    ("key", "value", "error_key", "expected"),
    [
        (
            "listeners",
            "SSL://:9093",
            "security.inter.broker.protocol",
            "a listener name in advertised.listeners (SSL), got 'PLAINTEXT'",
        ),
        (
            "listeners",
            "PLAINTEXT://0.0.0.0:9092",
            "advertised.listeners",
            "a routable host, not the meta-address 0.0.0.0 or ::, got 'PLAINTEXT://0.0.0.0:9092': "
            "advertised.listeners is unset, so it defaults to listeners",
        ),
        (
            "replica.socket.timeout.ms",
            "100",
            "replica.fetch.wait.max.ms",
            "at most replica.socket.timeout.ms (100), got '500'",
        ),
        (
            "replica.lag.time.max.ms",
            "100",
            "replica.fetch.wait.max.ms",
            "at most replica.lag.time.max.ms (100), got '500'",
        ),
        (
            "listener.security.protocol.map",
            "SSL:SSL",
            "listeners",
            "listener names that listener.security.protocol.map knows, got 'PLAINTEXT://:9092': "
            "listener PLAINTEXT has no entry in listener.security.protocol.map",
        ),
        ("reserved.broker.max.id", "5", "broker.id", None),
    ],
)
def test_cross_key_errors_name_the_conflicting_key(
    key: str, value: str, error_key: str, expected: str | None
) -> None:
    given = props(**{key: value})
    if error_key == "broker.id":
        given["broker.id"] = "6"
    with pytest.raises(ConfigError) as info:
        BrokerConfig.from_properties(given)
    assert str(info.value).startswith(f"{error_key}: expected ")
    assert info.value.key == error_key
    if expected:
        assert str(info.value) == f"{error_key}: expected {expected}"


def test_error_message_shape() -> None:
    with pytest.raises(ConfigError) as info:
        load(log_segment_bytes="big")
    assert str(info.value) == "log.segment.bytes: expected an integer >= 14, got 'big'"
    assert (info.value.key, info.value.value) == ("log.segment.bytes", "big")


def test_broker_id_rules() -> None:
    assert load(broker_id="1000").broker_id == 1000
    assert load(broker_id="-1").broker_id == -1
    assert load(reserved_broker_max_id="5000", broker_id="4000").broker_id == 4000
    no_generation = {"broker.id.generation.enable": "false"}
    with pytest.raises(ConfigError, match=r"^broker\.id: expected an integer >= 0 while"):
        BrokerConfig.from_properties(props(**no_generation, **{"broker.id": "-1"}))
    config = BrokerConfig.from_properties(props(**no_generation, **{"broker.id": "5000"}))
    assert config.broker_id == 5000


def test_both_inter_broker_settings_is_an_error() -> None:
    with pytest.raises(ConfigError, match=r"^inter\.broker\.listener\.name: expected no value when"):
        BrokerConfig.from_properties(
            props(
                **{
                    "inter.broker.listener.name": "PLAINTEXT",
                    "security.inter.broker.protocol": "PLAINTEXT",
                }
            )
        )


# -- listeners -----------------------------------------------------------------------------------


def test_listeners_with_custom_names_and_ipv6() -> None:
    config = BrokerConfig.from_properties(
        props(
            **{
                "listeners": "client://[::1]:9092, REPLICATION://10.0.0.1:9093, local://:0",
                "advertised.listeners": "CLIENT://[::1]:9092,REPLICATION://broker1:9093,LOCAL://:0",
                "listener.security.protocol.map": "CLIENT:SASL_SSL, REPLICATION:PLAINTEXT, local:plaintext",
                "inter.broker.listener.name": "replication",
            }
        )
    )
    assert config.listeners == (
        Endpoint("CLIENT", "::1", 9092, "SASL_SSL"),
        Endpoint("REPLICATION", "10.0.0.1", 9093, "PLAINTEXT"),
        Endpoint("LOCAL", "", 0, "PLAINTEXT"),
    )
    assert config.advertised_listeners == (
        Endpoint("CLIENT", "::1", 9092, "SASL_SSL"),
        Endpoint("REPLICATION", "broker1", 9093, "PLAINTEXT"),
        Endpoint("LOCAL", "127.0.0.1", 0, "PLAINTEXT"),  # empty host: advertise the default host
    )
    assert config.inter_broker_listener_name == "REPLICATION"
    assert config.inter_broker_endpoint == Endpoint("REPLICATION", "broker1", 9093, "PLAINTEXT")
    assert str(config.listeners[0]) == "CLIENT://[::1]:9092"
    assert config.listeners[0].security_protocol_id == 3


def test_advertised_defaults_to_listeners() -> None:
    config = load(listeners="PLAINTEXT://127.0.0.1:19092,SSL://:19093")
    assert config.advertised_listeners == (
        Endpoint("PLAINTEXT", "127.0.0.1", 19092, "PLAINTEXT"),
        Endpoint("SSL", "127.0.0.1", 19093, "SSL"),
    )


def test_advertised_may_be_a_subset_and_share_ports() -> None:
    config = BrokerConfig.from_properties(
        props(
            **{
                "listeners": "PLAINTEXT://:9092,SSL://:9093",
                "advertised.listeners": "PLAINTEXT://lb.example.com:443",
            }
        )
    )
    assert [str(e) for e in config.advertised_listeners] == ["PLAINTEXT://lb.example.com:443"]


def test_same_port_on_ipv4_and_ipv6_and_several_ephemeral_ports() -> None:
    config = BrokerConfig.from_properties(
        props(
            **{
                "listeners": "PLAINTEXT://127.0.0.1:9092,SSL://[::1]:9092,SASL_PLAINTEXT://:0,SASL_SSL://:0",
            }
        )
    )
    assert [e.port for e in config.listeners] == [9092, 9092, 0, 0]


def test_binding_all_interfaces_needs_an_advertised_host() -> None:
    config = BrokerConfig.from_properties(
        props(
            **{
                "listeners": "PLAINTEXT://0.0.0.0:9092",
                "advertised.listeners": "PLAINTEXT://broker1:9092",
            }
        )
    )
    assert config.listeners[0].host == "0.0.0.0"


# -- derived topic config ------------------------------------------------------------------------


def test_log_config_defaults_equal_kafka_topic_defaults() -> None:
    assert load().log_config() == LogConfig()


def test_log_config_mapping() -> None:
    config = BrokerConfig.from_properties(
        props(
            **{
                "log.segment.bytes": "1000",
                "log.roll.ms": "2000",
                "log.roll.jitter.hours": "1",
                "log.index.size.max.bytes": "4096",
                "log.index.interval.bytes": "128",
                "log.retention.minutes": "3",
                "log.retention.bytes": "99",
                "log.cleanup.policy": "compact,delete",
                "log.cleaner.delete.retention.ms": "11",
                "log.cleaner.min.compaction.lag.ms": "12",
                "log.cleaner.max.compaction.lag.ms": "13",
                "log.cleaner.min.cleanable.ratio": "0.75",
                "log.flush.interval.messages": "14",
                "log.flush.interval.ms": "15",
                "log.segment.delete.delay.ms": "16",
                "message.max.bytes": "17",
                "log.message.timestamp.type": "LogAppendTime",
                "log.preallocate": "true",
                "min.insync.replicas": "2",
                "unclean.leader.election.enable": "true",
                "compression.type": "lz4",
            }
        )
    )
    assert config.log_config() == LogConfig(
        segment_bytes=1000,
        segment_ms=2000,
        segment_jitter_ms=3600000,
        segment_index_bytes=4096,
        index_interval_bytes=128,
        retention_ms=180000,
        retention_bytes=99,
        cleanup_policy=frozenset({"compact", "delete"}),
        delete_retention_ms=11,
        min_compaction_lag_ms=12,
        max_compaction_lag_ms=13,
        min_cleanable_dirty_ratio=0.75,
        flush_messages=14,
        flush_ms=15,
        file_delete_delay_ms=16,
        max_message_bytes=17,
        message_timestamp_type="LogAppendTime",
        preallocate=True,
        min_insync_replicas=2,
        unclean_leader_election_enable=True,
        compression_type="lz4",
    )
    # The derived values pass the storage layer's own topic-level checks.
    derived = config.log_config()
    assert LogConfig().with_overrides(derived.to_topic_configs()) == derived


def test_log_config_sources_cover_every_topic_key() -> None:
    assert LOG_CONFIG_SOURCES.keys() == TOPIC_CONFIG_KEYS.keys()
    # Topic overrides then apply on top, with the storage layer's own parser.
    assert load(log_retention_hours="1").log_config().with_overrides({"retention.ms": "5"}).retention_ms == 5


# -- describe and write back ---------------------------------------------------------------------


def test_describe_lists_every_key_with_source() -> None:
    config = load(num_partitions="1", log_retention_hours="24")
    described = {key: (value, is_default) for key, value, is_default in config.describe()}
    assert described.keys() == BROKER_CONFIG_KEYS.keys()
    assert [k for k, _, _ in config.describe()] == sorted(BROKER_CONFIG_KEYS)
    assert described["num.partitions"] == ("1", False)  # given, even though equal to the default
    assert described["log.retention.hours"] == ("24", False)
    assert described["log.retention.ms"] == (None, True)
    assert described["advertised.listeners"] == (None, True)  # Kafka's default is null
    assert described["listeners"] == ("PLAINTEXT://:9092", True)
    assert described["log.flush.interval.messages"] == (str(LONG_MAX), True)
    assert described["log.cleanup.policy"] == ("delete", True)
    assert described["zookeeper.connect"] == ("127.0.0.1:2181/kafka", False)
    assert described["listener.security.protocol.map"] == (
        "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL",
        True,
    )


REALISTIC = {
    "broker.id": "2",
    "broker.rack": "rack-a",
    "listeners": "PLAINTEXT://:9092,REPL://[::1]:9093",
    "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,REPL:SSL",
    "advertised.listeners": "PLAINTEXT://broker2.example.com:9092,REPL://[::1]:9093",
    "inter.broker.listener.name": "REPL",
    "log.dirs": "/data/a,/data/b",
    "zookeeper.connect": "zk1:2181,zk2:2181/kafka",
    "log.retention.ms": "-1",
    "log.cleanup.policy": "compact,delete",
    "log.cleaner.min.cleanable.ratio": "0.1",
    "compression.type": "gzip",
    "some.plugin.setting": "kept as is",
}


def test_round_trip_through_a_file(tmp_path: Path) -> None:
    config = BrokerConfig.from_properties(REALISTIC)
    path = tmp_path / "server.properties"
    path.write_text(format_properties(config.to_properties(), header="written back"))
    again = load_broker_config(path)
    assert again == config
    assert again.to_properties() == config.to_properties()
    assert again.to_properties()["some.plugin.setting"] == "kept as is"


def test_round_trip_with_defaults_keeps_every_value() -> None:
    config = BrokerConfig.from_properties(REALISTIC)
    full = config.to_properties(include_defaults=True)
    assert "log.retention.hours" in full and "log.retention.minutes" not in full  # nulls are omitted
    again = BrokerConfig.from_properties(parse_properties(format_properties(full)))
    assert all(not is_default for key, _, is_default in again.describe() if key in full)
    for row in BROKER_CONFIG_KEYS.values():  # every key with a value now counts as given, same values
        assert getattr(again, row.attr) == getattr(config, row.attr), row.name


def test_with_overrides() -> None:
    config = BrokerConfig.from_properties(REALISTIC)
    changed = config.with_overrides({"num.partitions": "6", "broker.id": "3"})
    assert (changed.num_partitions, changed.broker_id, changed.broker_rack) == (6, 3, "rack-a")
    assert changed.explicit_keys == config.explicit_keys | {"num.partitions"}
    with pytest.raises(ConfigError):
        config.with_overrides({"num.partitions": "0"})


def test_load_broker_config_reports_the_file_line(tmp_path: Path) -> None:
    path = tmp_path / "server.properties"
    path.write_text("zookeeper.connect=x:1\n# comment\nbroker.id=\\u00zz\n")
    with pytest.raises(ConfigError, match=r"server\.properties:3: malformed"):
        load_broker_config(path)
    with pytest.raises(ConfigError, match="cannot read"):
        load_broker_config(tmp_path / "nope.properties")
