"""Kafka's `Sanitizer`: how user principals and client ids become znode names.

Java's `URLEncoder.encode(name, UTF-8)` leaves `A-Z a-z 0-9 . - * _` alone, turns a space into `+` and
percent-encodes every other UTF-8 byte in upper-case hex. Kafka then rewrites `*` to `%2A` (JMX
patterns treat `*` specially) and `+` to `%20`, so the result only ever contains `[A-Za-z0-9._-]` and
`%XX`. Python's `quote(safe="")` differs from URLEncoder only in leaving `~` alone.
"""

from __future__ import annotations

import re
from urllib.parse import quote, unquote_to_bytes

__all__ = ["DEFAULT_ENTITY", "desanitize", "sanitize"]

DEFAULT_ENTITY = "<default>"
"""The default entity name, used raw (never sanitized) in `/config/<type>/<default>`."""

_SANITIZED_RE = re.compile(r"^(?:[A-Za-z0-9._*+-]|%[0-9A-Fa-f]{2})*$")


def sanitize(name: str) -> str:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError as e:
        raise ValueError(f"name {name!r} is not encodable as UTF-8: {e.reason}") from None
    return quote(name, safe="").replace("~", "%7E")


def desanitize(name: str) -> str:
    """Inverse of `sanitize` (Java URLDecoder semantics: `+` is a space)."""
    if not _SANITIZED_RE.match(name):
        raise ValueError(f"{name!r} is not a URL-encoded entity name")
    raw = unquote_to_bytes(name.replace("+", " "))
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"{name!r} does not decode to UTF-8") from None
