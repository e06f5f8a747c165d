"""Source and sink options: Spark's Kafka connector names, rules and messages, parsed once into
frozen (picklable) values that travel with the reader and writer objects to Spark's workers.

Options arrive case-insensitively (Spark lower-cases the keys). Everything under ``kafka.`` is a
Kafka client property, translated to zkafka's client arguments by `zkafka.client.config`, and the
security ones (``kafka.security.protocol``, ``kafka.sasl.mechanism``, ``kafka.sasl.jaas.config``,
``kafka.ssl.truststore.location``, ...) into one `ClientSecurity`, as Spark's Kafka source passes them
to its clients;
``zkafka.zookeeper.connect`` (ours, beyond Spark) finds the brokers through ZooKeeper instead of
``kafka.bootstrap.servers``.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from zkafka.client.config import CONSUMER_PROPERTIES, PRODUCER_PROPERTIES, translate
from zkafka.client.errors import ConfigError
from zkafka.client.security import ClientSecurity, is_security_key
from zkafka.client.types import TopicPartition
from zkafka.spark.errors import OffsetError, OptionError

log = logging.getLogger("zkafka.spark")

ZOOKEEPER_CONNECT = "zkafka.zookeeper.connect"
TRANSACTIONAL_ID_PREFIX = "transactional.id.prefix"
"""The sink option (ours, beyond Spark) that makes streaming writes exactly once (`transactional`)."""
EARLIEST = -2
"""In per-partition offsets JSON: start at the partition's earliest offset."""
LATEST = -1
"""In per-partition offsets JSON: the partition's latest offset."""

_STRATEGY_KEYS = ("subscribe", "subscribepattern", "assign")
DEFAULT_POLL_TIMEOUT_MS = 120_000
"""Spark's default is spark.network.timeout (120 s)."""
DEFAULT_MAX_TRIGGER_DELAY = "15m"

_ASSIGN_EXAMPLE = '{"topicA":[0,1],"topicB":[0,1]}'
_OFFSETS_EXAMPLE = '{"topicA":{"0":23,"1":-1},"topicB":{"0":-2}}'
_TIMESTAMPS_EXAMPLE = (
    '{"topicA": {"0": 123456789, "1": 123456789}, "topicB": {"0": 123456789, "1": 123456789}}'
)

_AUTO_OFFSET_RESET_MESSAGE = (
    "Kafka option 'auto.offset.reset' is not supported. Instead set the source option 'startingoffsets' "
    "to 'earliest' or 'latest' to specify where to start. Structured Streaming manages which offsets "
    "are consumed internally, rather than relying on the kafkaConsumer to do it. This will ensure that "
    "no data is missed when new topics/partitions are dynamically subscribed. Note that "
    "'startingoffsets' only applies when a new Streaming query is started, and that resuming will "
    "always pick up from where the query left off. See the docs for more details."
)


