"""The client's view of the cluster: brokers, topics, leaders, the controller, and one connection
per broker.

`Cluster` bootstraps from ``"host:port,host:port"`` or from ZooKeeper's ``/brokers/ids`` (kept
current by a watch: `zk_discovery`, so brokers that join later are found without a restart), asks
Metadata, and keeps an immutable `ClusterMetadata` snapshot that it replaces on every refresh.
Producer, consumer and admin client each own one `Cluster`, so a consumer's long-polling Fetch
never delays a producer's response on a shared, in-order connection.

Refreshes happen on demand: callers ask for one after NOT_LEADER_OR_FOLLOWER,
UNKNOWN_TOPIC_OR_PARTITION, LEADER_NOT_AVAILABLE or a broken connection (`request_refresh`), and
concurrent requests for the same topics share one Metadata round trip.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from zkafka.client.connection import BrokerConnection, ConnectionError_, NoCommonVersionError
from zkafka.client.errors import BrokerUnavailableError, ClientClosedError, ClientTimeoutError, ConfigError
from zkafka.client.security import ClientSecurity
from zkafka.client.types import TopicPartition
from zkafka.protocol import ErrorCode, KafkaError, Message
from zkafka.protocol.messages import MetadataRequest, MetadataResponse

if TYPE_CHECKING:
    from zkafka.client.zk_discovery import BrokerDiscovery

log = logging.getLogger(__name__)

Address = tuple[str, int]

# Errors after which the leader (or the topic) may have moved: refresh metadata, then retry.
METADATA_ERRORS = frozenset(
    {
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.LEADER_NOT_AVAILABLE,
        ErrorCode.REPLICA_NOT_AVAILABLE,
        ErrorCode.KAFKA_STORAGE_ERROR,
        ErrorCode.FENCED_LEADER_EPOCH,
        ErrorCode.UNKNOWN_LEADER_EPOCH,
        ErrorCode.NOT_CONTROLLER,
    }
)
NO_LEADER = -1

_ADDRESS_RE = re.compile(r"^(?:\[(?P<v6>[0-9A-Fa-f:.%]+)\]|(?P<host>[A-Za-z0-9._-]+)):(?P<port>[0-9]{1,5})$")


def parse_bootstrap(servers: str | Sequence[str]) -> list[Address]:
    """``"h1:9092,h2:9092"`` (or a list of ``"host:port"``) as (host, port) pairs; IPv6 hosts in
    brackets. Raises ConfigError naming the bad entry."""
    entries = servers.split(",") if isinstance(servers, str) else list(servers)
    out: list[Address] = []
    for raw in entries:
        entry = raw.strip()
        if not entry:
            continue
        for prefix in ("PLAINTEXT://", "plaintext://"):
            entry = entry.removeprefix(prefix)
        m = _ADDRESS_RE.match(entry)
        if m is None:
            raise ConfigError(f"bad bootstrap server {raw.strip()!r}: expected host:port")
        port = int(m["port"])
        if not 0 < port < 65536:
            raise ConfigError(f"bad bootstrap server {raw.strip()!r}: port out of range")
        out.append((m["v6"] or m["host"], port))
    if not out:
        raise ConfigError("no bootstrap servers given")
    return out


# -- the metadata snapshot ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BrokerMetadata:
    node_id: int
    host: str
    port: int
    rack: str | None = None

    @property
    def address(self) -> Address:
        return (self.host, self.port)


@dataclass(frozen=True, slots=True)
class PartitionMetadata:
    topic: str
    partition: int
    leader: int
    """The leader's broker id, NO_LEADER (-1) when the partition has none."""
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline_replicas: tuple[int, ...] = ()
    error: ErrorCode = ErrorCode.NONE


@dataclass(frozen=True, slots=True)
class TopicMetadata:
    name: str
    partitions: Mapping[int, PartitionMetadata]
    is_internal: bool = False
    error: ErrorCode = ErrorCode.NONE

    @property
    def partition_count(self) -> int:
        return len(self.partitions)

    @property
    def replication_factor(self) -> int:
        return max((len(p.replicas) for p in self.partitions.values()), default=0)

    def available_partitions(self) -> list[int]:
        return [p.partition for p in self.partitions.values() if p.leader != NO_LEADER]


