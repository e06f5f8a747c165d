"""Request/response headers, the header-version rules, and the ApiVersions special cases."""

from __future__ import annotations

import struct

import pytest

from zkafka.protocol import (
    ErrorCode,
    MalformedRequestError,
    RequestHeader,
    UnknownApiKeyError,
    UnsupportedVersionError,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    peek_request_header,
    request_header_version,
    response_header_version,
)
from zkafka.protocol.api_versions import (
    BROKER_API_VERSIONS,
    api_versions_response,
    unsupported_api_versions_frame,
)
from zkafka.protocol.messages import (
    REQUEST_CLASSES,
    ApiVersionsRequest,
    ApiVersionsResponse,
    ControlledShutdownRequest,
    MetadataRequest,
    MetadataResponse,
    ProduceRequest,
)
from zkafka.protocol.schemas import SPECS

pytestmark = pytest.mark.filterwarnings("ignore:(read|open)_text is deprecated:DeprecationWarning")

# First flexible version per API: reference/wire-protocol.md §1.1 plus Kafka 2.8's JSON for the
# controller-to-broker APIs. None: never flexible.
FIRST_FLEXIBLE = {
    0: 9, 1: 12, 2: 6, 3: 9, 4: 4, 5: 2, 6: 6, 7: 3, 8: 8, 9: 6, 10: 3, 11: 6, 12: 4, 13: 4, 14: 4,
    15: 5, 16: 3, 17: None, 18: 3, 19: 5, 20: 4, 21: 2, 22: 2, 23: 4, 32: 4, 33: 2, 37: 2, 42: 2,
    24: 3, 25: 3, 26: 3, 27: 1, 28: 3,
    29: 2, 30: 2, 31: 2, 35: 2, 36: 2, 43: 2, 44: 1, 45: 0, 46: 0, 47: None, 48: 1, 49: 1, 50: 0, 51: 0,
    60: 0, 61: 0, 65: 0, 66: 0,
}  # fmt: skip


def body(frame: bytes | bytearray) -> memoryview:
    """A frame without its size prefix, after checking the prefix."""
    (size,) = struct.unpack_from(">i", frame, 0)
    assert size == len(frame) - 4
    return memoryview(frame)[4:]


def test_flexible_versions_match_the_reference() -> None:
    assert set(FIRST_FLEXIBLE) == set(SPECS)
    for key, first in FIRST_FLEXIBLE.items():
        spec = SPECS[key]
        assert (spec.flexible.low if not spec.flexible.empty else None) == first, spec.name


@pytest.mark.parametrize("key", sorted(SPECS), ids=[SPECS[k].name for k in sorted(SPECS)])
def test_header_versions_follow_flexibility(key: int) -> None:
    spec = SPECS[key]
    for version in range(spec.versions.low, spec.versions.high + 1):
        flexible = spec.is_flexible(version)
        expected_request = 0 if (key, version) == (7, 0) else (2 if flexible else 1)
        assert request_header_version(key, version) == expected_request
        expected_response = 0 if key == 18 else (1 if flexible else 0)
        assert response_header_version(key, version) == expected_response


def test_request_header_v0_has_no_client_id() -> None:
    frame = encode_request(RequestHeader(7, 0, 0x01020304, "ignored"), ControlledShutdownRequest(broker_id=5))
    assert bytes(body(frame)) == bytes.fromhex("0007 0000 01020304 00000005")
    header, request = decode_request(body(frame))
    assert header == RequestHeader(7, 0, 0x01020304, None)
    assert request == ControlledShutdownRequest(broker_id=5)


def test_request_header_v1_has_a_classic_nullable_client_id() -> None:
    frame = encode_request(RequestHeader(3, 1, 9, "abc"), MetadataRequest(topics=None))
    assert bytes(body(frame)) == bytes.fromhex("0003 0001 00000009 0003 616263 ffffffff")
    frame = encode_request(RequestHeader(3, 1, 9, None), MetadataRequest(topics=[]))
    assert bytes(body(frame)) == bytes.fromhex("0003 0001 00000009 ffff 00000000")
    assert decode_request(body(frame))[0] == RequestHeader(3, 1, 9, None)


def test_request_header_v2_keeps_client_id_classic_then_tags() -> None:
    request = ApiVersionsRequest(client_software_name="zk", client_software_version="1")
    frame = encode_request(RequestHeader(18, 3, 7, "cli"), request)
    # header: key, version, correlation id, int16-length client id, empty tag section;
    # body: compact strings (length + 1), empty tag section.
    assert bytes(body(frame)) == bytes.fromhex("0012 0003 00000007 0003 636c69 0003 7a6b 02 31 00")
    assert decode_request(body(frame)) == (RequestHeader(18, 3, 7, "cli"), request)


def test_unknown_tags_in_request_header_v2_are_skipped() -> None:
    raw = bytes.fromhex("0012 0003 00000007 0003 636c6902 05 01 aa 7f 0003 7a6b 02 31 00")
    header, request = decode_request(raw)
    assert header.client_id == "cli"
    assert request == ApiVersionsRequest(client_software_name="zk", client_software_version="1")


def test_response_header_v1_for_flexible_versions() -> None:
    response = MetadataResponse(cluster_id="c", controller_id=1)
    flexible = encode_response(3, 9, 77, response)
    classic = encode_response(3, 8, 77, response)
    assert bytes(body(flexible))[:5] == bytes.fromhex("0000004d 00")
    assert bytes(body(classic))[:4] == bytes.fromhex("0000004d")
    assert decode_response(3, 9, body(flexible))[1] == response
    assert decode_response(3, 8, body(classic))[0].correlation_id == 77


