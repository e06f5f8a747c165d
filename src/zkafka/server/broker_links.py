"""`BrokerLinks`: a broker's connections to the other brokers' inter-broker listener, one per
broker, opened on first use with the broker's own client security (the `security.inter.broker.
protocol` / `sasl.mechanism.inter.broker.protocol` side, `inter_broker_client_security`) and
reopened after a failure. The transaction coordinator's markers and the partition leaders'
KIP-890 verification questions use it.
"""

from __future__ import annotations

import asyncio

from zkafka.client.connection import BrokerConnection
from zkafka.client.security import ClientSecurity
from zkafka.server.metadata_cache import MetadataCache


class BrokerLinks:
    def __init__(
        self,
        broker_id: int,
        metadata: MetadataCache,
        listener: str,
        security: ClientSecurity | None,
        purpose: str,
    ) -> None:
        self._broker_id = broker_id
        self._metadata = metadata
        self._listener = listener
        self._security = security
        self._client_id = f"broker-{broker_id}-{purpose}"
        self._connections: dict[int, BrokerConnection] = {}
        self._opening: dict[int, asyncio.Future[BrokerConnection]] = {}

    async def get(self, broker: int) -> BrokerConnection:
        """The open connection to `broker`; concurrent callers share one attempt to open it."""
        conn = self._connections.get(broker)
        if conn is not None and not conn.is_closed:
            return conn
        opening = self._opening.get(broker)
        if opening is None:
            opening = self._opening[broker] = asyncio.ensure_future(self._open(broker))
        try:
            return await asyncio.shield(opening)
        finally:
            if opening.done():
                self._opening.pop(broker, None)

    async def _open(self, broker: int) -> BrokerConnection:
        info = self._metadata.brokers.get(broker)
        endpoint = info.endpoint(self._listener) if info is not None else None
        if endpoint is None:
            raise ConnectionError(f"no {self._listener} endpoint known for broker {broker}")
        conn = await BrokerConnection.open(
            endpoint.host, endpoint.port, client_id=self._client_id, security=self._security
        )
        self._connections[broker] = conn
        return conn

    def drop(self, broker: int) -> None:
        """Forget a connection that failed: the next `get` opens a new one."""
        stale = self._connections.pop(broker, None)
        if stale is not None:
            stale.close()

    def close(self) -> None:
        for conn in self._connections.values():
            conn.close()
        self._connections.clear()
        for opening in self._opening.values():
            opening.cancel()
        self._opening.clear()
