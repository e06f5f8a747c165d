"""Who this broker is in the cluster, and its registration in `/brokers/ids/<id>`.

`identify` reads (or creates) `/cluster/id` and, when `broker.id` is not set, takes a generated id
from `/brokers/seqid` above `reserved.broker.max.id`. `register` writes the ephemeral
`/brokers/ids/<id>` with the advertised listeners; its czxid is the broker epoch (KIP-380), which
the controller puts in its requests and this broker uses to refuse ones meant for an earlier
incarnation. A new ZooKeeper session re-registers (the controller module calls `reregister` before
it campaigns again), which gives a new epoch.

`BrokerRegistration` is the `services.BrokerIdentity` handed to the request handlers.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping

from zkafka.config import BrokerConfig
from zkafka.server.zookeeper import ZooKeeper
from zkafka.zk.client import KafkaZkClient
from zkafka.zk.errors import BrokerIdInUseError
from zkafka.zk.model import BrokerInfo, EndPoint, SecurityProtocol

log = logging.getLogger(__name__)


class BrokerRegistration:
    def __init__(self, zk: ZooKeeper, config: BrokerConfig, broker_id: int, cluster_id: str) -> None:
        self._zk = zk
        self._config = config
        self._broker_id = broker_id
        self._cluster_id = cluster_id
        self._epoch = -1
        self._info: BrokerInfo | None = None

    @classmethod
    async def identify(cls, zk: ZooKeeper, config: BrokerConfig) -> BrokerRegistration:
        cluster_id = await zk.run(KafkaZkClient.get_or_create_cluster_id)
        broker_id = config.broker_id
        if broker_id < 0:
            broker_id = await zk.run(KafkaZkClient.generate_broker_sequence_id, config.reserved_broker_max_id)
        return cls(zk, config, broker_id, cluster_id)

    @property
    def broker_id(self) -> int:
        return self._broker_id

    @property
    def cluster_id(self) -> str:
        return self._cluster_id

    @property
    def broker_epoch(self) -> int:
        return self._epoch

    @property
    def registered(self) -> bool:
        return self._epoch >= 0

    async def register(self, bound_ports: Mapping[str, int]) -> None:
        """Register with the advertised listeners; a listener advertised without a port gets the
        one its socket was bound to (`listeners` with port 0)."""
        self._info = self._broker_info(bound_ports)
        self._epoch = await self._register(self._info)
        log.info(
            "broker %d registered (epoch %d, cluster %s)", self._broker_id, self._epoch, self._cluster_id
        )

    async def reregister(self) -> None:
        """The same registration again, on a new session (the old one's znode went with it)."""
        if self._info is None:
            raise RuntimeError("reregister before register")
        self._epoch = await self._register(self._info)
        log.info("broker %d re-registered with epoch %d", self._broker_id, self._epoch)

    def _broker_info(self, bound_ports: Mapping[str, int]) -> BrokerInfo:
        cfg = self._config
        endpoints = []
        for ep in cfg.advertised_listeners:
            port = ep.port or bound_ports.get(ep.listener_name, 0)
            host = ep.host or cfg.zkafka_advertised_default_host
            endpoints.append(
                EndPoint(ep.listener_name, host, port, SecurityProtocol.parse(ep.security_protocol))
            )
        return BrokerInfo(id=self._broker_id, endpoints=tuple(endpoints), rack=cfg.broker_rack)

    async def _register(self, info: BrokerInfo) -> int:
        """After a crash the previous incarnation's ephemeral znode lives until its session
        expires: wait for that (bounded by the session timeout) instead of failing, so a restarted
        broker just comes back."""
        deadline = time.monotonic() + self._config.zookeeper_session_timeout_ms / 1000 * 2 + 5
        while True:
            try:
                return await self._zk.run(KafkaZkClient.register_broker, info)
            except BrokerIdInUseError as e:
                if time.monotonic() > deadline:
                    raise
                log.info("%s; waiting for that session to expire", e)
                await asyncio.sleep(0.5)