# -- values ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ClientSpec:
    """How to reach the cluster, plus the ``kafka.*`` properties (prefix removed)."""

    bootstrap_servers: str | None
    zookeeper_connect: str | None
    properties: tuple[tuple[str, str], ...] = ()

    def security(self) -> ClientSecurity | None:
        """TLS/SASL from the ``kafka.security.protocol`` / ``kafka.sasl.*`` / ``kafka.ssl.*`` options
        (built where the client runs: an SSLContext does not travel); OptionError if they cannot work."""
        given = {k: v for k, v in self.properties if is_security_key(k)}
        if not given:
            return None
        try:
            return ClientSecurity.from_config(given)
        except ValueError as e:
            raise OptionError(f"Kafka security options: {e}") from None

    def _base(self, table: Mapping[str, Any], client_id: str) -> dict[str, Any]:
        kwargs, _unknown = translate(dict(self.properties), table)
        kwargs.pop("bootstrap_servers", None)
        kwargs.setdefault("client_id", client_id)
        security = self.security()
        if security is not None:
            kwargs["security"] = security
        return {
            "bootstrap_servers": self.bootstrap_servers,
            "zookeeper_connect": self.zookeeper_connect,
            **kwargs,
        }

    def consumer_kwargs(self) -> dict[str, Any]:
        """Arguments of an executor's `Consumer`: it only ever reads the ranges it is given."""
        kwargs = self._base(CONSUMER_PROPERTIES, "zkafka-spark-executor")
        kwargs["auto_offset_reset"] = "none"  # offsets come from the driver; a reset would hide data loss
        # The consumer prefetches past a task's range and the next task waits for that Fetch:
        # keep its long-poll short (Spark's tasks never wait for new data, the driver does).
        kwargs.setdefault("fetch_max_wait_ms", 100)
        kwargs.setdefault("max_poll_records", 50_000)
        # A task reads one partition, and each fetch becomes one Arrow batch for Spark: Kafka's
        # 1 MiB default made a read task cost 28 % more CPU per record than 4 MiB (per-fetch and
        # per-batch costs in the columnar decode, Arrow and Spark; docs/performance.md)
        kwargs.setdefault("max_partition_fetch_bytes", 4 << 20)
        return kwargs

    def admin_kwargs(self) -> dict[str, Any]:
        kwargs = self._base(CONSUMER_PROPERTIES, "zkafka-spark-driver")
        allowed = (
            "bootstrap_servers",
            "zookeeper_connect",
            "client_id",
            "request_timeout_ms",
            "retry_backoff_ms",
            "security",
        )
        return {k: v for k, v in kwargs.items() if k in allowed}

    def producer_kwargs(self) -> dict[str, Any]:
        kwargs = self._base(PRODUCER_PROPERTIES, "zkafka-spark-producer")
        kwargs.setdefault("enable_idempotence", True)
        kwargs.setdefault("acks", -1)
        # A write task encodes whole Kafka batches of about batch_size bytes: Kafka's 16 KiB
        # made the brokers take 3x the CPU for the same records (many small batches; docs/
        # performance.md). 128 KiB stays far below the brokers' default message.max.bytes.
        kwargs.setdefault("batch_size", 128 << 10)
        return kwargs

    @property
    def isolation_level(self) -> int:
        return 1 if dict(self.properties).get("isolation.level", "").strip() == "read_committed" else 0


@dataclass(frozen=True)
class Subscribe:
    topics: tuple[str, ...]

    def matches(self, topic: str) -> bool:
        return topic in self.topics


@dataclass(frozen=True)
class SubscribePattern:
    pattern: str

    def matches(self, topic: str) -> bool:
        # Java's Pattern.matcher(topic).matches(): the whole name must match
        return re.fullmatch(self.pattern, topic) is not None


@dataclass(frozen=True)
class Assign:
    partitions: tuple[TopicPartition, ...]

    def matches(self, topic: str) -> bool:
        return any(tp.topic == topic for tp in self.partitions)


Strategy = Subscribe | SubscribePattern | Assign


class OffsetLimit:
    """Where a read starts or ends, before it is resolved against the cluster."""


@dataclass(frozen=True)
class EarliestOffsets(OffsetLimit):
    pass


@dataclass(frozen=True)
class LatestOffsets(OffsetLimit):
    pass


@dataclass(frozen=True)
class SpecificOffsets(OffsetLimit):
    offsets: dict[TopicPartition, int] = field(hash=False)
    """-2 = earliest, -1 = latest."""


@dataclass(frozen=True)
class SpecificTimestamps(OffsetLimit):
    timestamps: dict[TopicPartition, int] = field(hash=False)
    fail_on_no_match: bool = True


@dataclass(frozen=True)
class GlobalTimestamp(OffsetLimit):
    timestamp: int
    fail_on_no_match: bool = True


@dataclass(frozen=True)
class SourceOptions:
    client: ClientSpec
    strategy: Strategy
    starting: OffsetLimit
    ending: OffsetLimit
    include_headers: bool = False
    fail_on_data_loss: bool = True
    max_offsets_per_trigger: int | None = None
    min_offsets_per_trigger: int | None = None
    max_trigger_delay_ms: int = 15 * 60_000
    min_partitions: int | None = None
    max_records_per_partition: int | None = None
    poll_timeout_ms: int = DEFAULT_POLL_TIMEOUT_MS
    fetch_offset_retries: int = 3
    fetch_offset_retry_interval_ms: int = 1000


