"""Controlled shutdown, the asking side: before it stops, a broker asks the controller to move its
leaderships away (Kafka's `controlled.shutdown.*`), so clients fail over to leaders that were
chosen, not to ones an election after the broker's death has to find.

The controller may be this broker's own controller module (asked directly) or another broker's,
reached over the inter-broker listener (with its TLS/SASL) with a ControlledShutdown request (answered by
`zkafka.server.apis.controlled_shutdown`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Collection

from zkafka.client.connection import BrokerConnection
from zkafka.client.security import ClientSecurity
from zkafka.config import BrokerConfig
from zkafka.protocol.messages import ControlledShutdownRequest
from zkafka.server.services import BrokerIdentity, ControllerAccess
from zkafka.server.zookeeper import ZooKeeper
from zkafka.storage.naming import TopicPartition
from zkafka.zk.client import KafkaZkClient

log = logging.getLogger(__name__)


class ControlledShutdown:
    def __init__(
        self,
        identity: BrokerIdentity,
        config: BrokerConfig,
        zk: ZooKeeper,
        controller: ControllerAccess,
        security: ClientSecurity | None = None,
    ) -> None:
        self._identity = identity
        self._security = security
        self._config = config
        self._zk = zk
        self._controller = controller

    async def run(self) -> bool:
        """Retried `controlled.shutdown.max.retries` times while the controller reports partitions
        we still lead. True when nothing is left."""
        cfg = self._config
        for attempt in range(cfg.controlled_shutdown_max_retries):
            try:
                remaining = await self._once()
                if not remaining:
                    log.info("controlled shutdown succeeded")
                    return True
                if not await self._any_can_move(remaining):
                    # e.g. the last brokers of `cluster down`: retrying cannot find those partitions
                    # a new home, and each retry would cost controlled.shutdown.retry.backoff.ms.
                    log.info(
                        "controlled shutdown: no other live in-sync replica can take over the %d "
                        "partition(s) still led here; stopping",
                        len(remaining),
                    )
                    return False
            except Exception as e:
                log.info("controlled shutdown attempt %d failed: %s", attempt + 1, e)
            await asyncio.sleep(cfg.controlled_shutdown_retry_backoff_ms / 1000)
        log.warning("controlled shutdown did not complete; stopping anyway")
        return False

    async def _any_can_move(self, remaining: Collection[TopicPartition]) -> bool:
        """Whether a retry could move any of `remaining`: some partition has another in-sync
        replica on a registered broker (the controller elects only from the ISR)."""
        others = set(await self._zk.run(KafkaZkClient.get_all_broker_ids)) - {self._identity.broker_id}
        if not others:
            return False
        states = await self._zk.run(KafkaZkClient.get_partition_states, list(remaining))
        return any(others & set(s.leader_and_isr.isr) for s in states.values())

    async def _once(self) -> Collection[TopicPartition]:
        """One ControlledShutdown: the replicated partitions still led here (raises on errors)."""
        broker_id, epoch = self._identity.broker_id, self._identity.broker_epoch
        controller_id = await self._zk.run(KafkaZkClient.get_controller_id)
        if controller_id is None:
            raise ConnectionError("no controller")
        error: int
        remaining: Collection[TopicPartition]
        if controller_id == broker_id and self._controller.is_active:
            error, remaining = await self._controller.controlled_shutdown(broker_id, epoch)
        else:
            error, remaining = await self._ask(controller_id)
        if error != 0:
            raise ConnectionError(f"controller {controller_id} answered error {error}")
        if remaining:
            log.info("controller %d: %d partitions still led here", controller_id, len(remaining))
        return remaining

    async def _ask(self, controller_id: int) -> tuple[int, list[TopicPartition]]:
        """ControlledShutdown sent to another broker's controller: (error, partitions still led)."""
        listener = self._config.inter_broker_listener_name
        info = await self._zk.run(KafkaZkClient.get_broker, controller_id)
        ep = info.endpoint(listener) if info is not None else None
        if ep is None:
            raise ConnectionError(f"controller {controller_id} has no {listener} endpoint")
        broker_id = self._identity.broker_id
        request = ControlledShutdownRequest(broker_id=broker_id, broker_epoch=self._identity.broker_epoch)
        conn = await BrokerConnection.open(
            ep.host, ep.port, client_id=f"broker-{broker_id}-shutdown", security=self._security
        )
        try:
            resp = await conn.send(request, timeout=self._config.request_timeout_ms / 1000)
        finally:
            conn.close()
        remaining = [TopicPartition(p.topic_name, p.partition_index) for p in resp.remaining_partitions]
        return resp.error_code, remaining
