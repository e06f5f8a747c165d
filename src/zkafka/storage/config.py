"""Per-log configuration: Kafka's topic-level keys (`segment.bytes`, `retention.ms`, ...).

A broker derives the defaults from its `log.*` keys (`zkafka.config`); a topic's overrides in
`/config/topics/<t>` replace individual values (`LogConfig.with_overrides`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace

INT64_MAX = (1 << 63) - 1


class InvalidConfigError(ValueError):
    """A config key with a value Kafka would refuse (maps to INVALID_CONFIG)."""


def _parse_bool(key: str, value: str) -> bool:
    v = value.strip().lower()
    if v in ("true", "false"):
        return v == "true"
    raise InvalidConfigError(f"{key}: expected true or false, got {value!r}")


def _parse_int(key: str, value: str, minimum: int | None = None) -> int:
    try:
        n = int(value.strip())
    except ValueError:
        raise InvalidConfigError(f"{key}: expected an integer, got {value!r}") from None
    if minimum is not None and n < minimum:
        raise InvalidConfigError(f"{key}: {n} is below the minimum {minimum}")
    return n


def _parse_float(key: str, value: str, lo: float, hi: float) -> float:
    try:
        x = float(value.strip())
    except ValueError:
        raise InvalidConfigError(f"{key}: expected a number, got {value!r}") from None
    if not lo <= x <= hi:
        raise InvalidConfigError(f"{key}: {x} is outside [{lo}, {hi}]")
    return x


def _parse_policy(key: str, value: str) -> frozenset[str]:
    parts = frozenset(
        p.strip().lower() for p in value.replace("[", "").replace("]", "").split(",") if p.strip()
    )
    if not parts or not parts <= {"delete", "compact"}:
        raise InvalidConfigError(f"{key}: expected delete, compact or compact,delete, got {value!r}")
    return parts


_COMPRESSION_TYPES = ("uncompressed", "gzip", "snappy", "lz4", "zstd", "producer")


@dataclass(frozen=True, slots=True)
class LogConfig:
    """Kafka's topic-level log settings with Kafka's defaults."""

    segment_bytes: int = 1073741824
    segment_ms: int = 604800000
    segment_jitter_ms: int = 0
    segment_index_bytes: int = 10485760
    index_interval_bytes: int = 4096
    retention_ms: int = 604800000  # negative: unlimited
    retention_bytes: int = -1  # negative: unlimited
    cleanup_policy: frozenset[str] = frozenset({"delete"})
    delete_retention_ms: int = 86400000
    min_compaction_lag_ms: int = 0
    max_compaction_lag_ms: int = INT64_MAX
    min_cleanable_dirty_ratio: float = 0.5
    flush_messages: int = INT64_MAX
    flush_ms: int = INT64_MAX
    file_delete_delay_ms: int = 60000
    max_message_bytes: int = 1048588
    message_timestamp_type: str = "CreateTime"
    preallocate: bool = False
    min_insync_replicas: int = 1
    unclean_leader_election_enable: bool = False
    compression_type: str = "producer"
    message_timestamp_difference_max_ms: int = INT64_MAX
    """Largest distance of a CreateTime record timestamp from the broker's clock (INVALID_TIMESTAMP
    beyond it)."""
    message_downconversion_enable: bool = True
    """Fetch v0-v3 clients get magic 0/1 message sets converted from the stored batches; false
    answers them UNSUPPORTED_VERSION instead."""

    @property
    def compact(self) -> bool:
        return "compact" in self.cleanup_policy

    @property
    def delete(self) -> bool:
        return "delete" in self.cleanup_policy

    def with_overrides(self, overrides: Mapping[str, str]) -> LogConfig:
        """Apply topic-level overrides given with Kafka's names; unknown names raise InvalidConfigError."""
        changes: dict[str, object] = {}
        for key, raw in overrides.items():
            if key in STORED_ONLY_TOPIC_CONFIGS:
                continue
            if key not in TOPIC_CONFIG_KEYS:
                raise InvalidConfigError(f"unknown topic config {key!r}")
            attr, parse = TOPIC_CONFIG_KEYS[key]
            changes[attr] = parse(key, str(raw))
        return replace(self, **changes) if changes else self

    def to_topic_configs(self) -> dict[str, str]:
        """This config with Kafka's topic-level names and string values (DescribeConfigs)."""
        out: dict[str, str] = {}
        for key, (attr, _) in TOPIC_CONFIG_KEYS.items():
            v = getattr(self, attr)
            if isinstance(v, bool):
                out[key] = "true" if v else "false"
            elif isinstance(v, frozenset):
                out[key] = ",".join(sorted(v))
            else:
                out[key] = str(v)
        return out