@dataclass(frozen=True)
class SinkOptions:
    client: ClientSpec
    topic: str | None
    transactional_id_prefix: str | None = None
    """Set: every streaming task writes in one Kafka transaction (`zkafka.spark.transactional`)."""


# -- parsing --------------------------------------------------------------------------------------


def _lower(options: Mapping[str, str]) -> dict[str, str]:
    return {str(k).lower(): str(v) for k, v in options.items() if v is not None}


def _bool(params: dict[str, str], key: str, default: bool) -> bool:
    raw = params.get(key)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value not in ("true", "false"):
        raise OptionError(f"For input string: \"{raw}\" (option '{key}' must be true or false)")
    return value == "true"


def _long(params: dict[str, str], key: str) -> int | None:
    raw = params.get(key)
    if raw is None:
        return None
    try:
        return int(raw.strip())
    except ValueError:
        raise OptionError(f"For input string: \"{raw}\" (option '{key}' must be a whole number)") from None


_TIME_UNITS_MS = {
    "us": 0.001,
    "ms": 1,
    "s": 1000,
    "m": 60_000,
    "min": 60_000,
    "h": 3_600_000,
    "d": 86_400_000,
}


def time_string_ms(text: str) -> int:
    """Spark's time strings: ``500`` (ms), ``250us``, ``100ms``, ``30s``, ``15m`` or ``15min``,
    ``2h``, ``1d``."""
    match = re.fullmatch(r"\s*(-?\d+)\s*([a-z]+)?\s*", text.lower())
    if match is None or (match.group(2) and match.group(2) not in _TIME_UNITS_MS):
        raise OptionError(
            f"Invalid time string {text!r}: time must be specified as seconds (s), milliseconds (ms), "
            "microseconds (us), minutes (m or min), hour (h), or day (d). E.g. 50s, 100ms, or 250us."
        )
    return int(int(match.group(1)) * _TIME_UNITS_MS[match.group(2) or "ms"])


