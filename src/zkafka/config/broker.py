"""Broker configuration: Kafka's `server.properties` keys with Kafka's defaults, types and checks.

One table row per key (Kafka name, type, Kafka default, check, one-line doc) lives in the
`BrokerConfig` class body as field metadata, so the class and `BROKER_CONFIG_KEYS` cannot drift
apart; DescribeConfigs lists every row with `describe()`.

Field values:
- every field holds its key's parsed value, or the Kafka default when the key was not given;
- keys whose Kafka default is "whatever another key says" hold the resolved value, so callers never
  see None there: `advertised_listeners` (from `listeners`), `log_dirs` (from `log.dir`),
  `zookeeper_connection_timeout_ms` (from the session timeout), `log_flush_interval_ms` (from
  `log.flush.scheduler.interval.ms`), `inter_broker_listener_name` (from
  `security.inter.broker.protocol`);
- the three-way precedence groups keep Kafka's raw (nullable) fields; read the effective value
  from `retention_ms`, `roll_ms` and `roll_jitter_ms`.

Advertised hosts: an empty listener host means "bind every interface". Kafka then advertises the
machine's canonical host name; zkafka advertises `zkafka.advertised.default.host` instead (default
127.0.0.1), which is right for local clusters and explicit for real ones.

Build configs with `from_properties`/`load_broker_config`/`with_overrides`: they resolve and
cross-check keys. `dataclasses.replace` bypasses both.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import MISSING, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from zkafka.config.errors import ConfigError
from zkafka.config.listeners import (
    DEFAULT_PROTOCOL_MAP,
    SECURITY_PROTOCOL_IDS,
    Endpoint,
    check_distinct_ports,
    format_listeners,
    format_protocol_map,
    is_host,
    is_meta_address,
    parse_listeners,
    parse_protocol_map,
    resolve_protocols,
)
from zkafka.config.properties import load_properties
from zkafka.config.values import (
    BOOLEAN,
    DOUBLE,
    INT,
    INT32_MAX,
    INT64_MAX,
    LIST,
    LONG,
    NON_EMPTY,
    PASSWORD,
    SHORT,
    STRING,
    Check,
    ValueType,
    at_least,
    between,
    choice,
    choice_list,
)
from zkafka.metrics.address import parse_metrics_listener
from zkafka.storage.config import TOPIC_CONFIG_KEYS, LogConfig

log = logging.getLogger("zkafka.config")

MS_PER_MINUTE = 60_000
MS_PER_HOUR = 3_600_000

# Kafka's "latest" at the protocol level we speak (2.8, the last release before KRaft was offered).
DEFAULT_IBP = "2.8-IV1"

LISTENERS = ValueType(
    "STRING",
    "a comma-separated list of NAME://host:port",
    lambda text: parse_listeners(text, resolve=False),
    lambda v: format_listeners(v),  # type: ignore[arg-type]
)
PROTOCOL_MAP = ValueType(
    "STRING",
    "a comma-separated list of LISTENER_NAME:SECURITY_PROTOCOL",
    lambda text: tuple(parse_protocol_map(text).items()),
    lambda v: format_protocol_map(dict(v)),  # type: ignore[call-overload]
)


@dataclass(frozen=True, slots=True)
class ConfigKey:
    """One row of the broker config table."""

    name: str  # Kafka's key
    attr: str  # BrokerConfig attribute
    type: ValueType
    default: object  # Kafka's default, parsed; None = Kafka's null
    check: Check | None
    doc: str
    required: bool = False

    @property
    def expectation(self) -> str:
        return self.check.phrase(self.type.noun) if self.check else self.type.noun

    def parse(self, text: str) -> object:
        """Parse and check `text`; ConfigError names the key, the text and what was expected."""
        try:
            value = self.type.parse(text.strip())
        except ValueError as e:
            raise ConfigError.bad_value(self.name, text, self.expectation, str(e) or None) from None
        if self.check is not None and not self.check.accepts(value):
            raise ConfigError.bad_value(self.name, text, self.expectation)
        return value

    def format(self, value: object) -> str | None:
        return None if value is None else self.type.format(value)


_ROW = "zkafka.config.row"
LISTENER_PREFIX = "listener.name."
_SAME: Any = object()


def _key(
    name: str,
    vtype: ValueType,
    default: object,
    doc: str,
    check: Check | None = None,
    *,
    field_default: object = _SAME,
    required: bool = False,
) -> Any:
    """A BrokerConfig field carrying its table row (the attribute is filled in after the class exists)."""
    row = ConfigKey(name, "", vtype, default, check, doc, required)
    return field(
        default=default if field_default is _SAME else field_default,
        metadata={_ROW: row},
        repr=vtype is not PASSWORD,
    )


def _is_metrics_listener(value: object) -> bool:
    try:
        parse_metrics_listener(str(value))
    except ValueError:
        return False
    return True


_TIMESTAMP_TYPES = choice("CreateTime", "LogAppendTime")
_COMPRESSION = choice("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer", ignore_case=True)
_HOST_CHECK = Check(lambda v: is_host(v), lambda noun: "a host name or IP address")  # type: ignore[arg-type]
_METRICS_LISTENER_CHECK = Check(_is_metrics_listener, lambda noun: "http://host:port")
_DEFAULT_LISTENERS = (Endpoint("PLAINTEXT", "", 9092, "PLAINTEXT"),)


@dataclass(frozen=True, slots=True, kw_only=True)
class BrokerConfig:
    """A broker's static configuration (see the module doc for how fields relate to keys)."""

    # -- identity and ZooKeeper ------------------------------------------------------------------
    broker_id: int = _key(
        "broker.id", INT, -1, "this broker's id; -1 = take one from /brokers/seqid", at_least(-1)
    )
    broker_id_generation_enable: bool = _key(
        "broker.id.generation.enable", BOOLEAN, True, "allow broker.id -1 to be replaced by a generated id"
    )
    reserved_broker_max_id: int = _key(
        "reserved.broker.max.id",
        INT,
        1000,
        "highest configurable broker id; generated ids lie above it",
        at_least(0),
    )
    broker_rack: str | None = _key("broker.rack", STRING, None, "rack of this broker, for replica placement")
    zookeeper_connect: str = _key(
        "zookeeper.connect",
        STRING,
        None,
        "ZooKeeper connect string host:port[,host:port...][/chroot]",
        NON_EMPTY,
        field_default="",
        required=True,
    )
    zookeeper_session_timeout_ms: int = _key(
        "zookeeper.session.timeout.ms", INT, 18000, "ZooKeeper session timeout", at_least(1)
    )
    zookeeper_connection_timeout_ms: int = _key(
        "zookeeper.connection.timeout.ms",
        INT,
        None,
        "wait for a ZooKeeper connection; unset = session timeout",
        at_least(1),
        field_default=18000,
    )
    zookeeper_max_in_flight_requests: int = _key(
        "zookeeper.max.in.flight.requests", INT, 10, "unacknowledged ZooKeeper requests allowed", at_least(1)
    )
    zookeeper_set_acl: bool = _key("zookeeper.set.acl", BOOLEAN, False, "create znodes with secure ACLs")
    inter_broker_protocol_version: str = _key(
        "inter.broker.protocol.version",
        STRING,
        DEFAULT_IBP,
        "inter-broker protocol version (accepted and kept)",
        NON_EMPTY,
    )
    log_message_format_version: str = _key(
        "log.message.format.version",
        STRING,
        DEFAULT_IBP,
        "message format version (accepted and kept)",
        NON_EMPTY,
    )

    # -- listeners -------------------------------------------------------------------------------
    listeners: tuple[Endpoint, ...] = _key(
        "listeners",
        LISTENERS,
        _DEFAULT_LISTENERS,
        "where to accept connections; empty host = every interface",
    )
    advertised_listeners: tuple[Endpoint, ...] = _key(
        "advertised.listeners",
        LISTENERS,
        None,
        "endpoints published in ZooKeeper for clients and brokers; unset = listeners",
        field_default=(Endpoint("PLAINTEXT", "127.0.0.1", 9092, "PLAINTEXT"),),
    )
    listener_security_protocol_map: tuple[tuple[str, str], ...] = _key(
        "listener.security.protocol.map",
        PROTOCOL_MAP,
        tuple(DEFAULT_PROTOCOL_MAP.items()),
        "security protocol of each listener name",
    )
    inter_broker_listener_name: str = _key(
        "inter.broker.listener.name",
        STRING,
        None,
        "listener brokers use among themselves; unset = security.inter.broker.protocol",
        NON_EMPTY,
        field_default="PLAINTEXT",
    )
    security_inter_broker_protocol: str = _key(
        "security.inter.broker.protocol",
        choice(*SECURITY_PROTOCOL_IDS),
        "PLAINTEXT",
        "inter-broker listener, named by its protocol",
    )
    zkafka_advertised_default_host: str = _key(
        "zkafka.advertised.default.host",
        STRING,
        "127.0.0.1",
        "host advertised for a listener with an empty host (Kafka: the canonical host name)",
        _HOST_CHECK,
    )

    # -- network and threads ---------------------------------------------------------------------
    num_network_threads: int = _key("num.network.threads", INT, 3, "network threads", at_least(1))
    num_io_threads: int = _key("num.io.threads", INT, 8, "request handler threads", at_least(1))
    background_threads: int = _key("background.threads", INT, 10, "background task threads", at_least(1))
    queued_max_requests: int = _key(
        "queued.max.requests", INT, 500, "requests queued before the network layer stops reading", at_least(1)
    )
    socket_send_buffer_bytes: int = _key(
        "socket.send.buffer.bytes", INT, 102400, "SO_SNDBUF of client sockets; -1 = OS default", at_least(-1)
    )
    socket_receive_buffer_bytes: int = _key(
        "socket.receive.buffer.bytes",
        INT,
        102400,
        "SO_RCVBUF of client sockets; -1 = OS default",
        at_least(-1),
    )
    socket_request_max_bytes: int = _key(
        "socket.request.max.bytes", INT, 104857600, "largest request accepted", at_least(1)
    )
    connections_max_idle_ms: int = _key(
        "connections.max.idle.ms", LONG, 600000, "close connections idle this long"
    )
    max_connections: int = _key(
        "max.connections", INT, INT32_MAX, "connections allowed in total", at_least(0)
    )
    max_connections_per_ip: int = _key(
        "max.connections.per.ip", INT, INT32_MAX, "connections allowed per client address", at_least(0)
    )
    max_connections_per_ip_overrides: str = _key(
        "max.connections.per.ip.overrides", STRING, "", "per-address limits, host:count,host:count"
    )
    max_connection_creation_rate: int = _key(
        "max.connection.creation.rate",
        INT,
        INT32_MAX,
        "new connections accepted per second per listener (KIP-612)",
        at_least(0),
    )
    queued_max_request_bytes: int = _key(
        "queued.max.request.bytes",
        LONG,
        -1,
        "bytes of requests read but not yet answered; -1 = no limit (a frame that does not fit waits)",
        at_least(-1),
    )
    request_timeout_ms: int = _key(
        "request.timeout.ms", INT, 30000, "how long the broker's own requests wait for an answer", at_least(0)
    )
    fetch_max_bytes: int = _key("fetch.max.bytes", INT, 57671680, "largest fetch response", at_least(1024))

    # -- security (docs/security.md) -------------------------------------------------------------
    # Per-listener values `listener.name.<listener>.ssl.*` / `listener.name.<listener>.<mechanism>.
    # sasl.jaas.config` are Kafka's dynamic prefixes: kept with the unknown keys, never warned about.
    ssl_keystore_type: str = _key(
        "ssl.keystore.type", STRING, "JKS", "PEM or PKCS12 (Kafka's JKS cannot be read: convert it)"
    )
    ssl_keystore_location: str | None = _key(
        "ssl.keystore.location", STRING, None, "keystore file (PEM: key and certificate chain)"
    )
    ssl_keystore_password: str | None = _key(
        "ssl.keystore.password", PASSWORD, None, "PKCS12 keystore password"
    )
    ssl_key_password: str | None = _key("ssl.key.password", PASSWORD, None, "private key password")
    ssl_keystore_key: str | None = _key("ssl.keystore.key", PASSWORD, None, "inline PEM private key")
    ssl_keystore_certificate_chain: str | None = _key(
        "ssl.keystore.certificate.chain", PASSWORD, None, "inline PEM certificate chain"
    )
    ssl_truststore_type: str = _key("ssl.truststore.type", STRING, "JKS", "PEM or PKCS12")
    ssl_truststore_location: str | None = _key("ssl.truststore.location", STRING, None, "truststore file")
    ssl_truststore_password: str | None = _key(
        "ssl.truststore.password", PASSWORD, None, "PKCS12 truststore password"
    )
    ssl_truststore_certificates: str | None = _key(
        "ssl.truststore.certificates", PASSWORD, None, "inline PEM trusted certificates"
    )
    ssl_client_auth: str = _key(
        "ssl.client.auth",
        choice("none", "requested", "required"),
        "none",
        "whether SSL listeners ask clients for a certificate (mTLS)",
    )
    ssl_enabled_protocols: tuple[str, ...] = _key(
        "ssl.enabled.protocols", LIST, ("TLSv1.2", "TLSv1.3"), "TLS versions accepted"
    )
    ssl_protocol: str = _key("ssl.protocol", STRING, "TLSv1.3", "TLS protocol (accepted and kept)")
    ssl_cipher_suites: tuple[str, ...] = _key(
        "ssl.cipher.suites", LIST, (), "cipher suites (not applied yet)"
    )
    ssl_endpoint_identification_algorithm: str = _key(
        "ssl.endpoint.identification.algorithm", STRING, "https", "clients check the host name; empty = no"
    )
    ssl_principal_mapping_rules: str = _key(
        "ssl.principal.mapping.rules", STRING, "DEFAULT", "certificate DN -> principal name rules"
    )
    sasl_enabled_mechanisms: tuple[str, ...] = _key(
        "sasl.enabled.mechanisms",
        LIST,
        ("GSSAPI",),
        "SASL mechanisms served (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512; GSSAPI is not supported)",
    )
    sasl_mechanism_inter_broker_protocol: str = _key(
        "sasl.mechanism.inter.broker.protocol", STRING, "GSSAPI", "SASL mechanism between brokers"
    )
    sasl_jaas_config: str | None = _key("sasl.jaas.config", PASSWORD, None, "JAAS login module config")
    sasl_server_max_receive_size: int = _key(
        "sasl.server.max.receive.size", INT, 524288, "largest SASL message before authentication", at_least(1)
    )
    connections_max_reauth_ms: int = _key(
        "connections.max.reauth.ms", LONG, 0, "SASL session lifetime (KIP-368); 0 = unlimited", at_least(0)
    )
    authorizer_class_name: str = _key(
        "authorizer.class.name",
        STRING,
        "",
        "ACL authorizer (kafka.security.authorizer.AclAuthorizer); empty = none",
    )
    super_users: str | None = _key(
        "super.users", STRING, None, "principals allowed everything, User:a;User:b"
    )
    allow_everyone_if_no_acl_found: bool = _key(
        "allow.everyone.if.no.acl.found", BOOLEAN, False, "a resource without ACLs is open to all"
    )

    # -- topics, leaders, replication ------------------------------------------------------------
    num_partitions: int = _key("num.partitions", INT, 1, "partitions of an auto-created topic", at_least(1))
    max_partitions: int = _key(
        "max.partitions", INT, 500000, "partitions allowed in the cluster (KIP-578)", at_least(1)
    )
    max_broker_partitions: int = _key(
        "max.broker.partitions", INT, 200000, "partition replicas allowed per broker (KIP-578)", at_least(1)
    )
    default_replication_factor: int = _key(
        "default.replication.factor", INT, 1, "replication factor of an auto-created topic", at_least(1)
    )
    min_insync_replicas: int = _key(
        "min.insync.replicas", INT, 1, "ISR size an acks=all produce needs", at_least(1)
    )
    unclean_leader_election_enable: bool = _key(
        "unclean.leader.election.enable", BOOLEAN, False, "allow out-of-sync replicas to become leader"
    )
    auto_create_topics_enable: bool = _key(
        "auto.create.topics.enable", BOOLEAN, True, "create unknown topics on metadata requests"
    )
    delete_topic_enable: bool = _key("delete.topic.enable", BOOLEAN, True, "allow topic deletion")
    auto_leader_rebalance_enable: bool = _key(
        "auto.leader.rebalance.enable", BOOLEAN, True, "move leadership back to preferred replicas"
    )
    leader_imbalance_per_broker_percentage: int = _key(
        "leader.imbalance.per.broker.percentage",
        INT,
        10,
        "non-preferred leader share that triggers a rebalance",
        between(0, 100),
    )
    leader_imbalance_check_interval_seconds: int = _key(
        "leader.imbalance.check.interval.seconds",
        LONG,
        300,
        "how often leader balance is checked",
        at_least(1),
    )
    message_max_bytes: int = _key(
        "message.max.bytes", INT, 1048588, "largest record batch accepted", at_least(0)
    )
    replica_lag_time_max_ms: int = _key(
        "replica.lag.time.max.ms", LONG, 30000, "a follower this far behind leaves the ISR", at_least(1)
    )
    num_replica_fetchers: int = _key(
        "num.replica.fetchers", INT, 1, "fetcher threads per source broker", at_least(1)
    )
    replica_fetch_max_bytes: int = _key(
        "replica.fetch.max.bytes", INT, 1048576, "bytes a follower fetches per partition", at_least(0)
    )
    replica_fetch_wait_max_ms: int = _key(
        "replica.fetch.wait.max.ms", INT, 500, "how long a follower fetch may wait for data", at_least(0)
    )
    replica_fetch_min_bytes: int = _key(
        "replica.fetch.min.bytes", INT, 1, "data a follower fetch waits for", at_least(0)
    )
    replica_fetch_response_max_bytes: int = _key(
        "replica.fetch.response.max.bytes", INT, 10485760, "bytes a follower fetches in total", at_least(0)
    )
    replica_fetch_backoff_ms: int = _key(
        "replica.fetch.backoff.ms", INT, 1000, "pause after a failed follower fetch", at_least(0)
    )
    max_incremental_fetch_session_cache_slots: int = _key(
        "max.incremental.fetch.session.cache.slots",
        INT,
        1000,
        "incremental fetch sessions (KIP-227) the broker caches; 0 answers every fetch sessionless",
        at_least(0),
    )
    replica_socket_timeout_ms: int = _key(
        "replica.socket.timeout.ms", INT, 30000, "socket timeout of follower fetches"
    )
    replica_socket_receive_buffer_bytes: int = _key(
        "replica.socket.receive.buffer.bytes",
        INT,
        65536,
        "SO_RCVBUF of follower fetches; -1 = OS default",
        at_least(-1),
    )
    replica_high_watermark_checkpoint_interval_ms: int = _key(
        "replica.high.watermark.checkpoint.interval.ms",
        LONG,
        5000,
        "how often high watermarks are checkpointed",
        at_least(1),
    )
    controller_socket_timeout_ms: int = _key(
        "controller.socket.timeout.ms",
        INT,
        30000,
        "socket timeout of controller-to-broker requests",
        at_least(0),
    )
    controlled_shutdown_enable: bool = _key(
        "controlled.shutdown.enable", BOOLEAN, True, "hand leadership over before shutting down"
    )
    controlled_shutdown_max_retries: int = _key(
        "controlled.shutdown.max.retries", INT, 3, "controlled shutdown attempts", at_least(0)
    )
    controlled_shutdown_retry_backoff_ms: int = _key(
        "controlled.shutdown.retry.backoff.ms",
        LONG,
        5000,
        "pause between controlled shutdown attempts",
        at_least(0),
    )

    # -- log -------------------------------------------------------------------------------------
    log_dirs: tuple[str, ...] = _key(
        "log.dirs", LIST, None, "data directories; unset = log.dir", field_default=("/tmp/kafka-logs",)
    )
    log_dir: str = _key("log.dir", STRING, "/tmp/kafka-logs", "data directories when log.dirs is unset")
    log_segment_bytes: int = _key("log.segment.bytes", INT, 1073741824, "size of a log segment", at_least(14))
    log_roll_ms: int | None = _key(
        "log.roll.ms", LONG, None, "age that rolls a segment; overrides log.roll.hours", at_least(1)
    )
    log_roll_hours: int = _key("log.roll.hours", INT, 168, "age that rolls a segment", at_least(1))
    log_roll_jitter_ms: int | None = _key(
        "log.roll.jitter.ms", LONG, None, "random roll jitter; overrides log.roll.jitter.hours", at_least(0)
    )
    log_roll_jitter_hours: int = _key("log.roll.jitter.hours", INT, 0, "random roll jitter", at_least(0))
    log_retention_ms: int | None = _key(
        "log.retention.ms", LONG, None, "retention time; overrides minutes and hours; -1 = unlimited"
    )
    log_retention_minutes: int | None = _key(
        "log.retention.minutes", INT, None, "retention time; overrides hours; -1 = unlimited"
    )
    log_retention_hours: int = _key("log.retention.hours", INT, 168, "retention time; -1 = unlimited")
    log_retention_bytes: int = _key(
        "log.retention.bytes", LONG, -1, "size a partition's log is cut back to; -1 = unlimited"
    )
    log_retention_check_interval_ms: int = _key(
        "log.retention.check.interval.ms", LONG, 300000, "how often retention runs", at_least(1)
    )
    log_cleanup_policy: tuple[str, ...] = _key(
        "log.cleanup.policy",
        choice_list("compact", "delete"),
        ("delete",),
        "delete old segments, compact by key, or both",
    )
    log_index_size_max_bytes: int = _key(
        "log.index.size.max.bytes", INT, 10485760, "size of an offset or time index", at_least(4)
    )
    log_index_interval_bytes: int = _key(
        "log.index.interval.bytes", INT, 4096, "log bytes between two offset index entries", at_least(0)
    )
    log_flush_interval_messages: int = _key(
        "log.flush.interval.messages", LONG, INT64_MAX, "records appended before an fsync", at_least(1)
    )
    log_flush_interval_ms: int = _key(
        "log.flush.interval.ms",
        LONG,
        None,
        "age of unflushed data that forces an fsync; unset = log.flush.scheduler.interval.ms",
        at_least(0),
        field_default=INT64_MAX,
    )
    log_flush_scheduler_interval_ms: int = _key(
        "log.flush.scheduler.interval.ms",
        LONG,
        INT64_MAX,
        "how often logs are checked for a time-based flush",
        at_least(0),
    )
    log_flush_offset_checkpoint_interval_ms: int = _key(
        "log.flush.offset.checkpoint.interval.ms",
        INT,
        60000,
        "how often recovery points are saved",
        at_least(0),
    )
    log_flush_start_offset_checkpoint_interval_ms: int = _key(
        "log.flush.start.offset.checkpoint.interval.ms",
        INT,
        60000,
        "how often log start offsets are saved",
        at_least(0),
    )
    log_segment_delete_delay_ms: int = _key(
        "log.segment.delete.delay.ms",
        LONG,
        60000,
        "wait before deleting a removed segment's files",
        at_least(0),
    )
    log_preallocate: bool = _key("log.preallocate", BOOLEAN, False, "preallocate new segment files")
    log_message_timestamp_type: str = _key(
        "log.message.timestamp.type",
        _TIMESTAMP_TYPES,
        "CreateTime",
        "record timestamps: the producer's or the append time",
    )
    log_message_timestamp_difference_max_ms: int = _key(
        "log.message.timestamp.difference.max.ms",
        LONG,
        INT64_MAX,
        "largest accepted CreateTime distance from the broker clock",
        at_least(0),
    )
    compression_type: str = _key(
        "compression.type",
        _COMPRESSION,
        "producer",
        "codec of stored batches; producer = keep the producer's",
    )
    log_message_downconversion_enable: bool = _key(
        "log.message.downconversion.enable",
        BOOLEAN,
        True,
        "convert stored batches for Fetch v0-v3 clients (false: UNSUPPORTED_VERSION)",
    )
    num_recovery_threads_per_data_dir: int = _key(
        "num.recovery.threads.per.data.dir",
        INT,
        1,
        "threads recovering logs at startup, per directory",
        at_least(1),
    )
    zkafka_log_max_open_files: int = _key(
        "zkafka.log.max.open.files",
        INT,
        -1,
        "zkafka-specific: segment .log descriptors kept open at most, least recently used closed "
        "first (Kafka keeps every segment open); -1: half the process's open files limit",
        at_least(-1),
    )
    log_cleaner_enable: bool = _key("log.cleaner.enable", BOOLEAN, True, "run the log compactor")
    log_cleaner_threads: int = _key("log.cleaner.threads", INT, 1, "compactor threads", at_least(0))
    log_cleaner_dedupe_buffer_size: int = _key(
        "log.cleaner.dedupe.buffer.size", LONG, 134217728, "memory for the compactor's key map", at_least(0)
    )
    log_cleaner_io_buffer_size: int = _key(
        "log.cleaner.io.buffer.size", INT, 524288, "compactor I/O buffer", at_least(0)
    )
    log_cleaner_delete_retention_ms: int = _key(
        "log.cleaner.delete.retention.ms",
        LONG,
        86400000,
        "how long tombstones survive compaction",
        at_least(0),
    )
    log_cleaner_min_compaction_lag_ms: int = _key(
        "log.cleaner.min.compaction.lag.ms",
        LONG,
        0,
        "records younger than this are not compacted",
        at_least(0),
    )
    log_cleaner_max_compaction_lag_ms: int = _key(
        "log.cleaner.max.compaction.lag.ms",
        LONG,
        INT64_MAX,
        "records older than this make a log compactable",
        at_least(1),
    )
    log_cleaner_min_cleanable_ratio: float = _key(
        "log.cleaner.min.cleanable.ratio",
        DOUBLE,
        0.5,
        "dirty share that makes a log compactable",
        between(0, 1),
    )
    log_cleaner_backoff_ms: int = _key(
        "log.cleaner.backoff.ms", LONG, 15000, "compactor sleep when nothing is compactable", at_least(0)
    )

    # -- groups and offsets ----------------------------------------------------------------------
    group_initial_rebalance_delay_ms: int = _key(
        "group.initial.rebalance.delay.ms",
        INT,
        3000,
        "wait for more members before a new group's first rebalance",
        at_least(0),
    )
    group_min_session_timeout_ms: int = _key(
        "group.min.session.timeout.ms", INT, 6000, "smallest session timeout a member may ask for"
    )
    group_max_session_timeout_ms: int = _key(
        "group.max.session.timeout.ms", INT, 1800000, "largest session timeout a member may ask for"
    )
    group_max_size: int = _key("group.max.size", INT, INT32_MAX, "members allowed in a group", at_least(1))
    offsets_topic_num_partitions: int = _key(
        "offsets.topic.num.partitions", INT, 50, "partitions of __consumer_offsets", at_least(1)
    )
    offsets_topic_replication_factor: int = _key(
        "offsets.topic.replication.factor", SHORT, 3, "replication factor of __consumer_offsets", at_least(1)
    )
    offsets_topic_segment_bytes: int = _key(
        "offsets.topic.segment.bytes", INT, 104857600, "segment size of __consumer_offsets", at_least(1)
    )
    offsets_topic_compression_codec: int = _key(
        "offsets.topic.compression.codec",
        INT,
        0,
        "codec id of offset commits (0 none ... 4 zstd)",
        between(0, 4),
    )
    offsets_retention_minutes: int = _key(
        "offsets.retention.minutes",
        INT,
        10080,
        "how long committed offsets of an empty group live",
        at_least(1),
    )
    offsets_retention_check_interval_ms: int = _key(
        "offsets.retention.check.interval.ms",
        LONG,
        600000,
        "how often expired offsets are removed",
        at_least(1),
    )
    offsets_commit_timeout_ms: int = _key(
        "offsets.commit.timeout.ms", INT, 5000, "wait for an offset commit's replication", at_least(1)
    )
    offsets_commit_required_acks: int = _key(
        "offsets.commit.required.acks", SHORT, -1, "acks of offset commits", at_least(-1)
    )
    offsets_load_buffer_size: int = _key(
        "offsets.load.buffer.size", INT, 5242880, "read size when loading offsets", at_least(1)
    )
    offset_metadata_max_bytes: int = _key(
        "offset.metadata.max.bytes", INT, 4096, "largest metadata string of a committed offset", at_least(0)
    )

    # -- transactions and producer ids -----------------------------------------------------------
    transaction_state_log_num_partitions: int = _key(
        "transaction.state.log.num.partitions", INT, 50, "partitions of __transaction_state", at_least(1)
    )
    transaction_state_log_replication_factor: int = _key(
        "transaction.state.log.replication.factor",
        SHORT,
        3,
        "replication factor of __transaction_state",
        at_least(1),
    )
    transaction_state_log_min_isr: int = _key(
        "transaction.state.log.min.isr", INT, 2, "min.insync.replicas of __transaction_state", at_least(1)
    )
    transaction_state_log_segment_bytes: int = _key(
        "transaction.state.log.segment.bytes",
        INT,
        104857600,
        "segment size of __transaction_state",
        at_least(1),
    )
    transaction_max_timeout_ms: int = _key(
        "transaction.max.timeout.ms",
        INT,
        900000,
        "largest transaction timeout a producer may ask for",
        at_least(1),
    )
    transaction_abort_timed_out_transaction_cleanup_interval_ms: int = _key(
        "transaction.abort.timed.out.transaction.cleanup.interval.ms",
        INT,
        10000,
        "how often the coordinator aborts transactions open longer than their timeout",
        at_least(1),
    )
    transaction_remove_expired_transaction_cleanup_interval_ms: int = _key(
        "transaction.remove.expired.transaction.cleanup.interval.ms",
        INT,
        3600000,
        "how often the coordinator removes transactional ids idle past their expiration",
        at_least(1),
    )
    transactional_id_expiration_ms: int = _key(
        "transactional.id.expiration.ms",
        INT,
        604800000,
        "idle time after which a transactional id is forgotten",
        at_least(1),
    )
    transaction_partition_verification_enable: bool = _key(
        "transaction.partition.verification.enable",
        BOOLEAN,
        True,
        "a partition leader asks the transaction coordinator before a transaction's first batch (KIP-890)",
    )
    producer_id_expiration_ms: int = _key(
        "producer.id.expiration.ms",
        INT,
        86400000,
        "idle time after which a producer id's state is dropped",
        at_least(1),
    )

    # -- quotas and metrics ----------------------------------------------------------------------
    quota_window_num: int = _key(
        "quota.window.num", INT, 11, "sample windows a client quota is measured over", at_least(1)
    )
    quota_window_size_seconds: int = _key(
        "quota.window.size.seconds", INT, 1, "length of one client quota sample window", at_least(1)
    )
    leader_replication_throttled_rate: int = _key(
        "leader.replication.throttled.rate",
        LONG,
        2**63 - 1,
        "bytes/s a leader serves to the throttled replicas of leader.replication.throttled.replicas",
        at_least(1),
    )
    follower_replication_throttled_rate: int = _key(
        "follower.replication.throttled.rate",
        LONG,
        2**63 - 1,
        "bytes/s a follower fetches for the throttled replicas of follower.replication.throttled.replicas",
        at_least(1),
    )
    replication_quota_window_num: int = _key(
        "replication.quota.window.num",
        INT,
        11,
        "sample windows a replication throttle is measured over",
        at_least(1),
    )
    replication_quota_window_size_seconds: int = _key(
        "replication.quota.window.size.seconds",
        INT,
        1,
        "length of one replication throttle sample window",
        at_least(1),
    )
    metrics_listener: str | None = _key(
        "metrics.listener",
        STRING,
        None,
        "http://host:port serving Prometheus /metrics (port 0: any free port); unset = no metrics endpoint",
        _METRICS_LISTENER_CHECK,
    )

    # -- bookkeeping (not keys) ------------------------------------------------------------------
    explicit_keys: frozenset[str] = field(default=frozenset(), repr=False)
    """Keys given in the properties (DescribeConfigs source STATIC_BROKER_CONFIG)."""
    unknown_properties: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    """Keys Kafka's table does not know, kept so `to_properties` writes them back."""

    # -- construction ----------------------------------------------------------------------------
    @classmethod
    def from_properties(cls, props: Mapping[str, object]) -> BrokerConfig:
        """Parse, resolve and cross-check server.properties keys; ConfigError on any bad value.

        Unknown keys are logged (logger "zkafka.config") and kept; unknown `zkafka.*` keys are errors.
        """
        values: dict[str, object] = {}
        explicit: dict[str, str] = {}  # key -> raw text, in the order given
        unknown: dict[str, str] = {}
        for raw_key, raw_value in props.items():
            key, text = raw_key.strip(), _as_text(raw_value)
            row = BROKER_CONFIG_KEYS.get(key)
            if row is None:
                if key.startswith("zkafka."):
                    known = ", ".join(k for k in BROKER_CONFIG_KEYS if k.startswith("zkafka."))
                    raise ConfigError.bad_value(key, text, f"a known zkafka.* key ({known})")
                if not key.startswith(LISTENER_PREFIX):
                    log.warning("unknown broker config key %r (kept, but nothing uses it)", key)
                unknown[key] = text
                continue
            values[row.attr] = row.parse(text)
            explicit[key] = text
        for row in BROKER_CONFIG_KEYS.values():
            if row.required and row.name not in explicit:
                raise ConfigError.bad_value(row.name, None, "a value (required, no default)")
        _resolve_fallbacks(values, explicit)
        config = cls(
            **values,
            explicit_keys=frozenset(explicit),  # type: ignore[arg-type]
            unknown_properties=tuple(unknown.items()),
        )
        _cross_check(config, explicit)
        return config

    def with_overrides(self, props: Mapping[str, object]) -> BrokerConfig:
        """This config's explicit keys plus `props`, parsed and checked again."""
        return BrokerConfig.from_properties({**self.to_properties(), **props})

    # -- effective values ------------------------------------------------------------------------
    @property
    def retention_ms(self) -> int:
        """log.retention.ms > log.retention.minutes > log.retention.hours; -1 = unlimited."""
        return _retention(self)[1]

    @property
    def roll_ms(self) -> int:
        """log.roll.ms > log.roll.hours."""
        return self.log_roll_ms if self.log_roll_ms is not None else self.log_roll_hours * MS_PER_HOUR

    @property
    def roll_jitter_ms(self) -> int:
        """log.roll.jitter.ms > log.roll.jitter.hours."""
        if self.log_roll_jitter_ms is not None:
            return self.log_roll_jitter_ms
        return self.log_roll_jitter_hours * MS_PER_HOUR

    @property
    def protocol_map(self) -> dict[str, str]:
        return dict(self.listener_security_protocol_map)

    @property
    def inter_broker_endpoint(self) -> Endpoint:
        """The advertised endpoint other brokers (and the controller) connect to."""
        name = self.inter_broker_listener_name
        return next(e for e in self.advertised_listeners if e.listener_name == name)

    def log_config(self) -> LogConfig:
        """Topic-level defaults derived from this broker's log.* keys (before topic overrides)."""
        values: dict[str, Any] = {}
        for topic_key, (source, _) in LOG_CONFIG_SOURCES.items():
            attr = TOPIC_CONFIG_KEYS[topic_key][0]
            value = getattr(self, source)
            values[attr] = frozenset(value) if attr == "cleanup_policy" else value
        return LogConfig(**values)

    # -- output ----------------------------------------------------------------------------------
    def describe(self) -> list[tuple[str, str | None, bool]]:
        """(key, value text or None for Kafka's null, is_default) for every known key, sorted by key.

        A key counts as default when it was not given, even if its value equals the default (as in
        Kafka's DescribeConfigs); a default shows Kafka's default, e.g. null for advertised.listeners.
        """
        out = []
        for name in sorted(BROKER_CONFIG_KEYS):
            row = BROKER_CONFIG_KEYS[name]
            if row.type is PASSWORD:
                out.append((name, None, name not in self.explicit_keys))
            elif name in self.explicit_keys:
                out.append((name, row.format(getattr(self, row.attr)), False))
            else:
                out.append((name, row.format(row.default), True))
        return out

    def to_properties(self, *, include_defaults: bool = False) -> dict[str, str]:
        """Keys as server.properties text values: the given ones (and with `include_defaults`, every
        non-null default), then unknown keys; `format_properties` writes them to a file."""
        out: dict[str, str] = {}
        for name, row in BROKER_CONFIG_KEYS.items():
            text = None
            if name in self.explicit_keys:
                text = row.format(getattr(self, row.attr))
            elif include_defaults and not _excluded_by(name, self.explicit_keys):
                text = row.format(row.default)
            if text is not None:
                out[name] = text
        out.update(self.unknown_properties)
        return out

    def security_properties(self) -> dict[str, str]:
        """The given `ssl.*`, `sasl.*` and `listener.name.*` keys as text (secrets included: for
        building SSL contexts and SASL servers, never for output)."""
        return {
            k: v for k, v in self.to_properties().items() if k.startswith(("ssl.", "sasl.", LISTENER_PREFIX))
        }


