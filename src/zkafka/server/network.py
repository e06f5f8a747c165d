"""The broker's network layer: asyncio Protocols (not Streams), length framing, pipelining.

One `KafkaConnection` per client socket, a `BufferedProtocol`: the socket is read straight into
our buffers. Small frames are read into a reusable read buffer and copied out once; a large
frame (a produce request of a megabyte, say) gets a buffer of its own that the socket fills
directly, so its bytes are copied from the kernel once: the handler gets that `bytearray` and the
produce path patches offsets in it and writes it to the log as is.

Every buffer grows as bytes arrive, never at the size a client merely announces. The read buffer
starts at 4 KiB (what an idle connection costs) and becomes 64 KiB once a frame or a read needs
it; a large frame's buffer starts at 256 KiB and grows 4x at a time, each step only once the
previous one is full, up to the announced size. So a frame holds at most 4x the bytes it has
actually sent, and 64 connections that each announce 100 MB and send nothing more hold ~17 MB,
not 6 GB. The fast path stays: a connection whose previous large frame arrived in full starts
the next at that size (up to `LARGE_CREDIT`, 2 MiB), so a producer's ~1 MB requests are read
into one buffer allocated once, with no growth copies; a client earns that credit only by
having sent as much.

Memory for requests is bounded as a whole by `queued.max.request.bytes` (`MemoryPool`): a frame
reserves its size before its body is read and gives it back once answered; a connection whose
next frame does not fit stops reading until memory is released. Which connections are accepted at
all, and which idle ones are closed, is `ConnectionQuotas`' business.
Every complete frame (int32 size + body) is handed to the request handler at once, so a client
may pipeline many requests. Kafka guarantees responses in request order per connection, so each request gets a
slot in a FIFO; a slot is filled either immediately (the handler returned the response) or
later (the handler returned a future, e.g. an acks=all produce or a long-poll fetch). Ready
slots at the head of the FIFO are written out together with `writelines`.

A handler may also return `NO_RESPONSE` (produce with acks=0: Kafka sends nothing back).

Bad input never takes the broker down: a frame larger than `socket.request.max.bytes`, a
negative size, or a handler that raises `ConnectionFatalError` (malformed header, unknown
API) closes *that* connection; every other connection keeps being served. Those closes are
expected input, not bugs: no traceback, and one line per kind of reason a minute
(`RateLimitedLog`) with a count of the rest, so a flood of hostile frames is a few lines. A
handler that fails in any other way is a bug: its traceback is logged, once per place a minute.

Client quotas (KIP-219): `throttle(ms)` stops reading from a connection for that long after a
throttled response; frames it had already sent wait too. Nothing is closed for exceeding a quota.

Flow control: when too many requests of one connection are in flight (`queued.max.requests`)
or the transport's write buffer is above its high-water mark, we stop reading from that socket
until the backlog drains, so a fast producer cannot make the broker buffer without bound.
"""

from __future__ import annotations

import asyncio
import logging
import re
import socket
import struct
import time
import traceback
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Final

from zkafka.logs import RateLimitedLog
from zkafka.server import connection_quotas
from zkafka.server.connection_quotas import ConnectionQuotas, canonical_ip
from zkafka.server.memory_pool import MemoryPool

log = logging.getLogger(__name__)
limited = RateLimitedLog(log)

_SIZE = struct.Struct(">i")
_QUICKACK: Final = getattr(socket, "TCP_QUICKACK", None)  # Linux only

Buffers = Sequence[bytes | bytearray | memoryview]
"""A response: buffers written back to back (the 4-byte size prefix included by the handler)."""


class _NoResponse:
    __slots__ = ()

    def __repr__(self) -> str:
        return "NO_RESPONSE"


NO_RESPONSE: Final = _NoResponse()


class Deferred:
    """A response a future will bring: `encode(result)` makes the buffers to write (or
    NO_RESPONSE) when the future is done and its turn comes. What the request hot paths (acks=all
    produce, long-poll fetch) return: their future is completed by a callback, and the response
    is written on the next event-loop turn, with no task in between."""

    __slots__ = ("encode", "future")

    def __init__(self, future: asyncio.Future[Any], encode: Callable[[Any], Buffers | _NoResponse]) -> None:
        self.future = future
        self.encode = encode


HandlerResult = Buffers | _NoResponse | Deferred | Awaitable[Buffers | _NoResponse]
Handler = Callable[[bytearray, "KafkaConnection"], HandlerResult]


class ConnectionFatalError(Exception):
    """Raised by a handler, or by a response's encoding, when the request cannot be answered at all
    (Kafka closes the socket)."""


