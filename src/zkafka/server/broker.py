"""One broker process: builds its parts, starts them in Kafka's order, stops them in reverse.

Start-up (reference zk-layout §6): connect to ZooKeeper (creating the chroot) and create the
top-level paths (`zookeeper.py`), read or create `/cluster/id` and the broker id
(`registration.py`), open the logs, recovering an unclean shutdown (`log_maintenance.py`), bind the
listeners (`listeners.py`), register `/brokers/ids/<id>` (its czxid is our broker epoch), follow
`/config/changes` (`topic_configs.py`, `dynamic_config.py`, `client_quotas.py`), then start the
controller module, which campaigns for `/controller`, and the periodic tasks (`scheduler.py`).
Clients are served from the moment the controller's first UpdateMetadata arrives.

Shutdown (SIGTERM): controlled shutdown (`controlled_shutdown.py`), stop accepting, stop the
controller module, the group coordinator, the replica fetchers and the background tasks, close
the connections, flush and close every log with its checkpoints and the clean-shutdown marker,
and end the ZooKeeper session (which removes our registration). `stop` also undoes a start-up
that failed part way.

Request handlers never see this class: they get `services.BrokerServices`, built here once.
"""

from __future__ import annotations

import asyncio
import functools
import logging

from zkafka.client.security import ClientSecurity
from zkafka.config import BrokerConfig
from zkafka.controller.controller import Controller
from zkafka.metrics import Registry
from zkafka.protocol import precompile
from zkafka.protocol.api_versions import BROKER_API_VERSIONS
from zkafka.quotas.cache import QuotaConfigCache
from zkafka.runtime import collector
from zkafka.security.acl_cache import AclCache
from zkafka.security.scram import ScramCredentialCache
from zkafka.server.apis import HANDLERS
from zkafka.server.apis.fetch_session_layer import track_partition_changes, with_fetch_sessions
from zkafka.server.authorization import authorizer_enabled, build_authorizer, guard_handlers
from zkafka.server.broker_metrics import (
    BrokerMetrics,
    MetricsEndpoint,
    ZooKeeperMetrics,
    register_controller_metrics,
    register_fetch_session_metrics,
    register_quota_metrics,
    register_replica_gauges,
)
from zkafka.server.client_quotas import EXPIRY_INTERVAL_S, ClientQuotas
from zkafka.server.controlled_shutdown import ControlledShutdown
from zkafka.server.coordinator_service import CoordinatorService
from zkafka.server.dynamic_config import DynamicBrokerConfig, startup_config
from zkafka.server.fetch_sessions import FetchSessionCache
from zkafka.server.isr import IsrManager
from zkafka.server.lag_reporter import LAG_METRICS, LagReporter
from zkafka.server.listeners import Listeners
from zkafka.server.log_dir_failure import LogDirFailures, stop_replicas_in
from zkafka.server.log_maintenance import open_logs, schedule_log_maintenance
from zkafka.server.metadata_cache import MetadataCache, MetadataWaits
from zkafka.server.producer_ids import ProducerIdManager
from zkafka.server.registration import BrokerRegistration
from zkafka.server.replica_fetcher import FollowerContext, ReplicaFetcherManager
from zkafka.server.replica_manager import ReplicaManager
from zkafka.server.replication_throttles import ReplicationThrottles
from zkafka.server.scheduler import Scheduler
from zkafka.server.security import build_listener_security, inter_broker_client_security, needs_scram
from zkafka.server.services import BrokerServices
from zkafka.server.topic_configs import TopicConfigChanges
from zkafka.server.txn_coordinator_service import TxnCoordinatorService
from zkafka.server.zookeeper import BrokerZooKeeper
from zkafka.storage.manager import LogManager
from zkafka.zk.client import KafkaZkClient
from zkafka.zk.watch_bridge import ZkExecutor

log = logging.getLogger(__name__)


