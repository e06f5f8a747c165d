"""One asyncio connection to a Kafka broker, speaking `zkafka.protocol`.

Modelled on the classic client design: requests are framed and written at once (pipelining),
a FIFO of (correlation id, api, version, future) matches responses, which a Kafka broker returns
in request order. The first request on a connection is ApiVersions; afterwards `send` picks the
highest version both sides support unless the caller pins one.

Used by the CLI tools, the controller (controller-to-broker requests), replica fetchers and the
Spark connector.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import struct
from collections import deque
from dataclasses import dataclass
from typing import cast

from zkafka.client.security import ClientSecurity, ClientSecurityError
from zkafka.protocol import (
    ErrorCode,
    Message,
    RequestHeader,
    decode_response,
    encode_request,
    response_expected,
    supported_versions,
)
from zkafka.protocol.messages import ApiVersionsRequest

log = logging.getLogger(__name__)

_SIZE = struct.Struct(">i")


class ConnectionError_(ConnectionError):
    """The broker connection failed or closed; pending requests fail with it."""


class NoCommonVersionError(Exception):
    pass


@dataclass(slots=True)
class _Pending:
    correlation_id: int
    api_key: int
    api_version: int
    future: asyncio.Future[Message]


class BrokerConnection(asyncio.Protocol):
    def __init__(self, host: str, port: int, client_id: str | None) -> None:
        self.host = host
        self.port = port
        self.client_id = client_id
        self.transport: asyncio.Transport | None = None
        self.api_versions: dict[int, tuple[int, int]] = {}
        self._buffer = bytearray()
        self._pending: deque[_Pending] = deque()
        self._correlation = itertools.count(1)
        self._closed: asyncio.Future[None] | None = None
        self._close_reason: BaseException | None = None

    # -- lifecycle ---------------------------------------------------------------------------
    @classmethod
    async def open(
        cls,
        host: str,
        port: int,
        *,
        client_id: str | None = "zkafka",
        timeout: float = 10.0,
        security: ClientSecurity | None = None,
    ) -> BrokerConnection:
        """Connect, ask ApiVersions, and with `security` speak TLS and authenticate with SASL
        (`zkafka.client.security`); a failed authentication is a ConnectionError_ too."""
        loop = asyncio.get_running_loop()
        conn = cls(host, port, client_id)
        conn._closed = loop.create_future()
        context = security.ssl_context if security is not None else None
        try:
            # asyncio.timeout, not wait_for: Python 3.11's wait_for can swallow a cancellation that
            # arrives just as the awaited operation completes, leaving a cancelled caller running.
            async with asyncio.timeout(timeout):
                if context is not None:
                    await loop.create_connection(lambda: conn, host, port, ssl=context, server_hostname=host)
                else:
                    await loop.create_connection(lambda: conn, host, port)
        except (OSError, TimeoutError) as e:
            raise ConnectionError_(f"cannot connect to {host}:{port}: {e}") from e
        resp = await conn.send(ApiVersionsRequest(), version=0, timeout=timeout)
        if resp.error_code != ErrorCode.NONE:
            conn.close()
            raise ConnectionError_(f"ApiVersions failed on {host}:{port}: error {resp.error_code}")
        conn.api_versions = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}
        if security is not None and security.is_sasl:
            try:
                await security.authenticate(conn, timeout)
            except ClientSecurityError as e:
                conn.close()
                raise ConnectionError_(str(e)) from None
        return conn

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()
        self._fail_all(ConnectionError_(f"connection to {self.host}:{self.port} closed"))

    @property
    def is_closed(self) -> bool:
        return self._closed is None or self._closed.done()

    def __repr__(self) -> str:
        return f"<BrokerConnection {self.host}:{self.port}>"

    # -- requests ---------------------------------------------------------------------------------
    def pick_version(self, api_key: int, max_version: int | None = None) -> int:
        ours = supported_versions().get(api_key)
        theirs = self.api_versions.get(api_key)
        if ours is None or theirs is None:
            raise NoCommonVersionError(f"broker {self.host}:{self.port} does not support api key {api_key}")
        hi = min(ours[1], theirs[1], max_version if max_version is not None else ours[1])
        lo = max(ours[0], theirs[0])
        if hi < lo:
            raise NoCommonVersionError(f"no common version for api {api_key}: ours {ours}, broker {theirs}")
        return hi

    async def send(self, request: Message, *, version: int | None = None, timeout: float = 30.0) -> Message:
        """Send one request and wait for its response."""
        if not response_expected(request):
            raise ValueError("this request gets no response (acks=0 produce): use send_oneway")
        api_key = type(request).API_KEY
        version, cid = self._write(request, version)
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[Message] = loop.create_future()
        self._pending.append(_Pending(cid, api_key, version, fut))
        # The future itself is awaited, with a plain timer for the timeout: the caller resumes on
        # the loop turn after the response is read. (asyncio.timeout around asyncio.shield cost
        # two turns more, and a context manager and a second future per request: a replica
        # fetcher's next fetch, hence the high watermark, waited for them on every round.) A
        # cancelled caller cancels `fut`, which `_complete` then skips: the FIFO stays in step.
        timer = loop.call_later(timeout, self._time_out, fut, api_key)
        try:
            return await fut
        finally:
            timer.cancel()

    def _time_out(self, fut: asyncio.Future[Message], api_key: int) -> None:
        if fut.done():
            return
        # The stream is now out of step with our FIFO: a late answer cannot be matched safely.
        fut.set_exception(TimeoutError(f"request {api_key} to {self.host}:{self.port} timed out"))
        self._fail_all(ConnectionError_(f"request {api_key} to {self.host}:{self.port} timed out"))
        if self.transport is not None:
            self.transport.abort()

    def send_oneway(self, request: Message, *, version: int | None = None) -> None:
        """Write a request that gets no response (Produce with acks=0)."""
        self._write(request, version)

    def _write(self, request: Message, version: int | None) -> tuple[int, int]:
        api_key = type(request).API_KEY
        if version is None:
            version = self.pick_version(api_key)
        if self.transport is None or self.is_closed:
            raise self._close_reason or ConnectionError_(f"not connected to {self.host}:{self.port}")
        cid = next(self._correlation) & 0x7FFFFFFF
        self.transport.write(encode_request(RequestHeader(api_key, version, cid, self.client_id), request))
        return version, cid

    # -- asyncio.Protocol -----------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # No isinstance check: uvloop's TCPTransport implements asyncio.Transport's interface
        # without subclassing it.
        self.transport = cast(asyncio.Transport, transport)

    def connection_lost(self, exc: Exception | None) -> None:
        self._fail_all(ConnectionError_(f"connection to {self.host}:{self.port} lost: {exc or 'closed'}"))

    def data_received(self, data: bytes) -> None:
        buf = self._buffer
        buf += data
        pos, end = 0, len(buf)
        while end - pos >= 4:
            (size,) = _SIZE.unpack_from(buf, pos)
            if end - pos - 4 < size:
                break
            frame = bytes(buf[pos + 4 : pos + 4 + size])
            pos += 4 + size
            self._complete(frame)
        if pos:
            del buf[:pos]

    def _complete(self, frame: bytes) -> None:
        if not self._pending:
            log.warning("unexpected response from %s:%s; closing", self.host, self.port)
            self.close()
            return
        pending = self._pending.popleft()
        try:
            header, response = decode_response(pending.api_key, pending.api_version, frame)
            if header.correlation_id != pending.correlation_id:
                raise ConnectionError_(
                    f"correlation id {header.correlation_id} != expected {pending.correlation_id}"
                )
        except Exception as e:
            if not pending.future.done():
                pending.future.set_exception(e)
            self.close()
            return
        if not pending.future.done():
            pending.future.set_result(response)

    def _fail_all(self, exc: BaseException) -> None:
        if self._close_reason is None:
            self._close_reason = exc
        while self._pending:
            p = self._pending.popleft()
            if not p.future.done():
                p.future.set_exception(exc)
                # Its caller may be gone (cancelled while waiting): then nobody reads the error,
                # and asyncio must not log it as "never retrieved".
                p.future.exception()
        if self._closed is not None and not self._closed.done():
            self._closed.set_result(None)
