"""Listeners: `NAME://host:port` endpoints and the listener-name -> security-protocol map.

Listener names are case-insensitive and kept upper-case, as Kafka normalises them. An IPv6 host is
written in brackets (`PLAINTEXT://[::1]:9092`); an empty host means "all interfaces" when binding.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

# Wire ids of the security protocols (UpdateMetadata's SecurityProtocol int16).
SECURITY_PROTOCOL_IDS: dict[str, int] = {"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}
DEFAULT_PROTOCOL_MAP: dict[str, str] = {p: p for p in SECURITY_PROTOCOL_IDS}

_LISTENER_NAME = re.compile(r"[A-Za-z0-9_-]+", re.ASCII)
# Kafka's host alphabet: names, IPv4, IPv6 (with scope ids after '%').
_HOST = re.compile(r"[0-9A-Za-z._%:-]*", re.ASCII)
_PORT = re.compile(r"-?[0-9]+", re.ASCII)


@dataclass(frozen=True, slots=True)
class Endpoint:
    """One listener: where the broker binds (listeners) or what it tells clients (advertised)."""

    listener_name: str
    host: str  # "" = bind all interfaces
    port: int  # 0 = an ephemeral port chosen at bind time
    security_protocol: str

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.listener_name}://{host}:{self.port}"

    @property
    def security_protocol_id(self) -> int:
        return SECURITY_PROTOCOL_IDS[self.security_protocol]


def parse_listener(text: str, protocol_map: Mapping[str, str] | None = None) -> Endpoint:
    """Parse `NAME://host:port`; the protocol comes from `protocol_map` (default: Kafka's map).

    Raises ValueError with the reason.
    """
    return resolve_protocols((_parse_address(text),), protocol_map)[0]


def parse_listeners(
    text: str, protocol_map: Mapping[str, str] | None = None, *, resolve: bool = True
) -> tuple[Endpoint, ...]:
    """Parse a comma-separated listener list: at least one, names unique; raises ValueError.

    With `resolve=False` the security protocols are left empty, for a caller that learns the
    protocol map later (`resolve_protocols`).
    """
    endpoints = tuple(_parse_address(part) for part in text.split(",") if part.strip())
    if not endpoints:
        raise ValueError("no listener given")
    names = [e.listener_name for e in endpoints]
    for name in names:
        if names.count(name) > 1:
            raise ValueError(f"listener name {name} is used twice")
    return resolve_protocols(endpoints, protocol_map) if resolve else endpoints


def resolve_protocols(
    endpoints: Iterable[Endpoint], protocol_map: Mapping[str, str] | None = None
) -> tuple[Endpoint, ...]:
    """The endpoints with their security protocol looked up by listener name; raises ValueError."""
    protocols = DEFAULT_PROTOCOL_MAP if protocol_map is None else protocol_map
    out = []
    for e in endpoints:
        protocol = protocols.get(e.listener_name)
        if protocol is None:
            raise ValueError(f"listener {e.listener_name} has no entry in listener.security.protocol.map")
        out.append(replace(e, security_protocol=protocol))
    return tuple(out)


def _parse_address(text: str) -> Endpoint:
    name, sep, rest = text.strip().partition("://")
    if not sep:
        raise ValueError(f"{text.strip()!r} is not NAME://host:port")
    if not _LISTENER_NAME.fullmatch(name):
        raise ValueError(f"bad listener name {name!r} in {text.strip()!r}")
    if rest.startswith("["):
        host, bracket, port_text = rest[1:].partition("]")
        if not bracket or not port_text.startswith(":"):
            raise ValueError(f"{text.strip()!r}: an IPv6 host must be written [host]:port")
        port_text = port_text[1:]
    else:
        host, colon, port_text = rest.rpartition(":")
        if not colon:
            raise ValueError(f"{text.strip()!r} has no port")
    if not _HOST.fullmatch(host):
        raise ValueError(f"bad host {host!r} in {text.strip()!r}")
    if not _PORT.fullmatch(port_text) or not 0 <= int(port_text) <= 65535:
        raise ValueError(f"port {port_text!r} in {text.strip()!r} is not in 0-65535")
    return Endpoint(name.upper(), host, int(port_text), "")


def format_listeners(endpoints: Iterable[Endpoint]) -> str:
    return ",".join(str(e) for e in endpoints)


def parse_protocol_map(text: str) -> dict[str, str]:
    """Parse `NAME:PROTOCOL,...` (names upper-cased, protocols checked); raises ValueError."""
    result: dict[str, str] = {}
    for entry in (e.strip() for e in text.split(",")):
        if not entry:
            continue
        name, colon, protocol = (s.strip() for s in entry.partition(":"))
        if not colon or not _LISTENER_NAME.fullmatch(name):
            raise ValueError(f"entry {entry!r} is not NAME:PROTOCOL")
        if protocol.upper() not in SECURITY_PROTOCOL_IDS:
            raise ValueError(f"{protocol!r} is not a security protocol ({', '.join(SECURITY_PROTOCOL_IDS)})")
        if name.upper() in result:
            raise ValueError(f"listener {name.upper()} appears twice")
        result[name.upper()] = protocol.upper()
    if not result:
        raise ValueError("the map is empty")
    return result


def format_protocol_map(protocol_map: Mapping[str, str]) -> str:
    return ",".join(f"{name}:{protocol}" for name, protocol in protocol_map.items())


def check_distinct_ports(endpoints: Iterable[Endpoint]) -> None:
    """Two bound listeners cannot share a non-zero port, unless one is IPv4 and the other IPv6."""
    seen: dict[int, list[Endpoint]] = {}
    for e in endpoints:
        if e.port == 0:
            continue
        for other in seen.get(e.port, []):
            if not _different_ip_families(e.host, other.host):
                raise ValueError(f"{other} and {e} use the same port {e.port}")
        seen.setdefault(e.port, []).append(e)


def is_host(text: str) -> bool:
    """A non-empty host in the alphabet listeners accept (name, IPv4 or unbracketed IPv6)."""
    return bool(text) and bool(_HOST.fullmatch(text))


def is_meta_address(host: str) -> bool:
    """0.0.0.0 / :: mean "any interface": fine to bind, useless to advertise."""
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_unspecified
    except ValueError:
        return False


def _different_ip_families(a: str, b: str) -> bool:
    try:
        return ipaddress.ip_address(a).version != ipaddress.ip_address(b).version
    except ValueError:
        return False
