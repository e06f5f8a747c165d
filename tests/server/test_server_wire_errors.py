"""Broker-level error paths over a raw socket against one real broker process.

Requests are built with zkafka's own codec (`zkafka.protocol`, `zkafka.records`) and written to
a plain socket, so every byte the broker sends back (or does not send) is visible: error codes
are Kafka's numbers, asserted literally. The broker runs with `auto.create.topics.enable=false`
so a produce or metadata request for an unknown topic cannot create it; topics are made with
CreateTopics.
"""

from __future__ import annotations

import itertools
import socket
import struct
import time
from collections.abc import Iterator

import pytest

from zkafka.local.launcher import LocalCluster
from zkafka.local.zookeeper import ZooKeeperServer
from zkafka.protocol import Message, RequestHeader, decode_response, encode_request
from zkafka.protocol.messages import (
    ApiVersionsRequest,
    CreateTopicsRequest,
    CreateTopicsResponse,
    FetchRequest,
    FetchResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    MetadataRequest,
    MetadataResponse,
    ProduceRequest,
    ProduceResponse,
)
from zkafka.records import HEADER_SIZE, iter_batch_records, simple_batch
from zkafka.testing.cluster import running_cluster

# Kafka's error codes
NONE = 0
CORRUPT_MESSAGE = 2
UNKNOWN_TOPIC_OR_PARTITION = 3
MESSAGE_TOO_LARGE = 10
UNSUPPORTED_VERSION = 35

PRODUCE_V = 8
FETCH_V = 11
METADATA_V = 8
LIST_OFFSETS_V = 5
API_VERSIONS_V = 2

SMALL_MAX_MESSAGE_BYTES = 300

_ids = itertools.count(1000)


@pytest.fixture(scope="module")
def cluster(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalCluster]:
    with running_cluster(
        zookeeper_server,
        tmp_path_factory.mktemp("wire-errors"),
        brokers=1,
        overrides={"auto.create.topics.enable": "false"},
    ) as c:
        yield c


@pytest.fixture(scope="module")
def port(cluster: LocalCluster) -> int:
    return cluster.brokers[1].port


# -- a raw-socket client ------------------------------------------------------------------------


class Wire:
    """One socket; requests encoded by zkafka's codec, frames read by hand."""

    def __init__(self, port: int, timeout: float = 15.0) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> Wire:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @staticmethod
    def frame_of(request: Message, version: int, correlation_id: int) -> bytes:
        header = RequestHeader(type(request).API_KEY, version, correlation_id, "wire-errors-test")
        return bytes(encode_request(header, request))

    def send(self, request: Message, version: int) -> int:
        cid = next(_ids)
        self.sock.sendall(self.frame_of(request, version, cid))
        return cid

    def _exactly(self, n: int) -> bytes:
        data = bytearray()
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                raise ConnectionError(f"connection closed after {len(data)} of {n} bytes")
            data += chunk
        return bytes(data)

    def read_frame(self) -> bytes:
        (size,) = struct.unpack(">i", self._exactly(4))
        return self._exactly(size)

    def recv(self, request: Message, version: int, cid: int) -> Message:
        header, response = decode_response(type(request).API_KEY, version, self.read_frame())
        assert header.correlation_id == cid
        return response

    def call(self, request: Message, version: int) -> Message:
        return self.recv(request, version, self.send(request, version))


def correlation_of(frame: bytes) -> int:
    return struct.unpack_from(">i", frame)[0]


def produce_request(topic: str, records: bytes, acks: int = 1) -> ProduceRequest:
    return ProduceRequest(
        acks=acks,
        timeout_ms=10_000,
        topic_data=[
            ProduceRequest.TopicProduceData(
                name=topic, partition_data=[ProduceRequest.PartitionProduceData(index=0, records=records)]
            )
        ],
    )


def produce(w: Wire, topic: str, records: bytes) -> ProduceResponse.PartitionProduceResponse:
    resp = w.call(produce_request(topic, records), PRODUCE_V)
    assert isinstance(resp, ProduceResponse)
    [t] = resp.responses
    [p] = t.partition_responses
    return p


