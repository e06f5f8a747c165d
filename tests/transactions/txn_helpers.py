"""Shared by the transaction tests: confluent-kafka's consumer as an independent oracle of what a
read_committed (or read_uncommitted) reader sees."""

from __future__ import annotations

import time
import uuid

from confluent_kafka import Consumer


def confluent_consume(
    bootstrap: str, topic: str, isolation: str, expected: int, timeout_s: float = 60
) -> list[str]:
    """The values of `topic` (decoded) as a fresh group member with `isolation` reads them: at
    least `expected`, then until 3 s pass without a record (so extra records would show)."""
    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"g-{uuid.uuid4().hex[:6]}",
            "auto.offset.reset": "earliest",
            "isolation.level": isolation,
            "enable.auto.commit": False,
        }
    )
    c.subscribe([topic])
    out: list[str] = []
    deadline = time.monotonic() + timeout_s
    idle = 0
    try:
        while time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None:
                idle += 1
                if len(out) >= expected and idle >= 6:
                    break
                continue
            idle = 0
            assert m.error() is None, m.error()
            out.append(m.value().decode())
    finally:
        c.close()
    return out