SMALL_FRAME = 64 * 1024  # frames above this get a buffer of their own
LARGE_START = 256 * 1024  # first size of that buffer; it grows 4x at a time as bytes arrive
LARGE_CREDIT = 2 * 1024 * 1024
"""A connection whose last large frame did arrive in full starts its next one at that size, up to
this (a producer's requests are alike, and at most ~1 MB with Kafka's defaults): its buffer is then
allocated once, not grown, as before buffers grew. A client gets this only by having sent it."""
READ_START = 4 * 1024  # a connection's read buffer at first: what an idle connection holds
READ_FULL = SMALL_FRAME + 4  # ... and once it needs more: any small frame with its size fits
_KIND_NOISE = re.compile(r"'[^']*'|\"[^\"]*\"|0x[0-9a-fA-F]+|-?\d+")
"""What varies between closes of one kind (client ids, sizes, offsets): not part of the kind."""


class _Traceback:
    """An exception's traceback, formatted only if the rate-limited line is actually written."""

    __slots__ = ("exc",)

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc

    def __str__(self) -> str:
        return "".join(traceback.format_exception(self.exc)).rstrip()


def _bug_kind(exc: BaseException) -> tuple[str, str, int]:
    """One kind per exception type and place raised: distinct bugs are each logged."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if tb is None:
        return type(exc).__name__, "", 0
    return type(exc).__name__, tb.tb_frame.f_code.co_filename, tb.tb_lineno


def _log_bug(exc: BaseException, peer: str) -> None:
    limited.error(
        ("handler failed", *_bug_kind(exc)),
        "request handler failed; closing connection from %s\n%s",
        peer,
        _Traceback(exc),
    )


def summarise_logs() -> int:
    """Write the counts held back by this layer's rate-limited lines whose window has closed (the
    broker calls this periodically, so a flood that stopped is still reported)."""
    return limited.flush() + connection_quotas.summarise_logs()


class KafkaConnection(asyncio.BufferedProtocol):
    __slots__ = (
        "_buffer",
        "_closed",
        "_closing",
        "_counted",
        "_end",
        "_frame",
        "_frame_filled",
        "_frame_size",
        "_grow",
        "_handler",
        "_inflight",
        "_limit_name",
        "_listener",
        "_max_inflight",
        "_max_request_bytes",
        "_on_close",
        "_on_connected",
        "_pool",
        "_pool_muted",
        "_pool_wanted",
        "_proven",
        "_quickack",
        "_quotas",
        "_reading_paused",
        "_reserved",
        "_socket",
        "_start",
        "_throttle_timer",
        "_throttled",
        "_writing_paused",
        "ip",
        "last_active",
        "peer",
        "principal",
        "sasl",
        "timing",
        "transport",
    )

    def __init__(
        self,
        handler: Handler,
        *,
        max_request_bytes: int,
        max_inflight: int = 500,
        on_close: Callable[[KafkaConnection], None] | None = None,
        pool: MemoryPool | None = None,
        quotas: ConnectionQuotas | None = None,
        listener: str = "",
        on_connected: Callable[[KafkaConnection], None] | None = None,
    ) -> None:
        self._handler = handler
        self._on_connected = on_connected
        self._max_request_bytes = max_request_bytes
        self._limit_name = "socket.request.max.bytes"
        self._max_inflight = max_inflight
        self._on_close = on_close
        self._pool = pool
        self._quotas = quotas
        self._listener = listener
        self._buffer = bytearray(READ_START)
        self._start = 0  # unparsed bytes of _buffer are [_start, _end)
        self._end = 0
        self._grow = False  # the last read filled the small read buffer: more is likely waiting
        self._frame: bytearray | None = None  # a large frame being filled by the socket
        self._frame_filled = 0
        self._frame_size = 0
        self._proven = 0  # the last large frame received in full, up to LARGE_CREDIT
        self._reserved = 0  # pool bytes held by the frame being read (not yet dispatched)
        # FIFO of response slots: [pool bytes, a list of buffers | NO_RESPONSE | a pending future,
        # the request's timing or None, what encodes the future's result or None (`Deferred`)].
        self._inflight: deque[list[Any]] = deque()
        self._reading_paused = False
        self._writing_paused = False
        self._pool_muted = False  # queued in the pool for the next frame's size (_pool_wanted)
        self._pool_wanted = 0
        self._throttled = False  # muted for a client quota (KIP-219) until _throttle_timer fires
        self._throttle_timer: asyncio.TimerHandle | None = None
        self._socket: Any = None  # for TCP_QUICKACK (Linux): see `_ack_now`
        self._quickack = False  # a request of the read being parsed is answered later
        self._closed = False
        self._closing = False  # answer what is in flight, then close (SASL failures)
        self._counted = False
        self.principal = "User:ANONYMOUS"
        """Who this connection is (`zkafka.server.security`): set by TLS at connect, by SASL later."""
        self.sasl: Any = None
        """A SASL listener's per-connection state (`zkafka.server.security.SaslSession`), else None."""
        self.timing: Any = None
        """Set by the handler (the dispatcher, when metrics are on) for the request it just took: an
        object whose `sent(now)` is called once its response is written (`time.perf_counter`), so
        the request's time behind earlier pipelined responses is measured too."""
        self.transport: asyncio.Transport | None = None
        self.peer: str = "?"
        self.ip: str = "?"
        self.last_active = time.monotonic()

    # -- asyncio.Protocol ------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # uvloop's transports are not asyncio.Transport subclasses
        peer = transport.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)
        self.ip = canonical_ip(str(peer[0])) if isinstance(peer, tuple) else str(peer)
        if _QUICKACK is not None and isinstance(peer, tuple):
            self._socket = transport.get_extra_info("socket")
        if self._quotas is not None:
            if not self._quotas.accept(self.ip, self._listener):
                self._closed = True  # refused: the quotas logged why (rate-limited)
                transport.abort()  # type: ignore[attr-defined]
                return
            self._counted = self._quotas.counts(self._listener)
        if self._on_connected is not None:
            try:
                self._on_connected(self)
            except ConnectionFatalError as e:
                self.abort(str(e))
            except Exception as e:
                _log_bug(e, self.peer)
                self.abort("internal error")

    def connection_lost(self, exc: Exception | None) -> None:
        self._closed = True
        released = self._reserved
        self._reserved = 0
        for size, slot, _timing, _encode in self._inflight:
            released += size
            if isinstance(slot, asyncio.Future) and not slot.done():
                slot.cancel()
        self._inflight.clear()
        self._frame = None
        if self._throttle_timer is not None:
            self._throttle_timer.cancel()
            self._throttle_timer = None
        if self._pool is not None:
            self._pool.forget(self._resume)
            if released:
                self._pool.release(released)
        if self._counted and self._quotas is not None:
            self._counted = False
            self._quotas.closed(self.ip)
        if self._on_close is not None:
            self._on_close(self)

    def pause_writing(self) -> None:
        self._writing_paused = True
        self._update_reading()

    def resume_writing(self) -> None:
        self._writing_paused = False
        self._update_reading()

    def get_buffer(self, sizehint: int) -> memoryview:
        frame = self._frame
        if frame is not None:
            if self._frame_filled == len(frame):
                # full but the frame is not complete: more bytes did arrive, so grow (a new buffer:
                # the socket may still hold a view of the old one)
                grown = bytearray(min(self._frame_size, len(frame) * 4))
                grown[: self._frame_filled] = frame
                self._frame = frame = grown
            return memoryview(frame)[self._frame_filled :]
        buf, start, end = self._buffer, self._start, self._end
        if start == end:
            self._start = self._end = 0
            if self._grow:
                self._buffer = buf = bytearray(READ_FULL)
                self._grow = False
        elif len(buf) - end < 1024:
            # Keep the partial frame at the front (it is smaller than READ_FULL here: larger ones
            # have a buffer of their own); a small read buffer grows once to READ_FULL when the
            # frame would not fit it or reads fill it.
            pending = end - start
            if len(buf) < READ_FULL and (pending + 1024 > len(buf) or self._grow):
                grown = bytearray(READ_FULL)
                grown[:pending] = memoryview(buf)[start:end]
                self._buffer = buf = grown
                self._grow = False
            else:
                buf[:pending] = buf[start:end]
            self._start, self._end = 0, pending
        return memoryview(buf)[self._end :]

    def buffer_updated(self, nbytes: int) -> None:
        self.last_active = time.monotonic()
        if self._frame is not None:
            self._frame_filled += nbytes
            if self._frame_filled == self._frame_size:
                frame, self._frame = self._frame, None
                self._proven = min(self._frame_size, LARGE_CREDIT)
                self._dispatch(frame)
            return
        self._end += nbytes
        if self._end == len(self._buffer) < READ_FULL:
            self._grow = True
        self._parse()

    def _parse(self) -> None:
        """Dispatch every complete frame in the read buffer; start reading a large one into its own
        buffer. Stops (muted) when the memory pool cannot hold the next frame, and while a client quota
        throttles the connection (pipelined frames already read wait out the throttle too)."""
        buf, pos, end = self._buffer, self._start, self._end
        dispatched = False
        while end - pos >= 4 and not self._closed and not self._throttled:
            (size,) = _SIZE.unpack_from(buf, pos)
            if size < 0 or size > self._max_request_bytes:
                self.abort(
                    f"request size {size} is outside [0, {self._limit_name}={self._max_request_bytes}]"
                )
                return
            if not self._reserved and not self._reserve(size):
                break  # muted: this frame waits, unread or unparsed, until memory is released
            if end - pos - 4 >= size:
                frame = buf[pos + 4 : pos + 4 + size]  # one copy, into a bytearray the handler owns
                pos += 4 + size
                self._dispatch(frame, flush=False)
                dispatched = True
                continue
            if size > SMALL_FRAME:
                # the socket fills the rest of this frame directly, into a buffer grown as it arrives
                have = end - pos - 4
                frame = bytearray(min(size, max(LARGE_START, have, self._proven)))
                frame[:have] = memoryview(buf)[pos + 4 : end]
                self._frame, self._frame_filled, self._frame_size = frame, have, size
                pos = end
            break
        self._start = pos
        if pos == end:
            self._start = self._end = 0
        if dispatched:
            # the answers ready among what one read brought, written together: one send, not one each
            self._flush()
            self._update_reading()
            if self._quickack:
                self._ack_now()

    def _reserve(self, size: int) -> bool:
        pool = self._pool
        if pool is None:
            return True
        if self._pool_muted:
            return False  # already queued for this frame
        if pool.reserve(size, self._resume):
            self._reserved = size
            return True
        self._pool_muted = True
        self._pool_wanted = size
        self._update_reading()
        return False

    def _resume(self) -> None:
        """The memory pool has reserved the waiting frame's size: read and parse it now."""
        self._reserved, self._pool_wanted = self._pool_wanted, 0  # released by connection_lost if closed
        self._pool_muted = False
        if self._closed:
            return
        self._parse()
        self._update_reading()

    def data_received(self, data: bytes) -> None:
        """Fallback for transports that do not support BufferedProtocol."""
        while data:
            view = self.get_buffer(len(data))
            n = min(len(view), len(data))
            view[:n] = data[:n]
            self.buffer_updated(n)
            data = data[n:]

    # -- internals ---------------------------------------------------------------------------
    def _dispatch(self, frame: bytearray, *, flush: bool = True) -> None:
        reserved, self._reserved = self._reserved, 0
        if self._closing:  # closing after its last answer: later frames are dropped unread
            self._release(reserved)
            return
        try:
            result = self._handler(frame, self)
        except ConnectionFatalError as e:
            self.timing = None
            self._release(reserved)
            self.abort(str(e))
            return
        except Exception as e:
            self.timing = None
            self._release(reserved)
            _log_bug(e, self.peer)
            self.abort("internal error")
            return
        timing, self.timing = self.timing, None
        if type(result) is Deferred:
            fut = result.future
            self._inflight.append([reserved, fut, timing, result.encode])
            fut.add_done_callback(self._on_future_done)
            self._quickack = True
        elif isinstance(result, Awaitable) and not isinstance(result, (list, tuple)):
            fut = asyncio.ensure_future(result)
            self._inflight.append([reserved, fut, timing, None])
            fut.add_done_callback(self._on_future_done)
            self._quickack = True
        else:
            self._inflight.append([reserved, result, timing, None])
        if flush:
            self._flush()
            self._update_reading()
            if self._quickack:
                self._ack_now()

    def _ack_now(self) -> None:
        """Acknowledge the bytes read so far at once (TCP_QUICKACK), since a request among them is
        answered later (an acks=all produce, a long-poll fetch). Linux delays the ACK of a request
        (up to 40 ms) hoping to carry it on the response, and a client with Nagle's algorithm on
        -- librdkafka's default, `socket.nagle.disable=false` -- holds its next small request
        until the previous one is acknowledged: each produce request waited for the previous
        one's replication, or for the delayed-ACK timer. Setting the option sends a pending ACK
        at once (the kernel does not keep it set, hence once per such read)."""
        self._quickack = False
        sock = self._socket
        if sock is None:
            return
        try:
            sock.setsockopt(socket.IPPROTO_TCP, _QUICKACK, 1)
        except OSError:  # not a TCP socket after all: nothing to do, ever
            self._socket = None

    def skip_quick_acks(self) -> None:
        """The peer sends with Nagle's algorithm off, so a delayed ACK holds nothing of it back
        and `_ack_now`'s system call buys nothing: called for a follower's connection (a zkafka
        replica fetcher, whose asyncio transport sets TCP_NODELAY). At 1,000 records/s, 30 % of
        a broker's quick ACKs were its followers' (the rest: the producer's and the consumer's)."""
        self._socket = None

    def _on_future_done(self, fut: asyncio.Future[Any]) -> None:
        if self._closed:
            return
        if not fut.cancelled() and fut.exception() is not None:
            exc = fut.exception()
            if isinstance(exc, ConnectionFatalError):
                self.abort(str(exc))
            else:
                _log_bug(exc, self.peer)
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
        released = 0
        timings = None
        while q:
            reserved, slot, timing, encode = q[0]
            if isinstance(slot, asyncio.Future):
                if not slot.done():
                    break
                slot = slot.result()
                if encode is not None:
                    try:
                        slot = encode(slot)
                    except ConnectionFatalError as e:  # e.g. records truncated under the response
                        self._release(released)
                        self.abort(str(e))
                        return
                    except Exception as e:  # an unencodable response is a bug: log it, close
                        self._release(released)  # what was taken off the queue (the rest: on close)
                        _log_bug(e, self.peer)
                        self.abort("internal error")
                        return
            q.popleft()
            released += reserved
            if slot is not NO_RESPONSE:
                out.extend(slot)
            if timing is not None:
                if timings is None:
                    timings = [timing]
                else:
                    timings.append(timing)
        if out:
            transport.writelines(out)
            self.last_active = time.monotonic()
        if timings is not None:
            now = time.perf_counter()
            for timing in timings:
                timing.sent(now)
        self._release(released)
        if self._closing and not q:
            self._closed = True
            transport.close()  # after the buffered answers are written

    def _release(self, size: int) -> None:
        if size and self._pool is not None:
            self._pool.release(size)

    def _update_reading(self) -> None:
        transport = self.transport
        if transport is None or self._closed:
            return
        should_pause = (
            self._writing_paused
            or self._pool_muted
            or self._throttled
            or len(self._inflight) >= self._max_inflight
        )
        if should_pause and not self._reading_paused:
            self._reading_paused = True
            transport.pause_reading()
        elif not should_pause and self._reading_paused:
            self._reading_paused = False
            transport.resume_reading()

    def throttle(self, ms: int) -> None:
        """A client quota was exceeded (KIP-219): read nothing more from this connection for `ms`
        (from now, when its throttled response is handed to the transport), then carry on. The
        client is never disconnected for it; a longer throttle replaces a shorter running one."""
        if ms <= 0 or self._closed or self.transport is None:
            return
        loop = asyncio.get_running_loop()
        until = loop.time() + ms / 1000
        timer = self._throttle_timer
        if timer is not None:
            if timer.when() >= until:
                return
            timer.cancel()
        self._throttled = True
        self._throttle_timer = loop.call_at(until, self._unthrottle)
        self._update_reading()

    def _unthrottle(self) -> None:
        self._throttle_timer = None
        self._throttled = False
        if self._closed:
            return
        self._parse()  # frames that arrived with the throttled one wait no longer
        self._update_reading()

    def set_max_request_bytes(self, size: int, key: str = "socket.request.max.bytes") -> None:
        """The largest frame accepted from now on, and the config key that says so (SASL: small
        until authenticated)."""
        self._max_request_bytes = size
        self._limit_name = key

    def close_after_responses(self, reason: str) -> None:
        """Answer the requests already in flight (the current one included), then close: Kafka's
        way after a failed SASL authentication."""
        if not self._closing and not self._closed:
            self._closing = True
            limited.log(
                logging.INFO, ("closing", reason[:48]), "closing connection from %s: %s", self.peer, reason
            )

    @property
    def waiting_on_broker(self) -> bool:
        """A request in flight, or muted on request memory: the broker owes the next move, so the
        connection is not idle (connections.max.idle.ms)."""
        return bool(self._inflight) or self._pool_muted or self._throttled

    def abort(self, reason: str, *, level: int = logging.WARNING) -> None:
        """Close this connection at once (bad input, a quota); the broker keeps serving everyone
        else."""
        if self._closed:
            return
        # One line per kind of reason a minute: a flood of hostile frames must not flood the log.
        # The kind leaves out what a client chooses (ids, sizes), so it cannot invent new kinds.
        kind = _KIND_NOISE.sub("_", reason)[:48]
        limited.log(level, ("closing", kind), "closing connection from %s: %s", self.peer, reason)
        self._closed = True
        if self.transport is not None:
            self.transport.abort()

    @property
    def closed(self) -> bool:
        return self._closed


def frame(payload: bytes | bytearray | memoryview) -> list[bytes | bytearray | memoryview]:
    """Prefix one response body with its int32 size."""
    return [_SIZE.pack(len(payload)), payload]
