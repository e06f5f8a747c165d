"""Every length and count read from the wire is checked against the bytes left before anything is
allocated or looped over (issue 11, item 3).

Three layers: each primitive reader with hostile lengths (hypothesis), hand-made frames for the
shapes that matter (tag sections, tagged fields, compact and classic arrays, records), and a sweep
that takes one fully populated message of every request version (every array non-empty, every
nullable field set, every tagged field present), overwrites each byte offset with huge and
negative lengths in every encoding, and decodes: the codec must answer with its decode error (or
a message, when the overwrite happened to form one) and allocate no more than a small multiple of
the frame (tracemalloc), however large the claimed length.
"""

from __future__ import annotations

import struct
import tracemalloc
import uuid
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

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
from zkafka.protocol import primitives as prim
from zkafka.protocol.codec import message_class
from zkafka.protocol.message import Message
from zkafka.protocol.messages import ApiVersionsResponse, FetchRequest
from zkafka.protocol.schema import ArrayOf, Field, Struct
from zkafka.protocol.schemas import SPECS

REQUEST_ERRORS = (MalformedRequestError, UnsupportedVersionError)

# -- primitives -----------------------------------------------------------------------------------

CLASSIC_READERS = {  # reader: (length format, nullable)
    prim.read_string: (">h", False),
    prim.read_nullable_string: (">h", True),
    prim.read_bytes: (">i", False),
    prim.read_nullable_bytes: (">i", True),
    prim.read_records: (">i", True),
}
COMPACT_READERS = {
    prim.read_compact_string: False,
    prim.read_compact_nullable_string: True,
    prim.read_compact_bytes: False,
    prim.read_compact_nullable_bytes: True,
    prim.read_compact_records: True,
}


def uvarint(n: int) -> bytes:
    out = bytearray()
    prim.write_uvarint(out, n)
    return bytes(out)


def at(data: bytes) -> tuple[memoryview, int, int]:
    return memoryview(data), 0, len(data)


@pytest.mark.parametrize("reader", list(CLASSIC_READERS), ids=lambda r: r.__name__)
@given(data=st.data())
def test_classic_lengths_beyond_the_bytes_left(reader: Any, data: st.DataObject) -> None:
    fmt, _ = CLASSIC_READERS[reader]
    limit = 2 ** (8 * struct.calcsize(fmt) - 1) - 1
    rest = data.draw(st.binary(max_size=64))
    n = data.draw(st.integers(len(rest) + 1, limit))
    with pytest.raises(prim.WireFormatError, match="truncated"):
        reader(*at(struct.pack(fmt, n) + rest))


@pytest.mark.parametrize("reader", list(CLASSIC_READERS), ids=lambda r: r.__name__)
@given(n=st.integers(-(2**15), -1))
def test_classic_negative_lengths(reader: Any, n: int) -> None:
    fmt, nullable = CLASSIC_READERS[reader]
    buf, p, end = at(struct.pack(fmt, n) + b"xyz")
    if n == -1 and nullable:
        assert reader(buf, p, end) == (None, struct.calcsize(fmt))
    else:
        with pytest.raises(prim.WireFormatError, match="invalid"):
            reader(buf, p, end)


@pytest.mark.parametrize("reader", list(COMPACT_READERS), ids=lambda r: r.__name__)
@given(data=st.data())
def test_compact_lengths_beyond_the_bytes_left(reader: Any, data: st.DataObject) -> None:
    rest = data.draw(st.binary(max_size=64))
    n = data.draw(st.integers(len(rest) + 1, 2**32 - 2))  # stored as n + 1
    with pytest.raises(prim.WireFormatError, match="truncated"):
        reader(*at(uvarint(n + 1) + rest))


@pytest.mark.parametrize("reader", list(COMPACT_READERS), ids=lambda r: r.__name__)
def test_compact_null(reader: Any) -> None:
    if COMPACT_READERS[reader]:
        assert reader(*at(b"\x00xyz")) == (None, 1)
    else:
        with pytest.raises(prim.WireFormatError, match="invalid"):
            reader(*at(b"\x00xyz"))


