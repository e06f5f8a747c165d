"""Kafka's Java-style client properties (``acks=all``, ``linger.ms=5``) as keyword arguments of
`Producer` and `Consumer`, for the CLI tools' ``--producer-property`` / ``--consumer-property``
and for connectors that take Kafka option names.

Known keys with bad values raise ConfigError. Keys this client does not implement are returned
separately so the caller can warn, as Kafka's clients log "supplied but isn't a known config".
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from zkafka.client.errors import ConfigError

Converter = Callable[[str], Any]


def _int(text: str) -> int:
    return int(text.strip())


def _bool(text: str) -> bool:
    value = text.strip().lower()
    if value in ("true", "false"):
        return value == "true"
    raise ValueError(f"expected true or false, got {text!r}")


def _str(text: str) -> str:
    return text.strip()


def _float(text: str) -> float:
    return float(text.strip())


_COMMON: dict[str, tuple[str, Converter]] = {
    "bootstrap.servers": ("bootstrap_servers", _str),
    # brokers found in ZooKeeper's /brokers/ids, kept current by a watch (`zk_discovery`)
    "zookeeper.connect": ("zookeeper_connect", _str),
    "zookeeper.listener.name": ("zookeeper_listener_name", _str),
    "client.id": ("client_id", _str),
    "request.timeout.ms": ("request_timeout_ms", _int),
    "retry.backoff.ms": ("retry_backoff_ms", _int),
    "metadata.max.age.ms": ("metadata_max_age_ms", _int),
}

PRODUCER_PROPERTIES: dict[str, tuple[str, Converter]] = {
    **_COMMON,
    "acks": ("acks", _str),
    "linger.ms": ("linger_ms", _float),
    "batch.size": ("batch_size", _int),
    "compression.type": ("compression", _str),
    "enable.idempotence": ("enable_idempotence", _bool),
    "max.in.flight.requests.per.connection": ("max_in_flight", _int),
    "retries": ("retries", _int),
    "delivery.timeout.ms": ("delivery_timeout_ms", _int),
    "max.block.ms": ("max_block_ms", _int),
    "max.request.size": ("max_request_size", _int),
    "buffer.memory": ("buffer_memory", _int),
    "allow.auto.create.topics": ("allow_auto_topic_creation", _bool),
    "transactional.id": ("transactional_id", _str),
    "transaction.timeout.ms": ("transaction_timeout_ms", _int),
}

CONSUMER_PROPERTIES: dict[str, tuple[str, Converter]] = {
    **_COMMON,
    "auto.offset.reset": ("auto_offset_reset", _str),
    "fetch.max.wait.ms": ("fetch_max_wait_ms", _int),
    "fetch.min.bytes": ("fetch_min_bytes", _int),
    "fetch.max.bytes": ("fetch_max_bytes", _int),
    "max.partition.fetch.bytes": ("max_partition_fetch_bytes", _int),
    "max.poll.records": ("max_poll_records", _int),
    "isolation.level": ("isolation_level", _str),
    "check.crcs": ("check_crcs", _bool),
}


def translate(
    properties: Mapping[str, str], table: Mapping[str, tuple[str, Converter]]
) -> tuple[dict[str, Any], list[str]]:
    """(keyword arguments, unknown keys) for `properties` under `table`."""
    kwargs: dict[str, Any] = {}
    unknown: list[str] = []
    for key, raw in properties.items():
        entry = table.get(key)
        if entry is None:
            unknown.append(key)
            continue
        name, convert = entry
        try:
            kwargs[name] = convert(str(raw))
        except ValueError as e:
            raise ConfigError(f"invalid value {raw!r} for {key}: {e}") from None
    return kwargs, unknown


def producer_kwargs(properties: Mapping[str, str]) -> tuple[dict[str, Any], list[str]]:
    return translate(properties, PRODUCER_PROPERTIES)


def consumer_kwargs(properties: Mapping[str, str]) -> tuple[dict[str, Any], list[str]]:
    return translate(properties, CONSUMER_PROPERTIES)


def parse_key_values(items: list[str] | None, *, what: str = "property") -> dict[str, str]:
    """``["k=v", ...]`` (as given to repeated CLI flags) as a dict; the value may contain '='."""
    out: dict[str, str] = {}
    for item in items or ():
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"bad {what} {item!r}: expected key=value")
        out[key.strip()] = value
    return out
