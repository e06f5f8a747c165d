"""Codec behaviour beyond round trips: zero-copy records, response parts, encode errors."""

from __future__ import annotations

import struct

import pytest

from zkafka.protocol import (
    DeferredRecords,
    EncodeError,
    RequestHeader,
    decode_body,
    decode_request,
    decode_response,
    encode_body,
    encode_request,
    encode_response,
    encode_response_parts,
    parts_size,
    precompile,
    response_expected,
    supported_versions,
)
from zkafka.protocol.codec import decoder
from zkafka.protocol.codegen import source_of
from zkafka.protocol.exceptions import MalformedRequestError, UnsupportedVersionError
from zkafka.protocol.messages import (
    FetchResponse,
    JoinGroupRequest,
    MetadataRequest,
    MetadataResponse,
    ProduceRequest,
    ProduceResponse,
)
from zkafka.protocol.primitives import SPLICE_THRESHOLD
from zkafka.records.record import simple_batch

BIG = bytes(range(256)) * 64  # 16 KiB
SMALL = b"small batch"


class FileSlice(DeferredRecords):
    """Stands in for the network layer's sendfile region."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    @property
    def size(self) -> int:
        return len(self.data)

    def materialize(self) -> bytes:
        return self.data


def fetch_response(*records: object) -> FetchResponse:
    return FetchResponse(
        responses=[
            FetchResponse.FetchableTopicResponse(
                topic="t",
                partitions=[
                    FetchResponse.PartitionData(partition_index=i, high_watermark=10, records=r)
                    for i, r in enumerate(records)
                ],
            )
        ]
    )


def joined(parts: list[object]) -> bytes:
    out = bytearray()
    for part in parts:
        out += part.materialize() if isinstance(part, DeferredRecords) else part  # type: ignore[operator]
    return bytes(out)


@pytest.mark.parametrize("version", [4, 11, 12])
def test_parts_splice_large_records_without_copying(version: int) -> None:
    big = memoryview(BIG)
    response = fetch_response(big, SMALL, None, big)
    parts = encode_response_parts(1, version, 9, response)
    assert sum(part is big for part in parts) == 2  # the very same buffer object, twice
    assert joined(parts) == bytes(encode_response(1, version, 9, response))
    (size,) = struct.unpack_from(">i", parts[0], 0)
    assert size == parts_size(parts) - 4


def test_deferred_records_appear_as_parts_with_the_right_length() -> None:
    deferred = FileSlice(b"x" * 100)  # small, but deferred: always its own part
    response = fetch_response(deferred)
    parts = encode_response_parts(1, 11, 3, response)
    assert deferred in parts
    assert parts_size(parts) == len(joined(parts))
    frame = joined(parts)
    assert frame == bytes(encode_response(1, 11, 3, response))  # encode_response materializes
    _, decoded = decode_response(1, 11, frame[4:])
    assert bytes(decoded.responses[0].partitions[0].records) == b"x" * 100


def test_records_from_several_buffers_are_written_back_to_back() -> None:
    chunks = [memoryview(BIG), b"abc", bytearray(b"de"), FileSlice(b"fgh")]
    parts = encode_response_parts(1, 4, 1, fetch_response(chunks))
    frame = joined(parts)
    _, decoded = decode_response(1, 4, frame[4:])
    assert bytes(decoded.responses[0].partitions[0].records) == BIG + b"abcdefgh"


def test_small_records_are_copied_into_one_part() -> None:
    parts = encode_response_parts(1, 4, 1, fetch_response(b"a" * (SPLICE_THRESHOLD - 1)))
    assert len(parts) == 1


def test_decoded_records_are_a_zero_copy_view_of_the_frame() -> None:
    request = ProduceRequest(
        acks=-1,
        topic_data=[
            ProduceRequest.TopicProduceData(
                name="t", partition_data=[ProduceRequest.PartitionProduceData(index=0, records=BIG)]
            )
        ],
    )
    frame = bytearray(encode_request(RequestHeader(0, 8, 1, "c"), request))
    view = memoryview(frame)[4:]
    _, decoded = decode_request(view)
    records = decoded.topic_data[0].partition_data[0].records
    assert isinstance(records, memoryview) and records.obj is frame
    frame[-1] ^= 0xFF  # the view sees the frame's bytes, not a copy
    assert records[-1] == BIG[-1] ^ 0xFF


def test_null_records_round_trip() -> None:
    response = fetch_response(None)
    decoded = decode_body(1, "response", 4, encode_body(response, 4))
    assert decoded.responses[0].partitions[0].records is None


def test_defaults_for_fields_a_version_lacks() -> None:
    response = ProduceResponse(
        responses=[
            ProduceResponse.TopicProduceResponse(
                name="t",
                partition_responses=[
                    ProduceResponse.PartitionProduceResponse(index=1, base_offset=5, log_start_offset=3)
                ],
            )
        ],
        throttle_time_ms=7,
    )
    decoded = decode_body(0, "response", 0, encode_body(response, 0))
    partition = decoded.responses[0].partition_responses[0]
    assert (partition.base_offset, partition.log_start_offset, partition.log_append_time_ms) == (5, -1, -1)
    assert decoded.throttle_time_ms == 0  # v0 has no throttle time


@pytest.mark.parametrize(
    ("message", "version", "fragment"),
    [
        (MetadataRequest(topics=None), 0, "MetadataRequest.topics is None but not nullable in v0"),
        (
            MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=None)]),  # type: ignore[arg-type]
            1,
            "topics[0].name is None",
        ),
        (JoinGroupRequest(session_timeout_ms=2**31), 1, "session_timeout_ms=2147483648 is out of range"),
        (JoinGroupRequest(group_id=7), 1, "group_id must be a str"),  # type: ignore[arg-type]
        (JoinGroupRequest(group_id="x" * 40000), 1, "group_id is longer than 32767 bytes"),
        (MetadataRequest(topics="abc"), 1, "topics must be a list"),  # type: ignore[arg-type]
        (
            ProduceRequest(
                topic_data=[
                    ProduceRequest.TopicProduceData(
                        name="t",
                        partition_data=[ProduceRequest.PartitionProduceData(records=12)],  # type: ignore[arg-type]
                    )
                ]
            ),
            3,
            "records must be bytes-like",
        ),
    ],
)
def test_encode_errors_name_the_field(message: object, version: int, fragment: str) -> None:
    with pytest.raises(EncodeError) as info:
        encode_body(message, version)  # type: ignore[arg-type]
    assert fragment in str(info.value)


def test_encode_rejects_versions_and_types_it_cannot_write() -> None:
    with pytest.raises(EncodeError, match="outside the codec's versions"):
        encode_body(MetadataRequest(), 99)
    with pytest.raises(EncodeError, match="does not match api key"):
        encode_request(RequestHeader(1, 4, 1, "c"), MetadataRequest())
    with pytest.raises(EncodeError, match="is not a response"):
        encode_response(3, 1, 1, MetadataRequest())
    with pytest.raises(EncodeError):
        encode_response(3, 1, 1, MetadataResponse.MetadataResponseBroker())  # a struct, not a message
    with pytest.raises(EncodeError, match="correlation id"):
        encode_response_parts(3, 1, 2**31, MetadataResponse())
    with pytest.raises(EncodeError, match="bad request header"):
        encode_request(RequestHeader(3, 1, 1, 5), MetadataRequest())  # type: ignore[arg-type]


def test_response_expected() -> None:
    assert not response_expected(ProduceRequest(acks=0))
    assert response_expected(ProduceRequest(acks=1))
    assert response_expected(ProduceRequest(acks=-1))
    assert response_expected(MetadataRequest())


def test_every_codec_compiles_and_source_is_inspectable() -> None:
    expected = sum(2 * 2 * (hi - lo + 1) for lo, hi in supported_versions().values())
    assert precompile() == expected
    source = source_of(decoder(0, "request", 3))
    assert source.startswith("def decode(buf, p):") and "unpack_from" in source


def test_messages_compare_by_value_and_repr_readably() -> None:
    a = MetadataResponse(brokers=[MetadataResponse.MetadataResponseBroker(node_id=1, host="h", port=9)])
    b = MetadataResponse(brokers=[MetadataResponse.MetadataResponseBroker(node_id=1, host="h", port=9)])
    assert a == b
    b.brokers[0].port = 10
    assert a != b
    assert "MetadataResponseBroker(node_id=1, host='h', port=9, rack=None)" in repr(a)
    assert a.to_dict()["brokers"] == [{"node_id": 1, "host": "h", "port": 9, "rack": None}]
    assert MetadataRequest().topics == [] and MetadataRequest().topics is not MetadataRequest().topics


def test_a_planned_request_decoding_keeps_every_check_of_the_first() -> None:
    """After the first request of an (api key, version) its decoding plan is kept; later requests
    of it still answer a version outside the served table, a truncated body and trailing bytes as
    the first one would."""
    request = ProduceRequest(
        transactional_id=None,
        acks=-1,
        timeout_ms=1000,
        topic_data=[
            ProduceRequest.TopicProduceData(
                name="t",
                partition_data=[
                    ProduceRequest.PartitionProduceData(
                        index=0, records=simple_batch([(None, b"v")], timestamp=1)
                    )
                ],
            )
        ],
    )
    frame = bytes(encode_request(RequestHeader(0, 8, 5, "c"), request))[4:]
    for _ in range(2):  # the first works the plan out, the second uses it
        header, decoded = decode_request(bytearray(frame))
        assert (header.correlation_id, header.client_id) == (5, "c") and decoded == request
    with pytest.raises(UnsupportedVersionError):
        decode_request(bytearray(frame), {0: (0, 7)})
    with pytest.raises(MalformedRequestError) as truncated:
        decode_request(bytearray(frame[:-3]))
    assert truncated.value.header is not None and truncated.value.header.correlation_id == 5
    with pytest.raises(MalformedRequestError, match="bytes after the body"):
        decode_request(bytearray(frame + b"\0"))  # Produce v8 is not flexible: it ends exactly
