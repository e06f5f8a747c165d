"""From a request frame to a response: decode, route to the API's handler, encode.

Handlers live in `zkafka.server.apis`, one module per API family; each is a function
`handle(ctx, request) -> response | awaitable response | NO_RESPONSE`. Returning the response
directly (no coroutine) keeps cheap requests off the task machinery; long waits (acks=all,
fetch long-poll) return a coroutine.

A handler sees its broker only through `ctx.services` (`zkafka.server.services.BrokerServices`),
the same object for every request, and who is asking through `ctx.principal`.

With metrics on (`services.metrics`), each request gets a `RequestTiming` (`broker_metrics.py`),
handed to the network layer as `conn.timing`, which reports it once the response is written; with
them off, nothing is timed.

Version policy (Kafka's): an ApiVersions request at a version we do not serve gets the v0
UNSUPPORTED_VERSION answer (clients retry lower); any other unsupported version, an unknown API
key or an undecodable request closes the connection (`ConnectionFatalError`).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import os
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from time import perf_counter
from typing import Any

from zkafka.protocol import (
    ApiKey,
    DecodeError,
    DeferredRecords,
    Message,
    RequestHeader,
    UnsupportedVersionError,
    decode_request,
    encode_response_parts,
)
from zkafka.protocol.api_versions import unsupported_api_versions_frame
from zkafka.server.broker_metrics import RequestTiming, request_name
from zkafka.server.network import NO_RESPONSE, ConnectionFatalError, KafkaConnection, _NoResponse
from zkafka.server.network import frame as frame_bytes
from zkafka.server.services import BrokerServices

log = logging.getLogger(__name__)


ANONYMOUS = "User:ANONYMOUS"


@dataclass(slots=True)
class RequestContext:
    header: RequestHeader
    connection: KafkaConnection
    listener: str
    services: BrokerServices
    principal: str = ANONYMOUS
    """Who sent the request (`User:ANONYMOUS` on PLAINTEXT, the mTLS DN on SSL, the SASL user)."""

    @property
    def api_version(self) -> int:
        return self.header.api_version


HandlerReturn = Message | _NoResponse | Awaitable[Message | _NoResponse]
Handler = Callable[[RequestContext, Any], HandlerReturn]


class FileRecords(DeferredRecords):
    """Records that stay in a segment file until the response is written, then are read with
    one `os.pread` into it. Not sendfile: uvloop transports have none, and writing around the
    transport would break the order of pipelined responses; what it would save is measured in
    docs/performance.md (benchmarks/fetch_copy.py)."""

    __slots__ = ("_fd", "_position", "_size")

    def __init__(self, fd: int, position: int, size: int) -> None:
        self._fd, self._position, self._size = fd, position, size

    @property
    def size(self) -> int:
        return self._size

    def materialize(self) -> bytes:
        data = os.pread(self._fd, self._size, self._position)
        if len(data) < self._size:  # the segment shrank under us (truncation): pad never; cut
            log.warning("segment read returned %d of %d bytes", len(data), self._size)
        return data


class Dispatcher:
    def __init__(self, services: BrokerServices, handlers: Mapping[int, Handler], listener: str) -> None:
        self.services = services
        self.handlers = handlers
        self.served = services.served_versions
        self.listener = listener
        self.request_metrics = services.metrics.requests if services.metrics is not None else None

    def __call__(self, frame: bytes, conn: KafkaConnection) -> Any:
        metrics = self.request_metrics
        if metrics is not None:
            start = perf_counter()
        sasl = conn.sasl
        if sasl is not None and sasl.raw:
            return raw_sasl_token(frame, conn)
        try:
            header, request = decode_request(frame, self.served)
        except UnsupportedVersionError as e:
            if e.header.api_key == ApiKey.API_VERSIONS:
                return [unsupported_api_versions_frame(e.header.correlation_id, self.served)]
            raise ConnectionFatalError(f"{e} (client {e.header.client_id!r})") from e
        except DecodeError as e:
            raise ConnectionFatalError(f"malformed request: {e}") from e
        handler = self.handlers.get(header.api_key)
        if handler is None:
            raise ConnectionFatalError(f"no handler for api key {header.api_key}")
        if sasl is not None:
            refused = sasl.allows(header.api_key)
            if refused is not None:
                raise ConnectionFatalError(refused)
        ctx = RequestContext(header, conn, self.listener, self.services, conn.principal)
        result = handler(ctx, request)
        if metrics is None:
            if result is NO_RESPONSE:
                return NO_RESPONSE
            if inspect.isawaitable(result):
                return _finish(header, result)
            return _encode(header, result)
        # Counted once the response is written (the network layer calls `timing.sent`); local time
        # includes encoding (a fetch's segment reads happen there).
        name = request_name(header.api_key)
        if result is NO_RESPONSE:
            conn.timing = RequestTiming(metrics, name, header.api_version, start, perf_counter())
            return NO_RESPONSE
        if inspect.isawaitable(result):
            timing = conn.timing = RequestTiming(metrics, name, header.api_version, start, perf_counter())
            return _finish(header, result, timing)
        encoded = _encode(header, result)
        now = perf_counter()
        timing = conn.timing = RequestTiming(metrics, name, header.api_version, start, now)
        timing.response(result, now)
        return encoded


def raw_sasl_token(frame: bytes, conn: KafkaConnection) -> list[bytes | bytearray | memoryview]:
    """A token after SaslHandshake v0: no request header, answered with a size-prefixed raw token;
    a failure closes the connection (there is no error field to carry it)."""
    sasl = conn.sasl
    step = sasl.authenticate(bytes(frame))
    if step.failed:
        raise ConnectionFatalError(f"SASL authentication failed ({sasl.security.listener}, raw token)")
    if step.complete:
        authenticated(conn)
    return frame_bytes(step.response)


def authenticated(conn: KafkaConnection) -> None:
    """The connection's SASL exchange completed: it is its principal from now on."""
    conn.principal = conn.sasl.principal
    conn.set_max_request_bytes(conn.sasl.security.max_request_bytes)


