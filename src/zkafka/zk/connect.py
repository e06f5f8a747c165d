"""`zookeeper.connect` strings: `host:port[,host:port...][/chroot]`.

The chroot may appear once, after the whole host list (ZooKeeper's ConnectStringParser splits at the
first `/`). `host:2181/` means "no chroot", as in ZooKeeper. A port may be omitted (ZooKeeper's
default 2181 applies). IPv6 hosts are written in brackets: `[::1]:2181`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["DEFAULT_ZK_PORT", "ConnectString", "parse_connect_string", "validate_znode_path"]

DEFAULT_ZK_PORT = 2181

_HOST_RE = re.compile(
    r"^(?:\[(?P<v6>[0-9A-Fa-f:.%a-zA-Z]+)\]|(?P<name>[A-Za-z0-9._-]+))(?::(?P<port>[0-9]+))?$"
)


@dataclass(frozen=True)
class ConnectString:
    hosts: str
    """The host list exactly as given, e.g. `zk1:2181,zk2:2181`."""
    chroot: str | None
    """`/kafka`, or None when the connect string has no chroot."""

    def __str__(self) -> str:
        return self.hosts + (self.chroot or "")

    @property
    def host_ports(self) -> list[tuple[str, int]]:
        out = []
        for entry in self.hosts.split(","):
            m = _HOST_RE.match(entry)
            assert m is not None  # validated by parse_connect_string
            out.append((m["v6"] or m["name"], int(m["port"] or DEFAULT_ZK_PORT)))
        return out


def validate_znode_path(path: str, *, what: str = "path") -> str:
    """ZooKeeper's own path rules (PathUtils.validatePath); returns the path or raises ValueError."""
    if not path:
        raise ValueError(f"{what} must not be empty")
    if not path.startswith("/"):
        raise ValueError(f"{what} {path!r} must start with '/'")
    if path == "/":
        return path
    if path.endswith("/"):
        raise ValueError(f"{what} {path!r} must not end with '/'")
    for segment in path[1:].split("/"):
        if not segment:
            raise ValueError(f"{what} {path!r} contains an empty segment ('//')")
        if segment in (".", ".."):
            raise ValueError(f"{what} {path!r} contains a relative segment {segment!r}")
    for ch in path:
        code = ord(ch)
        if (
            code == 0
            or 0x01 <= code <= 0x1F
            or 0x7F <= code <= 0x9F
            or 0xD800 <= code <= 0xF8FF
            or code
            in (
                0xFFF0,
                0xFFFE,
                0xFFFF,
            )
        ):
            raise ValueError(f"{what} {path!r} contains an invalid character U+{code:04X}")
    return path


def parse_connect_string(s: str) -> ConnectString:
    """Parse and validate `host:port,host:port/chroot`; ValueError with a clear message otherwise."""
    if not isinstance(s, str) or not s.strip():
        raise ValueError("ZooKeeper connect string is empty (expected host:port[,host:port...][/chroot])")
    if s != s.strip() or any(c.isspace() for c in s):
        raise ValueError(f"ZooKeeper connect string {s!r} must not contain whitespace")
    slash = s.find("/")
    hosts, chroot = (s, None) if slash < 0 else (s[:slash], s[slash:])
    if not hosts:
        raise ValueError(f"ZooKeeper connect string {s!r} has no hosts before the chroot")
    for entry in hosts.split(","):
        m = _HOST_RE.match(entry)
        if not entry:
            raise ValueError(f"ZooKeeper connect string {s!r} has an empty host entry")
        if m is None:
            raise ValueError(f"ZooKeeper connect string {s!r}: bad host entry {entry!r} (expected host:port)")
        if m["port"] is not None and not 1 <= int(m["port"]) <= 65535:
            raise ValueError(f"ZooKeeper connect string {s!r}: port {m['port']} out of range 1-65535")
    if chroot is not None:
        if "," in chroot:
            raise ValueError(
                f"ZooKeeper connect string {s!r}: the chroot may appear only once, after the whole host "
                "list (e.g. zk1:2181,zk2:2181/kafka)"
            )
        if chroot == "/":
            chroot = None  # ZooKeeper treats a lone "/" as no chroot
        else:
            validate_znode_path(chroot, what="chroot")
    return ConnectString(hosts=hosts, chroot=chroot)
