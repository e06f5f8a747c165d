"""The broker's network layer: asyncio Protocols (not Streams), length framing, pipelining.

One `KafkaConnection` per client socket, a `BufferedProtocol`: the socket is read straight into
our buffers. Small frames are read into a reusable 64 KiB buffer and copied out once; a large
frame (a produce request of a megabyte, say) gets a buffer of exactly its size that the socket
fills directly, so its bytes are copied once from the kernel and never again: the handler gets
that `bytearray` and the produce path patches offsets in it and writes it to the log as is.
Every complete frame (int32 size + body) is handed to the request handler at once, so a client
may pipeline many requests. Kafka guarantees responses in request order per connection, so each request gets a
slot in a FIFO; a slot is filled either immediately (the handler returned the response) or
later (the handler returned a future, e.g. an acks=all produce or a long-poll fetch). Ready
slots at the head of the FIFO are written out together with `writelines`.

A handler may also return `NO_RESPONSE` (produce with acks=0: Kafka sends nothing back).

Bad input never takes the broker down: a frame larger than `socket.request.max.bytes`, a
negative size, or a handler that raises `ConnectionFatalError` (malformed header, unknown
API) closes *that* connection with one log line; every other connection keeps being served.

Flow control: when too many requests of one connection are in flight (`queued.max.requests`)
or the transport's write buffer is above its high-water mark, we stop reading from that socket
until the backlog drains, so a fast producer cannot make the broker buffer without bound.
"""

from __future__ import annotations

import asyncio
import logging
import struct
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Final

log = logging.getLogger(__name__)

_SIZE = struct.Struct(">i")

Buffers = Sequence[bytes | bytearray | memoryview]
"""A response: buffers written back to back (the 4-byte size prefix included by the handler)."""


class _NoResponse:
    __slots__ = ()

    def __repr__(self) -> str:
        return "NO_RESPONSE"


NO_RESPONSE: Final = _NoResponse()

HandlerResult = Buffers | _NoResponse | Awaitable[Buffers | _NoResponse]
Handler = Callable[[bytearray, "KafkaConnection"], HandlerResult]


class ConnectionFatalError(Exception):
    """Raised by a handler when the request cannot be answered at all (Kafka closes the socket)."""


SMALL_FRAME = 64 * 1024  # frames above this get a buffer of their own


