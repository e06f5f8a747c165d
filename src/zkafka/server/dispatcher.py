"""From a request frame to a response: decode, route to the API's handler, encode.

Handlers live in `zkafka.server.apis`, one module per API family; each is a function
`handle(ctx, request) -> response | awaitable response | NO_RESPONSE`. Returning the response
directly (no coroutine) keeps cheap requests off the task machinery. The hot waits (acks=all
produce, fetch long-poll) return an `asyncio.Future` that a callback completes: the network layer
encodes its result when it is written (`network.Deferred`), so no task runs per request; other
waits may return a coroutine, run as a task.

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
import struct
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import partial
from time import perf_counter
from typing import Any, Final

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
from zkafka.runtime import collector
from zkafka.server.broker_metrics import RequestTiming, request_name
from zkafka.server.client_quotas import REQUEST_QUOTA_EXEMPT, ClientQuotas
from zkafka.server.network import NO_RESPONSE, ConnectionFatalError, Deferred, KafkaConnection, _NoResponse
from zkafka.server.network import frame as frame_bytes
from zkafka.server.services import BrokerServices
from zkafka.storage.file_cache import FileLease

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


_BATCH_PREFIX = struct.Struct(">qi")
"""A stored batch's base offset and the length of the rest."""


class FileRecords(DeferredRecords):
    """Records that stay in a segment file until the response is written, then are read with
    one `os.pread` into it. Not sendfile: uvloop transports have none, and writing around the
    transport would break the order of pipelined responses; what it would save is measured in
    docs/performance.md (benchmarks/fetch_copy.py).

    The lease pins the descriptor for as long as these records exist (`zkafka.storage.file_cache`):
    the broker's cache of open segment files never closes it under them, nor does a segment
    deleted meanwhile. Without a lease (the cache's lease budget was spent) the bytes were read
    already and are held in `data`."""

    __slots__ = ("_data", "_fd", "_lease", "_position", "_size")

    def __init__(self, lease: FileLease | None, position: int, size: int, data: bytes | None = None) -> None:
        self._lease, self._data = lease, data
        self._fd = lease.fd if lease is not None else -1
        self._position, self._size = position, size

    @property
    def size(self) -> int:
        return self._size

    def _read(self, size: int, position: int) -> bytes:
        data = self._data
        if data is not None:
            start = position - self._position
            return data[start : start + size]
        return os.pread(self._fd, size, position)

    def materialize(self) -> bytes:
        if self._data is not None:
            return self._data
        data = os.pread(self._fd, self._size, self._position)
        if len(data) < self._size:
            # The segment was truncated after the response was sized (the partition became a
            # follower and cut its log): the frame's length prefix already counts `size` bytes,
            # so sending fewer would misalign every later response on the connection. Kafka fails
            # the send ("Size of FileRecords has been truncated during write") and closes the
            # connection; so do we (the network layer logs the reason), and the client retries.
            raise ConnectionFatalError(
                f"records truncated during the response write: read {len(data)} of {self._size} bytes"
            )
        return data

    def batches(self) -> Iterator[bytes]:
        """The record batches in the slice, read one at a time (down-conversion converts each as it
        comes instead of reading the whole slice). Stops at a short read or a partial batch."""
        pos, end = self._position, self._position + self._size
        while pos + _BATCH_PREFIX.size <= end:
            prefix = self._read(_BATCH_PREFIX.size, pos)
            if len(prefix) < _BATCH_PREFIX.size:
                return
            _, length = _BATCH_PREFIX.unpack(prefix)
            total = _BATCH_PREFIX.size + length
            if length <= 0 or pos + total > end:
                return
            batch = self._read(total, pos)
            if len(batch) < total:
                return
            yield batch
            pos += total


