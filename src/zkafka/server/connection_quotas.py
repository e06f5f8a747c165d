"""`ConnectionQuotas`: which new connections a broker accepts, and which idle ones it closes.

Kafka's keys: `max.connections` (all client listeners together), `max.connections.per.ip` with
`max.connections.per.ip.overrides`, `max.connection.creation.rate` (KIP-612, per listener, per
second) and `connections.max.idle.ms`. Connections to the inter-broker listener are neither limited
nor counted, so brokers are never locked out of each other (Kafka exempts them from the broker-wide
limit and rate; zkafka from the per-address limit too, since brokers of a local cluster share
127.0.0.1). As in Kafka, a broker with a single listener uses it for both, so the limits apply to a
client listener of its own. Kafka delays accepting beyond the creation rate; zkafka
closes the excess connection at once, which a client sees as a connection it retries with its
backoff. Refusals are logged through `RateLimitedLog`: a flood writes one line per minute per kind,
not one per connection.

Addresses are compared in one canonical form (`canonical_ip`): an IPv4 client of a dual-stack
listener (`::ffff:10.0.0.1`) counts as `10.0.0.1`, and override keys that are host names are
resolved once at startup, as Kafka does.

A connection is idle when the broker is waiting on its client: one with a request in flight, or
muted because `queued.max.request.bytes` is exhausted, is waiting on the broker and is not closed.
"""

from __future__ import annotations

import ipaddress
import logging
import socket
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from typing import Protocol

from zkafka.logs import RateLimitedLog

__all__ = ["ConnectionQuotas", "TrackedConnection", "canonical_ip", "summarise_logs"]

log = logging.getLogger("zkafka.server.network")
limited = RateLimitedLog(log)


class TrackedConnection(Protocol):
    """What the quotas need of a connection."""

    @property
    def last_active(self) -> float: ...

    @property
    def waiting_on_broker(self) -> bool: ...

    def abort(self, reason: str, *, level: int = logging.WARNING) -> None: ...


def canonical_ip(address: str) -> str:
    """The form addresses are counted and overridden in: compressed, IPv4-mapped IPv6 as IPv4."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])  # drop an IPv6 zone (fe80::1%eth0)
    except ValueError:
        return address  # not an address (a Unix socket path): counted as given
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return str(ip.ipv4_mapped)
    return str(ip)


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return False
    return True


def _resolve_overrides(overrides: Mapping[str, int]) -> dict[str, int]:
    out: dict[str, int] = {}
    for host, count in overrides.items():
        if _is_ip(host):
            out[canonical_ip(host)] = count
            continue
        try:  # a host name: Kafka resolves it once (InetAddress.getByName); so do we, at startup
            out[canonical_ip(socket.gethostbyname(host))] = count
        except OSError as e:
            log.warning("max.connections.per.ip.overrides: cannot resolve %r (%s); ignored", host, e)
    return out


class ConnectionQuotas:
    def __init__(
        self,
        *,
        max_connections: int,
        max_per_ip: int,
        per_ip_overrides: Mapping[str, int] | None = None,
        max_creation_rate: int,
        inter_broker_listener: str | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._max_connections = max_connections
        self._max_per_ip = max_per_ip
        self._overrides = _resolve_overrides(per_ip_overrides or {})
        self._max_rate = max_creation_rate
        self._inter_broker = inter_broker_listener
        self._clock = clock
        self._per_ip: Counter[str] = Counter()
        self._total = 0
        self._rate_window: dict[str, tuple[int, int]] = {}  # listener -> (second, accepted in it)
        self.refused = 0

    def reconfigure(
        self,
        *,
        max_connections: int,
        max_per_ip: int,
        per_ip_overrides: Mapping[str, int],
        max_creation_rate: int,
    ) -> None:
        """New limits (dynamic broker configs): they apply to the next connection; connections
        already open above a lowered limit stay open, as in Kafka."""
        self._max_connections = max_connections
        self._max_per_ip = max_per_ip
        self._overrides = _resolve_overrides(per_ip_overrides)
        self._max_rate = max_creation_rate

    @property
    def total(self) -> int:
        return self._total

    def count(self, ip: str) -> int:
        return self._per_ip[ip]

    def limit_for(self, ip: str) -> int:
        return self._overrides.get(ip, self._max_per_ip)

    def accept(self, ip: str, listener: str) -> bool:
        """Admit a new connection from `ip` on `listener` (counted until `closed`), or refuse it.
        Inter-broker connections are admitted and not counted: call `closed` only for counted ones."""
        if listener == self._inter_broker:
            return True
        reason = self._refusal(ip, listener)
        if reason is not None:
            self.refused += 1
            limited.warning(("refused", reason[0]), "refusing a connection from %s: %s", ip, reason[1])
            return False
        self._per_ip[ip] += 1
        self._total += 1
        return True

    def _refusal(self, ip: str, listener: str) -> tuple[str, str] | None:
        if self._total >= self._max_connections:
            return "max", f"max.connections={self._max_connections} reached"
        if self._per_ip[ip] >= self.limit_for(ip):
            return "per-ip", f"max.connections.per.ip={self.limit_for(ip)} reached for {ip}"
        second = int(self._clock())
        window_second, accepted = self._rate_window.get(listener, (second, 0))
        if window_second != second:
            accepted = 0
        if accepted >= self._max_rate:
            return "rate", f"max.connection.creation.rate={self._max_rate}/s reached on {listener}"
        self._rate_window[listener] = (second, accepted + 1)
        return None

    def counts(self, listener: str) -> bool:
        """Whether connections on `listener` are counted (all but the inter-broker listener's)."""
        return listener != self._inter_broker

    def closed(self, ip: str) -> None:
        if self._per_ip[ip] > 0:
            self._per_ip[ip] -= 1
            if self._per_ip[ip] == 0:
                del self._per_ip[ip]
            self._total -= 1

    def close_idle(self, connections: Iterable[TrackedConnection], max_idle_s: float) -> int:
        """Close connections without a byte read or written for `max_idle_s` that owe the broker
        their next bytes (not those waiting on a response or on request memory); how many."""
        now = self._clock()
        idle = [c for c in connections if now - c.last_active > max_idle_s and not c.waiting_on_broker]
        reason = f"idle for more than connections.max.idle.ms={int(max_idle_s * 1000)}"
        for conn in idle:
            # Routine housekeeping (Kafka logs it at debug), not a warning; still rate-limited.
            conn.abort(reason, level=logging.INFO)
        return len(idle)


def summarise_logs() -> int:
    """Write the counts of refusals held back in windows that have closed (a periodic task calls
    this, so a flood that stopped is still reported)."""
    return limited.flush()