def is_sensitive(key: str) -> bool:
    """Kafka's PASSWORD keys, and per-listener overrides of them: described as null."""
    row = BROKER_CONFIG_KEYS.get(key)
    if row is not None:
        return row.type is PASSWORD
    return key.startswith(LISTENER_PREFIX) and (
        "password" in key
        or key.endswith(
            (
                "sasl.jaas.config",
                "ssl.keystore.key",
                "ssl.keystore.certificate.chain",
                "ssl.truststore.certificates",
            )
        )
    )


def load_broker_config(path: str | Path) -> BrokerConfig:
    """Read a server.properties file; ConfigError names the file line or the key that is wrong."""
    return BrokerConfig.from_properties(load_properties(path))


# -- the table -----------------------------------------------------------------------------------


def _build_table() -> dict[str, ConfigKey]:
    table: dict[str, ConfigKey] = {}
    for f in fields(BrokerConfig):
        row = f.metadata.get(_ROW)
        if row is None:
            continue
        assert f.name == row.name.replace(".", "_"), f"attribute {f.name} does not match key {row.name}"
        assert row.required or f.default is not MISSING
        table[row.name] = replace(row, attr=f.name)
    return table


BROKER_CONFIG_KEYS: dict[str, ConfigKey] = _build_table()

# Topic config -> (BrokerConfig attribute giving its default, broker keys that set it, by precedence).
# The synonyms are what DescribeConfigs lists for a topic config that a broker key supplies.
LOG_CONFIG_SOURCES: dict[str, tuple[str, tuple[str, ...]]] = {
    "segment.bytes": ("log_segment_bytes", ("log.segment.bytes",)),
    "segment.ms": ("roll_ms", ("log.roll.ms", "log.roll.hours")),
    "segment.jitter.ms": ("roll_jitter_ms", ("log.roll.jitter.ms", "log.roll.jitter.hours")),
    "segment.index.bytes": ("log_index_size_max_bytes", ("log.index.size.max.bytes",)),
    "index.interval.bytes": ("log_index_interval_bytes", ("log.index.interval.bytes",)),
    "retention.ms": ("retention_ms", ("log.retention.ms", "log.retention.minutes", "log.retention.hours")),
    "retention.bytes": ("log_retention_bytes", ("log.retention.bytes",)),
    "cleanup.policy": ("log_cleanup_policy", ("log.cleanup.policy",)),
    "delete.retention.ms": ("log_cleaner_delete_retention_ms", ("log.cleaner.delete.retention.ms",)),
    "min.compaction.lag.ms": ("log_cleaner_min_compaction_lag_ms", ("log.cleaner.min.compaction.lag.ms",)),
    "max.compaction.lag.ms": ("log_cleaner_max_compaction_lag_ms", ("log.cleaner.max.compaction.lag.ms",)),
    "min.cleanable.dirty.ratio": ("log_cleaner_min_cleanable_ratio", ("log.cleaner.min.cleanable.ratio",)),
    "flush.messages": ("log_flush_interval_messages", ("log.flush.interval.messages",)),
    "flush.ms": ("log_flush_interval_ms", ("log.flush.interval.ms",)),
    "file.delete.delay.ms": ("log_segment_delete_delay_ms", ("log.segment.delete.delay.ms",)),
    "max.message.bytes": ("message_max_bytes", ("message.max.bytes",)),
    "message.timestamp.type": ("log_message_timestamp_type", ("log.message.timestamp.type",)),
    "preallocate": ("log_preallocate", ("log.preallocate",)),
    "min.insync.replicas": ("min_insync_replicas", ("min.insync.replicas",)),
    "unclean.leader.election.enable": ("unclean_leader_election_enable", ("unclean.leader.election.enable",)),
    "compression.type": ("compression_type", ("compression.type",)),
    "message.downconversion.enable": (
        "log_message_downconversion_enable",
        ("log.message.downconversion.enable",),
    ),
    "message.timestamp.difference.max.ms": (
        "log_message_timestamp_difference_max_ms",
        ("log.message.timestamp.difference.max.ms",),
    ),
}