def _json_object(text: str, example: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    if not isinstance(value, dict):
        raise OptionError(f"Expected e.g. {example}, got {text}")
    return value


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def parse_assign(text: str) -> tuple[TopicPartition, ...]:
    value = _json_object(text, _ASSIGN_EXAMPLE)
    out: list[TopicPartition] = []
    for topic, parts in value.items():
        if not isinstance(parts, list) or not all(_is_int(p) and p >= 0 for p in parts):
            raise OptionError(f"Expected e.g. {_ASSIGN_EXAMPLE}, got {text}")
        out.extend(TopicPartition(topic, p) for p in parts)
    return tuple(dict.fromkeys(out))


def _partition_map(text: str, example: str) -> dict[TopicPartition, int]:
    value = _json_object(text, example)
    out: dict[TopicPartition, int] = {}
    for topic, parts in value.items():
        if not isinstance(parts, dict):
            raise OptionError(f"Expected e.g. {example}, got {text}")
        for part, number in parts.items():
            try:
                partition = int(part)
            except ValueError:
                raise OptionError(f"Expected e.g. {example}, got {text}") from None
            if partition < 0 or not _is_int(number):
                raise OptionError(f"Expected e.g. {example}, got {text}")
            out[TopicPartition(topic, partition)] = number
    return out


def parse_partition_offsets(text: str) -> dict[TopicPartition, int]:
    offsets = _partition_map(text, _OFFSETS_EXAMPLE)
    for tp, offset in offsets.items():
        if offset < EARLIEST:
            raise OptionError(
                f"offset {offset} for {tp} is invalid: use an offset >= 0, -1 (latest) or -2 (earliest)"
            )
    return offsets


def parse_partition_timestamps(text: str) -> dict[TopicPartition, int]:
    timestamps = _partition_map(text, _TIMESTAMPS_EXAMPLE)
    for tp, ts in timestamps.items():
        if ts < 0:
            raise OptionError(f"timestamp {ts} for {tp} is invalid: timestamps are milliseconds >= 0")
    return timestamps


def _offset_limit(
    params: dict[str, str], global_key: str, by_timestamp_key: str, offsets_key: str, default: OffsetLimit
) -> OffsetLimit:
    """Spark's precedence: one timestamp for all partitions > per-partition timestamps > offsets."""
    strategy = params.get("startingoffsetsbytimestampstrategy", "error").strip().lower()
    if strategy not in ("error", "latest"):
        raise OptionError(
            "startingOffsetsByTimestampStrategy must be 'error' or 'latest', "
            f"got {params['startingoffsetsbytimestampstrategy']!r}"
        )
    # only a start can fail on no match; an end without a match is the latest offset (as in Spark)
    fail = strategy == "error" and global_key.startswith("starting")
    if global_key in params:
        raw = params[global_key].strip()
        try:
            ts = int(raw)
        except ValueError:
            raise OptionError(f"Expected a single long value, got {raw}") from None
        if ts < 0:
            raise OptionError(f"Expected a timestamp in milliseconds >= 0, got {raw}")
        return GlobalTimestamp(ts, fail)
    if by_timestamp_key in params:
        return SpecificTimestamps(parse_partition_timestamps(params[by_timestamp_key].strip()), fail)
    raw = params.get(offsets_key)
    if raw is None:
        return default
    text = raw.strip()
    if text.lower() == "latest":
        return LatestOffsets()
    if text.lower() == "earliest":
        return EarliestOffsets()
    return SpecificOffsets(parse_partition_offsets(text))


def _client_spec(params: dict[str, str], *, for_producer: bool) -> ClientSpec:
    what = "producer" if for_producer else "consumer"
    properties = {k[len("kafka.") :]: v for k, v in params.items() if k.startswith("kafka.")}
    bootstrap = properties.pop("bootstrap.servers", None)
    zookeeper = params.get(ZOOKEEPER_CONNECT)
    if not (bootstrap and bootstrap.strip()) and not (zookeeper and zookeeper.strip()):
        raise OptionError(
            f"Option 'kafka.bootstrap.servers' must be specified for configuring Kafka {what} "
            f"(or '{ZOOKEEPER_CONNECT}' to find the brokers through ZooKeeper)"
        )
    table = PRODUCER_PROPERTIES if for_producer else CONSUMER_PROPERTIES
    try:
        _, unknown = translate(properties, table)
    except ConfigError as e:
        raise OptionError(str(e)) from None
    for key in sorted(k for k in set(unknown) - {"group.id"} if not is_security_key(k)):
        log.warning("Kafka option 'kafka.%s' is not used by zkafka's %s; ignored", key, what)
    spec = ClientSpec(
        bootstrap.strip() if bootstrap and bootstrap.strip() else None,
        zookeeper.strip() if zookeeper and zookeeper.strip() else None,
        tuple(sorted(properties.items())),
    )
    spec.security()  # bad security options fail here, on the driver, not in every task
    return spec


def _strategy(params: dict[str, str]) -> Strategy:
    given = [k for k in _STRATEGY_KEYS if k in params]
    if not given:
        raise OptionError(
            "One of the following options must be specified for Kafka source: "
            f"{', '.join(_STRATEGY_KEYS)}. See the docs for more details."
        )
    if len(given) > 1:
        raise OptionError(
            "Only one of the following options can be specified for Kafka source: "
            f"{', '.join(_STRATEGY_KEYS)}. See the docs for more details."
        )
    key, value = given[0], params[given[0]]
    if key == "assign":
        if not value.strip().startswith("{"):
            raise OptionError(
                f"No topicpartitions to assign as specified value for option 'assign' is '{value}'"
            )
        return Assign(parse_assign(value))
    if key == "subscribe":
        topics = tuple(dict.fromkeys(t.strip() for t in value.split(",") if t.strip()))
        if not topics:
            raise OptionError(
                f"No topics to subscribe to as specified value for option 'subscribe' is '{value}'"
            )
        return Subscribe(topics)
    pattern = value.strip()
    if not pattern:
        raise OptionError(
            f"Pattern to subscribe is empty as specified value for option 'subscribePattern' is '{value}'"
        )
    try:
        re.compile(pattern)
    except re.error as e:
        raise OptionError(f"Invalid subscribePattern '{value}': {e}") from None
    return SubscribePattern(pattern)


def _check_general(params: dict[str, str]) -> tuple[Strategy, ClientSpec]:
    """Spark's validateGeneralOptions, in its order."""
    strategy = _strategy(params)
    min_partitions = _long(params, "minpartitions")
    if min_partitions is not None and min_partitions <= 0:
        raise OptionError("minPartitions must be positive")
    max_records = _long(params, "maxrecordsperpartition")
    if max_records is not None and max_records <= 0:
        raise OptionError("maxrecordsperpartition must be positive")
    if "kafka.group.id" in params:
        log.warning(
            "Kafka option 'kafka.group.id' has been set on this query; zkafka's source never joins or "
            "commits to a consumer group, so it is ignored"
        )
    if "kafka.auto.offset.reset" in params:
        raise OptionError(_AUTO_OFFSET_RESET_MESSAGE)
    if "kafka.key.deserializer" in params:
        raise OptionError(
            "Kafka option 'key.deserializer' is not supported as keys are deserialized as byte arrays "
            "with ByteArrayDeserializer. Use DataFrame operations to explicitly deserialize the keys."
        )
    if "kafka.value.deserializer" in params:
        raise OptionError(
            "Kafka option 'value.deserializer' is not supported as values are deserialized as byte arrays "
            "with ByteArrayDeserializer. Use DataFrame operations to explicitly deserialize the values."
        )
    for key in ("enable.auto.commit", "interceptor.classes"):
        if f"kafka.{key}" in params:
            raise OptionError(f"Kafka option '{key}' is not supported")
    client = _client_spec(params, for_producer=False)
    low, high = _long(params, "minoffsetspertrigger"), _long(params, "maxoffsetspertrigger")
    if low is not None and high is not None and low > high:
        raise OptionError(
            f"The value of minOffsetPerTrigger({low}) is higher than the maxOffsetsPerTrigger({high})."
        )
    for key, value in (("maxOffsetsPerTrigger", high), ("minOffsetsPerTrigger", low)):
        if value is not None and value <= 0:
            raise OptionError(f"{key} must be positive, got {value}")
    return strategy, client


def _check_stream(params: dict[str, str]) -> None:
    if "endingoffsets" in params:
        raise OptionError("ending offset not valid in streaming queries")
    if "endingoffsetsbytimestamp" in params or "endingtimestamp" in params:
        raise OptionError("ending timestamp not valid in streaming queries")


def _check_batch(starting: OffsetLimit, ending: OffsetLimit, params: dict[str, str]) -> None:
    if isinstance(starting, LatestOffsets):
        raise OptionError("starting offset can't be latest for batch queries on Kafka")
    if isinstance(starting, SpecificOffsets):
        for tp, offset in sorted(starting.offsets.items()):
            if offset == LATEST:
                raise OptionError(f"startingOffsets for {tp} can't be latest for batch queries on Kafka")
    if isinstance(ending, EarliestOffsets):
        raise OptionError("ending offset can't be earliest for batch queries on Kafka")
    if isinstance(ending, SpecificOffsets):
        for tp, offset in sorted(ending.offsets.items()):
            if offset == EARLIEST:
                raise OptionError(f"ending offset for {tp} can't be earliest for batch queries on Kafka")
    for key in ("maxOffsetsPerTrigger", "minOffsetsPerTrigger", "maxTriggerDelay"):
        if key.lower() in params:
            log.warning("%s option ignored in batch queries", key)


def check_offset_limits(starting: OffsetLimit, ending: OffsetLimit) -> None:
    """Spark's checkOffsetLimitValidity: explicit start and end name the same partitions, and no
    start lies past its end."""
    if isinstance(starting, SpecificOffsets) and isinstance(ending, SpecificOffsets):
        start, end = starting.offsets, ending.offsets
        what = "offset"
    elif isinstance(starting, SpecificTimestamps) and isinstance(ending, SpecificTimestamps):
        start, end = starting.timestamps, ending.timestamps
        what = "timestamp"
    else:
        return
    if set(start) != set(end):
        raise OffsetError(
            "[MISMATCHED_TOPIC_PARTITIONS_BETWEEN_START_OFFSET_AND_END_OFFSET] The specified start offset "
            "and end offset should have the same topic-partitions. Topic-partitions for start offset: "
            f"{sorted(map(str, start))}, topic-partitions for end offset: {sorted(map(str, end))}."
        )
    for tp in sorted(start):
        if start[tp] >= 0 and end[tp] >= 0 and start[tp] > end[tp]:
            where = f"for topic {tp.topic} partition {tp.partition}"
            raise OffsetError(
                "[UNRESOLVED_START_OFFSET_GREATER_THAN_END_OFFSET] The specified start "
                f"{what} {start[tp]} is greater than the end {what} {end[tp]} {where}."
            )


def parse_source_options(options: Mapping[str, str], *, streaming: bool | None) -> SourceOptions:
    """Validate and parse read options; `streaming` None runs only the checks common to both
    (what `DataSource.schema()` can do: it does not know which kind of read follows)."""
    params = _lower(options)
    if streaming:
        _check_stream(params)
    strategy, client = _check_general(params)
    starting = _offset_limit(
        params,
        "startingtimestamp",
        "startingoffsetsbytimestamp",
        "startingoffsets",
        LatestOffsets() if streaming else EarliestOffsets(),
    )
    ending = _offset_limit(
        params, "endingtimestamp", "endingoffsetsbytimestamp", "endingoffsets", LatestOffsets()
    )
    if streaming is False:
        _check_batch(starting, ending, params)
        check_offset_limits(starting, ending)
    poll_timeout = _long(params, "kafkaconsumer.polltimeoutms")
    if poll_timeout is not None and poll_timeout <= 0:
        raise OptionError(f"kafkaConsumer.pollTimeoutMs must be positive, got {poll_timeout}")
    retries = _long(params, "fetchoffset.numretries")
    retry_interval = _long(params, "fetchoffset.retryintervalms")
    for key, value in (("fetchOffset.numRetries", retries), ("fetchOffset.retryIntervalMs", retry_interval)):
        if value is not None and value < 0:
            raise OptionError(f"{key} must not be negative, got {value}")
    delay = time_string_ms(params.get("maxtriggerdelay", DEFAULT_MAX_TRIGGER_DELAY))
    if delay < 0:
        raise OptionError(f"maxTriggerDelay must not be negative, got {params['maxtriggerdelay']}")
    return SourceOptions(
        client=client,
        strategy=strategy,
        starting=starting,
        ending=ending,
        include_headers=_bool(params, "includeheaders", False),
        fail_on_data_loss=_bool(params, "failondataloss", True),
        max_offsets_per_trigger=_long(params, "maxoffsetspertrigger"),
        min_offsets_per_trigger=_long(params, "minoffsetspertrigger"),
        max_trigger_delay_ms=delay,
        min_partitions=_long(params, "minpartitions"),
        max_records_per_partition=_long(params, "maxrecordsperpartition"),
        poll_timeout_ms=poll_timeout or DEFAULT_POLL_TIMEOUT_MS,
        fetch_offset_retries=3 if retries is None else retries,
        fetch_offset_retry_interval_ms=1000 if retry_interval is None else retry_interval,
    )


def parse_sink_options(options: Mapping[str, str]) -> SinkOptions:
    params = _lower(options)
    if "kafka.key.serializer" in params:
        raise OptionError(
            "Kafka option 'key.serializer' is not supported as keys are serialized with ByteArraySerializer."
        )
    if "kafka.value.serializer" in params:
        raise OptionError(
            "Kafka option 'value.serializer' is not supported as value are serialized with "
            "ByteArraySerializer."
        )
    if "kafka.transactional.id" in params:
        raise OptionError(
            "Kafka option 'transactional.id' is not supported: every task needs a transactional id of "
            f"its own. Set the sink option '{TRANSACTIONAL_ID_PREFIX}' for exactly-once streaming writes."
        )
    client = _client_spec(params, for_producer=True)
    topic = params.get("topic")
    prefix = params.get(TRANSACTIONAL_ID_PREFIX)
    if prefix is not None and not prefix.strip():
        raise OptionError(f"Option '{TRANSACTIONAL_ID_PREFIX}' must not be empty")
    return SinkOptions(
        client,
        topic.strip() if topic is not None and topic.strip() else None,
        prefix.strip() if prefix is not None else None,
    )
