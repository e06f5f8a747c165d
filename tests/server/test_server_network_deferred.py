"""`KafkaConnection`'s deferred responses (what acks=all produce and long-poll fetch return: a
future completed by a callback, encoded when written) over real loopback sockets in this process:
pipelined requests are answered in request order whatever order their futures complete in, and a
response that fails to encode closes that connection only."""

from __future__ import annotations

import asyncio
import socket
import struct

import pytest
import uvloop

from zkafka.server.network import Deferred, KafkaConnection, frame

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(params=["asyncio", "uvloop"])
def loop(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def run(loop: str, main) -> None:  # type: ignore[no-untyped-def]
    with asyncio.Runner(loop_factory=uvloop.new_event_loop if loop == "uvloop" else None) as runner:
        runner.run(main())


async def read_answer(reader: asyncio.StreamReader) -> bytes:
    size = struct.unpack(">i", await reader.readexactly(4))[0]
    return await reader.readexactly(size)


def test_deferred_answers_keep_request_order(loop: str) -> None:
    """Requests "a", "b", "c" pipelined: "a" and "c" deferred, "b" answered at once; "c"'s future
    completes before "a"'s, yet the client reads a, b, c, each encoded when written."""

    async def main() -> None:
        pending: dict[bytes, asyncio.Future[bytes]] = {}

        def handler(data: bytearray, _conn: KafkaConnection):  # type: ignore[no-untyped-def]
            name = bytes(data)
            if name == b"b":
                return frame(b"now:b")
            fut: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
            pending[name] = fut
            return Deferred(fut, lambda result: frame(b"later:" + result))

        server = await asyncio.get_running_loop().create_server(
            lambda: KafkaConnection(handler, max_request_bytes=1 << 20), "127.0.0.1", 0
        )
        reader, writer = await asyncio.open_connection("127.0.0.1", server.sockets[0].getsockname()[1])
        try:
            writer.write(b"".join(struct.pack(">i", 1) + n for n in (b"a", b"b", b"c")))
            await writer.drain()
            while len(pending) < 2:
                await asyncio.sleep(0.005)
            pending[b"c"].set_result(b"c")
            await asyncio.sleep(0.05)  # "c" is done, but waits behind "a"
            pending[b"a"].set_result(b"a")
            answers = [await asyncio.wait_for(read_answer(reader), 10) for _ in range(3)]
            assert answers == [b"later:a", b"now:b", b"later:c"]
        finally:
            writer.close()
            server.close()
            await server.wait_closed()

    run(loop, main)


def test_a_response_that_fails_to_encode_closes_only_its_connection(loop: str) -> None:
    async def main() -> None:
        futures: list[asyncio.Future[bytes]] = []

        def encode(result: bytes) -> list[bytes]:
            if result == b"bad":
                raise ValueError("cannot encode")
            return frame(result)

        def handler(_data: bytearray, _conn: KafkaConnection) -> Deferred:
            fut: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
            futures.append(fut)
            return Deferred(fut, encode)

        server = await asyncio.get_running_loop().create_server(
            lambda: KafkaConnection(handler, max_request_bytes=1 << 20), "127.0.0.1", 0
        )
        port = server.sockets[0].getsockname()[1]
        r1, w1 = await asyncio.open_connection("127.0.0.1", port)
        r2, w2 = await asyncio.open_connection("127.0.0.1", port)
        try:
            w1.write(struct.pack(">i", 1) + b"x")
            await w1.drain()
            while len(futures) < 1:
                await asyncio.sleep(0.005)
            w2.write(struct.pack(">i", 1) + b"y")
            await w2.drain()
            while len(futures) < 2:
                await asyncio.sleep(0.005)
            futures[0].set_result(b"bad")
            futures[1].set_result(b"good")
            assert await asyncio.wait_for(r1.read(), 10) == b""  # closed, nothing written
            assert await asyncio.wait_for(read_answer(r2), 10) == b"good"
        finally:
            w1.close()
            w2.close()
            server.close()
            await server.wait_closed()

    run(loop, main)


@pytest.mark.skipif(not hasattr(socket, "TCP_QUICKACK"), reason="TCP_QUICKACK is Linux's")
def test_a_deferred_request_is_acknowledged_at_once(loop: str) -> None:
    """A request answered later gets its TCP ACK at once, not when the answer carries it: a client
    with Nagle's algorithm on (librdkafka's default) holds its next small request until then. The
    client's kernel shows it: nothing unacknowledged once the server has parked the request.
    (Without the quick ACK, Linux delays it by 40 ms or more once a connection answers promptly.)"""

    async def main() -> None:
        parked: list[asyncio.Future[bytes]] = []

        def handler(data: bytearray, _conn: KafkaConnection):  # type: ignore[no-untyped-def]
            if bytes(data) == b"now":
                return frame(b"now")
            fut: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
            parked.append(fut)
            return Deferred(fut, frame)

        aio = asyncio.get_running_loop()
        server = await aio.create_server(
            lambda: KafkaConnection(handler, max_request_bytes=1 << 20), "127.0.0.1", 0
        )
        client = socket.socket()
        client.setblocking(False)
        try:
            await aio.sock_connect(client, server.sockets[0].getsockname())
            assert client.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 0  # Nagle on
            # prompt answers first: the server's kernel then delays ACKs to carry them on answers
            for _ in range(32):
                await aio.sock_sendall(client, struct.pack(">i", 3) + b"now")
                got = b""
                while len(got) < 7:
                    got += await aio.sock_recv(client, 7 - len(got))
            await aio.sock_sendall(client, struct.pack(">i", 5) + b"later")
            while not parked:
                await asyncio.sleep(0)
            assert _unacked(client) == 0
            parked[0].set_result(b"done")
            got = b""
            while len(got) < 8:
                got += await aio.sock_recv(client, 8 - len(got))
            assert got == struct.pack(">i", 4) + b"done"
        finally:
            client.close()
            server.close()
            await server.wait_closed()

    run(loop, main)


def _unacked(sock: socket.socket) -> int:
    """`tcpi_unacked` of the socket's `struct tcp_info` (8 bytes of u8 fields, then u32 rto, ato,
    snd_mss, rcv_mss, unacked)."""
    info = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 104)
    return int(struct.unpack_from("I", info, 24)[0])
