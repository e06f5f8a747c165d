"""A fetch response whose segment bytes were truncated after the response was sized (the partition
became a follower and cut its log between the read and the write) must never reach the client as
a frame whose length prefix disagrees with its bytes: that would misalign every later response on
the connection. Like Kafka ("Size of FileRecords has been truncated during write"), the broker
closes that connection instead. Real `KafkaConnection`s on loopback sockets, real segment files
behind a real `FileCache`, the dispatcher's own encoding of a real `FetchResponse`."""

from __future__ import annotations

import asyncio
import os
import struct
from functools import partial
from pathlib import Path

import pytest

from zkafka.protocol import ApiKey, RequestHeader
from zkafka.protocol.messages import FetchResponse
from zkafka.server.dispatcher import FileRecords, _encode, _encode_later
from zkafka.server.network import Deferred, KafkaConnection, frame
from zkafka.storage.file_cache import FileCache, SegmentFile

pytestmark = pytest.mark.timeout(60)

SIZE = 4096


def fetch_response(records: FileRecords) -> FetchResponse:
    part = FetchResponse.PartitionData(partition_index=0, high_watermark=1, records=records)
    return FetchResponse(responses=[FetchResponse.FetchableTopicResponse(topic="t", partitions=[part])])


async def read_frames_until_eof(reader: asyncio.StreamReader) -> list[bytes]:
    """Every complete frame the server sent before closing; a frame cut short fails the test."""
    frames = []
    while True:
        prefix = await reader.read(4)
        if not prefix:
            return frames
        if len(prefix) < 4:
            prefix += await reader.readexactly(4 - len(prefix))
        size = struct.unpack(">i", prefix)[0]
        frames.append(await reader.readexactly(size))


@pytest.mark.parametrize("deferred", [False, True], ids=["immediate", "deferred"])
def test_records_truncated_before_the_write_close_the_connection(tmp_path: Path, deferred: bool) -> None:
    async def main() -> None:
        cache = FileCache(capacity=16)
        path = tmp_path / "00000000000000000000.log"
        path.write_bytes(os.urandom(SIZE))
        seg = SegmentFile(cache, path)
        header = RequestHeader(api_key=ApiKey.FETCH, api_version=11, correlation_id=7)
        pending: list[tuple[asyncio.Future[FetchResponse], FetchResponse]] = []

        def handler(data: bytearray, conn: KafkaConnection):  # type: ignore[no-untyped-def]
            if bytes(data) == b"ping":  # a later request: answered only if the connection survives
                return frame(b"pong")
            response = fetch_response(FileRecords(seg.lease(), 0, SIZE))  # sized: SIZE bytes
            os.truncate(path, SIZE // 2)  # ... and the log is cut before the response is encoded
            if not deferred:
                return _encode(header, response, conn)
            fut: asyncio.Future[FetchResponse] = asyncio.get_running_loop().create_future()
            pending.append((fut, response))  # completed later, like a long-poll fetch
            return Deferred(fut, partial(_encode_later, header, conn, None, None))

        server = await asyncio.get_running_loop().create_server(
            lambda: KafkaConnection(handler, max_request_bytes=1 << 20), "127.0.0.1", 0
        )
        reader, writer = await asyncio.open_connection("127.0.0.1", server.sockets[0].getsockname()[1])
        try:
            writer.write(struct.pack(">i", 5) + b"fetch" + struct.pack(">i", 4) + b"ping")
            await writer.drain()
            if deferred:
                while not pending:
                    await asyncio.sleep(0.005)
                fut, response = pending[0]
                fut.set_result(response)
            frames = await asyncio.wait_for(read_frames_until_eof(reader), 20)
            # nothing at all: the fetch's frame could not be written whole, and "pong" after it
            # would be read as part of it by a client that trusted the length
            assert frames == []
        finally:
            writer.close()
            server.close()
            await server.wait_closed()
            seg.close()

    asyncio.run(main())


def test_records_read_whole_are_sent(tmp_path: Path) -> None:
    """The same exchange without a truncation answers both requests, in order."""

    async def main() -> None:
        cache = FileCache(capacity=16)
        path = tmp_path / "00000000000000000000.log"
        payload = os.urandom(SIZE)
        path.write_bytes(payload)
        seg = SegmentFile(cache, path)
        header = RequestHeader(api_key=ApiKey.FETCH, api_version=11, correlation_id=7)

        def handler(data: bytearray, conn: KafkaConnection):  # type: ignore[no-untyped-def]
            if bytes(data) == b"ping":
                return frame(b"pong")
            return _encode(header, fetch_response(FileRecords(seg.lease(), 0, SIZE)), conn)

        server = await asyncio.get_running_loop().create_server(
            lambda: KafkaConnection(handler, max_request_bytes=1 << 20), "127.0.0.1", 0
        )
        reader, writer = await asyncio.open_connection("127.0.0.1", server.sockets[0].getsockname()[1])
        try:
            writer.write(struct.pack(">i", 5) + b"fetch" + struct.pack(">i", 4) + b"ping")
            await writer.drain()
            writer.write_eof()
            frames = await asyncio.wait_for(read_frames_until_eof(reader), 20)
            assert len(frames) == 2
            assert frames[0].endswith(payload) and frames[1] == b"pong"
        finally:
            writer.close()
            server.close()
            await server.wait_closed()
            seg.close()

    asyncio.run(main())