@pytest.mark.parametrize("compact", [False, True])
@pytest.mark.parametrize("nullable", [False, True])
@given(data=st.data())
def test_array_counts_checked_against_the_bytes_left(
    compact: bool, nullable: bool, data: st.DataObject
) -> None:
    min_item = data.draw(st.integers(1, 40))
    rest = data.draw(st.binary(max_size=200))
    fits = len(rest) // min_item
    n = data.draw(st.integers(fits + 1, 2**31 - 1))
    prefix = uvarint(n + 1) if compact else struct.pack(">i", n)
    with pytest.raises(prim.WireFormatError, match="truncated array"):
        prim.read_array_len(*at(prefix + rest), compact, nullable, min_item)
    # and the largest count that fits is accepted
    ok = uvarint(fits + 1) if compact else struct.pack(">i", fits)
    assert prim.read_array_len(*at(ok + rest), compact, nullable, min_item) == (fits, len(ok))


@pytest.mark.parametrize("compact", [False, True])
@pytest.mark.parametrize("nullable", [False, True])
def test_array_null(compact: bool, nullable: bool) -> None:
    null = b"\x00" if compact else b"\xff\xff\xff\xff"
    if nullable:
        assert prim.read_array_len(*at(null), compact, nullable, 4) == (-1, len(null))
    else:
        with pytest.raises(prim.WireFormatError, match="invalid array length"):
            prim.read_array_len(*at(null), compact, nullable, 4)
    if not compact:
        with pytest.raises(prim.WireFormatError, match="invalid array length"):
            prim.read_array_len(*at(struct.pack(">i", -2)), compact, nullable, 4)