def test_api_versions_response_header_is_always_v0() -> None:
    response = api_versions_response()
    frame = encode_response(18, 3, 5, response)
    raw = bytes(body(frame))
    # correlation id, then directly the body's error code: no tag byte in the header.
    assert raw[:6] == bytes.fromhex("00000005 0000")
    header, decoded = decode_response(18, 3, body(frame))
    assert header.correlation_id == 5 and decoded == response


def test_unsupported_api_versions_fallback_bytes() -> None:
    frame = unsupported_api_versions_frame(0x0A0B0C0D)
    raw = bytes(body(frame))
    correlation_id, error_code, count = struct.unpack_from(">ihi", raw, 0)
    assert correlation_id == 0x0A0B0C0D
    assert error_code == ErrorCode.UNSUPPORTED_VERSION == 35
    entries = [struct.unpack_from(">hhh", raw, 10 + 6 * i) for i in range(count)]
    assert len(raw) == 10 + 6 * count  # v0 body: no throttle_time_ms, no tags
    assert dict((k, (lo, hi)) for k, lo, hi in entries) == dict(BROKER_API_VERSIONS)
    assert (18, 0, 2) in entries
    # librdkafka reads this body with flexible decoding: the int32 count's first byte is 0x00,
    # a null compact array, so it finds no entries and retries with v0 (reference §3).
    assert raw[6] == 0


def test_client_decodes_the_fallback_as_v0_whatever_it_sent() -> None:
    frame = unsupported_api_versions_frame(1)
    for sent_version in (0, 1, 2, 3):
        _header, response = decode_response(18, sent_version, body(frame))
        assert isinstance(response, ApiVersionsResponse)
        assert response.error_code == ErrorCode.UNSUPPORTED_VERSION
        assert response.api_keys[-1].api_key == max(BROKER_API_VERSIONS)


def test_kafka_python_reads_the_fallback() -> None:
    from kafka.protocol.metadata import ApiVersionsResponse as KpApiVersionsResponse

    raw = bytes(body(unsupported_api_versions_frame(1)))[4:]
    decoded = KpApiVersionsResponse.decode(raw, version=4)  # kafka-python probes with v4
    assert decoded.error_code == 35
    assert {(k.api_key, k.min_version, k.max_version) for k in decoded.api_keys} >= {(18, 0, 2), (0, 0, 8)}


def test_api_versions_probe_above_our_max_is_unsupported_with_its_header() -> None:
    # kafka-python's probe: ApiVersions v4, request header v2, compact strings we do not parse.
    raw = bytes.fromhex(
        "0012 0004 0000002a 000c 6b61666b612d707974686f6e 00"  # header v2, client id "kafka-python"
        "0d 6b61666b612d707974686f6e 07 332e302e3132 00"  # compact name and version, no tags
    )
    with pytest.raises(UnsupportedVersionError) as info:
        decode_request(raw)
    assert info.value.header == RequestHeader(18, 4, 42, "kafka-python")
    assert info.value.error_code == ErrorCode.UNSUPPORTED_VERSION


def test_broker_table_narrows_accepted_versions() -> None:
    frame = encode_request(RequestHeader(18, 3, 1, "c"), ApiVersionsRequest())
    decode_request(body(frame))  # the codec itself speaks v3
    with pytest.raises(UnsupportedVersionError) as info:
        decode_request(body(frame), supported=BROKER_API_VERSIONS)
    assert info.value.header.correlation_id == 1
    # an API the codec knows and a table leaves out (the broker now serves every API the codec has)
    unserved = max(BROKER_API_VERSIONS)
    table = {k: v for k, v in BROKER_API_VERSIONS.items() if k != unserved}
    frame = encode_request(RequestHeader(unserved, 0, 2, "c"), REQUEST_CLASSES[unserved]())
    decode_request(body(frame))
    with pytest.raises(UnknownApiKeyError):
        decode_request(body(frame), supported=table)
    frame = encode_request(RequestHeader(0, 2, 3, "c"), ProduceRequest(acks=1))
    # Produce 0-2 are accepted: the produce handler converts a legacy message set inside
    decode_request(body(frame), supported=BROKER_API_VERSIONS)
    frame = encode_request(RequestHeader(0, 9, 3, "c"), ProduceRequest(acks=1))
    with pytest.raises(UnsupportedVersionError):  # Produce 9 is flexible: not advertised
        decode_request(body(frame), supported=BROKER_API_VERSIONS)


def test_unknown_api_key() -> None:
    raw = bytes.fromhex("0063 0000 00000001 ffff")
    with pytest.raises(UnknownApiKeyError) as info:
        decode_request(raw)
    assert info.value.header.api_key == 99
    assert info.value.error_code == ErrorCode.INVALID_REQUEST


def test_frame_shorter_than_a_header() -> None:
    with pytest.raises(MalformedRequestError) as info:
        decode_request(b"\x00\x03\x00")
    assert info.value.header is None
    with pytest.raises(MalformedRequestError):
        peek_request_header(b"")


def test_peek_reads_only_the_fixed_part() -> None:
    frame = encode_request(RequestHeader(3, 4, 123, "x"), MetadataRequest())
    assert peek_request_header(body(frame)) == RequestHeader(3, 4, 123, None)