def _ts_type(key: str, value: str) -> str:
    if value not in ("CreateTime", "LogAppendTime"):
        raise InvalidConfigError(f"{key}: expected CreateTime or LogAppendTime, got {value!r}")
    return value


def _compression(key: str, value: str) -> str:
    if value.lower() not in _COMPRESSION_TYPES:
        raise InvalidConfigError(f"{key}: expected one of {', '.join(_COMPRESSION_TYPES)}, got {value!r}")
    return value.lower()


def _int(minimum: int | None = None):
    return lambda k, v: _parse_int(k, v, minimum)


# Kafka topic config name -> (LogConfig attribute, parser)
TOPIC_CONFIG_KEYS: dict[str, tuple[str, object]] = {
    "segment.bytes": ("segment_bytes", _int(14)),
    "segment.ms": ("segment_ms", _int(1)),
    "segment.jitter.ms": ("segment_jitter_ms", _int(0)),
    "segment.index.bytes": ("segment_index_bytes", _int(4)),
    "index.interval.bytes": ("index_interval_bytes", _int(0)),
    "retention.ms": ("retention_ms", _int(-1)),
    "retention.bytes": ("retention_bytes", _int()),
    "cleanup.policy": ("cleanup_policy", _parse_policy),
    "delete.retention.ms": ("delete_retention_ms", _int(0)),
    "min.compaction.lag.ms": ("min_compaction_lag_ms", _int(0)),
    "max.compaction.lag.ms": ("max_compaction_lag_ms", _int(1)),
    "min.cleanable.dirty.ratio": ("min_cleanable_dirty_ratio", lambda k, v: _parse_float(k, v, 0.0, 1.0)),
    "flush.messages": ("flush_messages", _int(1)),
    "flush.ms": ("flush_ms", _int(0)),
    "file.delete.delay.ms": ("file_delete_delay_ms", _int(0)),
    "max.message.bytes": ("max_message_bytes", _int(0)),
    "message.timestamp.type": ("message_timestamp_type", _ts_type),
    "preallocate": ("preallocate", _parse_bool),
    "min.insync.replicas": ("min_insync_replicas", _int(1)),
    "unclean.leader.election.enable": ("unclean_leader_election_enable", _parse_bool),
    "compression.type": ("compression_type", _compression),
    "message.downconversion.enable": ("message_downconversion_enable", _parse_bool),
    "message.timestamp.difference.max.ms": ("message_timestamp_difference_max_ms", _int(0)),
}

STORED_ONLY_TOPIC_CONFIGS: dict[str, str] = {
    "message.format.version": "3.0-IV1",
    "message.timestamp.before.max.ms": str(INT64_MAX),
    "message.timestamp.after.max.ms": str(INT64_MAX),
    "leader.replication.throttled.replicas": "",
    "follower.replication.throttled.replicas": "",
    "compression.gzip.level": "-1",
    "compression.lz4.level": "9",
    "compression.zstd.level": "3",
    "local.retention.ms": "-2",
    "local.retention.bytes": "-2",
    "remote.storage.enable": "false",
    "remote.log.copy.disable": "false",
    "remote.log.delete.on.disable": "false",
}
"""Topic configs Kafka 3.9 accepts that zkafka stores and reports (DescribeConfigs) but does not act
on (message format pinned to v2, no tiered storage): refusing them would break tools that set them
by habit. The two throttled-replicas keys are read by the broker's replication throttles
(`zkafka.server.replication_throttles`), not by the log. Key -> Kafka's default."""

assert {a for a, _ in TOPIC_CONFIG_KEYS.values()} == {f.name for f in fields(LogConfig)}
