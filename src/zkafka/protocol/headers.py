"""Request and response headers, and which header version goes with which (api, version).

Layouts (`reference/wire-protocol.md` §2.2)::

    request header v0   api_key int16 | api_version int16 | correlation_id int32
    request header v1   v0 | client_id nullable string (int16 length)
    request header v2   v1 | tagged fields          <- client_id stays a classic string, so the
                                                       fixed part is readable before the broker
                                                       knows whether it supports the version
    response header v0  correlation_id int32
    response header v1  correlation_id int32 | tagged fields

Rules: flexible API versions use request header v2 / response header v1, others v1 / v0;
ControlledShutdown v0 uses request header v0; ApiVersions responses always use header v0.
"""

from __future__ import annotations

import struct
from typing import Final

from zkafka.protocol import primitives as prim
from zkafka.protocol.api_keys import ApiKey
from zkafka.protocol.exceptions import MalformedRequestError
from zkafka.protocol.header_types import RequestHeader, ResponseHeader
from zkafka.protocol.schemas import SPECS

_FIXED: Final = struct.Struct(">hhi")
FIXED_REQUEST_HEADER_SIZE: Final = _FIXED.size


def request_header_version(api_key: int, api_version: int) -> int:
    spec = SPECS.get(api_key)
    if spec is None:
        return 1  # unknown API: the classic header is the best guess, only used for logging
    if api_version in spec.request_header_v0:
        return 0
    # A flexible range "N+" also covers versions newer than the codec knows, so the header of
    # an unsupported newer request is still parsed correctly.
    return 2 if spec.is_flexible(api_version) else 1


def response_header_version(api_key: int, api_version: int) -> int:
    if api_key == ApiKey.API_VERSIONS:
        return 0  # clients parse it before they know the negotiated version
    spec = SPECS.get(api_key)
    return 1 if spec is not None and spec.is_flexible(api_version) else 0


def write_request_header(out: bytearray, header: RequestHeader) -> None:
    version = request_header_version(header.api_key, header.api_version)
    out += _FIXED.pack(header.api_key, header.api_version, header.correlation_id)
    if version >= 1:
        prim.write_nullable_string(out, header.client_id)
    if version >= 2:
        out.append(0)  # no tagged fields


def peek_fixed_header(buf: memoryview) -> RequestHeader:
    """api_key, api_version and correlation_id only: what a broker needs to reject a request."""
    if len(buf) < FIXED_REQUEST_HEADER_SIZE:
        raise MalformedRequestError(f"frame of {len(buf)} bytes is shorter than a request header")
    api_key, api_version, correlation_id = _FIXED.unpack_from(buf, 0)
    return RequestHeader(api_key, api_version, correlation_id)


def read_request_header(
    buf: memoryview, fixed: RequestHeader | None = None, version: int | None = None
) -> tuple[RequestHeader, int]:
    """The whole request header and the offset of the body (`fixed`: from peek_fixed_header;
    `version`: the header version, when the caller knows it)."""
    header = peek_fixed_header(buf) if fixed is None else fixed
    end = len(buf)
    p = FIXED_REQUEST_HEADER_SIZE
    if version is None:
        version = request_header_version(header.api_key, header.api_version)
    try:
        if version >= 1:
            header.client_id, p = prim.read_nullable_string(buf, p, end)
        if version >= 2:
            count, p = prim.read_tag_count(buf, p, end)
            for _ in range(count):  # header tags are unknown to us: skip them
                _, _, p = prim.skip_tagged_field(buf, p, end)
    except ValueError as exc:  # WireFormatError, bad UTF-8
        raise MalformedRequestError(f"bad request header: {exc}", header) from exc
    return header, p


def write_response_header(out: bytearray, api_key: int, api_version: int, correlation_id: int) -> None:
    out += prim.INT32.pack(correlation_id)
    if response_header_version(api_key, api_version) >= 1:
        out.append(0)


def read_response_header(buf: memoryview, api_key: int, api_version: int) -> tuple[ResponseHeader, int]:
    """Raises WireFormatError (a ValueError) on bad input; the codec wraps it."""
    end = len(buf)
    if end < 4:
        raise prim.truncated("response header")
    (correlation_id,) = prim.INT32.unpack_from(buf, 0)
    p = 4
    if response_header_version(api_key, api_version) >= 1:
        count, p = prim.read_tag_count(buf, p, end)
        for _ in range(count):
            _, _, p = prim.skip_tagged_field(buf, p, end)
    return ResponseHeader(correlation_id), p