@given(data=st.data())
def test_tag_counts_and_sizes(data: st.DataObject) -> None:
    rest = data.draw(st.binary(max_size=64))
    count = data.draw(st.integers(len(rest) // 2 + 1, 2**32 - 1))
    with pytest.raises(prim.WireFormatError, match="truncated tagged fields"):
        prim.read_tag_count(*at(uvarint(count) + rest))
    size = data.draw(st.integers(len(rest) + 1, 2**32 - 1))
    with pytest.raises(prim.WireFormatError, match="truncated tagged field"):
        prim.skip_tagged_field(*at(uvarint(7) + uvarint(size) + rest))


# -- hand-made frames -----------------------------------------------------------------------------


def request_frame(request: Message, version: int) -> bytes:
    header = RequestHeader(type(request).API_KEY, version, 1, None)
    return bytes(encode_request(header, request))[4:]


def test_request_header_tag_count_beyond_the_frame() -> None:
    # Fetch v12 uses request header v2: client id (null) then the header's tag section
    fixed = struct.pack(">hhi", 1, 12, 1) + b"\xff\xff"
    with pytest.raises(MalformedRequestError, match="truncated tagged fields"):
        decode_request(fixed + uvarint(2**31) + b"\x00" * 8)


def test_request_tag_section_count_beyond_the_frame() -> None:
    frame = request_frame(FetchRequest(replica_id=-1, topics=[], cluster_id="c"), 12)
    # the body's last tag section holds cluster_id: tag count 1, tag 0, size 2, "\x02c"
    assert frame.endswith(b"\x01\x00\x02\x02c")
    hostile = frame[:-5] + uvarint(2**32 - 1) + b"\x00\x02\x02c"
    with pytest.raises(MalformedRequestError, match="truncated tagged fields"):
        decode_request(hostile)


def test_tagged_field_contents_bounded_by_the_tag_size_not_the_frame() -> None:
    """A tagged field's inner string claims more than its tag's declared size while the frame
    has plenty left: refused on the length, not decoded past the field."""
    frame = request_frame(FetchRequest(replica_id=-1, topics=[], cluster_id="c"), 12)
    hostile = frame[:-5] + b"\x01\x00\x02" + uvarint(1001) + b"c" + b"\x00" * 2000
    with pytest.raises(MalformedRequestError, match="truncated string"):
        decode_request(hostile)


def test_tagged_array_count_bounded_by_the_tag_size() -> None:
    """ApiVersions v3 response, supported_features (tag 0): a count that the frame could hold but
    the tag's 2 bytes cannot is refused at the count, before any element is built."""
    body = bytearray(encode_response(18, 3, 1, ApiVersionsResponse(api_keys=[])))[4:]
    assert body.endswith(b"\x00")  # no tagged fields
    hostile = bytes(body[:-1]) + b"\x01\x00\x02" + uvarint(1001) + b"\x00" * 10_000
    with pytest.raises(MalformedResponseError, match="truncated array"):
        decode_response(18, 3, hostile)


# -- a sweep over every request version -----------------------------------------------------------

SCALARS: dict[str, Any] = {
    "int8": 1,
    "int16": 1,
    "int32": 1,
    "int64": 1,
    "uint16": 1,
    "uint32": 1,
    "float64": 1.5,
    "bool": True,
    "string": "ab",
    "bytes": b"xyz",
    "records": b"rec",
    "uuid": uuid.UUID(int=7),
}


def _value(f: Field, version: int, owner: type[Message]) -> Any:
    def one(t: str | Struct) -> Any:
        if isinstance(t, Struct):
            return populated(t.fields, getattr(owner, t.name), version, owner)
        return SCALARS[t]

    if isinstance(f.type, ArrayOf):
        return [one(f.type.element)]
    return one(f.type)


def populated(fields: tuple[Field, ...], cls: type[Message], version: int, owner: type[Message]) -> Message:
    """Every field present at `version` set to a non-default value: arrays hold one element,
    nullable fields are not null, tagged fields are written."""
    return cls(**{f.name: _value(f, version, owner) for f in fields if f.present_in(version)})


HOSTILE_LENGTHS = {
    "int32 max": struct.pack(">i", 2**31 - 1),
    "int32 -2": struct.pack(">i", -2),
    "int16 max": struct.pack(">h", 2**15 - 1),
    "int16 -2": struct.pack(">h", -2),
    "uvarint 2^32-1": uvarint(2**32 - 1),
    "uvarint 2^31": uvarint(2**31),
    "uvarint 2^14": uvarint(2**14),
}
# What decoding a few hundred bytes may allocate at most: the message's objects (tens of KiB
# at worst). A claimed length that slipped through would allocate megabytes to gigabytes.
MAX_DECODE_ALLOCATION = 1 << 20

VERSIONS = [
    (key, v) for key, spec in sorted(SPECS.items()) for v in range(spec.versions.low, spec.versions.high + 1)
]
IDS = [f"{k}v{v}" for k, v in VERSIONS]


def _sweep(frame: bytes, start: int, decode: Any, errors: tuple[type[Exception], ...]) -> None:
    decode(frame)  # the untouched frame decodes (and the codec is compiled before measuring)
    tracemalloc.start()
    try:
        for name, hostile in HOSTILE_LENGTHS.items():
            for i in range(start, len(frame)):
                mutated = frame[:i] + hostile + frame[i + len(hostile) :]
                tracemalloc.reset_peak()
                try:
                    decode(mutated)
                except errors:
                    pass
                _, peak = tracemalloc.get_traced_memory()
                assert peak < MAX_DECODE_ALLOCATION, f"{name} at offset {i}: {peak} bytes allocated"
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize(("api_key", "version"), VERSIONS, ids=IDS)
def test_hostile_length_at_every_offset_of_every_request(api_key: int, version: int) -> None:
    cls = message_class(api_key, "request")
    frame = request_frame(populated(SPECS[api_key].request, cls, version, cls), version)
    # from past the fixed header (api key, version, correlation id): the client id onwards
    _sweep(frame, 8, decode_request, REQUEST_ERRORS)


@pytest.mark.parametrize(("api_key", "version"), VERSIONS, ids=IDS)
def test_hostile_length_at_every_offset_of_every_response(api_key: int, version: int) -> None:
    """The client side decodes with the same generated code; a hostile broker is bounded too."""
    cls = message_class(api_key, "response")
    frame = bytes(
        encode_response(api_key, version, 1, populated(SPECS[api_key].response, cls, version, cls))
    )[4:]
    _sweep(frame, 4, lambda f: decode_response(api_key, version, f), (MalformedResponseError,))