def list_offsets_request(topic: str, timestamp: int) -> ListOffsetsRequest:
    return ListOffsetsRequest(
        replica_id=-1,
        topics=[
            ListOffsetsRequest.ListOffsetsTopic(
                name=topic,
                partitions=[
                    ListOffsetsRequest.ListOffsetsPartition(
                        partition_index=0, timestamp=timestamp, max_num_offsets=1
                    )
                ],
            )
        ],
    )


def list_offset(w: Wire, topic: str, timestamp: int = -1) -> ListOffsetsResponse.ListOffsetsPartitionResponse:
    resp = w.call(list_offsets_request(topic, timestamp), LIST_OFFSETS_V)
    assert isinstance(resp, ListOffsetsResponse)
    return resp.topics[0].partitions[0]


def latest(w: Wire, topic: str) -> int:
    p = list_offset(w, topic, -1)
    assert p.error_code == NONE
    return p.offset


def fetch_request(topic: str, offset: int, max_wait_ms: int, min_bytes: int = 1) -> FetchRequest:
    return FetchRequest(
        replica_id=-1,
        max_wait_ms=max_wait_ms,
        min_bytes=min_bytes,
        max_bytes=1 << 20,
        session_id=0,
        session_epoch=-1,
        topics=[
            FetchRequest.FetchTopic(
                topic=topic,
                partitions=[
                    FetchRequest.FetchPartition(partition=0, fetch_offset=offset, partition_max_bytes=1 << 20)
                ],
            )
        ],
    )


def fetched(resp: Message) -> tuple[FetchResponse.PartitionData, list[tuple[int, bytes | None]]]:
    assert isinstance(resp, FetchResponse)
    [t] = resp.responses
    [p] = t.partitions
    records = bytes(p.records) if p.records is not None else b""
    return p, [(r.offset, r.value) for _, r in iter_batch_records(records)]


def metadata_request(*topics: str) -> MetadataRequest:
    return MetadataRequest(
        topics=[MetadataRequest.MetadataRequestTopic(name=t) for t in topics],
        allow_auto_topic_creation=True,  # the broker's auto.create.topics.enable=false must win
    )


def batch(*values: bytes, key: bytes | None = None) -> bytes:
    return simple_batch([(key, v) for v in values], timestamp=int(time.time() * 1000))


def create_topic(port: int, name: str, configs: dict[str, str] | None = None) -> None:
    request = CreateTopicsRequest(
        topics=[
            CreateTopicsRequest.CreatableTopic(
                name=name,
                num_partitions=1,
                replication_factor=1,
                configs=[
                    CreateTopicsRequest.CreatableTopicConfig(name=k, value=v)
                    for k, v in (configs or {}).items()
                ],
            )
        ],
        timeout_ms=20_000,
    )
    with Wire(port) as w:
        resp = w.call(request, 4)
        assert isinstance(resp, CreateTopicsResponse)
        assert resp.topics[0].error_code == NONE, resp.topics[0].error_message
        # the partition is led here once ListOffsets answers without an error
        deadline = time.monotonic() + 20
        while list_offset(w, name).error_code != NONE:
            assert time.monotonic() < deadline, f"{name} never got a leader"
            time.sleep(0.1)


@pytest.fixture
def topic(port: int, request: pytest.FixtureRequest) -> str:
    # the test's name (truncated) plus a counter: parametrized cases share a prefix
    name = f"wire-{request.node.name.replace('_', '-').replace('[', '-').rstrip(']')[:56]}-{next(_ids)}"
    create_topic(port, name)
    return name


# -- a) corrupt CRC ---------------------------------------------------------------------------


def test_produce_with_corrupted_crc_is_corrupt_message_and_appends_nothing(port: int, topic: str) -> None:
    with Wire(port) as w:
        before = latest(w, topic)
        bad = bytearray(batch(b"value-one", b"value-two"))
        bad[HEADER_SIZE + 3] ^= 0xFF  # a byte in the records area: only the CRC can tell
        p = produce(w, topic, bytes(bad))
        assert p.error_code == CORRUPT_MESSAGE
        assert p.base_offset == -1
        assert latest(w, topic) == before  # nothing appended
        # the same connection keeps working: a good batch is appended at the old end
        good = produce(w, topic, batch(b"fine"))
        assert (good.error_code, good.base_offset) == (NONE, before)
        assert latest(w, topic) == before + 1


