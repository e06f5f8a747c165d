"""Frames in, messages out (and back): the one codec the broker and zkafka's client share.

Framing convention:

* **encode_* return the whole frame including the 4-byte size prefix**, ready to write to a
  socket (a `bytearray`, to avoid a copy; treat it as bytes).
* **decode_* take the frame without the size prefix**: the network layer reads the int32 size,
  then exactly that many bytes, and passes them (bytes or a memoryview) here.

Errors: `decode_request` raises only `MalformedRequestError` and `UnsupportedVersionError`
(or its subclass `UnknownApiKeyError`); `decode_response` only `MalformedResponseError`; the
encoders only `EncodeError`. Each carries the Kafka error code a broker should answer with.

Zero-copy fetch responses: `encode_response_parts` returns a list of parts to write in order
(e.g. ``transport.writelines``); large record buffers are their own parts instead of being
copied, and a `DeferredRecords` value appears as itself: the network layer writes exactly
``part.size`` bytes from its source there (``os.pread`` from the segment file). The size
prefix in the first part already counts every part.
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Final, NamedTuple

from zkafka.protocol import codegen, headers
from zkafka.protocol import primitives as prim
from zkafka.protocol.api_keys import ApiKey, api_name
from zkafka.protocol.diagnostics import find_bad_field
from zkafka.protocol.errors import ErrorCode
from zkafka.protocol.exceptions import (
    DecodeError,
    EncodeError,
    MalformedRequestError,
    MalformedResponseError,
    UnknownApiKeyError,
    UnsupportedVersionError,
)
from zkafka.protocol.headers import RequestHeader, ResponseHeader
from zkafka.protocol.message import DeferredRecords, Message
from zkafka.protocol.messages import REQUEST_CLASSES, RESPONSE_CLASSES
from zkafka.protocol.messages.data import DATA_CLASSES
from zkafka.protocol.schema import ApiSpec
from zkafka.protocol.schemas import SPECS
from zkafka.protocol.schemas.data import DATA_SPECS

Part = bytes | bytearray | memoryview | DeferredRecords
VersionTable = Mapping[int, tuple[int, int]]

_SIZE: Final = struct.Struct(">i")
_KINDS: Final = ("request", "response")

# Everything a generated codec can raise on bad input or bad values; converted at the boundary.
_CODEC_FAILURES: Final = (
    struct.error,
    ValueError,
    TypeError,
    AttributeError,
    IndexError,
    OverflowError,
    BufferError,
)

_encoders: dict[tuple[int, str, int], codegen.Encoder] = {}
_decoders: dict[tuple[int, str, int], codegen.Decoder] = {}


# -- lookup and compilation -----------------------------------------------------------------------


def spec_for(api_key: int) -> ApiSpec:
    try:
        return SPECS[api_key]
    except KeyError:
        raise KeyError(f"zkafka's codec does not know api key {api_key} ({api_name(api_key)})") from None


def message_class(api_key: int, kind: str) -> type[Message]:
    table = REQUEST_CLASSES if kind == "request" else RESPONSE_CLASSES
    return table[api_key]


def encoder(api_key: int, kind: str, version: int) -> codegen.Encoder:
    key = (api_key, kind, version)
    fn = _encoders.get(key)
    if fn is None:
        spec = spec_for(api_key)
        if version not in spec.versions:
            raise EncodeError(f"{spec.name} v{version} is outside the codec's versions {spec.versions}")
        fn = _encoders[key] = codegen.build_encoder(spec, kind, version, message_class(api_key, kind))
    return fn


def decoder(api_key: int, kind: str, version: int) -> codegen.Decoder:
    key = (api_key, kind, version)
    fn = _decoders.get(key)
    if fn is None:
        spec = SPECS.get(api_key)
        if spec is None or version not in spec.versions or kind not in _KINDS:
            raise DecodeError(f"the codec cannot decode {api_name(api_key)} {kind} v{version}")
        fn = _decoders[key] = codegen.build_decoder(spec, kind, version, message_class(api_key, kind))
    return fn


def precompile(api_keys: Iterable[int] | None = None) -> int:
    """Compile every codec up front (e.g. at broker start) instead of on first use."""
    count = 0
    for key in SPECS if api_keys is None else api_keys:
        spec = spec_for(key)
        for version in range(spec.versions.low, spec.versions.high + 1):
            for kind in _KINDS:
                encoder(key, kind, version)
                decoder(key, kind, version)
                count += 2
    return count


@functools.cache
def supported_versions() -> Mapping[int, tuple[int, int]]:
    """Every (api key -> (min, max)) this codec can encode and decode. Made once: a client picks a
    version per request from it (a replica fetcher on every fetch)."""
    return MappingProxyType({key: (spec.versions.low, spec.versions.high) for key, spec in SPECS.items()})


# -- data schemas (not APIs: keyed by name) --------------------------------------------------------

_data_encoders: dict[tuple[str, int], codegen.Encoder] = {}
_data_decoders: dict[tuple[str, int], codegen.Decoder] = {}


def data_encoder(name: str, version: int) -> codegen.Encoder:
    """The compiled encoder of data schema `name` at `version` (the body only, no version)."""
    fn = _data_encoders.get((name, version))
    if fn is None:
        spec = DATA_SPECS[name]
        if version not in spec.versions:
            raise EncodeError(f"{name} v{version} is outside its versions {spec.versions}")
        fn = _data_encoders[(name, version)] = codegen.build_encoder(
            spec, "data", version, DATA_CLASSES[name]
        )
    return fn


def data_decoder(name: str, version: int) -> codegen.Decoder:
    """The compiled decoder of data schema `name` at `version`: ``fn(buf, p) -> (message, p)``."""
    fn = _data_decoders.get((name, version))
    if fn is None:
        spec = DATA_SPECS[name]
        if version not in spec.versions:
            raise DecodeError(f"{name} v{version} is outside its versions {spec.versions}")
        fn = _data_decoders[(name, version)] = codegen.build_decoder(
            spec, "data", version, DATA_CLASSES[name]
        )
    return fn


def encode_data(message: Message, version: int, out: bytearray | None = None) -> bytearray:
    """The body of data message `message` at `version`, appended to `out`; raises EncodeError."""
    name = type(message).API_NAME
    fn = _data_encoders.get((name, version)) or data_encoder(name, version)
    try:
        return fn(message, bytearray() if out is None else out, None)
    except _CODEC_FAILURES as exc:
        where = find_bad_field(DATA_SPECS[name].body, message, version, name)
        detail = f"{where}: " if where else ""
        raise EncodeError(f"cannot encode {name} v{version}: {detail}{exc}") from exc


def decode_data(
    name: str, version: int, data: bytes | bytearray | memoryview, p: int = 0
) -> tuple[Message, int]:
    """Data message `name` at `version` from `data` at offset `p`, and the offset after it
    (bytes may follow: the caller decides); raises DecodeError."""
    buf = _as_view(data)
    fn = _data_decoders.get((name, version)) or data_decoder(name, version)
    try:
        return fn(buf, p)
    except _CODEC_FAILURES as exc:
        raise DecodeError(f"bad {name} v{version}: {exc}") from exc


# -- bodies ---------------------------------------------------------------------------------------


def _as_view(frame: bytes | bytearray | memoryview) -> memoryview:
    view = frame if isinstance(frame, memoryview) else memoryview(frame)
    if view.format != "B" or view.ndim != 1:
        view = view.cast("B")
    return view


def encode_body(message: Message, version: int, parts: list[Part] | None = None) -> bytearray:
    """Just the body of `message` at `version` (no header, no size)."""
    out = bytearray()
    return _encode_into(message, version, out, parts)


def _encode_into(message: Message, version: int, out: bytearray, parts: list[Part] | None) -> bytearray:
    cls = type(message)
    fn = _encoders.get((cls.API_KEY, cls.KIND, version))
    if fn is None:
        if cls.KIND not in _KINDS:
            raise EncodeError(f"{cls.__qualname__} is not a request or response message")
        fn = encoder(cls.API_KEY, cls.KIND, version)
    try:
        return fn(message, out, parts)  # type: ignore[arg-type]
    except EncodeError:
        raise
    except _CODEC_FAILURES as exc:
        where = find_bad_field(spec_for(cls.API_KEY).fields(cls.KIND), message, version, cls.__name__)
        detail = f"{where}: " if where else ""
        raise EncodeError(f"cannot encode {cls.__name__} v{version}: {detail}{exc}") from exc


def decode_body(api_key: int, kind: str, version: int, body: bytes | bytearray | memoryview) -> Message:
    """Decode a body that fills `body` exactly; raises DecodeError."""
    buf = _as_view(body)
    return _decode_at(api_key, kind, version, buf, 0)


def _decode_at(
    api_key: int, kind: str, version: int, buf: memoryview, p: int, *, trailing_ok: bool = False
) -> Message:
    fn = _decoders.get((api_key, kind, version)) or decoder(api_key, kind, version)
    try:
        message, p = fn(buf, p)
    except _CODEC_FAILURES as exc:
        raise DecodeError(f"bad {api_name(api_key)} {kind} v{version}: {exc}") from exc
    if p != len(buf) and not trailing_ok:
        raise DecodeError(f"{api_name(api_key)} {kind} v{version}: {len(buf) - p} bytes after the body")
    return message


def _finish_frame(out: bytearray) -> bytearray:
    _SIZE.pack_into(out, 0, len(out) - 4)
    return out


# -- requests -------------------------------------------------------------------------------------


class EncodedRequest(Message):
    """A request body encoded once, to be sent as it is, perhaps to many brokers (the controller's
    UpdateMetadata: the same partition states for every broker, only the broker epoch differs).
    Made by `encode_once`; `with_int64_at` gives a copy with one fixed-position int64 replaced.
    Its class carries the request's API_KEY and API_NAME, so code that reads them off the type
    (connections, the controller's channels) treats it like the request it was made from."""

    __slots__ = ("body", "version")
    KIND = "request"

    def __init__(self, body: bytes, version: int) -> None:
        self.body = body
        self.version = version

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        assert isinstance(other, EncodedRequest)
        return (self.body, self.version) == (other.body, other.version)

    def __repr__(self) -> str:
        return f"{type(self).__qualname__}(v{self.version}, {len(self.body)} bytes)"

    def with_int64_at(self, offset: int, value: int) -> EncodedRequest:
        if not 0 <= offset <= len(self.body) - 8:
            raise EncodeError(f"no int64 at byte {offset} of a {len(self.body)}-byte body")
        body = bytearray(self.body)
        _INT64.pack_into(body, offset, value)
        return type(self)(bytes(body), self.version)


_INT64: Final = struct.Struct(">q")
_encoded_request_types: dict[int, type[EncodedRequest]] = {}


def encode_once(request: Message, version: int) -> EncodedRequest:
    """`request`'s body at `version`, encoded now (an EncodeError is raised here, not when sent)."""
    cls = type(request)
    if cls.KIND != "request":
        raise EncodeError(f"{cls.__qualname__} is not a request")
    kind = _encoded_request_types.get(cls.API_KEY)
    if kind is None:
        namespace = {"__slots__": (), "API_KEY": cls.API_KEY, "API_NAME": cls.API_NAME}
        kind = type(f"Encoded{cls.__name__}", (EncodedRequest,), namespace)
        _encoded_request_types[cls.API_KEY] = kind
    return kind(bytes(encode_body(request, version)), version)


def encode_request(header: RequestHeader, request: Message) -> bytearray:
    """A complete request frame (size prefix included) for `header.api_version`."""
    cls = type(request)
    if cls.KIND != "request" or header.api_key != cls.API_KEY:
        raise EncodeError(f"{cls.__qualname__} does not match api key {header.api_key} of the header")
    if isinstance(request, EncodedRequest) and request.version != header.api_version:
        raise EncodeError(f"{cls.__qualname__} was encoded at v{request.version}, not v{header.api_version}")
    out = bytearray(4)
    try:
        headers.write_request_header(out, header)
    except (struct.error, TypeError, AttributeError, ValueError) as exc:
        raise EncodeError(f"bad request header {header}: {exc}") from exc
    if isinstance(request, EncodedRequest):
        out += request.body
        return _finish_frame(out)
    return _finish_frame(_encode_into(request, header.api_version, out, None))


def peek_request_header(frame: bytes | bytearray | memoryview) -> RequestHeader:
    """api_key, api_version and correlation_id of a request frame, nothing else parsed."""
    return headers.peek_fixed_header(_as_view(frame))


def decode_request(
    frame: bytes | bytearray | memoryview, supported: VersionTable | None = None
) -> tuple[RequestHeader, Message]:
    """Header and request from a frame (without its size prefix).

    `supported` (api key -> (min, max)) narrows what is accepted, e.g. to the versions the
    broker advertises; by default every version the codec knows is accepted. The api key and
    version are checked before anything else is parsed, so an unsupported request is reported
    even when its body (or a newer header layout) is not understood.
    """
    buf = frame if type(frame) is memoryview else memoryview(frame)  # bytes, bytearray: format "B"
    if len(buf) >= headers.FIXED_REQUEST_HEADER_SIZE:
        api_key, api_version, correlation_id = _FIXED_HEADER.unpack_from(buf, 0)
        plan = _request_plans.get((api_key, api_version))
        if plan is not None and supported is not None:
            limits = supported.get(api_key)
            if limits is None or not limits[0] <= api_version <= limits[1]:
                plan = None
        if plan is not None:
            return _decode_planned(buf, RequestHeader(api_key, api_version, correlation_id), plan)
    buf = _as_view(frame)
    fixed = headers.peek_fixed_header(buf)
    spec = SPECS.get(fixed.api_key)
    limits = supported.get(fixed.api_key) if supported is not None else None
    if spec is None or (supported is not None and limits is None):
        _best_effort_client_id(buf, fixed)
        raise UnknownApiKeyError(
            f"api key {fixed.api_key} ({api_name(fixed.api_key)}) is not supported", fixed
        )
    lo, hi = limits if limits is not None else (spec.versions.low, spec.versions.high)
    if not (lo <= fixed.api_version <= hi and fixed.api_version in spec.versions):
        _best_effort_client_id(buf, fixed)
        raise UnsupportedVersionError(
            f"{spec.name} v{fixed.api_version} is not supported (versions {lo}-{hi})", fixed
        )
    # Bytes after a flexible request's body are ignored, as Kafka ignores them: librdkafka 2.x
    # reserves 4 bytes for an array count and, in its Metadata v9+ "all topics" request, leaves
    # the 3 unused ones in place after the 1-byte compact null. Classic versions end exactly.
    plan = _RequestPlan(
        _decoders.get((fixed.api_key, "request", fixed.api_version))
        or decoder(fixed.api_key, "request", fixed.api_version),
        headers.request_header_version(fixed.api_key, fixed.api_version),
        spec.is_flexible(fixed.api_version),
    )
    _request_plans[(fixed.api_key, fixed.api_version)] = plan
    return _decode_planned(buf, fixed, plan)


class _RequestPlan(NamedTuple):
    """How a request of one (api key, version) the codec supports is read: worked out once, so a
    request's decoding is its header's fields and its body (every small Produce request paid the
    schema's version checks and header-layout rules anew: half its decoding time)."""

    decode: codegen.Decoder
    header_version: int
    trailing_ok: bool


_request_plans: dict[tuple[int, int], _RequestPlan] = {}
_FIXED_HEADER: Final = struct.Struct(">hhi")


def _decode_planned(
    buf: memoryview, header: RequestHeader, plan: _RequestPlan
) -> tuple[RequestHeader, Message]:
    header, p = headers.read_request_header(buf, header, plan.header_version)
    try:
        request, p = plan.decode(buf, p)
    except _CODEC_FAILURES as exc:
        raise MalformedRequestError(
            f"bad {api_name(header.api_key)} request v{header.api_version}: {exc}", header
        ) from exc
    if p != len(buf) and not plan.trailing_ok:
        raise MalformedRequestError(
            f"{api_name(header.api_key)} request v{header.api_version}: {len(buf) - p} bytes after the body",
            header,
        )
    return header, request


def _best_effort_client_id(buf: memoryview, header: RequestHeader) -> None:
    """Fill in client_id for error reporting when the classic layout allows it."""
    try:
        header.client_id, _ = prim.read_nullable_string(buf, headers.FIXED_REQUEST_HEADER_SIZE, len(buf))
    except ValueError:
        header.client_id = None


def response_expected(request: Message) -> bool:
    """False only for Produce with acks=0: the broker must not answer it at all."""
    return not (type(request).API_KEY == ApiKey.PRODUCE and getattr(request, "acks", None) == 0)


# -- responses ------------------------------------------------------------------------------------


def _response_start(api_key: int, api_version: int, correlation_id: int, response: Message) -> bytearray:
    """A buffer holding the size placeholder and the response header, after sanity checks."""
    cls = type(response)
    if cls.KIND != "response" or api_key != cls.API_KEY:
        raise EncodeError(f"{cls.__qualname__} is not a response for api key {api_key}")
    out = bytearray(4)
    try:
        headers.write_response_header(out, api_key, api_version, correlation_id)
    except (struct.error, TypeError) as exc:
        raise EncodeError(f"bad correlation id {correlation_id!r}: {exc}") from exc
    return out


def encode_response(api_key: int, api_version: int, correlation_id: int, response: Message) -> bytearray:
    """A complete response frame (size prefix included). Records values are copied in;
    `DeferredRecords` values are materialized (use `encode_response_parts` to avoid both)."""
    out = _response_start(api_key, api_version, correlation_id, response)
    return _finish_frame(_encode_into(response, api_version, out, None))


def encode_response_parts(
    api_key: int, api_version: int, correlation_id: int, response: Message
) -> list[Part]:
    """The response frame as parts to write in order; see the module docstring."""
    parts: list[Part] = []
    first = _response_start(api_key, api_version, correlation_id, response)
    tail = _encode_into(response, api_version, first, parts)
    if not parts:
        parts.append(first)
    elif tail:
        parts.append(tail)
    if parts[0] is not first:  # pragma: no cover - write_records always flushes the header first
        raise AssertionError("the first part must hold the size prefix")
    _SIZE.pack_into(first, 0, parts_size(parts) - 4)
    return parts


def parts_size(parts: Iterable[Part]) -> int:
    """Bytes the parts occupy on the wire (size prefix included)."""
    total = 0
    for part in parts:
        kind = type(part)
        if kind is bytearray or kind is bytes:
            total += len(part)  # type: ignore[arg-type]
        elif kind is memoryview:
            total += part.nbytes  # type: ignore[union-attr]
        else:
            total += prim.records_size(part)
    return total


def decode_response(
    api_key: int, api_version: int, frame: bytes | bytearray | memoryview
) -> tuple[ResponseHeader, Message]:
    """Header and response from a frame (without its size prefix), for the request version sent.

    ApiVersions: a broker that does not support the version answers with a v0 body carrying
    UNSUPPORTED_VERSION; that body is decoded as v0 (so `api_keys` tells the client what to
    retry with), whatever version was asked for.
    """
    buf = _as_view(frame)
    if api_key not in SPECS or api_version not in SPECS[api_key].versions:
        raise MalformedResponseError(f"{api_name(api_key)} v{api_version} is outside the codec's versions")
    try:
        header, p = headers.read_response_header(buf, api_key, api_version)
        version = api_version
        if api_key == ApiKey.API_VERSIONS and api_version > 0 and len(buf) >= p + 2:
            (error_code,) = prim.INT16.unpack_from(buf, p)
            if error_code == ErrorCode.UNSUPPORTED_VERSION:
                version = 0
        return header, _decode_at(api_key, "response", version, buf, p)
    except (DecodeError, ValueError, struct.error) as exc:
        raise MalformedResponseError(str(exc)) from exc