assert LOG_CONFIG_SOURCES.keys() == TOPIC_CONFIG_KEYS.keys()
assert all(k in BROKER_CONFIG_KEYS for _, keys in LOG_CONFIG_SOURCES.values() for k in keys)


# -- resolution and cross-key checks -------------------------------------------------------------


def _as_text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


# Keys Kafka refuses to see together: writing one's default next to the other given one would too.
_MUTUALLY_EXCLUSIVE = {
    "security.inter.broker.protocol": "inter.broker.listener.name",
    "inter.broker.listener.name": "security.inter.broker.protocol",
}


def _excluded_by(name: str, explicit: frozenset[str]) -> bool:
    return _MUTUALLY_EXCLUSIVE.get(name) in explicit


def _given(values: dict[str, object], name: str) -> Any:
    """A key's parsed value, or its field default when it was not given."""
    row = BROKER_CONFIG_KEYS[name]
    if row.attr in values:
        return values[row.attr]
    return next(f.default for f in fields(BrokerConfig) if f.name == row.attr)


def _resolve_fallbacks(values: dict[str, object], explicit: Mapping[str, str]) -> None:
    """Fill the keys whose Kafka default is another key's value, attaching listener protocols."""
    protocols = dict(_given(values, "listener.security.protocol.map"))
    listeners = _with_protocols("listeners", _given(values, "listeners"), protocols, explicit)
    values["listeners"] = listeners
    if "advertised.listeners" in explicit:
        advertised = _with_protocols(
            "advertised.listeners", values["advertised_listeners"], protocols, explicit
        )
    else:
        advertised = listeners
    fallback_host = _given(values, "zkafka.advertised.default.host")
    values["advertised_listeners"] = tuple(
        e if e.host else replace(e, host=fallback_host) for e in advertised
    )

    if "log.dirs" in explicit:
        dirs, source = values["log_dirs"], "log.dirs"
    else:
        dirs, source = _given(values, "log.dir").split(","), "log.dir"
    values["log_dirs"] = tuple(d.strip() for d in dirs if d.strip())  # type: ignore[attr-defined]
    if not values["log_dirs"]:
        raise ConfigError.bad_value(source, explicit.get(source, ""), "at least one directory")

    if "zookeeper.connection.timeout.ms" not in explicit:
        values["zookeeper_connection_timeout_ms"] = _given(values, "zookeeper.session.timeout.ms")
    if "log.flush.interval.ms" not in explicit:
        values["log_flush_interval_ms"] = _given(values, "log.flush.scheduler.interval.ms")

    if "inter.broker.listener.name" in explicit:
        if "security.inter.broker.protocol" in explicit:
            raise ConfigError.bad_value(
                "inter.broker.listener.name",
                explicit["inter.broker.listener.name"],
                "no value when security.inter.broker.protocol is also set",
            )
        values["inter_broker_listener_name"] = str(values["inter_broker_listener_name"]).upper()
    else:
        values["inter_broker_listener_name"] = _given(values, "security.inter.broker.protocol")


