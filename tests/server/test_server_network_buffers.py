"""`KafkaConnection` over real loopback sockets in this process, looked at from inside: how big its
buffers are for what a client has actually sent, and how the request memory pool mutes and resumes
connections. (The broker-process tests in test_server_connection_limits.py show the same from
outside: RSS, log lines, real clients.)"""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Awaitable, Callable

import pytest
import uvloop

from zkafka.server.memory_pool import MemoryPool
from zkafka.server.network import (
    LARGE_START,
    READ_FULL,
    READ_START,
    KafkaConnection,
    frame,
)

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(params=["asyncio", "uvloop"])
def loop(request: pytest.FixtureRequest) -> str:
    """Both loops: the broker runs uvloop, whose BufferedProtocol support differs in detail."""
    return str(request.param)


async def settle(check: Callable[[], bool], timeout: float = 10.0) -> None:
    """Wait until the server side has processed what the client sent (bounded)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not check():
        assert asyncio.get_running_loop().time() < deadline, "the server did not get there"
        await asyncio.sleep(0.005)


Scenario = Callable[[int, list[KafkaConnection], list[bytearray]], Awaitable[None]]


def serve(
    loop: str, scenario: Scenario, *, pool: MemoryPool | None = None, max_request_bytes: int = 100 << 20
) -> None:
    """Run `scenario(port, connections, frames)` against a listener whose handler echoes each
    frame's length."""

    async def main() -> None:
        connections: list[KafkaConnection] = []
        frames: list[bytearray] = []

        def handler(data: bytearray, _conn: KafkaConnection) -> list[bytes | bytearray | memoryview]:
            frames.append(data)
            return frame(struct.pack(">i", len(data)))

        def factory() -> KafkaConnection:
            conn = KafkaConnection(handler, max_request_bytes=max_request_bytes, pool=pool)
            connections.append(conn)
            return conn

        server = await asyncio.get_running_loop().create_server(factory, "127.0.0.1", 0)
        try:
            await scenario(server.sockets[0].getsockname()[1], connections, frames)
        finally:
            server.close()
            for conn in connections:
                conn.abort("test over")
            await server.wait_closed()

    with asyncio.Runner(loop_factory=uvloop.new_event_loop if loop == "uvloop" else None) as runner:
        runner.run(main())


async def answer(reader: asyncio.StreamReader) -> int:
    size = struct.unpack(">i", await reader.readexactly(4))[0]
    return int(struct.unpack(">i", await reader.readexactly(size))[0])


def test_buffers_grow_with_the_bytes_that_arrive_not_the_size_announced(loop: str) -> None:
    announced = 100 << 20

    async def scenario(port: int, conns: list[KafkaConnection], frames: list[bytearray]) -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(struct.pack(">i", announced) + b"a" * 100)
        await writer.drain()
        await settle(lambda: bool(conns) and conns[0]._frame is not None and conns[0]._frame_filled == 100)
        conn = conns[0]
        assert conn._frame is not None and len(conn._frame) == LARGE_START  # not 100 MB
        assert len(conn._buffer) == READ_START  # an idle-sized read buffer
        writer.write(b"b" * LARGE_START)  # the first chunk is now full: it may grow 4x, no more
        await writer.drain()
        await settle(lambda: conn._frame is not None and conn._frame_filled == 100 + LARGE_START)
        assert conn._frame is not None and len(conn._frame) <= 4 * LARGE_START
        rest = announced - 100 - LARGE_START
        chunk = b"c" * (1 << 20)
        for _ in range(rest // len(chunk)):
            writer.write(chunk)
            await writer.drain()
        writer.write(b"c" * (rest % len(chunk)))
        assert await answer(reader) == announced
        assert len(frames[0]) == announced and frames[0][:101] == b"a" * 100 + b"b"
        assert frames[0][-1:] == b"c"
        writer.close()

    serve(loop, scenario)


def test_the_read_buffer_grows_once_for_larger_small_frames_and_pipelines(loop: str) -> None:
    async def scenario(port: int, conns: list[KafkaConnection], frames: list[bytearray]) -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        sizes = [10, 3000, 20_000, 65_536, 0, 7]
        writer.write(b"".join(struct.pack(">i", n) + bytes([n % 251]) * n for n in sizes))
        assert [await answer(reader) for _ in sizes] == sizes
        assert [bytes(f) for f in frames] == [bytes([n % 251]) * n for n in sizes]
        assert len(conns[0]._buffer) == READ_FULL
        writer.close()

    serve(loop, scenario)


def test_a_connection_that_does_not_fit_the_pool_waits_muted_then_is_served(loop: str) -> None:
    """Pool of 1 MB: connection A announces 1 MB and sends half; B's small request does not fit and
    waits, unread, until A's frame is answered and its memory released."""
    pool = MemoryPool(1 << 20)

    async def scenario(port: int, conns: list[KafkaConnection], frames: list[bytearray]) -> None:
        a_reader, a_writer = await asyncio.open_connection("127.0.0.1", port)
        a_writer.write(struct.pack(">i", 1 << 20) + b"a" * (1 << 19))
        await a_writer.drain()
        await settle(lambda: pool.used == 1 << 20)
        b_reader, b_writer = await asyncio.open_connection("127.0.0.1", port)
        b_writer.write(struct.pack(">i", 5) + b"hello")
        await b_writer.drain()
        await settle(lambda: pool.waiting == 1)
        assert len(conns) == 2 and conns[1].waiting_on_broker and not frames
        a_writer.write(b"a" * (1 << 19))
        assert await answer(a_reader) == 1 << 20
        assert await answer(b_reader) == 5
        assert bytes(frames[1]) == b"hello" and pool.used == 0 and pool.waiting == 0
        assert pool.peak == 1 << 20  # never both at once
        a_writer.close()
        b_writer.close()

    serve(loop, scenario, pool=pool, max_request_bytes=1 << 20)


def test_closing_a_connection_gives_back_its_reservation_or_its_place(loop: str) -> None:
    pool = MemoryPool(1 << 20)

    async def scenario(port: int, conns: list[KafkaConnection], frames: list[bytearray]) -> None:
        _, holder = await asyncio.open_connection("127.0.0.1", port)
        holder.write(struct.pack(">i", 1 << 20) + b"x" * 10)
        await holder.drain()
        await settle(lambda: pool.used == 1 << 20)
        _, queued = await asyncio.open_connection("127.0.0.1", port)
        queued.write(struct.pack(">i", 1 << 20))
        await queued.drain()
        await settle(lambda: pool.waiting == 1)
        # A muted connection does not read, so its close is seen once it is granted memory and
        # reads again (as in Kafka); then it gives that memory back at once.
        queued.close()
        holder.close()  # gives back the memory it reserved and never filled
        await settle(lambda: pool.used == 0 and pool.waiting == 0 and all(c.closed for c in conns))
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(struct.pack(">i", 3) + b"abc")
        assert await answer(reader) == 3
        assert pool.used == 0 and not frames[:-1]
        writer.close()

    serve(loop, scenario, pool=pool, max_request_bytes=1 << 20)
