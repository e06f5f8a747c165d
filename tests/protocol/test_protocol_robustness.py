"""Hostile input: whatever bytes arrive, decoding ends in a documented exception or a message,
promptly. No IndexError, struct.error, UnicodeDecodeError, MemoryError or hang leaks out."""

from __future__ import annotations

import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from protocol_strategies import message_strategy

from zkafka.protocol import (
    MalformedRequestError,
    MalformedResponseError,
    RequestHeader,
    UnsupportedVersionError,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
)
from zkafka.protocol.schemas import SPECS

REQUEST_ERRORS = (MalformedRequestError, UnsupportedVersionError)
KEYS = sorted(SPECS)


@st.composite
def valid_request_frame(draw: st.DrawFn) -> bytes:
    spec = SPECS[draw(st.sampled_from(KEYS))]
    version = draw(st.integers(spec.versions.low, spec.versions.high))
    request = draw(message_strategy(spec, "request", version))
    correlation_id = draw(st.integers(-(2**31), 2**31 - 1))
    header = RequestHeader(spec.key, version, correlation_id, draw(st.none() | st.text(max_size=8)))
    return bytes(encode_request(header, request))[4:]


@st.composite
def valid_response(draw: st.DrawFn) -> tuple[int, int, bytes]:
    spec = SPECS[draw(st.sampled_from(KEYS))]
    version = draw(st.integers(spec.versions.low, spec.versions.high))
    response = draw(message_strategy(spec, "response", version))
    return spec.key, version, bytes(encode_response(spec.key, version, 1, response))[4:]


def _decode_request_safely(raw: bytes) -> None:
    start = time.perf_counter()
    try:
        decode_request(raw)
    except REQUEST_ERRORS:
        pass
    assert time.perf_counter() - start < 1.0, "decoding took too long"


@settings(max_examples=300, deadline=None)
@given(raw=st.binary(max_size=64))
def test_random_bytes(raw: bytes) -> None:
    _decode_request_safely(raw)


@settings(max_examples=300, deadline=None)
@given(api_key=st.sampled_from(KEYS), version=st.integers(0, 15), rest=st.binary(max_size=64))
def test_random_body_behind_a_plausible_header(api_key: int, version: int, rest: bytes) -> None:
    fixed = api_key.to_bytes(2, "big") + version.to_bytes(2, "big") + b"\x00\x00\x00\x01"
    _decode_request_safely(fixed + rest)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(frame=valid_request_frame(), data=st.data())
def test_truncated_valid_frames(frame: bytes, data: st.DataObject) -> None:
    cut = data.draw(st.integers(0, max(0, len(frame) - 1)))
    with pytest.raises(REQUEST_ERRORS):
        decode_request(frame[:cut])


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(frame=valid_request_frame(), data=st.data())
def test_mutated_valid_frames(frame: bytes, data: st.DataObject) -> None:
    mutated = bytearray(frame)
    for _ in range(data.draw(st.integers(1, 4))):
        if not mutated:
            break
        i = data.draw(st.integers(0, len(mutated) - 1))
        mutated[i] = data.draw(st.integers(0, 255))
    extra = data.draw(st.binary(max_size=4))
    _decode_request_safely(bytes(mutated) + extra)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=valid_response(), data=st.data())
def test_truncated_and_mutated_responses(case: tuple[int, int, bytes], data: st.DataObject) -> None:
    key, version, raw = case
    cut = data.draw(st.integers(0, max(0, len(raw) - 1)))
    with pytest.raises(MalformedResponseError):
        decode_response(key, version, raw[:cut])
    mutated = bytearray(raw)
    if mutated:
        mutated[data.draw(st.integers(0, len(mutated) - 1))] ^= data.draw(st.integers(1, 255))
    try:
        decode_response(key, version, bytes(mutated))
    except MalformedResponseError:
        pass


# A frame that claims huge counts must fail at once, not allocate or loop over the claim.
HOSTILE = {
    "array count 2^31-1": "0003 0001 00000001 ffff" "7fffffff",
    "array count -2": "0003 0001 00000001 ffff" "fffffffe",
    "string length -5": "0003 0001 00000001 fffb",
    "string longer than frame": "0003 0001 00000001 7fff 61",
    "records longer than frame": "0000 0003 00000001 ffff"  # Produce v3 header
    "ffff 0001 00000000 00000001 0001 61 00000001 00000000 7fffffff",
    "compact array count 2^32-2": "0012 0003 00000001 ffff 00 ffffffff0f",
    "varint longer than 5 bytes": "0012 0003 00000001 ffff 00 ffffffffff7f",
    "tag count huge, no tags": "0012 0003 00000001 ffff 00 01 01 ffffffff0f",
    "tagged field size beyond frame": "0012 0003 00000001 ffff 00 01 01 01 00 7f 00",
    "bad utf-8 client id": "0003 0001 00000001 0002 c328 00000000",
    "bad utf-8 topic": "0003 0001 00000001 ffff 00000001 0002 c328",
    "trailing bytes": "0003 0001 00000001 ffff 00000000 00",
    "invalid utf-8 in compact string": "0012 0003 00000001 ffff 00 03 c328 01 00",
}  # fmt: skip


@pytest.mark.parametrize("raw", list(HOSTILE.values()), ids=list(HOSTILE))
def test_hostile_frames(raw: str) -> None:
    start = time.perf_counter()
    with pytest.raises(MalformedRequestError) as info:
        decode_request(bytes.fromhex(raw))
    assert time.perf_counter() - start < 0.1
    assert info.value.header is not None and info.value.header.correlation_id == 1


def test_bytes_after_a_flexible_body_are_ignored_as_kafka_ignores_them() -> None:
    """librdkafka 2.x ends AlterUserScramCredentials with one extra empty tagged-field byte and
    leaves 3 spare bytes after its Metadata v9+ "all topics" request; Kafka ignores bytes after a
    flexible body, so we do too. A classic (non-flexible) body must still end exactly."""
    from zkafka.protocol.messages import AlterUserScramCredentialsRequest, MetadataRequest

    header = RequestHeader(51, 0, 7, "rdkafka")
    frame = bytes(encode_request(header, AlterUserScramCredentialsRequest(deletions=[], upsertions=[])))[4:]
    for extra in (b"\0", b"\1", b"\0\0\0"):
        assert decode_request(frame + extra)[1] == decode_request(frame)[1]
    classic = bytes(encode_request(RequestHeader(3, 8, 8, "c"), MetadataRequest(topics=None)))[4:]
    with pytest.raises(MalformedRequestError, match="after the body"):
        decode_request(classic + b"\0")