def _with_protocols(
    key: str, endpoints: tuple[Endpoint, ...], protocols: dict[str, str], explicit: Mapping[str, str]
) -> tuple[Endpoint, ...]:
    try:
        return resolve_protocols(endpoints, protocols)
    except ValueError as e:
        text = explicit.get(key, format_listeners(endpoints))
        raise ConfigError.bad_value(
            key, text, "listener names that listener.security.protocol.map knows", str(e)
        ) from None


def _cross_check(config: BrokerConfig, explicit: Mapping[str, str]) -> None:
    """Kafka's startup checks that involve more than one key."""

    def text(key: str) -> str:
        row = BROKER_CONFIG_KEYS[key]
        return explicit.get(key) or str(row.format(getattr(config, row.attr)))

    if config.broker_id_generation_enable:
        if config.broker_id > config.reserved_broker_max_id:
            raise ConfigError.bad_value(
                "broker.id",
                text("broker.id"),
                f"an integer in [-1, {config.reserved_broker_max_id}] "
                "(reserved.broker.max.id) while broker.id.generation.enable is true",
            )
    elif config.broker_id < 0:
        raise ConfigError.bad_value(
            "broker.id", text("broker.id"), "an integer >= 0 while broker.id.generation.enable is false"
        )

    try:
        check_distinct_ports(config.listeners)
    except ValueError as e:
        raise ConfigError.bad_value(
            "listeners", text("listeners"), "listeners on distinct ports", str(e)
        ) from None

    if is_meta_address(config.zkafka_advertised_default_host):
        raise ConfigError.bad_value(
            "zkafka.advertised.default.host",
            text("zkafka.advertised.default.host"),
            "a routable host, not the meta-address 0.0.0.0 or ::",
        )
    bound = {e.listener_name for e in config.listeners}
    for e in config.advertised_listeners:
        if e.listener_name not in bound:
            raise ConfigError.bad_value(
                "advertised.listeners",
                text("advertised.listeners"),
                "listener names that listeners also defines",
                f"{e.listener_name} is not in listeners",
            )
        if is_meta_address(e.host):
            given = "advertised.listeners" in explicit
            raise ConfigError.bad_value(
                "advertised.listeners",
                text("advertised.listeners" if given else "listeners"),
                "a routable host, not the meta-address 0.0.0.0 or ::",
                None if given else "advertised.listeners is unset, so it defaults to listeners",
            )

    advertised = [e.listener_name for e in config.advertised_listeners]
    if config.inter_broker_listener_name not in advertised:
        key = (
            "inter.broker.listener.name"
            if "inter.broker.listener.name" in explicit
            else "security.inter.broker.protocol"
        )
        raise ConfigError.bad_value(
            key, text(key), f"a listener name in advertised.listeners ({', '.join(advertised)})"
        )

    if 0 <= config.queued_max_request_bytes < config.socket_request_max_bytes:
        raise ConfigError.bad_value(
            "queued.max.request.bytes",
            text("queued.max.request.bytes"),
            f"-1 or at least socket.request.max.bytes ({config.socket_request_max_bytes})",
        )
    try:
        parse_connection_overrides(config.max_connections_per_ip_overrides)
    except ValueError as e:
        raise ConfigError.bad_value(
            "max.connections.per.ip.overrides",
            text("max.connections.per.ip.overrides"),
            "host:count pairs separated by commas",
            str(e),
        ) from None

    source, millis = _retention(config)
    if millis == 0:
        raise ConfigError.bad_value(source, text(source), "a positive retention time, or -1 for unlimited")

    for limit in ("replica.socket.timeout.ms", "replica.lag.time.max.ms"):
        limit_value = getattr(config, BROKER_CONFIG_KEYS[limit].attr)
        if config.replica_fetch_wait_max_ms > limit_value:
            raise ConfigError.bad_value(
                "replica.fetch.wait.max.ms",
                text("replica.fetch.wait.max.ms"),
                f"at most {limit} ({limit_value})",
            )


def _retention(config: BrokerConfig) -> tuple[str, int]:
    """(deciding key, effective retention in ms with every negative value folded into -1)."""
    if config.log_retention_ms is not None:
        source, millis = "log.retention.ms", config.log_retention_ms
    elif config.log_retention_minutes is not None:
        source, millis = "log.retention.minutes", config.log_retention_minutes * MS_PER_MINUTE
    else:
        source, millis = "log.retention.hours", config.log_retention_hours * MS_PER_HOUR
    return source, (-1 if millis < 0 else millis)


def parse_connection_overrides(text: str) -> dict[str, int]:
    """`max.connections.per.ip.overrides`: "host:count,host:count" -> {host: count}. The count follows
    the last colon, so IPv6 addresses need no brackets."""
    out: dict[str, int] = {}
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        host, sep, count = item.rpartition(":")
        if not sep or not host.strip() or not count.strip().isdigit():
            raise ValueError(f"{item!r} is not host:count")
        out[host.strip().strip("[]")] = int(count)
    return out