@dataclass(frozen=True, slots=True)
class ClusterMetadata:
    cluster_id: str | None = None
    controller_id: int = -1
    brokers: Mapping[int, BrokerMetadata] = field(default_factory=dict)
    topics: Mapping[str, TopicMetadata] = field(default_factory=dict)

    def leader(self, tp: TopicPartition) -> int:
        topic = self.topics.get(tp.topic)
        if topic is None:
            return NO_LEADER
        part = topic.partitions.get(tp.partition)
        if part is None or part.leader not in self.brokers:
            return NO_LEADER
        return part.leader


def metadata_from_response(
    resp: MetadataResponse, previous: ClusterMetadata, refreshed: Iterable[str] | None
) -> ClusterMetadata:
    """The new snapshot: brokers and controller from `resp`; topics from `resp` for the ones
    asked (all of them when `refreshed` is None), the others kept from `previous`."""
    brokers = {b.node_id: BrokerMetadata(b.node_id, b.host, b.port, b.rack) for b in resp.brokers}
    topics: dict[str, TopicMetadata] = {} if refreshed is None else dict(previous.topics)
    for name in refreshed or ():
        topics.pop(name, None)
    for t in resp.topics:
        error = ErrorCode.lookup(t.error_code)
        partitions = {
            p.partition_index: PartitionMetadata(
                topic=t.name,
                partition=p.partition_index,
                leader=p.leader_id,
                leader_epoch=p.leader_epoch,
                replicas=tuple(p.replica_nodes),
                isr=tuple(p.isr_nodes),
                offline_replicas=tuple(p.offline_replicas),
                error=ErrorCode.lookup(p.error_code),
            )
            for p in sorted(t.partitions, key=lambda p: p.partition_index)
        }
        if error == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
            continue  # absent: callers see "no such topic" by its absence
        topics[t.name] = TopicMetadata(t.name, partitions, t.is_internal, error)
    return ClusterMetadata(resp.cluster_id, resp.controller_id, brokers, topics)


# -- the cluster ---------------------------------------------------------------------------------


