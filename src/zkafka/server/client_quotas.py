"""Client quotas wired into a broker (KIP-13, KIP-124, KIP-219): `ClientQuotas`, built once at start-up.

It owns the quota cache (`zkafka.quotas.cache.QuotaConfigCache`, read from ZooKeeper at start and
refreshed at once on every `/config/changes` notification naming `clients/...` or `users/...`) and
one manager per quota type: produce bytes, fetch bytes (client fetches only: replica fetches are
the replication throttles' business, `replication_quotas.py`) and request handling time. Handlers
reach it as `BrokerServices.quotas` and call `produce`/`fetch`; the dispatcher calls `request` for
every request that Kafka does not exempt. Each returns a KIP-219 throttle time: the response carries
it as `throttle_time_ms`, and `KafkaConnection.throttle` stops reading from that connection for that
long after the response is sent. A client over its quota is slowed, never disconnected.

Who a request comes from: the principal's name (`User:alice` -> `alice`, `ANONYMOUS` without
authentication, as Kafka's `<default>` user quotas see it) and the request header's client id.

`throttle_totals` is the narrow view the metrics side reads: per (quota, user, client id), the
throttle milliseconds handed out and how many responses were throttled.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Coroutine, Mapping
from typing import Any, NamedTuple

from zkafka.config import BrokerConfig
from zkafka.protocol import ApiKey
from zkafka.quotas import ClientEntity, QuotaManager, QuotaType, QuotaWindows, RequestQuotaManager
from zkafka.quotas.cache import QuotaConfigCache
from zkafka.server.zookeeper import ZooKeeper
from zkafka.zk.model import ConfigType
from zkafka.zk.znodes import CONFIG_CHANGES, ConfigEntityChangeNotificationZNode

__all__ = ["REQUEST_QUOTA_EXEMPT", "ClientQuotas", "ThrottleTotals", "client_entity"]

log = logging.getLogger(__name__)

EXPIRY_INTERVAL_S = 60.0

REQUEST_QUOTA_EXEMPT = frozenset(
    {
        # Kafka's cluster actions (inter-broker and controller requests) and what a client needs
        # before it can even learn its throttle (ApiVersions, SASL): never throttled.
        ApiKey.LEADER_AND_ISR,
        ApiKey.STOP_REPLICA,
        ApiKey.UPDATE_METADATA,
        ApiKey.CONTROLLED_SHUTDOWN,
        ApiKey.WRITE_TXN_MARKERS,
        ApiKey.OFFSET_FOR_LEADER_EPOCH,
        ApiKey.ALTER_PARTITION,
        ApiKey.API_VERSIONS,
        ApiKey.SASL_HANDSHAKE,
        ApiKey.SASL_AUTHENTICATE,
    }
)


def client_entity(principal: str, client_id: str | None) -> ClientEntity:
    """Who a request is from, as quotas name it: `User:alice` -> ("alice", client id)."""
    _, _, name = principal.partition(":")
    return ClientEntity(name or principal, client_id or "")


class ThrottleTotals(NamedTuple):
    throttle_time_ms: Mapping[tuple[str, str, str], int]
    """(quota label: produce|fetch|request, user, client id) -> throttle ms handed out so far."""
    throttled: Mapping[tuple[str, str, str], int]
    """... -> responses throttled so far."""


class ClientQuotas:
    queue = CONFIG_CHANGES

    def __init__(
        self,
        config: BrokerConfig,
        zk: ZooKeeper,
        cache: QuotaConfigCache,
        spawn: Callable[[Coroutine[Any, Any, None]], None],
    ) -> None:
        self._zk = zk
        self._spawn = spawn
        self.cache = cache
        windows = QuotaWindows.from_config(config)
        self.produce_manager = QuotaManager(QuotaType.PRODUCE, cache.limit, windows)
        self.fetch_manager = QuotaManager(QuotaType.FETCH, cache.limit, windows)
        self.request_manager = RequestQuotaManager(cache.limit, windows)
        self._managers = (self.produce_manager, self.fetch_manager, self.request_manager)

    async def load(self) -> None:
        cache = self.cache
        await self._zk.run(lambda _client: cache.load())

    # -- /config/changes (event loop) ---------------------------------------------------------------
    def on_notification(self, name: str, data: bytes) -> None:
        note = ConfigEntityChangeNotificationZNode.decode(data, f"{CONFIG_CHANGES.root}/{name}")
        if note.entity_type in (ConfigType.CLIENT.value, ConfigType.USER.value):
            self._spawn(self.refresh(note.entity_path))

    async def refresh(self, entity_path: str) -> None:
        """Re-read one entity (`clients/c`, `users/u`, `users/u/clients/c`) from ZooKeeper now."""
        cache = self.cache
        await self._zk.run(lambda _client: cache.on_config_change(entity_path))
        log.info("applied quota change of %s", entity_path)

    # -- the request path ---------------------------------------------------------------------------
    def enabled(self) -> bool:
        """Any quota configured at all: without one, nothing is measured (the hot path skips us)."""
        return bool(self.cache.quotas())

    def produce(self, principal: str, client_id: str | None, nbytes: int) -> int:
        return self.produce_manager.record(client_entity(principal, client_id), nbytes, _now_ms())

    def fetch_limit(self, principal: str, client_id: str | None) -> int | None:
        """The most bytes a fetch response may carry for this client (None: no fetch quota)."""
        limit = self.fetch_manager.max_value_in_window(client_entity(principal, client_id))
        return None if limit is None else max(1, int(limit))

    def fetch(self, principal: str, client_id: str | None, nbytes: int) -> int:
        return self.fetch_manager.record(client_entity(principal, client_id), nbytes, _now_ms())

    def request(self, principal: str, client_id: str | None, handler_ns: int) -> int:
        who = client_entity(principal, client_id)
        return self.request_manager.record_request_time(who, handler_ns, _now_ms())

    # -- upkeep and metrics -------------------------------------------------------------------------
    def expire_idle(self) -> None:
        now = _now_ms()
        for manager in self._managers:
            manager.expire_idle(now)

    def throttle_totals(self) -> ThrottleTotals:
        """Per-client throttle totals of every quota type (for the metrics registry)."""
        ms: dict[tuple[str, str, str], int] = {}
        count: dict[tuple[str, str, str], int] = {}
        for manager in self._managers:
            ms.update(manager.throttle_time_ms)
            count.update(manager.throttled)
        return ThrottleTotals(ms, count)


def _now_ms() -> int:
    return time.monotonic_ns() // 1_000_000
