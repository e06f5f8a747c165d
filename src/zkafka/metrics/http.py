"""`MetricsServer`: GET /metrics over plain asyncio, on the broker's own event loop.

`GET /metrics?name[]=a&name[]=b` answers with those metrics only, as Prometheus' own client
libraries do (names not in the catalogue give nothing; at most `MAX_NAMES` of them).

Why not starlette/uvicorn: the endpoint answers one URL with one body; a raw server is ~100 lines, adds
no dependency to the broker and no second HTTP stack to keep patched, and its hostile-input rules are
all visible here:
* the request head (request line + headers) is bounded (`MAX_HEAD`) and must arrive within
  `READ_TIMEOUT_S`, the response must drain within `WRITE_TIMEOUT_S`;
* at most `MAX_CONNECTIONS` at once (a scrape is one short connection; more are refused by closing);
* one request per connection (`Connection: close`), bodies are never read;
* anything unexpected answers 400/404/405/431 or closes the connection, and is never raised out.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from urllib.parse import parse_qs

from zkafka.logs import RateLimitedLog
from zkafka.metrics.exposition import CONTENT_TYPE

__all__ = ["MetricsServer"]

log = logging.getLogger("zkafka.metrics.http")
limited = RateLimitedLog(log)

MAX_HEAD = 8192
MAX_NAMES = 256
MAX_CONNECTIONS = 32
READ_TIMEOUT_S = 5.0
WRITE_TIMEOUT_S = 10.0

_REASONS = {
    200: "OK",
    400: "Bad Request",
    404: "Not Found",
    405: "Method Not Allowed",
    408: "Request Timeout",
    431: "Request Header Fields Too Large",
    500: "Internal Server Error",
}


class MetricsServer:
    def __init__(
        self,
        render: Callable[[frozenset[str] | None], str],
        host: str,
        port: int,
        *,
        refresh: Callable[[], Awaitable[None]] | None = None,
        refresh_timeout_s: float = 3.0,
        refreshed: frozenset[str] = frozenset(),
    ) -> None:
        self.render = render
        # Values that need I/O to collect (consumer lag: other brokers' offsets) are brought up to
        # date before each render, within `refresh_timeout_s`; a refresh that fails or is late
        # leaves the previous values in place, and the scrape is answered anyway. A scrape that
        # names metrics (`name[]=`) waits for it only if it asks for one of `refreshed`.
        self.refresh = refresh
        self.refreshed = refreshed
        self.refresh_timeout_s = refresh_timeout_s
        self.host = host
        self.port = port
        self._server: asyncio.Server | None = None
        self._open: dict[asyncio.StreamWriter, asyncio.Task[None] | None] = {}
        self.bound_port: int | None = None

    async def start(self) -> int:
        """Listen; returns the bound port (the free one picked for port 0)."""
        self._server = await asyncio.start_server(
            self._serve, self.host or None, self.port, limit=MAX_HEAD, reuse_address=True
        )
        self.bound_port = self._server.sockets[0].getsockname()[1]
        log.info("serving metrics on http://%s:%d/metrics", self.host or "0.0.0.0", self.bound_port)
        return self.bound_port

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            tasks = [t for t in self._open.values() if t is not None]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await self._server.wait_closed()
            self._server = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if len(self._open) >= MAX_CONNECTIONS:
            writer.close()
            return
        self._open[writer] = asyncio.current_task()  # type: ignore[assignment]
        try:
            status, body = await self._answer(reader)
            if status:
                await self._respond(writer, status, body)
        except asyncio.CancelledError:
            # `stop` cancels connections in progress; ending quietly here keeps asyncio's stream
            # machinery (which calls task.exception()) from logging the cancellation as an error.
            pass
        except Exception:  # the endpoint must never take anything down with it
            log.debug("metrics connection failed", exc_info=True)
        finally:
            self._open.pop(writer, None)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _answer(self, reader: asyncio.StreamReader) -> tuple[int, bytes]:
        """(status, body); status 0 = close without answering (the peer went away)."""
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), READ_TIMEOUT_S)
        except TimeoutError:
            return 408, b"request timeout\n"
        except asyncio.LimitOverrunError:
            return 431, b"request head too large\n"
        except (asyncio.IncompleteReadError, ConnectionError):
            return 0, b""
        request_line = head.split(b"\r\n", 1)[0]
        parts = request_line.split(b" ")
        if len(parts) != 3 or not parts[2].startswith(b"HTTP/1."):
            return 400, b"bad request\n"
        method, target = parts[0], parts[1]
        if method != b"GET":
            return 405, b"only GET\n"
        path, _, query = target.partition(b"?")
        if path != b"/metrics":
            return 404, b"only /metrics\n"
        try:
            names = _names_asked(query)
        except ValueError as e:
            return 400, f"{e}\n".encode()
        if self.refresh is not None and (names is None or not names.isdisjoint(self.refreshed)):
            try:
                await asyncio.wait_for(self.refresh(), self.refresh_timeout_s)
            except Exception as e:  # ZooKeeper or another broker away: one line a minute, not per scrape
                limited.warning(
                    ("refresh", type(e).__name__),
                    "refreshing metrics before a scrape failed (%r); serving the last values",
                    e,
                )
        try:
            body = self.render(names).encode()
        except Exception:  # a bug in a metric's owner; the endpoint stays up and says so
            log.exception("rendering /metrics failed")
            return 500, b"rendering metrics failed; see the broker log\n"
        return 200, body

    async def _respond(self, writer: asyncio.StreamWriter, status: int, body: bytes) -> None:
        content_type = CONTENT_TYPE if status == 200 else "text/plain; charset=utf-8"
        head = (
            f"HTTP/1.1 {status} {_REASONS[status]}\r\nContent-Type: {content_type}\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        )
        writer.write(head.encode() + body)
        await asyncio.wait_for(writer.drain(), WRITE_TIMEOUT_S)


def _names_asked(query: bytes) -> frozenset[str] | None:
    """The metric names a scrape's query asks for (`name[]=...`, repeated), None for all of them."""
    if not query:
        return None
    try:
        # not strict: a scraper's other parameters, however odd, are not ours to refuse
        fields = parse_qs(query.decode("ascii"), errors="strict")
    except (UnicodeDecodeError, ValueError):
        raise ValueError("bad query string") from None
    names = fields.get("name[]")
    if names is None:
        return None
    if len(names) > MAX_NAMES:
        raise ValueError(f"at most {MAX_NAMES} name[] values")
    return frozenset(names)
