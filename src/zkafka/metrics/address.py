"""The `metrics.listener` value: `http://host:port` (port 0 = any free port)."""

from __future__ import annotations

from urllib.parse import urlsplit

__all__ = ["parse_metrics_listener"]


def parse_metrics_listener(text: str) -> tuple[str, int]:
    """(host, port) of `http://host:port`; ValueError saying what is wrong otherwise. An empty host
    (`http://:9404`) binds every interface."""
    parts = urlsplit(text.strip())
    if parts.scheme != "http":
        raise ValueError(f"metrics listener must be http://host:port, got {text!r}")
    if parts.path not in ("", "/") or parts.query or parts.fragment or parts.username or parts.password:
        raise ValueError(f"metrics listener must be just http://host:port, got {text!r}")
    try:
        port = parts.port
    except ValueError:
        port = None
    if port is None:
        raise ValueError(f"metrics listener needs a port (0 = any free one), got {text!r}")
    return parts.hostname or "", port
