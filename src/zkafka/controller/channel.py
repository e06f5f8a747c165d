"""Controller-to-broker channels: one queue and one sender task per live broker.

Rules:
* Requests to one broker are sent one at a time, in the order they were queued, so a broker sees
  UpdateMetadata / LeaderAndIsr / StopReplica exactly in the controller's decision order.
* A request that cannot be delivered (no connection, broken connection, timeout) is retried with a
  fixed backoff, reconnecting each time, for as long as the channel exists. The controller removes a
  broker's channel when the broker leaves (or bounces), which is what ends the retries: requests to a
  dead broker are pointless, and its next incarnation gets fresh state anyway.
* Response callbacks run on the event loop, inside the sender task; they must not block (the
  controller's callbacks only enqueue events).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass

from zkafka.client.connection import BrokerConnection
from zkafka.client.security import ClientSecurity
from zkafka.protocol import EncodeError, Message
from zkafka.zk.model import BrokerInfo

__all__ = ["BrokerChannel", "ControllerChannelManager", "ResponseCallback"]

log = logging.getLogger(__name__)

ResponseCallback = Callable[[Message], None]

DEFAULT_RETRY_BACKOFF_S = 0.1
"""Pause between delivery attempts of one request (Kafka's controller uses 100 ms)."""


@dataclass(slots=True)
class _QueuedRequest:
    request: Message
    version: int
    callback: ResponseCallback | None


class BrokerChannel:
    """The queue and sender task of one broker. Create it on the event loop."""

    def __init__(
        self,
        broker_id: int,
        host: str,
        port: int,
        *,
        client_id: str,
        request_timeout_s: float,
        retry_backoff_s: float = DEFAULT_RETRY_BACKOFF_S,
        security: ClientSecurity | None = None,
    ) -> None:
        self.broker_id = broker_id
        self.host = host
        self.port = port
        self._client_id = client_id
        self._security = security
        self._request_timeout_s = request_timeout_s
        self._retry_backoff_s = retry_backoff_s
        self._queue: asyncio.Queue[_QueuedRequest | None] = asyncio.Queue()
        self._conn: BrokerConnection | None = None
        self._closed = False
        self._task = asyncio.get_running_loop().create_task(
            self._run(), name=f"controller-channel-{broker_id}"
        )

    def __repr__(self) -> str:
        return f"<BrokerChannel {self.broker_id} {self.host}:{self.port}>"

    @property
    def task(self) -> asyncio.Task[None]:
        return self._task

    @property
    def queued(self) -> int:
        return self._queue.qsize()

    def enqueue(self, request: Message, version: int, callback: ResponseCallback | None = None) -> None:
        if not self._closed:
            self._queue.put_nowait(_QueuedRequest(request, version, callback))

    def retarget(self, host: str, port: int) -> None:
        """The broker moved its inter-broker endpoint: reconnect there for the next attempt."""
        if (host, port) != (self.host, self.port):
            self.host, self.port = host, port
            self._drop_connection()

    def close(self) -> None:
        """Stop sending (queued requests are dropped); the task finishes shortly after."""
        self._closed = True
        # Cancellation alone is not enough: asyncio.wait_for (3.11) can swallow it when the awaited
        # response arrives at the same moment, so the task also checks the flag and is woken up.
        self._queue.put_nowait(None)
        self._task.cancel()
        self._drop_connection()

    def _drop_connection(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    async def _run(self) -> None:
        try:
            while not self._closed:
                item = await self._queue.get()
                if item is None or self._closed:
                    return
                response = await self._deliver(item)
                if response is None or item.callback is None or self._closed:
                    continue
                try:
                    item.callback(response)
                except Exception:
                    log.exception("response callback for broker %d failed", self.broker_id)
        finally:
            self._drop_connection()

    async def _deliver(self, item: _QueuedRequest) -> Message | None:
        """The response, retrying until it comes; None if the request itself cannot be encoded."""
        name = type(item.request).API_NAME
        attempt = 0
        while not self._closed:
            attempt += 1
            try:
                conn = await self._connection()
                return await conn.send(item.request, version=item.version, timeout=self._request_timeout_s)
            except EncodeError:
                # Our own bug: resending the same message cannot help.
                log.exception(
                    "cannot encode %s v%d for broker %d: dropped", name, item.version, self.broker_id
                )
                return None
            except Exception as e:
                self._drop_connection()
                log.log(
                    logging.WARNING if attempt == 1 else logging.DEBUG,
                    "controller request %s v%d to broker %d at %s:%d failed (attempt %d): %r; retrying",
                    name,
                    item.version,
                    self.broker_id,
                    self.host,
                    self.port,
                    attempt,
                    e,
                )
                await asyncio.sleep(self._retry_backoff_s)
        return None

    async def _connection(self) -> BrokerConnection:
        if self._conn is None or self._conn.is_closed:
            self._conn = await BrokerConnection.open(
                self.host,
                self.port,
                client_id=self._client_id,
                timeout=self._request_timeout_s,
                security=self._security,
            )
        return self._conn


class ControllerChannelManager:
    """Channels to every live broker, reached on the inter-broker listener (with its TLS/SASL:
    `security`, None for PLAINTEXT)."""

    def __init__(
        self,
        listener_name: str,
        *,
        client_id: str,
        request_timeout_s: float,
        retry_backoff_s: float = DEFAULT_RETRY_BACKOFF_S,
        security: ClientSecurity | None = None,
    ) -> None:
        self.listener_name = listener_name.upper()
        self._security = security
        self._client_id = client_id
        self._request_timeout_s = request_timeout_s
        self._retry_backoff_s = retry_backoff_s
        self._channels: dict[int, BrokerChannel] = {}
        self._closing: set[asyncio.Task[None]] = set()

    def broker_ids(self) -> set[int]:
        return set(self._channels)

    def channel(self, broker_id: int) -> BrokerChannel | None:
        return self._channels.get(broker_id)

    def _address(self, info: BrokerInfo) -> tuple[str, int] | None:
        endpoint = info.endpoint(self.listener_name)
        if endpoint is None:
            log.error(
                "broker %d has no endpoint for inter-broker listener %s (it has %s): cannot send it requests",
                info.id,
                self.listener_name,
                [e.listener_name for e in info.endpoints],
            )
            return None
        return endpoint.host, endpoint.port

    def add_broker(self, info: BrokerInfo) -> None:
        if info.id in self._channels:
            return
        address = self._address(info)
        if address is None:
            return
        self._channels[info.id] = BrokerChannel(
            info.id,
            *address,
            client_id=self._client_id,
            request_timeout_s=self._request_timeout_s,
            retry_backoff_s=self._retry_backoff_s,
            security=self._security,
        )

    def update_broker(self, info: BrokerInfo) -> None:
        channel = self._channels.get(info.id)
        if channel is None:
            self.add_broker(info)
            return
        address = self._address(info)
        if address is not None:
            channel.retarget(*address)

    def remove_broker(self, broker_id: int) -> None:
        channel = self._channels.pop(broker_id, None)
        if channel is not None:
            channel.close()
            self._closing.add(channel.task)
            channel.task.add_done_callback(self._closing.discard)

    def send(
        self, broker_id: int, request: Message, version: int, callback: ResponseCallback | None = None
    ) -> bool:
        """Queue a request; False (and nothing sent) if there is no channel to that broker."""
        channel = self._channels.get(broker_id)
        if channel is None:
            log.debug("no channel to broker %d: dropping %s", broker_id, type(request).API_NAME)
            return False
        channel.enqueue(request, version, callback)
        return True

    async def shutdown(self, timeout_s: float = 5.0) -> None:
        for broker_id in list(self._channels):
            self.remove_broker(broker_id)
        if self._closing:
            _, pending = await asyncio.wait(list(self._closing), timeout=timeout_s)
            if pending:
                log.warning("%d controller channel tasks did not stop within %.1f s", len(pending), timeout_s)
