"""What zkafka's admin-style clients share (`AdminClient`, `GroupAdmin`, `TransactionAdmin`): one
`Cluster` built from Kafka's client settings, closed with the client, and the retry of an
attempt whose answer says "ask again" until the request timeout."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Self, TypeVar

from zkafka.client.cluster import Cluster
from zkafka.client.connection import ConnectionError_
from zkafka.client.errors import BrokerUnavailableError
from zkafka.client.security import ClientSecurity
from zkafka.protocol import ErrorCode, KafkaError

T = TypeVar("T")


class RetriableAnswer(Exception):
    """A broker's answer worth asking again after a backoff (a coordinator moved or still loading,
    a leader not known yet). `what` names the request for the error raised once retrying ends."""

    def __init__(self, code: ErrorCode, what: str) -> None:
        super().__init__(f"{what}: {code.name}")
        self.code = code
        self.what = what


class ClusterClient:
    """A client over one `Cluster`, usable as an async context manager."""

    def __init__(
        self,
        bootstrap_servers: str | Sequence[str] | None = None,
        *,
        zookeeper_connect: str | None = None,
        zookeeper_listener_name: str | None = None,
        client_id: str,
        request_timeout_ms: int,
        retry_backoff_ms: int = 100,
        security: ClientSecurity | None = None,
    ) -> None:
        self.cluster = Cluster(
            bootstrap_servers,
            zookeeper_connect=zookeeper_connect,
            zookeeper_listener_name=zookeeper_listener_name,
            client_id=client_id,
            request_timeout_ms=request_timeout_ms,
            retry_backoff_ms=retry_backoff_ms,
            security=security,
        )

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        await self.cluster.close()

    async def _retrying(self, attempt: Callable[[], Awaitable[T]]) -> T:
        """Run `attempt` until it returns; a `RetriableAnswer` or a lost broker connection is
        tried again after the backoff until the request timeout, then raised (a `RetriableAnswer`
        as the `KafkaError` of its code)."""
        deadline = time.monotonic() + self.cluster.request_timeout
        while True:
            try:
                return await attempt()
            except (RetriableAnswer, ConnectionError_, BrokerUnavailableError) as e:
                if time.monotonic() >= deadline:
                    if isinstance(e, RetriableAnswer):
                        raise KafkaError(e.code, f"{e.what}: still {e.code.name} after retrying") from None
                    raise
                await asyncio.sleep(self.cluster.retry_backoff)
