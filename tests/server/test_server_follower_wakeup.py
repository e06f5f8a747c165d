"""A follower's long-poll fetch is woken once per event-loop turn of appends, not inside the first
one: produce requests the broker reads together are all appended before the parked fetch is
answered, so it carries them in one response (one replication round trip for all of them)."""

from __future__ import annotations

import asyncio
import socket
import struct
import time
from collections.abc import Iterator

import pytest

from zkafka.client.connection import BrokerConnection
from zkafka.local.launcher import LocalCluster
from zkafka.local.zookeeper import ZooKeeperServer
from zkafka.protocol import RequestHeader, decode_response, encode_request
from zkafka.protocol.messages import FetchRequest, ProduceRequest
from zkafka.records.batch import iter_headers
from zkafka.records.record import simple_batch
from zkafka.testing.cluster import make_topic, running_cluster

pytestmark = pytest.mark.timeout(120)

TOPIC = "follower-wakeup"
FOLLOWER = 9
"""A replica id no broker has: the broker answers its fetches as a follower's (all it has, not
only up to the high watermark) and never takes it into the ISR (it is not an assigned replica)."""


@pytest.fixture(scope="module")
def cluster(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalCluster]:
    with running_cluster(zookeeper_server, tmp_path_factory.mktemp("follower-wakeup"), brokers=1) as c:
        asyncio.run(make_topic(c, TOPIC, 1))
        yield c


def _produce_frame(correlation_id: int, value: bytes) -> bytes:
    request = ProduceRequest(
        transactional_id=None,
        acks=1,
        timeout_ms=10_000,
        topic_data=[
            ProduceRequest.TopicProduceData(
                name=TOPIC,
                partition_data=[
                    ProduceRequest.PartitionProduceData(
                        index=0, records=simple_batch([(None, value)], timestamp=int(time.time() * 1000))
                    )
                ],
            )
        ],
    )
    return encode_request(RequestHeader(0, 8, correlation_id, "wakeup-test"), request)


def _read_frame(sock: socket.socket) -> bytes:
    def exactly(n: int) -> bytes:
        out = b""
        while len(out) < n:
            chunk = sock.recv(n - len(out))
            assert chunk, "connection closed"
            out += chunk
        return out

    (size,) = struct.unpack(">i", exactly(4))
    return exactly(size)


def test_produce_requests_read_together_reach_a_parked_follower_fetch_together(cluster: LocalCluster) -> None:
    port = cluster.brokers[1].port

    async def main() -> None:
        conn = await BrokerConnection.open("127.0.0.1", port)
        try:

            async def fetch(offset: int, max_wait_ms: int) -> FetchRequest:
                request = FetchRequest(
                    replica_id=FOLLOWER,
                    max_wait_ms=max_wait_ms,
                    min_bytes=1,
                    max_bytes=1 << 20,
                    topics=[
                        FetchRequest.FetchTopic(
                            topic=TOPIC,
                            partitions=[
                                FetchRequest.FetchPartition(
                                    partition=0, fetch_offset=offset, partition_max_bytes=1 << 20
                                )
                            ],
                        )
                    ],
                )
                return await conn.send(request, version=4, timeout=60)

            first = await fetch(0, 0)
            end = first.responses[0].partitions[0].high_watermark  # the log end: nothing produced
            parked = asyncio.ensure_future(fetch(end, 30_000))
            await asyncio.sleep(0.5)  # parked at the broker (nothing to answer with)
            assert not parked.done()
            # two produce requests in one write: the broker reads them together
            with socket.create_connection(("127.0.0.1", port)) as sock:
                sock.sendall(_produce_frame(1, b"one") + _produce_frame(2, b"two"))
                for _ in range(2):
                    _, answer = decode_response(0, 8, _read_frame(sock))
                    assert answer.responses[0].partition_responses[0].error_code == 0
            response = await asyncio.wait_for(parked, 30)
            records = bytes(response.responses[0].partitions[0].records)
            assert [h.base_offset for h in iter_headers(records)] == [end, end + 1]
        finally:
            conn.close()

    asyncio.run(main())


class _Observed(BrokerConnection):
    """A broker connection that notes the loop turn each response is read in (`_complete` runs
    from the transport's read callback)."""

    turns: list[int]
    completed_at: list[int]

    def _complete(self, frame: bytes) -> None:
        self.completed_at.append(self.turns[0])
        super()._complete(frame)


def test_a_fetcher_resumes_the_loop_turn_after_its_response_is_read(cluster: LocalCluster) -> None:
    """A replica fetcher's next fetch (which moves the high watermark) is sent by the coroutine
    awaiting `BrokerConnection.send`; it used to resume two loop turns after the response was read
    (asyncio.timeout around asyncio.shield: the shield's callback, then the task's wake-up), each
    turn behind whatever else the broker's loop had ready. Now one: the response future is awaited
    directly."""
    port = cluster.brokers[1].port

    async def main() -> None:
        loop = asyncio.get_running_loop()
        turns = [0]
        running = True

        def tick() -> None:  # once per loop turn: rescheduled from the ready queue each time
            turns[0] += 1
            if running:
                loop.call_soon(tick)

        _Observed.turns = turns
        _Observed.completed_at = []
        conn = await _Observed.open("127.0.0.1", port)
        loop.call_soon(tick)
        try:
            request = FetchRequest(
                replica_id=FOLLOWER,
                max_wait_ms=0,
                min_bytes=1,
                max_bytes=1 << 20,
                topics=[
                    FetchRequest.FetchTopic(
                        topic=TOPIC,
                        partitions=[
                            FetchRequest.FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1024)
                        ],
                    )
                ],
            )
            await conn.send(request, version=4, timeout=30)  # the tick is running from here on
            for _ in range(5):
                before = len(conn.completed_at)
                await conn.send(request, version=4, timeout=30)
                resumed = turns[0]
                assert len(conn.completed_at) == before + 1
                assert resumed - conn.completed_at[-1] == 1
        finally:
            running = False
            conn.close()

    asyncio.run(main())