# -- b) max.message.bytes ---------------------------------------------------------------------


def _batch_of_size(size: int) -> bytes:
    for n in range(size):
        b = simple_batch([(None, b"x" * n)], timestamp=1_700_000_000_000)
        if len(b) == size:
            return b
        if len(b) > size:
            break
    raise AssertionError(f"no single-record batch of exactly {size} bytes")


def test_produce_larger_than_topic_max_message_bytes_is_message_too_large(port: int) -> None:
    name = "wire-small-max-message-bytes"
    create_topic(port, name, {"max.message.bytes": str(SMALL_MAX_MESSAGE_BYTES)})
    with Wire(port) as w:
        too_big = produce(w, name, batch(b"y" * (SMALL_MAX_MESSAGE_BYTES * 2)))
        assert too_big.error_code == MESSAGE_TOO_LARGE
        assert latest(w, name) == 0
        # Kafka compares the whole batch (sizeInBytes, log overhead included) with the limit:
        # exactly the limit is accepted, one byte more is not
        over = produce(w, name, _batch_of_size(SMALL_MAX_MESSAGE_BYTES + 1))
        assert over.error_code == MESSAGE_TOO_LARGE
        exact = produce(w, name, _batch_of_size(SMALL_MAX_MESSAGE_BYTES))
        assert (exact.error_code, exact.base_offset) == (NONE, 0)
        assert latest(w, name) == 1


# -- c) acks=0 --------------------------------------------------------------------------------


def test_acks_zero_produce_gets_no_response_bytes(port: int, topic: str) -> None:
    with Wire(port) as w:
        produce_cid = next(_ids)
        metadata_cid = next(_ids)
        w.sock.sendall(
            Wire.frame_of(produce_request(topic, batch(b"fire-and-forget"), acks=0), PRODUCE_V, produce_cid)
            + Wire.frame_of(metadata_request(topic), METADATA_V, metadata_cid)
        )
        frame = w.read_frame()
        assert correlation_of(frame) == metadata_cid  # nothing was sent for the produce
        _, md = decode_response(MetadataRequest.API_KEY, METADATA_V, frame)
        assert isinstance(md, MetadataResponse)
        assert [(t.name, t.error_code) for t in md.topics] == [(topic, NONE)]
        # the Metadata response was written after the produce was handled: it is in the log
        assert latest(w, topic) == 1
        _, records = fetched(w.call(fetch_request(topic, 0, max_wait_ms=0), FETCH_V))
        assert records == [(0, b"fire-and-forget")]
        # and still nothing extra is on the wire
        w.sock.settimeout(0.3)
        with pytest.raises(TimeoutError):
            w.sock.recv(1)


# -- d) pipelining ----------------------------------------------------------------------------


def test_pipelined_requests_are_answered_in_request_order(port: int, topic: str) -> None:
    requests: list[tuple[Message, int]] = [
        (fetch_request(topic, 0, max_wait_ms=500), FETCH_V),  # parked: the partition is empty
        (ApiVersionsRequest(), API_VERSIONS_V),  # answered at once by the handler
        (metadata_request(topic), METADATA_V),
        (list_offsets_request(topic, -2), LIST_OFFSETS_V),
    ]
    cids = [next(_ids) for _ in requests]
    with Wire(port) as w:
        start = time.monotonic()
        w.sock.sendall(b"".join(Wire.frame_of(r, v, c) for (r, v), c in zip(requests, cids, strict=True)))
        frames = [w.read_frame() for _ in requests]
        elapsed = time.monotonic() - start
    assert [correlation_of(f) for f in frames] == cids
    # the fetch really waited, and held back the answers queued behind it
    assert elapsed >= 0.3
    decoded = [decode_response(type(r).API_KEY, v, f)[1] for (r, v), f in zip(requests, frames, strict=True)]
    part, records = fetched(decoded[0])
    assert (part.error_code, records) == (NONE, [])
    assert decoded[1].error_code == NONE  # type: ignore[attr-defined]
    assert decoded[2].topics[0].error_code == NONE  # type: ignore[attr-defined]
    assert decoded[3].topics[0].partitions[0].offset == 0  # type: ignore[attr-defined]


