"""The Kafka wire protocol: one codec for zkafka's broker and zkafka's client.

Rules of this package:

1. Pure: bytes in, objects out. Nothing here imports asyncio, socket or kazoo, opens a file or
   keeps connection state.
2. One source of truth: each API is one declarative spec in `schemas/`; the message classes in
   `messages/` are generated from it (`python -m zkafka.protocol.generate`) and the encoders
   and decoders are compiled from it at run time (`codegen/`), once per (api, version, kind).
   Versioned data formats that are not APIs (`__consumer_offsets` records, ConsumerProtocol
   blobs) are `DataSpec`s in `schemas/data/`, generated into `messages/data/` and compiled the
   same way (`codec.encode_data` / `decode_data`).
3. Every malformed input ends in a documented exception (`exceptions.py`), never in a stray
   IndexError or struct.error, and never in a hang: every length read from the wire is checked
   against the bytes that are really there before anything is allocated or looped over.
4. Records stay opaque bytes: decoded as zero-copy memoryviews, encoded without copying when
   the caller asks for parts (`encode_response_parts`).

Entry points: `decode_request` / `encode_response` (broker), `encode_request` /
`decode_response` (client), the message classes (``from zkafka.protocol.messages import
ProduceRequest``), `ErrorCode`, and the advertised table in `api_versions`.
"""

from zkafka.protocol.api_keys import ApiKey
from zkafka.protocol.codec import (
    EncodedRequest,
    decode_body,
    decode_request,
    decode_response,
    encode_body,
    encode_once,
    encode_request,
    encode_response,
    encode_response_parts,
    parts_size,
    peek_request_header,
    precompile,
    response_expected,
    supported_versions,
)
from zkafka.protocol.errors import ErrorCode, KafkaError
from zkafka.protocol.exceptions import (
    DecodeError,
    EncodeError,
    MalformedRequestError,
    MalformedResponseError,
    ProtocolError,
    UnknownApiKeyError,
    UnsupportedVersionError,
)
from zkafka.protocol.headers import (
    RequestHeader,
    ResponseHeader,
    request_header_version,
    response_header_version,
)
from zkafka.protocol.message import DEFAULT, DeferredRecords, Message, RecordsValue

__all__ = [
    "DEFAULT",
    "ApiKey",
    "DecodeError",
    "DeferredRecords",
    "EncodeError",
    "EncodedRequest",
    "ErrorCode",
    "KafkaError",
    "MalformedRequestError",
    "MalformedResponseError",
    "Message",
    "ProtocolError",
    "RecordsValue",
    "RequestHeader",
    "ResponseHeader",
    "UnknownApiKeyError",
    "UnsupportedVersionError",
    "decode_body",
    "decode_request",
    "decode_response",
    "encode_body",
    "encode_once",
    "encode_request",
    "encode_response",
    "encode_response_parts",
    "parts_size",
    "peek_request_header",
    "precompile",
    "request_header_version",
    "response_expected",
    "response_header_version",
    "supported_versions",
]
