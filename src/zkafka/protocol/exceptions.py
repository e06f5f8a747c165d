"""The exceptions the codec raises: every bad input ends in one of these, never in IndexError
or struct.error.

Each carries the Kafka error code a broker should answer with, and the request header as far
as it could be read, so the broker can reply (or log) with the right correlation id.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from zkafka.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from zkafka.protocol.header_types import RequestHeader


class ProtocolError(Exception):
    """Base class of all codec errors."""

    error_code: ErrorCode = ErrorCode.UNKNOWN_SERVER_ERROR


class EncodeError(ProtocolError, ValueError):
    """A message object cannot be written at the requested version (bad value, wrong type,
    null where the version does not allow it, version outside the codec's range)."""


class DecodeError(ProtocolError, ValueError):
    """Bytes that are not a valid message: truncated, inconsistent lengths, bad UTF-8,
    trailing garbage."""

    error_code = ErrorCode.INVALID_REQUEST


class MalformedRequestError(DecodeError):
    """A request frame could not be decoded. `header` is None when even the fixed part of the
    request header (api key, version, correlation id) was missing: close the connection."""

    def __init__(self, message: str, header: RequestHeader | None = None) -> None:
        super().__init__(message)
        self.header = header


class MalformedResponseError(DecodeError):
    """A response frame could not be decoded."""


class UnsupportedVersionError(ProtocolError):
    """The request's api key is known but its version is not served. Kafka answers
    ApiVersions with a v0 UNSUPPORTED_VERSION body (see `api_versions`) and closes the
    connection for any other API."""

    error_code = ErrorCode.UNSUPPORTED_VERSION

    def __init__(self, message: str, header: RequestHeader) -> None:
        super().__init__(message)
        self.header = header


class UnknownApiKeyError(UnsupportedVersionError):
    """The request's api key is not served at all."""

    error_code = ErrorCode.INVALID_REQUEST
