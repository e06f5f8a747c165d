"""What a console is started with."""

from __future__ import annotations

from dataclasses import dataclass

from zkafka.client.security import ClientSecurity


@dataclass(frozen=True, slots=True)
class ConsoleSettings:
    bootstrap_servers: str
    zookeeper_connect: str | None = None
    """Without it the console shows what the brokers answer and nothing of ZooKeeper's own."""
    read_only: bool = False
    refresh_s: int = 5
    """How often the overview reloads itself (0: never)."""
    request_timeout_ms: int = 10_000
    """Per Kafka request: a page waits at most about this long for a dead broker."""
    max_records: int = 100
    """The most records one records page shows."""
    security: ClientSecurity | None = None
    """TLS/SASL of the console's own broker connections (`zkafka ui --command-config`): the
    principal the brokers' authorizer judges every page and action by."""
    login: bool = False
    """`zkafka ui --login`: users sign in with their Kafka user (checked by the brokers over SASL,
    `security` giving the mechanism and TLS) and act as themselves (`sessions.py`)."""
