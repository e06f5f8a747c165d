"""The request and response header values (their encoding is in `headers.py`). A module of their own
so that the exceptions that carry a header need not import the header codec."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["RequestHeader", "ResponseHeader"]


@dataclass(slots=True)
class RequestHeader:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None = None


@dataclass(slots=True)
class ResponseHeader:
    correlation_id: int