# -- e) fetch long-poll -----------------------------------------------------------------------


def test_fetch_long_poll_waits_max_wait_on_an_empty_partition(port: int, topic: str) -> None:
    with Wire(port) as w:
        start = time.monotonic()
        resp = w.call(fetch_request(topic, 0, max_wait_ms=1500), FETCH_V)
        elapsed = time.monotonic() - start
    part, records = fetched(resp)
    assert part.error_code == NONE
    assert records == []
    assert part.high_watermark == 0
    assert elapsed >= 1.0


def test_fetch_long_poll_is_answered_early_by_a_produce(port: int, topic: str) -> None:
    with Wire(port) as consumer, Wire(port) as producer:
        start = time.monotonic()
        cid = consumer.send(fetch_request(topic, 0, max_wait_ms=10_000), FETCH_V)
        time.sleep(0.3)  # let the fetch park (an early produce would only make it trivial)
        p = produce(producer, topic, batch(b"wake-up"))
        assert (p.error_code, p.base_offset) == (NONE, 0)
        resp = consumer.recv(fetch_request(topic, 0, max_wait_ms=10_000), FETCH_V, cid)
        elapsed = time.monotonic() - start
    part, records = fetched(resp)
    assert part.error_code == NONE
    assert records == [(0, b"wake-up")]
    assert elapsed < 8.0  # far below max_wait_ms=10 s: woken by the append, not by the timeout


# -- f) ListOffsets v0 ------------------------------------------------------------------------


def test_list_offsets_v0_returns_exactly_one_offset(port: int, topic: str) -> None:
    with Wire(port) as w:
        for i in range(3):
            assert produce(w, topic, batch(f"v{i}".encode())).error_code == NONE
        for timestamp, expected in ((-1, 3), (-2, 0)):
            resp = w.call(list_offsets_request(topic, timestamp), 0)
            assert isinstance(resp, ListOffsetsResponse)
            [p] = resp.topics[0].partitions
            assert p.error_code == NONE
            assert p.old_style_offsets == [expected]


# -- g) unsupported versions ------------------------------------------------------------------


def _assert_closed(sock: socket.socket) -> None:
    sock.settimeout(5)
    try:
        data = sock.recv(100)
    except ConnectionResetError:
        return
    assert data == b"", f"expected the broker to close the connection, got {data!r}"


def test_unsupported_api_version_closes_only_that_connection(port: int, topic: str) -> None:
    # Kafka answers an ApiVersions request above its range with a v0 UNSUPPORTED_VERSION body
    with Wire(port) as w:
        w.sock.sendall(struct.pack(">i", 8 + 2 + 1) + struct.pack(">hhih", 18, 99, 4242, 1) + b"t")
        frame = w.read_frame()
        correlation, error = struct.unpack_from(">ih", frame)
        assert (correlation, error) == (4242, UNSUPPORTED_VERSION)
        # ... and keeps the connection open
        assert latest(w, topic) == 0
    # any other API at a version the broker does not serve: Kafka closes the connection without
    # an answer (InvalidRequestException while parsing the request)
    for version in (9, 99):  # just above Metadata's max 8, and far above
        with Wire(port) as w:
            assert latest(w, topic) == 0  # answered before ...
            w.sock.sendall(struct.pack(">i", 8 + 2) + struct.pack(">hhih", 3, version, 7, -1))
            _assert_closed(w.sock)
    # the broker keeps serving other connections
    with Wire(port) as w:
        md = w.call(metadata_request(topic), METADATA_V)
        assert isinstance(md, MetadataResponse)
        assert md.topics[0].error_code == NONE
        assert produce(w, topic, batch(b"still-serving")).error_code == NONE


