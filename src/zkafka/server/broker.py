"""One broker process: start-up, periodic work and clean shutdown.

Start-up follows Kafka's order (reference zk-layout §6): connect to ZooKeeper (creating the
chroot), create the top-level paths, read or create `/cluster/id`, open the logs (recovering an
unclean shutdown), bind the listeners, register `/brokers/ids/<id>` (its czxid is our broker
epoch), then start the controller module, which campaigns for `/controller`. Clients are served
from the moment the controller's first UpdateMetadata arrives.

Shutdown (SIGTERM): stop accepting, stop the controller module, take producer-state
snapshots, flush and close every log with its checkpoints and the clean-shutdown marker, and
end the ZooKeeper session (which removes our registration).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

from zkafka.config import BrokerConfig, parse_connection_overrides
from zkafka.protocol import precompile
from zkafka.protocol.api_versions import BROKER_API_VERSIONS
from zkafka.server.apis import HANDLERS
from zkafka.server.connection_quotas import ConnectionQuotas
from zkafka.server.coordinator_service import CoordinatorService
from zkafka.server.dispatcher import Dispatcher
from zkafka.server.isr import IsrManager
from zkafka.server.memory_pool import MemoryPool
from zkafka.server.metadata_cache import MetadataCache
from zkafka.server.network import KafkaConnection
from zkafka.server.network import summarise_logs as summarise_network_logs
from zkafka.server.producer_ids import ProducerIdManager
from zkafka.server.replica_fetcher import ReplicaFetcherManager
from zkafka.server.replica_manager import ReplicaManager
from zkafka.storage.config import LogConfig
from zkafka.storage.manager import LogManager
from zkafka.zk.client import KafkaZkClient
from zkafka.zk.errors import BrokerIdInUseError
from zkafka.zk.model import BrokerInfo, ConfigType, EndPoint, SecurityProtocol
from zkafka.zk.notifications import ChangeNotificationListener
from zkafka.zk.watch_bridge import AsyncWatcher, SessionEvent, SessionState, ZkExecutor
from zkafka.zk.znodes import CONFIG_CHANGES, ConfigEntityChangeNotificationZNode, ConfigEntityZNode

log = logging.getLogger(__name__)

T = TypeVar("T")
METADATA_KEY = "__metadata__"


class Broker:
    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        self.broker_id = config.broker_id
        self.broker_epoch = -1
        self.cluster_id: str | None = None
        self.metadata = MetadataCache()
        self.zk: KafkaZkClient = None  # type: ignore[assignment]  # set by start()
        self.executor = ZkExecutor(f"zk-broker-{config.broker_id}")
        self.watcher: AsyncWatcher | None = None
        self.log_manager: LogManager = None  # type: ignore[assignment]
        self.replicas: ReplicaManager = None  # type: ignore[assignment]
        self.producer_ids = ProducerIdManager(self._allocate_producer_ids)
        self.controller: Any = None
        self.fetchers: ReplicaFetcherManager | None = None
        self.isr: IsrManager = None  # type: ignore[assignment]
        self.group_coordinator: Any = None  # zkafka.server.coordinator_service.CoordinatorService
        self.servers: list[asyncio.AbstractServer] = []
        self.connections: set[KafkaConnection] = set()
        cfg = self.config
        # Bounds on what clients can make the network layer hold (issue 11): request memory as a
        # whole, and which connections are accepted at all.
        self.request_memory = MemoryPool(cfg.queued_max_request_bytes)
        self.connection_quotas = ConnectionQuotas(
            max_connections=cfg.max_connections,
            max_per_ip=cfg.max_connections_per_ip,
            per_ip_overrides=parse_connection_overrides(cfg.max_connections_per_ip_overrides),
            max_creation_rate=cfg.max_connection_creation_rate,
            inter_broker_listener=cfg.inter_broker_listener_name,
        )
        self.bound_ports: dict[str, int] = {}
        # Advertise exactly what has a handler: clients use every version they are offered.
        self.served_versions = {k: v for k, v in BROKER_API_VERSIONS.items() if k in HANDLERS}
        self._tasks: list[asyncio.Task[None]] = []
        self._stopped = asyncio.Event()
        self._registration: BrokerInfo | None = None
        self._config_listener: ChangeNotificationListener | None = None
        self._handles: list[Any] = []

    # -- helpers used by the API handlers -----------------------------------------------------------
    async def zk_call(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        """Run a blocking ZooKeeper call on the ZooKeeper thread."""
        return await self.executor.call(fn, *args, **kwargs)

    async def wait_for_metadata(self, predicate: Callable[[], bool], timeout_s: float) -> bool:
        """Wait until the metadata cache satisfies `predicate` (re-checked on every UpdateMetadata)."""
        return await self.replicas.delayed.wait([METADATA_KEY], predicate, timeout_s)

    def on_metadata_updated(self) -> None:
        self.replicas.delayed.notify(METADATA_KEY)

    def on_leadership_changed(self, changes: dict[Any, Any]) -> None:
        """Hook for the group coordinator (loads/unloads groups when `__consumer_offsets` moves)."""
        if self.group_coordinator is not None:
            self.group_coordinator.on_leadership_changed(changes)

    # -- start-up ---------------------------------------------------------------------------------
    async def start(self) -> None:
        cfg = self.config
        loop = asyncio.get_running_loop()
        precompile()
        self.zk = await self.zk_call(
            KafkaZkClient,
            cfg.zookeeper_connect,
            session_timeout_ms=cfg.zookeeper_session_timeout_ms,
            connection_timeout_ms=cfg.zookeeper_connection_timeout_ms,
            create_chroot=True,
        )
        await self.zk_call(self.zk.create_top_level_paths)
        self.cluster_id = await self.zk_call(self.zk.get_or_create_cluster_id)
        if self.broker_id < 0:
            self.broker_id = await self.zk_call(
                self.zk.generate_broker_sequence_id, cfg.reserved_broker_max_id
            )
        topic_overrides = await self.zk_call(self._read_topic_configs)
        defaults = cfg.log_config()
        self.log_manager = await loop.run_in_executor(
            None,
            lambda: LogManager(
                [Path(d) for d in cfg.log_dirs],
                defaults,
                broker_id=self.broker_id,
                cluster_id=self.cluster_id,
                topic_configs={t: _topic_config(defaults, t, o) for t, o in topic_overrides.items()},
            ),
        )
        self.replicas = ReplicaManager(self.broker_id, self.log_manager)
        self.fetchers = ReplicaFetcherManager(self)
        self.replicas.followers = self.fetchers
        self.isr = IsrManager(self)
        self.group_coordinator = CoordinatorService(self)
        self.group_coordinator.start()
        await self._start_listeners()
        self.watcher = AsyncWatcher(self.zk, loop)
        self._handles.append(self.watcher.add_session_listener(self._on_session_event))
        self._registration = self._broker_info()
        self.broker_epoch = await self._register()
        log.info(
            "broker %d registered (epoch %d, cluster %s)", self.broker_id, self.broker_epoch, self.cluster_id
        )
        self._config_listener = ChangeNotificationListener(self.zk, CONFIG_CHANGES, self._on_config_change)
        self._handles.append(self._config_listener.attach(self.watcher, self.executor))
        await self._start_controller()
        self._start_periodic_tasks()
        self._start_idle_sweep()

    def _read_topic_configs(self) -> dict[str, dict[str, str]]:
        # Plural read: a config znode that does not decode is reported and ignored, never fatal.
        topics = self.zk.get_all_entities(ConfigType.TOPIC)
        return {t: cfg for t, cfg in self.zk.get_entity_configs(ConfigType.TOPIC, topics).items() if cfg}

    async def _start_listeners(self) -> None:
        loop = asyncio.get_running_loop()
        for ep in self.config.listeners:
            dispatcher = Dispatcher(self, HANDLERS, self.served_versions, ep.listener_name)

            def factory(d: Dispatcher = dispatcher) -> KafkaConnection:
                conn = KafkaConnection(
                    d,
                    max_request_bytes=self.config.socket_request_max_bytes,
                    max_inflight=self.config.queued_max_requests,
                    on_close=self.connections.discard,
                    pool=self.request_memory,
                    quotas=self.connection_quotas,
                    listener=d.listener,
                )
                self.connections.add(conn)
                return conn

            server = await loop.create_server(
                factory, ep.host or None, ep.port, reuse_address=True, backlog=1024
            )
            self.servers.append(server)
            self.bound_ports[ep.listener_name] = server.sockets[0].getsockname()[1]
            log.info("listening on %s (port %d)", ep, self.bound_ports[ep.listener_name])

    def _broker_info(self) -> BrokerInfo:
        endpoints = []
        for ep in self.config.advertised_listeners:
            port = ep.port or self.bound_ports.get(ep.listener_name, 0)
            host = ep.host or self.config.zkafka_advertised_default_host
            endpoints.append(
                EndPoint(ep.listener_name, host, port, SecurityProtocol.parse(ep.security_protocol))
            )
        return BrokerInfo(id=self.broker_id, endpoints=tuple(endpoints), rack=self.config.broker_rack)

    async def _register(self) -> int:
        """Register `/brokers/ids/<id>`. After a crash the previous incarnation's ephemeral znode
        lives until its session expires: wait for that (bounded by the session timeout) instead of
        failing, so a restarted broker just comes back."""
        assert self._registration is not None
        deadline = time.monotonic() + self.config.zookeeper_session_timeout_ms / 1000 * 2 + 5
        while True:
            try:
                return await self.zk_call(self.zk.register_broker, self._registration)
            except BrokerIdInUseError as e:
                if time.monotonic() > deadline:
                    raise
                log.info("%s; waiting for that session to expire", e)
                await asyncio.sleep(0.5)

    async def _start_controller(self) -> None:
        from zkafka.controller.controller import Controller

        assert self.watcher is not None
        # On a new ZooKeeper session the controller module re-registers this broker first, then
        # campaigns (Kafka's order), so a controller never runs without its own broker registered.
        self.controller = Controller(
            self.broker_id, self.zk, self.executor, self.watcher, self.config, on_new_session=self._reregister
        )
        await self.controller.start()

    async def _allocate_producer_ids(self) -> tuple[int, int]:
        return await self.zk_call(self.zk.allocate_producer_id_block, self.broker_id)

    # -- ZooKeeper events ---------------------------------------------------------------------------
    def _on_session_event(self, event: SessionEvent) -> None:
        if event.state == SessionState.EXPIRED:
            log.warning("ZooKeeper session expired; the controller module re-registers on the new one")

    async def _reregister(self) -> None:
        assert self._registration is not None
        self.broker_epoch = await self._register()
        log.info("broker %d re-registered with epoch %d", self.broker_id, self.broker_epoch)

    def _on_config_change(self, name: str, data: bytes) -> None:
        note = ConfigEntityChangeNotificationZNode.decode(data, f"{CONFIG_CHANGES.root}/{name}")
        if note.entity_type == ConfigType.TOPIC.value:
            self._spawn(self._reload_topic_config(note.entity_name))

    async def _reload_topic_config(self, topic: str) -> None:
        found = await self.zk_call(self.zk.get_entity_configs, ConfigType.TOPIC, [topic])
        overrides = found.get(topic, {})
        defaults = self.log_manager.default_config
        config = _topic_config(defaults, topic, overrides) if overrides else None
        self.log_manager.update_topic_config(topic, config)
        log.info("applied config change of topic %s: %s", topic, overrides)

    # -- periodic work ----------------------------------------------------------------------------
    def _start_periodic_tasks(self) -> None:
        cfg = self.config
        lm = self.log_manager
        self._every(
            cfg.log_retention_check_interval_ms,
            "retention",
            lambda: lm.check_retention(self._now_ms(), self.replicas.high_watermarks().get),
        )
        self._every(cfg.log_flush_scheduler_interval_ms, "flush", lambda: lm.flush_dirty_logs(self._now_ms()))
        self._every(
            cfg.log_flush_offset_checkpoint_interval_ms, "recovery-checkpoint", lm.checkpoint_recovery_points
        )
        self._every(
            cfg.log_flush_start_offset_checkpoint_interval_ms,
            "start-offset-checkpoint",
            lm.checkpoint_log_start_offsets,
        )
        self._every(
            cfg.replica_high_watermark_checkpoint_interval_ms,
            "hw-checkpoint",
            lambda: lm.checkpoint_high_watermarks(self.replicas.high_watermarks()),
        )
        self._every(1000, "delete-files", lambda: lm.delete_pending(self._now_ms()))
        if cfg.log_cleaner_enable:
            self._every(cfg.log_cleaner_backoff_ms, "cleaner", lambda: lm.run_cleaner(self._now_ms()))

        self._tasks.append(asyncio.create_task(self.isr.run(), name="isr"))

    def _start_idle_sweep(self) -> None:
        """connections.max.idle.ms, checked on the event loop (the connections live there); the
        same task reports the counts of rate-limited network log lines once their window closes."""
        idle_s = self.config.connections_max_idle_ms / 1000
        period = min(max(idle_s / 4, 0.05), 30.0) if idle_s > 0 else 30.0

        async def sweep() -> None:
            while True:
                await asyncio.sleep(period)
                if idle_s > 0:
                    self.connection_quotas.close_idle(list(self.connections), idle_s)
                summarise_network_logs()

        self._tasks.append(asyncio.create_task(sweep(), name="idle-connections"))

    def _every(self, interval_ms: int, name: str, fn: Callable[[], object]) -> None:
        interval = max(interval_ms, 10) / 1000

        async def loop() -> None:
            while True:
                await asyncio.sleep(interval)
                try:
                    # Disk work (fsync, cleaning, checkpoints) happens off the event loop.
                    await asyncio.get_running_loop().run_in_executor(None, fn)
                except Exception:
                    log.exception("periodic task %s failed", name)

        self._tasks.append(asyncio.create_task(loop(), name=name))

    def _spawn(self, coro: Awaitable[None]) -> None:
        task = asyncio.ensure_future(coro)
        task.add_done_callback(_log_failure)

    @staticmethod
    def _now_ms() -> int:
        return int(time.time() * 1000)

    # -- shutdown ---------------------------------------------------------------------------------
    async def controlled_shutdown(self) -> bool:
        """Ask the controller to move this broker's leaderships away before it stops (Kafka's
        controlled shutdown): retried `controlled.shutdown.max.retries` times while the
        controller reports partitions we still lead. True when nothing is left."""
        cfg = self.config
        for attempt in range(cfg.controlled_shutdown_max_retries):
            try:
                if await self._controlled_shutdown_once():
                    log.info("controlled shutdown succeeded")
                    return True
                if not await self._other_brokers_registered():
                    # The last broker standing: retrying cannot find its partitions a new home.
                    log.info("controlled shutdown: no other live broker can take over; stopping")
                    return False
            except Exception as e:
                log.info("controlled shutdown attempt %d failed: %s", attempt + 1, e)
            await asyncio.sleep(cfg.controlled_shutdown_retry_backoff_ms / 1000)
        log.warning("controlled shutdown did not complete; stopping anyway")
        return False

    async def _other_brokers_registered(self) -> bool:
        return bool(set(await self.zk_call(self.zk.get_all_broker_ids)) - {self.broker_id})

    async def _controlled_shutdown_once(self) -> bool:
        from zkafka.client.connection import BrokerConnection
        from zkafka.protocol.messages import ControlledShutdownRequest

        controller_id = await self.zk_call(self.zk.get_controller_id)
        if controller_id is None:
            raise ConnectionError("no controller")
        request = ControlledShutdownRequest(broker_id=self.broker_id, broker_epoch=self.broker_epoch)
        if controller_id == self.broker_id and self.controller is not None and self.controller.is_active:
            error, remaining = await self.controller.controlled_shutdown(self.broker_id, self.broker_epoch)
        else:
            info = await self.zk_call(self.zk.get_broker, controller_id)
            ep = info.endpoint(self.config.inter_broker_listener_name) if info is not None else None
            if ep is None:
                raise ConnectionError(
                    f"controller {controller_id} has no {self.config.inter_broker_listener_name} endpoint"
                )
            conn = await BrokerConnection.open(
                ep.host, ep.port, client_id=f"broker-{self.broker_id}-shutdown"
            )
            try:
                resp = await conn.send(request, timeout=self.config.request_timeout_ms / 1000)
            finally:
                conn.close()
            error, remaining = resp.error_code, resp.remaining_partitions
        if error != 0:
            raise ConnectionError(f"controller {controller_id} answered error {error}")
        if remaining:
            log.info("controller %d: %d partitions still led here", controller_id, len(remaining))
        return not remaining

    async def stop(self) -> None:
        log.info("broker %d shutting down", self.broker_id)
        if self.config.controlled_shutdown_enable and self.zk is not None and self.broker_epoch >= 0:
            await self.controlled_shutdown()
        for server in self.servers:
            server.close()
        if self.controller is not None:
            try:
                await self.controller.stop()
            except Exception:
                log.exception("controller stop failed")
        if self.group_coordinator is not None:
            await self.group_coordinator.stop()
        if self.fetchers is not None:
            await self.fetchers.shutdown()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        for conn in list(self.connections):
            conn.abort("broker shutting down")
        for handle in self._handles:
            try:
                (handle.cancel if hasattr(handle, "cancel") else handle)()
            except Exception:
                pass
        if self.replicas is not None:
            self.replicas.shutdown()
            self.log_manager.checkpoint_high_watermarks(self.replicas.high_watermarks())
        if self.log_manager is not None:
            await asyncio.get_running_loop().run_in_executor(None, self.log_manager.shutdown)
        if self.watcher is not None:
            self.watcher.close()
        if self.zk is not None:
            await self.zk_call(self.zk.close)
        self.executor.shutdown(wait=False)
        self._stopped.set()
        log.info("broker %d stopped", self.broker_id)


def _topic_config(defaults: LogConfig, topic: str, overrides: dict[str, str]) -> LogConfig:
    """A topic's config from its `/config/topics/<t>` overrides; keys another tool wrote that we do
    not know, or bad values, are logged and skipped rather than stopping the broker."""
    config = defaults
    for key, value in overrides.items():
        try:
            config = config.with_overrides({key: value})
        except ValueError as e:
            log.warning(
                "znode %s: ignoring %s=%r: %s", ConfigEntityZNode.path(ConfigType.TOPIC, topic), key, value, e
            )
    return config


def _log_failure(task: asyncio.Future[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("background task failed", exc_info=task.exception())