class Dispatcher:
    def __init__(self, services: BrokerServices, handlers: Mapping[int, Handler], listener: str) -> None:
        self.services = services
        self.handlers = handlers
        self.served = services.served_versions
        self.listener = listener
        self.request_metrics = services.metrics.requests if services.metrics is not None else None

    def __call__(self, frame: bytes, conn: KafkaConnection) -> Any:
        if len(frame) > 1 and frame[1] in _BULK_REQUESTS and frame[0] == 0:
            # A controller's LeaderAndIsr, StopReplica or UpdateMetadata names up to every
            # partition of the cluster: decoded and applied, it is hundreds of thousands of
            # objects, most of them kept (the metadata cache, new partitions and logs). Young
            # collections meanwhile would walk and promote them for nothing, and full ones walk
            # the whole heap.
            with collector.paused():
                return self._serve(frame, conn)
        return self._serve(frame, conn)

    def _serve(self, frame: bytes, conn: KafkaConnection) -> Any:
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
        quotas = self.services.quotas
        if quotas is not None and (not quotas.enabled() or _exempt(header.api_key, request)):
            quotas = None
        started = time.perf_counter_ns() if quotas is not None else 0
        result = handler(ctx, request)
        before_encode: Callable[[Any], None] | None = None
        if quotas is not None:
            # The handler's own work is what ran until it started waiting (long-poll, acks=all):
            # Kafka's request quota counts handler-thread time, never time parked in purgatory.
            busy = time.perf_counter_ns() - started
            if inspect.isawaitable(result):
                before_encode = partial(_request_quota, quotas, ctx, busy)
            else:
                _request_quota(quotas, ctx, busy, None if result is NO_RESPONSE else result)
        if metrics is None:
            if result is NO_RESPONSE:
                return NO_RESPONSE
            if isinstance(result, asyncio.Future):
                return Deferred(result, partial(_encode_later, header, conn, before_encode, None))
            if inspect.isawaitable(result):
                return _finish(header, result, conn, before_encode)
            return _encode(header, result, conn)
        # Counted once the response is written (the network layer calls `timing.sent`); local time
        # includes encoding (a fetch's segment reads happen there).
        name = request_name(header.api_key)
        if result is NO_RESPONSE:
            conn.timing = RequestTiming(metrics, name, header.api_version, start, perf_counter())
            return NO_RESPONSE
        if isinstance(result, asyncio.Future):
            timing = conn.timing = RequestTiming(metrics, name, header.api_version, start, perf_counter())
            return Deferred(result, partial(_encode_later, header, conn, before_encode, timing))
        if inspect.isawaitable(result):
            timing = conn.timing = RequestTiming(metrics, name, header.api_version, start, perf_counter())
            return _finish(header, result, conn, before_encode, timing)
        encoded = _encode(header, result, conn)
        now = perf_counter()
        timing = conn.timing = RequestTiming(metrics, name, header.api_version, start, now)
        timing.response(result, now)
        return encoded


_BULK_REQUESTS: Final = frozenset({ApiKey.LEADER_AND_ISR, ApiKey.STOP_REPLICA, ApiKey.UPDATE_METADATA})
"""The api keys whose requests are decoded and handled with the collector paused (a frame starts
with its api key, big-endian int16: these have a high byte of 0)."""


def _exempt(api_key: int, request: Any) -> bool:
    """Kafka's request quota leaves out cluster actions and replica fetches."""
    return api_key in REQUEST_QUOTA_EXEMPT or (
        api_key == ApiKey.FETCH and getattr(request, "replica_id", -1) >= 0
    )


def _request_quota(quotas: ClientQuotas, ctx: RequestContext, busy_ns: int, response: Any) -> None:
    """Record the handler time against `request_percentage`; the response then carries the larger
    of that throttle and a byte-rate one its handler set (Kafka's max of the quotas)."""
    throttle = quotas.request(ctx.principal, ctx.header.client_id, busy_ns)
    if throttle <= 0:
        return
    if response is None or not hasattr(response, "throttle_time_ms"):  # nothing to tell: mute only
        ctx.connection.throttle(throttle)
    elif throttle > getattr(response, "throttle_time_ms", throttle):
        response.throttle_time_ms = throttle


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


def _encode_later(
    header: RequestHeader,
    conn: KafkaConnection,
    before_encode: Callable[[Any], None] | None,
    timing: RequestTiming | None,
    response: Message | _NoResponse,
) -> list[bytes | bytearray | memoryview] | _NoResponse:
    """The encoded response of a handler that returned a future (`Deferred`), run by the network
    layer when that future is done and the response's turn has come."""
    if before_encode is not None:
        before_encode(None if response is NO_RESPONSE else response)
    encoded = NO_RESPONSE if response is NO_RESPONSE else _encode(header, response, conn)
    if timing is not None:
        timing.response(response, perf_counter())
    return encoded


def _finish(
    header: RequestHeader,
    pending: Awaitable[Message | _NoResponse],
    conn: KafkaConnection,
    before_encode: Callable[[Any], None] | None = None,
    timing: RequestTiming | None = None,
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
                if before_encode is not None:
                    before_encode(None if response is NO_RESPONSE else response)
                encoded = NO_RESPONSE if response is NO_RESPONSE else _encode(header, response, conn)
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


def _encode(
    header: RequestHeader, response: Any, conn: KafkaConnection
) -> list[bytes | bytearray | memoryview]:
    throttle = getattr(response, "throttle_time_ms", 0)
    if throttle > 0:  # KIP-219: the client learns the throttle, and the broker reads nothing more meanwhile
        conn.throttle(throttle)
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