def _finish(
    header: RequestHeader, pending: Awaitable[Message | _NoResponse], timing: RequestTiming | None = None
) -> asyncio.Future[Any]:
    """The encoded response of a handler that returned an awaitable, as a future.

    The handler's coroutine is the task itself, not awaited inside a wrapper coroutine: when the
    connection closes before the task first runs (a later pipelined frame was malformed), the
    network layer cancels it, and a cancelled wrapper would drop the handler's coroutine without
    ever starting it ("coroutine ... was never awaited" on stderr, found by the fuzzer)."""
    task = asyncio.ensure_future(pending)
    out: asyncio.Future[Any] = task.get_loop().create_future()

    def finished(t: asyncio.Future[Message | _NoResponse]) -> None:
        exc = None if t.cancelled() else t.exception()  # retrieved even when nobody waits
        if out.done():
            return
        if t.cancelled():
            out.cancel()
        elif exc is not None:
            out.set_exception(exc)
        else:
            response = t.result()
            try:
                encoded = NO_RESPONSE if response is NO_RESPONSE else _encode(header, response)
            except Exception as e:  # an unencodable response: the network layer logs and closes
                out.set_exception(e)
                return
            if timing is not None:
                timing.response(response, perf_counter())
            out.set_result(encoded)

    def abandoned(f: asyncio.Future[Any]) -> None:
        if f.cancelled():
            task.cancel()

    task.add_done_callback(finished)
    out.add_done_callback(abandoned)
    return out


def _encode(header: RequestHeader, response: Any) -> list[bytes | bytearray | memoryview]:
    parts = encode_response_parts(header.api_key, header.api_version, header.correlation_id, response)
    out: list[bytes | bytearray | memoryview] = []
    for part in parts:
        if isinstance(part, DeferredRecords):
            out.append(part.materialize())
        elif isinstance(part, (bytes, bytearray, memoryview)):
            out.append(part)
        else:  # a sequence of buffers
            out.extend(part)
    return out