# -- h) unknown topic, no auto-creation -------------------------------------------------------


def test_produce_to_unknown_topic_without_auto_create(port: int) -> None:
    name = "wire-never-created"
    with Wire(port) as w:
        p = produce(w, name, batch(b"nowhere"))
        assert p.error_code == UNKNOWN_TOPIC_OR_PARTITION
        assert p.base_offset == -1
        # Metadata (which asks for auto-creation) does not create it either
        md = w.call(metadata_request(name), METADATA_V)
        assert isinstance(md, MetadataResponse)
        assert [(t.name, t.error_code) for t in md.topics] == [(name, UNKNOWN_TOPIC_OR_PARTITION)]
        time.sleep(0.5)
        md = w.call(metadata_request(name), METADATA_V)
        assert [(t.name, t.error_code) for t in md.topics] == [(name, UNKNOWN_TOPIC_OR_PARTITION)]  # type: ignore[attr-defined]
        assert list_offset(w, name).error_code == UNKNOWN_TOPIC_OR_PARTITION


@pytest.mark.parametrize(("magic", "codec"), [(0, 0), (0, 1), (1, 0), (1, 1), (1, 2), (1, 3)])
def test_produce_v2_with_a_legacy_message_set_is_converted(
    port: int, topic: str, magic: int, codec: int
) -> None:
    """Produce 0-2 clients send magic 0/1 message sets (built here by kafka-python): the broker
    checks each message's CRC-32, opens wrappers and appends one RecordBatch v2 with the same keys,
    values and (magic 1) timestamps; a message with a wrong CRC is CORRUPT_MESSAGE (2)."""
    from kafka.record.legacy_records import LegacyRecordBatchBuilder

    legacy = LegacyRecordBatchBuilder(magic=magic, compression_type=codec, batch_size=1 << 20)
    for i in range(3):
        legacy.append(i, timestamp=1000 + i if magic else None, key=b"k%d" % i, value=b"legacy-%d" % i)
    data = bytes(legacy.build())
    with Wire(port) as w:
        before = latest(w, topic)
        resp = w.call(produce_request(topic, data), 2)
        assert isinstance(resp, ProduceResponse)
        [p] = resp.responses[0].partition_responses
        assert p.error_code == NONE and p.base_offset == before
        assert latest(w, topic) == before + 3
        answer = w.call(fetch_request(topic, before, max_wait_ms=0), FETCH_V)
        assert isinstance(answer, FetchResponse)
        records = [r for _h, r in iter_batch_records(bytes(answer.responses[0].partitions[0].records))]
        assert [(r.offset, r.key, r.value) for r in records] == [
            (before + i, b"k%d" % i, b"legacy-%d" % i) for i in range(3)
        ]
        assert [r.timestamp for r in records] == ([1000, 1001, 1002] if magic else [-1, -1, -1])
        corrupt = bytearray(data)
        corrupt[-1] ^= 0xFF
        [bad] = w.call(produce_request(topic, bytes(corrupt)), 2).responses[0].partition_responses  # type: ignore[attr-defined]
        assert bad.error_code == CORRUPT_MESSAGE
        assert latest(w, topic) == before + 3


def test_an_assignment_too_large_for_a_znode_is_refused_before_zookeeper_sees_it(port: int) -> None:
    """Within the partition limits but beyond what one znode may hold: ZooKeeper would drop the
    broker's connection for such a packet, so the broker refuses it (and keeps its session)."""
    for validate_only in (True, False):
        request = CreateTopicsRequest(
            topics=[
                CreateTopicsRequest.CreatableTopic(
                    name="huge-znode", num_partitions=120_000, replication_factor=1
                )
            ],
            timeout_ms=20_000,
            validate_only=validate_only,
        )
        with Wire(port) as w:
            resp = w.call(request, 4)
        assert isinstance(resp, CreateTopicsResponse)
        [result] = resp.topics
        assert result.error_code == 44, result.error_message  # POLICY_VIOLATION
        assert "more than a znode may hold" in (result.error_message or "")
    create_topic(port, "after-huge-znode")  # the broker's ZooKeeper session is fine