class KafkaConnection(asyncio.BufferedProtocol):
    __slots__ = (
        "_buffer",
        "_closed",
        "_end",
        "_frame",
        "_frame_filled",
        "_handler",
        "_inflight",
        "_max_inflight",
        "_max_request_bytes",
        "_on_close",
        "_reading_paused",
        "_start",
        "_writing_paused",
        "peer",
        "transport",
    )

    def __init__(
        self,
        handler: Handler,
        *,
        max_request_bytes: int,
        max_inflight: int = 500,
        on_close: Callable[[KafkaConnection], None] | None = None,
    ) -> None:
        self._handler = handler
        self._max_request_bytes = max_request_bytes
        self._max_inflight = max_inflight
        self._on_close = on_close
        self._buffer = bytearray(SMALL_FRAME + 4)
        self._start = 0  # unparsed bytes of _buffer are [_start, _end)
        self._end = 0
        self._frame: bytearray | None = None  # a large frame being filled by the socket
        self._frame_filled = 0
        # FIFO of response slots: a list of buffers, NO_RESPONSE, or a pending future.
        self._inflight: deque[Any] = deque()
        self._reading_paused = False
        self._writing_paused = False
        self._closed = False
        self.transport: asyncio.Transport | None = None
        self.peer: str = "?"

    # -- asyncio.Protocol ------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # uvloop's transports are not asyncio.Transport subclasses
        peer = transport.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)

    def connection_lost(self, exc: Exception | None) -> None:
        self._closed = True
        for slot in self._inflight:
            if isinstance(slot, asyncio.Future) and not slot.done():
                slot.cancel()
        self._inflight.clear()
        if self._on_close is not None:
            self._on_close(self)

    def pause_writing(self) -> None:
        self._writing_paused = True
        self._update_reading()

    def resume_writing(self) -> None:
        self._writing_paused = False
        self._update_reading()

    def get_buffer(self, sizehint: int) -> memoryview:
        if self._frame is not None:
            return memoryview(self._frame)[self._frame_filled :]
        if self._start == self._end:
            self._start = self._end = 0
        elif len(self._buffer) - self._end < 1024:
            # keep the partial frame at the front: it is smaller than SMALL_FRAME + 4 here
            tail = self._buffer[self._start : self._end]
            self._buffer[: len(tail)] = tail
            self._start, self._end = 0, len(tail)
        return memoryview(self._buffer)[self._end :]

    def buffer_updated(self, nbytes: int) -> None:
        if self._frame is not None:
            self._frame_filled += nbytes
            if self._frame_filled == len(self._frame):
                frame, self._frame = self._frame, None
                self._dispatch(frame)
            return
        self._end += nbytes
        buf, pos, end = self._buffer, self._start, self._end
        while end - pos >= 4 and not self._closed:
            (size,) = _SIZE.unpack_from(buf, pos)
            if size < 0 or size > self._max_request_bytes:
                self.abort(
                    f"request size {size} is outside [0, socket.request.max.bytes={self._max_request_bytes}]"
                )
                return
            if end - pos - 4 >= size:
                frame = buf[pos + 4 : pos + 4 + size]  # one copy, into a bytearray the handler owns
                pos += 4 + size
                self._dispatch(frame)
                continue
            if size > SMALL_FRAME:
                # the socket fills the rest of this frame directly
                frame = bytearray(size)
                have = end - pos - 4
                frame[:have] = memoryview(buf)[pos + 4 : end]
                self._frame, self._frame_filled = frame, have
                pos = end
            break
        self._start = pos
        if pos == end:
            self._start = self._end = 0

    def data_received(self, data: bytes) -> None:
        """Fallback for transports that do not support BufferedProtocol."""
        while data:
            view = self.get_buffer(len(data))
            n = min(len(view), len(data))
            view[:n] = data[:n]
            self.buffer_updated(n)
            data = data[n:]

    # -- internals ---------------------------------------------------------------------------
    def _dispatch(self, frame: bytearray) -> None:
        try:
            result = self._handler(frame, self)
        except ConnectionFatalError as e:
            self.abort(str(e))
            return
        except Exception:
            log.exception("request handler failed; closing connection from %s", self.peer)
            self.abort("internal error")
            return
        if isinstance(result, Awaitable) and not isinstance(result, (list, tuple)):
            fut = asyncio.ensure_future(result)
            self._inflight.append(fut)
            fut.add_done_callback(self._on_future_done)
        else:
            self._inflight.append(result)
        self._flush()
        self._update_reading()

    def _on_future_done(self, fut: asyncio.Future[Any]) -> None:
        if self._closed:
            return
        if not fut.cancelled() and fut.exception() is not None:
            exc = fut.exception()
            if isinstance(exc, ConnectionFatalError):
                self.abort(str(exc))
            else:
                log.error("request handler failed; closing connection from %s", self.peer, exc_info=exc)
                self.abort("internal error")
            return
        self._flush()
        self._update_reading()

    def _flush(self) -> None:
        transport = self.transport
        if transport is None or self._closed:
            return
        out: list[bytes | bytearray | memoryview] = []
        q = self._inflight
        while q:
            slot = q[0]
            if isinstance(slot, asyncio.Future):
                if not slot.done():
                    break
                slot = slot.result()
            q.popleft()
            if slot is not NO_RESPONSE:
                out.extend(slot)
        if out:
            transport.writelines(out)

    def _update_reading(self) -> None:
        transport = self.transport
        if transport is None or self._closed:
            return
        should_pause = self._writing_paused or len(self._inflight) >= self._max_inflight
        if should_pause and not self._reading_paused:
            self._reading_paused = True
            transport.pause_reading()
        elif not should_pause and self._reading_paused:
            self._reading_paused = False
            transport.resume_reading()

    def abort(self, reason: str) -> None:
        """Close this connection at once (bad input); the broker keeps serving everyone else."""
        if self._closed:
            return
        log.warning("closing connection from %s: %s", self.peer, reason)
        self._closed = True
        if self.transport is not None:
            self.transport.abort()

    @property
    def closed(self) -> bool:
        return self._closed


def frame(payload: bytes | bytearray | memoryview) -> list[bytes | bytearray | memoryview]:
    """Prefix one response body with its int32 size."""
    return [_SIZE.pack(len(payload)), payload]