class Broker:
    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        self.listeners = Listeners(config)
        self.scheduler = Scheduler()
        # Advertise exactly what has a handler: clients use every version they are offered.
        self.served_versions = {k: v for k, v in BROKER_API_VERSIONS.items() if k in HANDLERS}
        # Set by start() as each part comes up; stop() tears down whichever exist.
        self.zk: BrokerZooKeeper | None = None
        self.registration: BrokerRegistration | None = None
        self.log_manager: LogManager | None = None
        self.replicas: ReplicaManager | None = None
        self.fetchers: ReplicaFetcherManager | None = None
        self.group_coordinator: CoordinatorService | None = None
        self.txn_coordinator: TxnCoordinatorService | None = None
        self.controller: Controller | None = None
        self._controller_zk: ZkExecutor | None = None
        self.services: BrokerServices | None = None
        self.inter_broker_security: ClientSecurity | None = None
        self.metrics_endpoint: MetricsEndpoint | None = None
        self.lag_reporter: LagReporter | None = None

    @property
    def broker_id(self) -> int:
        """The configured id until start-up has read or generated the real one."""
        return self.registration.broker_id if self.registration is not None else self.config.broker_id

    @property
    def cluster_id(self) -> str | None:
        return self.registration.cluster_id if self.registration is not None else None

    # -- start-up ---------------------------------------------------------------------------------
    async def start(self) -> None:
        cfg = self.config
        precompile()
        # Before anything is opened: a broker that could not reach the others must not start.
        self.inter_broker_security = inter_broker = inter_broker_client_security(cfg)
        self.zk = zk = await BrokerZooKeeper.connect(cfg, f"zk-broker-{cfg.broker_id}")
        # Metrics only when `metrics.listener` asks for them: otherwise nothing is counted at all.
        registry = Registry() if cfg.metrics_listener else None
        metrics = BrokerMetrics(registry) if registry is not None else None
        if registry is not None:
            zk_metrics = ZooKeeperMetrics(registry, lambda: zk.client.bad_znodes.decode_failures)
            zk.executor.observe_ms = zk_metrics.observe_ms
            zk.keep_until_close([zk.watcher.add_session_listener(zk_metrics.on_session_event)])
        self.registration = identity = await BrokerRegistration.identify(zk, cfg)
        broker_id = identity.broker_id
        self.log_manager = logs = await open_logs(await startup_config(cfg, broker_id, zk), identity, zk)
        self.replicas = replicas = ReplicaManager(broker_id, logs)
        if metrics is not None:
            replicas.on_topic_gone = metrics.forget
        loop = asyncio.get_running_loop()

        def dir_failed_alone(log_dir: str) -> None:  # any thread: the failed write's
            announce = functools.partial(zk.run, KafkaZkClient.create_log_dir_event_notification, broker_id)
            work = stop_replicas_in(log_dir, replicas.stop_replicas_in_dir, announce)
            try:
                loop.call_soon_threadsafe(self.scheduler.spawn, work)
            except RuntimeError:  # the loop is closed: the broker has stopped anyway
                work.close()

        replicas.on_log_dir_failure = logs.on_dir_failure = LogDirFailures(
            cfg.log_dirs, on_offline=logs.mark_dir_offline, on_partial=dir_failed_alone
        ).failed
        metadata = MetadataCache()
        replicas.listed = lambda tp: metadata.partition(tp.topic, tp.partition) is not None
        throttles = ReplicationThrottles(broker_id, cfg)
        await throttles.load(zk)
        self.fetchers = replicas.followers = ReplicaFetcherManager(
            FollowerContext(
                broker_id,
                cfg,
                metadata,
                replicas,
                throttle=throttles.follower,
                security=inter_broker,
                metrics=metrics.topics if metrics else None,
            )
        )
        self.group_coordinator = groups = CoordinatorService(broker_id, cfg, replicas, metadata, logs, zk)
        groups.start()
        producer_ids = ProducerIdManager(lambda: zk.run(KafkaZkClient.allocate_producer_id_block, broker_id))
        self.txn_coordinator = transactions = TxnCoordinatorService(
            broker_id, cfg, replicas, metadata, logs, zk, producer_ids, groups.coordinator, inter_broker
        )
        transactions.start()
        # Built now, started after registration: until then it is not active, and the
        # controller-only APIs answer NOT_CONTROLLER. On a new ZooKeeper session it re-registers
        # this broker before campaigning (Kafka's order), so a controller never runs without its
        # own broker registered.
        # The controller's ZooKeeper calls get a thread of their own on the same session (Kafka's
        # controller has its own event thread too): queued behind the broker's ISR writes, one
        # round trip each and thousands after a leadership move, they waited for seconds.
        self._controller_zk = ZkExecutor(f"zk-controller-{broker_id}")
        self._controller_zk.observe_ms = zk.executor.observe_ms  # same ZooKeeper latency metric
        self.controller = controller = Controller(
            broker_id,
            zk.client,
            self._controller_zk,
            zk.watcher,
            cfg,
            on_new_session=identity.reregister,
            security=inter_broker,
        )
        isr = IsrManager(
            broker_id,
            replicas,
            zk,
            cfg.replica_lag_time_max_ms,
            (metrics.isr_shrinks, metrics.isr_expands) if metrics is not None else None,
        )
        authorizer = None
        if authorizer_enabled(cfg):
            acls = AclCache(zk.client)
            await zk.run(lambda _client: acls.load())
            zk.keep_until_close(acls.attach(zk.watcher, zk.executor))
            authorizer = build_authorizer(cfg, acls)
        dynamic = DynamicBrokerConfig(
            cfg,
            broker_id,
            zk,
            logs,
            self.listeners.connection_quotas,
            self.scheduler.spawn,
            throttles.reconfigure,
        )
        await dynamic.reload()
        quotas = ClientQuotas(cfg, zk, QuotaConfigCache(zk.client), self.scheduler.spawn)
        await quotas.load()
        self.services = BrokerServices(
            identity=identity,
            config=cfg,
            served_versions=self.served_versions,
            metadata=metadata,
            metadata_waits=MetadataWaits(replicas.delayed),
            replicas=replicas,
            logs=logs,
            isr=isr,
            zk=zk,
            controller=controller,
            groups=groups,
            producer_ids=producer_ids,
            transactions=transactions,
            authorizer=authorizer,
            dynamic=dynamic,
            quotas=quotas,
            leader_throttle=throttles.leader,
            on_topic_overrides=throttles.update_topic,
            metrics=metrics,
            fetch_sessions=FetchSessionCache(cfg.max_incremental_fetch_session_cache_slots),
        )
        if self.services.fetch_sessions is not None:
            replicas.on_partition_change(
                track_partition_changes(self.services.fetch_sessions, replicas.delayed)
            )
        scram = None
        if needs_scram(cfg):
            scram = ScramCredentialCache(zk.client)
            await zk.run(lambda _client: scram.load())
        security = build_listener_security(cfg, scram)
        handlers = with_fetch_sessions(guard_handlers(HANDLERS, authorizer))
        await self.listeners.start(self.services, handlers, security)
        if registry is not None:
            await self._start_metrics(registry)
        await identity.register(self.listeners.bound_ports)
        config_changes = TopicConfigChanges(zk, logs, self.scheduler.spawn, scram, throttles.update_topic)
        zk.listen(config_changes.queue, config_changes.on_notification)
        zk.listen(dynamic.queue, dynamic.on_notification)
        zk.listen(quotas.queue, quotas.on_notification)
        await controller.start()
        schedule_log_maintenance(
            self.scheduler,
            cfg,
            logs,
            replicas,
            lambda: loop.call_soon_threadsafe(replicas.log_starts_moved),
        )
        self.scheduler.run("isr", isr.run())
        self.scheduler.every(EXPIRY_INTERVAL_S, "quota-expiry", quotas.expire_idle, blocking=False)
        # what big pauses froze (the logs of created topics...) goes back to the collector now and
        # then, so the cycles that died frozen are freed
        self.scheduler.every(collector.THAW_INTERVAL_S, "collector-thaw", collector.thaw, blocking=False)
        self.listeners.schedule_sweep(self.scheduler)

    async def _start_metrics(self, registry: Registry) -> None:
        """Scrape-time callbacks, consumer lag and GET /metrics on `metrics.listener`."""
        assert self.replicas is not None and self.controller is not None and self.zk is not None
        assert self.group_coordinator is not None
        register_replica_gauges(registry, self.replicas)
        if self.services is not None and self.services.fetch_sessions is not None:
            register_fetch_session_metrics(registry, self.services.fetch_sessions)
        self.controller.set_observers(*register_controller_metrics(registry, self.controller))
        if self.services is not None and self.services.quotas is not None:
            register_quota_metrics(registry, self.services.quotas.throttle_totals)
        self.lag_reporter = lag = LagReporter(
            registry,
            self.group_coordinator.coordinator,
            self.replicas,
            self.controller,
            self.zk,
            self._own_plaintext_bootstrap,
        )
        self.metrics_endpoint = MetricsEndpoint(
            registry, self.config.metrics_listener, lag.refresh, frozenset(LAG_METRICS)
        )
        await self.metrics_endpoint.start()

    def _own_plaintext_bootstrap(self) -> str | None:
        """This broker's own PLAINTEXT listener, where the lag reporter asks for other leaders'
        offsets (None without one: lag is then reported for the partitions led here only)."""
        protocols = self.config.protocol_map
        for ep in self.config.listeners:
            if protocols.get(ep.listener_name, ep.listener_name) == "PLAINTEXT":
                port = self.listeners.bound_ports.get(ep.listener_name)
                if port is not None:
                    host = ep.host if ep.host not in ("", "0.0.0.0", "::") else "127.0.0.1"
                    return f"{host}:{port}"
        return None

    # -- shutdown ---------------------------------------------------------------------------------
    async def stop(self) -> None:
        log.info("broker %d shutting down", self.broker_id)
        if (
            self.config.controlled_shutdown_enable
            and self.zk is not None
            and self.registration is not None
            and self.registration.registered
            and self.controller is not None
        ):
            if self.replicas is not None:
                self.replicas.shutting_down = True
            await ControlledShutdown(
                self.registration, self.config, self.zk, self.controller, self.inter_broker_security
            ).run()
        self.listeners.stop_accepting()
        if self.metrics_endpoint is not None:
            await self.metrics_endpoint.stop()
        if self.lag_reporter is not None:
            await self.lag_reporter.close()
        if self.controller is not None:
            try:
                await self.controller.stop()
            except Exception:
                log.exception("controller stop failed")
        if self._controller_zk is not None:
            self._controller_zk.shutdown(wait=False)
        if self.txn_coordinator is not None:
            await self.txn_coordinator.stop()
        if self.group_coordinator is not None:
            await self.group_coordinator.stop()
        if self.fetchers is not None:
            await self.fetchers.shutdown()
        await self.scheduler.stop()
        self.listeners.abort_all("broker shutting down")
        if self.zk is not None:
            self.zk.stop_listening()
        if self.log_manager is not None:
            if self.replicas is not None:
                self.replicas.shutdown()
                self.log_manager.checkpoint_high_watermarks(self.replicas.high_watermarks())
            await asyncio.get_running_loop().run_in_executor(None, self.log_manager.shutdown)
        if self.zk is not None:
            await self.zk.close()
        log.info("broker %d stopped", self.broker_id)
