"""The broker's listeners: one server socket per `listeners` entry (TLS on SSL and SASL_SSL ones, a
SASL session per connection on SASL ones: `zkafka.server.security`), the connections they accept,
and the bounds on what clients can make the network layer hold (issue 11): request memory as a
whole (`queued.max.request.bytes`), which connections are accepted at all (connection quotas) and
for how long an idle one is kept (`connections.max.idle.ms`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping

from zkafka.config import BrokerConfig, parse_connection_overrides
from zkafka.server.connection_quotas import ConnectionQuotas
from zkafka.server.dispatcher import Dispatcher, Handler
from zkafka.server.memory_pool import MemoryPool
from zkafka.server.network import ConnectionFatalError, KafkaConnection
from zkafka.server.network import summarise_logs as summarise_network_logs
from zkafka.server.scheduler import Scheduler
from zkafka.server.security import ListenerSecurity, NoMatchingRuleError, SaslSession
from zkafka.server.services import BrokerServices

log = logging.getLogger(__name__)

MAX_SWEEP_PERIOD_S = 30.0
MIN_SWEEP_PERIOD_S = 0.05


class Listeners:
    def __init__(self, config: BrokerConfig) -> None:
        self._config = config
        self.request_memory = MemoryPool(config.queued_max_request_bytes)
        self.connection_quotas = ConnectionQuotas(
            max_connections=config.max_connections,
            max_per_ip=config.max_connections_per_ip,
            per_ip_overrides=parse_connection_overrides(config.max_connections_per_ip_overrides),
            max_creation_rate=config.max_connection_creation_rate,
            inter_broker_listener=config.inter_broker_listener_name,
        )
        self.connections: set[KafkaConnection] = set()
        self.bound_ports: dict[str, int] = {}
        """listener name -> the port its socket got (the configured one, or the OS's for port 0)."""
        self._servers: list[asyncio.AbstractServer] = []

    async def start(
        self,
        services: BrokerServices,
        handlers: Mapping[int, Handler],
        security: Mapping[str, ListenerSecurity] | None = None,
    ) -> None:
        """Bind every listener; requests are served from here on."""
        cfg = self._config
        loop = asyncio.get_running_loop()
        for ep in cfg.listeners:
            dispatcher = Dispatcher(services, handlers, ep.listener_name)
            sec = (security or {}).get(ep.listener_name)
            on_connected = _on_connected(sec) if sec is not None else None

            def factory(d: Dispatcher = dispatcher, hook=on_connected) -> KafkaConnection:
                conn = KafkaConnection(
                    d,
                    max_request_bytes=cfg.socket_request_max_bytes,
                    max_inflight=cfg.queued_max_requests,
                    on_close=self.connections.discard,
                    pool=self.request_memory,
                    quotas=self.connection_quotas,
                    listener=d.listener,
                    on_connected=hook,
                )
                self.connections.add(conn)
                return conn

            server = await loop.create_server(
                factory,
                ep.host or None,
                ep.port,
                reuse_address=True,
                backlog=1024,
                ssl=sec.ssl_context if sec is not None else None,
            )
            self._servers.append(server)
            self.bound_ports[ep.listener_name] = server.sockets[0].getsockname()[1]
            log.info("listening on %s (port %d)", ep, self.bound_ports[ep.listener_name])

    def schedule_sweep(self, scheduler: Scheduler) -> None:
        """connections.max.idle.ms, checked on the event loop (the connections live there); the
        same task reports the counts of rate-limited network log lines once their window closes."""
        idle_s = self._config.connections_max_idle_ms / 1000
        if idle_s > 0:
            period = min(max(idle_s / 4, MIN_SWEEP_PERIOD_S), MAX_SWEEP_PERIOD_S)
        else:
            period = MAX_SWEEP_PERIOD_S

        def sweep() -> None:
            if idle_s > 0:
                self.connection_quotas.close_idle(list(self.connections), idle_s)
            summarise_network_logs()

        scheduler.every(period, "idle-connections", sweep, blocking=False)

    def stop_accepting(self) -> None:
        for server in self._servers:
            server.close()

    def abort_all(self, reason: str) -> None:
        for conn in list(self.connections):
            conn.abort(reason)


def _on_connected(sec: ListenerSecurity):
    """What a new connection of this listener needs before its first request: the mTLS principal
    (SSL), a SASL session and the pre-authentication frame limit (SASL_*), nothing (PLAINTEXT)."""
    if sec.protocol == "SSL":

        def ssl_connected(conn: KafkaConnection) -> None:
            ssl_object = conn.transport.get_extra_info("ssl_object") if conn.transport else None
            der = ssl_object.getpeercert(binary_form=True) if ssl_object is not None else None
            try:
                conn.principal = sec.ssl_principal(der)
            except NoMatchingRuleError:
                raise ConnectionFatalError(
                    "no ssl.principal.mapping.rules rule applies to the client's DN"
                ) from None
            except ValueError:
                raise ConnectionFatalError("the client certificate cannot be read") from None

        return ssl_connected
    if sec.is_sasl:

        def sasl_connected(conn: KafkaConnection) -> None:
            conn.sasl = SaslSession(sec)
            conn.set_max_request_bytes(sec.max_receive_size, "sasl.server.max.receive.size")

        return sasl_connected
    return None
