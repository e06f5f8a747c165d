"""Clickstream events: a deterministic generator, the producer that writes them into a topic, and
the counts a correct pipeline must reproduce.

An event is one JSON object, keyed by user (so a user's events stay in order in one partition):

    {"event_id": 17, "user": "u07", "page": "product", "type": "click", "amount": null,
     "ts_ms": 1795212934859}

Event times spread over a few whole minutes. A final event of type "end", a few minutes after
the rest, moves the streaming job's watermark past every window so that all of them are emitted.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from zkafka.client import Producer, RecordMetadata

PAGES = ("home", "search", "product", "cart", "checkout")
TYPES = ("view", "click", "add_to_cart", "purchase")
_TYPE_WEIGHTS = (60, 25, 10, 5)


@dataclass(frozen=True)
class Event:
    event_id: int
    user: str
    page: str
    type: str
    amount: float | None
    ts_ms: int

    def to_json(self) -> bytes:
        return json.dumps(self.__dict__, separators=(",", ":")).encode()


def generate(
    count: int, users: int, minutes: int, *, seed: int = 7, start_ms: int | None = None
) -> list[Event]:
    """`count` events over `minutes` whole minutes starting `start_ms` (default: a whole minute
    about `minutes` + 10 minutes ago, recent enough for any retention), then the "end" event."""
    rng = random.Random(seed)
    if start_ms is None:
        start_ms = (int(time.time()) // 60 - minutes - 10) * 60_000
    span = minutes * 60_000
    events = []
    for i in range(count):
        kind = rng.choices(TYPES, _TYPE_WEIGHTS)[0]
        amount = round(rng.uniform(5, 120), 2) if kind == "purchase" else None
        ts = min(start_ms + (i * span) // count + rng.randrange(0, 1000), start_ms + span - 1)  # jitter
        events.append(Event(i, f"u{rng.randrange(users):02d}", rng.choice(PAGES), kind, amount, ts))
    events.append(Event(count, "system", "-", "end", None, start_ms + span + 5 * 60_000))
    return events


def produce(bootstrap: str, topic: str, events: Iterable[Event]) -> list[tuple[Event, RecordMetadata]]:
    """Send every event (idempotent producer, acks=all); each with where it landed."""

    async def main() -> list[tuple[Event, RecordMetadata]]:
        async with Producer(bootstrap, enable_idempotence=True, linger_ms=5, compression="lz4") as producer:
            pending = [
                (e, await producer.send(topic, e.to_json(), e.user.encode(), timestamp_ms=e.ts_ms))
                for e in events
            ]
            await producer.flush()
            return [(e, await f) for e, f in pending]

    return asyncio.run(main())


@dataclass
class Totals:
    """What a page saw: events, purchases and revenue (the end marker never counts)."""

    events: int = 0
    purchases: int = 0
    revenue: float = 0.0

    def add(self, event: Event) -> None:
        self.events += 1
        if event.type == "purchase":
            self.purchases += 1
            self.revenue += event.amount or 0.0


def totals_by_page(events: Iterable[Event]) -> dict[str, Totals]:
    out: dict[str, Totals] = {page: Totals() for page in PAGES}
    for e in events:
        if e.type != "end":
            out[e.page].add(e)
    return out


def events_by_minute_and_page(events: Iterable[Event]) -> Counter[tuple[int, str]]:
    return Counter((e.ts_ms // 60_000 * 60_000, e.page) for e in events if e.type != "end")