class Cluster:
    """Metadata plus connections; see the module docstring.

    Either `bootstrap_servers` or `zookeeper_connect` must be given. Nothing connects until the
    first request (or `bootstrap()`), so constructing one is cheap and needs no running loop.
    """

    def __init__(
        self,
        bootstrap_servers: str | Sequence[str] | None = None,
        *,
        zookeeper_connect: str | None = None,
        zookeeper_listener_name: str | None = None,
        client_id: str = "zkafka",
        request_timeout_ms: int = 30_000,
        connect_timeout_ms: int = 10_000,
        retry_backoff_ms: int = 100,
        metadata_max_age_ms: int = 300_000,
        allow_auto_topic_creation: bool = False,
        security: ClientSecurity | None = None,
    ) -> None:
        if bootstrap_servers is None and zookeeper_connect is None:
            raise ConfigError("either bootstrap servers or a ZooKeeper connect string is required")
        for name, value in (
            ("request_timeout_ms", request_timeout_ms),
            ("connect_timeout_ms", connect_timeout_ms),
            ("metadata_max_age_ms", metadata_max_age_ms),
        ):
            if value <= 0:
                raise ConfigError(f"{name} must be positive, got {value}")
        if retry_backoff_ms < 0:
            raise ConfigError(f"retry_backoff_ms must be >= 0, got {retry_backoff_ms}")
        self._bootstrap: list[Address] = parse_bootstrap(bootstrap_servers) if bootstrap_servers else []
        self.zookeeper_connect = zookeeper_connect
        self.zookeeper_listener_name = zookeeper_listener_name
        """Whose endpoint to use of each broker found in ZooKeeper (None: the first one with the
        client's security protocol); see `zk_discovery`."""
        self._discovery: BrokerDiscovery | None = None
        self._discovery_lock: asyncio.Lock | None = None
        self.client_id = client_id
        self.request_timeout = request_timeout_ms / 1000
        self.connect_timeout = connect_timeout_ms / 1000
        self.retry_backoff = retry_backoff_ms / 1000
        self.metadata_max_age = metadata_max_age_ms / 1000
        self.allow_auto_topic_creation = allow_auto_topic_creation
        self.security = security
        """TLS and SASL of every connection (`zkafka.client.security`); None: PLAINTEXT."""
        self.metadata = ClusterMetadata()
        self._wanted: set[str] = set()
        self._conns: dict[int, BrokerConnection] = {}
        self._bootstrap_conns: dict[Address, BrokerConnection] = {}
        self._opening: dict[object, asyncio.Future[BrokerConnection]] = {}
        self._refresh_lock: asyncio.Lock | None = None
        self._refresh_count = 0
        self._last_refresh_topics: frozenset[str] | None = frozenset()
        self._last_refresh_at = 0.0
        self._background_refresh: asyncio.Task[None] | None = None
        self._closed = False
        self._listeners: list[asyncio.Event] = []

    # -- topics of interest ------------------------------------------------------------------
    def add_topics(self, topics: Iterable[str]) -> None:
        """Topics every later refresh includes (the producer's and consumer's working set)."""
        self._wanted.update(topics)

    @property
    def wanted_topics(self) -> frozenset[str]:
        return frozenset(self._wanted)

    # -- metadata -------------------------------------------------------------------------------
    async def bootstrap(self) -> ClusterMetadata:
        """Make sure brokers and the controller are known (one Metadata round trip if not)."""
        if not self.metadata.brokers:
            await self.refresh()
        return self.metadata

    async def refresh(self, topics: Iterable[str] = (), *, all_topics: bool = False) -> ClusterMetadata:
        """Ask Metadata for the wanted topics plus `topics` (every topic with `all_topics`).

        Calls that wait while another refresh covering their topics completes return its result.
        """
        self._check_open()
        asked: frozenset[str] | None = None if all_topics else frozenset(self._wanted.union(topics))
        if self._refresh_lock is None:
            self._refresh_lock = asyncio.Lock()
        seen = self._refresh_count
        async with self._refresh_lock:
            last = self._last_refresh_topics
            if self._refresh_count != seen and (last is None or (asked is not None and asked <= last)):
                return self.metadata
            resp = await self._send_metadata(asked)
            self.metadata = metadata_from_response(resp, self.metadata, asked)
            self._refresh_count += 1
            self._last_refresh_topics = asked
            self._last_refresh_at = time.monotonic()
            self._adopt_bootstrap_connections()
        for event in self._listeners:
            event.set()
        return self.metadata

    def request_refresh(self) -> asyncio.Task[None]:
        """Refresh in the background (at most one at a time); errors are logged, not raised."""
        task = self._background_refresh
        if task is None or task.done():
            task = asyncio.get_running_loop().create_task(self._refresh_quietly())
            self._background_refresh = task
        return task

    async def _refresh_quietly(self) -> None:
        try:
            await asyncio.sleep(self.retry_backoff)
            await self.refresh()
        except (ClientClosedError, asyncio.CancelledError):
            pass
        except Exception as e:  # the next caller that needs metadata will see the error itself
            log.debug("background metadata refresh failed: %s", e)

    def add_listener(self, event: asyncio.Event) -> None:
        """`event` is set after every completed refresh (the producer's sender waits on it)."""
        self._listeners.append(event)

    @property
    def metadata_is_stale(self) -> bool:
        return time.monotonic() - self._last_refresh_at > self.metadata_max_age

    async def topic(self, name: str, *, timeout: float | None = None, refresh: bool = False) -> TopicMetadata:
        """The metadata of `name` with every partition's leader known, waiting (refreshing with
        backoff) while the topic is being created or a leader is missing. Raises KafkaError
        UNKNOWN_TOPIC_OR_PARTITION when the topic does not exist after `timeout`."""
        self.add_topics([name])
        deadline = time.monotonic() + (self.request_timeout if timeout is None else timeout)
        need_refresh = refresh or self.metadata_is_stale
        while True:
            if need_refresh:
                await self.refresh([name])
            need_refresh = True
            meta = self.metadata.topics.get(name)
            if meta is not None and meta.error == ErrorCode.NONE and meta.partitions:
                return meta
            if meta is not None and meta.error not in (ErrorCode.NONE, *METADATA_ERRORS):
                raise KafkaError(meta.error, f"topic {name!r}: {meta.error.message}")
            if time.monotonic() >= deadline:
                if meta is None:
                    raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {name!r} does not exist")
                raise KafkaError(meta.error, f"topic {name!r}: {meta.error.message}")
            await asyncio.sleep(self.retry_backoff)

    async def _send_metadata(self, topics: frozenset[str] | None) -> MetadataResponse:
        errors: list[str] = []
        for key, opener in await self._metadata_candidates():
            try:
                conn = await self._get_connection(key, opener)
                version = conn.pick_version(MetadataRequest.API_KEY)
                request = MetadataRequest(
                    topics=_metadata_topics(topics, version),
                    allow_auto_topic_creation=self.allow_auto_topic_creation,
                )
                resp = await self._send_on(conn, key, request, version, self.request_timeout)
            except (ConnectionError_, ClientTimeoutError, NoCommonVersionError) as e:
                errors.append(str(e))
                continue
            assert isinstance(resp, MetadataResponse)
            return resp
        raise BrokerUnavailableError("no broker answered Metadata: " + ("; ".join(errors) or "no brokers"))

    async def _metadata_candidates(self) -> list[tuple[object, Address]]:
        """Connected brokers first (cheapest), then other known brokers, then bootstrap servers."""
        known = self.metadata.brokers
        connected = [(b, known[b].address) for b, c in self._conns.items() if b in known and not c.is_closed]
        others = [(b, m.address) for b, m in known.items() if all(b != k for k, _ in connected)]
        boot = list(self._bootstrap)
        if self.zookeeper_connect:
            discovery = await self._start_discovery()
            boot += [a for a in discovery.addresses if a not in boot]
            if not boot and not known:
                raise BrokerUnavailableError(
                    f"no brokers registered in ZooKeeper at {self.zookeeper_connect}"
                )
        return [*connected, *others, *((addr, addr) for addr in boot)]

    async def _start_discovery(self) -> BrokerDiscovery:
        """The ZooKeeper broker list, started on first use (one session per client)."""
        if self._discovery is not None:
            return self._discovery
        if self._discovery_lock is None:
            self._discovery_lock = asyncio.Lock()
        async with self._discovery_lock:
            if self._discovery is None:
                from zkafka.client.zk_discovery import BrokerDiscovery  # only ZooKeeper clients need it

                discovery = BrokerDiscovery(
                    str(self.zookeeper_connect),
                    listener_name=self.zookeeper_listener_name,
                    security_protocol=self.security.protocol if self.security else "PLAINTEXT",
                    timeout_s=self.connect_timeout,
                    on_change=self._brokers_changed,
                )
                try:
                    await discovery.start()
                except ConnectionError as e:
                    raise BrokerUnavailableError(str(e)) from e
                if self._closed:
                    await discovery.close()
                    self._check_open()
                self._discovery = discovery
        return self._discovery

    @property
    def discovered_brokers(self) -> dict[int, Address]:
        """The brokers ZooKeeper lists right now, by id (empty without `zookeeper_connect`, or
        before the first request)."""
        return dict(self._discovery.brokers) if self._discovery is not None else {}

    def _brokers_changed(self) -> None:
        """A broker registered or went away: learn its leaderships now, not at the next error."""
        if not self._closed:
            self.request_refresh()

    def _adopt_bootstrap_connections(self) -> None:
        """A bootstrap connection to an address that turned out to be broker N becomes N's."""
        for broker in self.metadata.brokers.values():
            conn = self._bootstrap_conns.pop(broker.address, None)
            if conn is None:
                continue
            if broker.node_id in self._conns or conn.is_closed:
                conn.close()
            else:
                self._conns[broker.node_id] = conn
        for conn in self._bootstrap_conns.values():
            conn.close()
        self._bootstrap_conns.clear()

    # -- connections ---------------------------------------------------------------------------
    async def connection(self, node_id: int) -> BrokerConnection:
        """The connection to broker `node_id`, opened (or reopened) on demand."""
        self._check_open()
        broker = self.metadata.brokers.get(node_id)
        if broker is None:
            await self.refresh()
            broker = self.metadata.brokers.get(node_id)
            if broker is None:
                raise BrokerUnavailableError(f"broker {node_id} is not in the cluster metadata")
        return await self._get_connection(node_id, broker.address)

    async def _get_connection(self, key: object, address: Address) -> BrokerConnection:
        table: dict = self._conns if isinstance(key, int) else self._bootstrap_conns
        conn = table.get(key)
        if conn is not None and not conn.is_closed:
            return conn
        pending = self._opening.get(key)
        if pending is None:
            pending = asyncio.ensure_future(
                BrokerConnection.open(
                    *address, client_id=self.client_id, timeout=self.connect_timeout, security=self.security
                )
            )
            self._opening[key] = pending

            def opened(fut: asyncio.Future[BrokerConnection]) -> None:
                # A callback, not code after the await: the connection must be registered (or
                # closed) even when the task that started opening it was cancelled meanwhile.
                self._opening.pop(key, None)
                if fut.cancelled() or fut.exception() is not None:
                    return
                if self._closed:
                    fut.result().close()
                else:
                    table[key] = fut.result()

            pending.add_done_callback(opened)
        conn = await asyncio.shield(pending)
        self._check_open()
        return conn

    async def send(
        self,
        node_id: int,
        request: Message,
        *,
        version: int | None = None,
        max_version: int | None = None,
        timeout: float | None = None,
    ) -> Message:
        """Send `request` to broker `node_id` and return its response. Connection failures and
        timeouts close that connection, schedule a metadata refresh and raise ConnectionError_ /
        ClientTimeoutError."""
        try:
            conn = await self.connection(node_id)
        except ConnectionError_:
            self.request_refresh()
            raise
        if version is None:
            version = conn.pick_version(type(request).API_KEY, max_version)
        return await self._send_on(conn, node_id, request, version, timeout or self.request_timeout)

    async def send_on(
        self, conn: BrokerConnection, node_id: int, request: Message, *, version: int, timeout: float
    ) -> Message:
        """`send` on a connection the caller already holds (from `connection`): written there or
        not at all, never on one opened meanwhile, for callers whose ordering depends on it."""
        return await self._send_on(conn, node_id, request, version, timeout)

    async def _send_on(
        self, conn: BrokerConnection, key: object, request: Message, version: int, timeout: float
    ) -> Message:
        try:
            return await conn.send(request, version=version, timeout=timeout)
        except TimeoutError:
            self._drop(key, conn)
            self.request_refresh()
            raise ClientTimeoutError(
                f"{type(request).API_NAME} request to {conn.host}:{conn.port} timed out after {timeout:g} s"
            ) from None
        except ConnectionError_:
            self._drop(key, conn)
            self.request_refresh()
            raise

    def _drop(self, key: object, conn: BrokerConnection) -> None:
        conn.close()
        table: dict = self._conns if isinstance(key, int) else self._bootstrap_conns
        if table.get(key) is conn:
            del table[key]

    async def any_broker(self) -> int:
        """A broker id to send cluster-wide requests to: one already connected if possible."""
        await self.bootstrap()
        for node_id, conn in self._conns.items():
            if node_id in self.metadata.brokers and not conn.is_closed:
                return node_id
        if not self.metadata.brokers:
            raise BrokerUnavailableError("the cluster reports no brokers")
        return min(self.metadata.brokers)

    async def send_any(self, request: Message, *, max_version: int | None = None) -> Message:
        """Send to any broker, trying the next one if a connection fails."""
        await self.bootstrap()
        errors = []
        first = await self.any_broker()
        for node_id in [first, *(b for b in self.metadata.brokers if b != first)]:
            try:
                return await self.send(node_id, request, max_version=max_version)
            except (ConnectionError_, BrokerUnavailableError) as e:
                errors.append(str(e))
        raise BrokerUnavailableError("no broker answered: " + "; ".join(errors))

    async def controller(self, *, refresh: bool = False) -> int:
        if refresh or self.metadata.controller_id < 0:
            await self.refresh()
        controller = self.metadata.controller_id
        if controller < 0 or controller not in self.metadata.brokers:
            raise KafkaError(ErrorCode.NOT_CONTROLLER, "the cluster has no controller right now")
        return controller

    # -- lifecycle ---------------------------------------------------------------------------------
    def _check_open(self) -> None:
        if self._closed:
            raise ClientClosedError("client closed")

    @property
    def closed(self) -> bool:
        return self._closed

    async def close(self) -> None:
        self._closed = True
        task = self._background_refresh
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        for pending in list(self._opening.values()):
            pending.cancel()
        for conn in [*self._conns.values(), *self._bootstrap_conns.values()]:
            conn.close()
        self._conns.clear()
        self._bootstrap_conns.clear()
        discovery, self._discovery = self._discovery, None
        if discovery is not None:
            await discovery.close()


def _metadata_topics(
    topics: frozenset[str] | None, version: int
) -> list[MetadataRequest.MetadataRequestTopic] | None:
    """Metadata v0 has no null topic list: an empty list there means "all topics". From v1 on
    null means all and empty means none (brokers and controller only)."""
    if topics is None:
        return [] if version == 0 else None
    if not topics and version == 0:
        # v0 cannot ask for "no topics"; asking for all is the only way to learn the brokers.
        return []
    return [MetadataRequest.MetadataRequestTopic(name=t) for t in sorted(topics)]
