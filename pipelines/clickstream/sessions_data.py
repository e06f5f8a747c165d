"""The sessions pipeline's data: user profiles for a compacted `users` topic, clicks grouped into
known event-time sessions, deliberately late clicks, and the result a correct pipeline must give.

The clicks arrive in two waves, and the pipeline runs once per wave (the second run resumes from
the first one's checkpoint), so which clicks are late is fixed by the data, not by timing:

    wave 0: users' sessions in [base, base + 40 min), then the marker at base + 60 min
            -> after wave 0 the watermark is base + 60 min - WATERMARK_DELAY = base + 58 min
    wave 1: late clicks with event times in [base, base + 30 min), far behind that watermark,
            mixed in with new sessions in [base + 70 min, base + 115 min), then the marker at
            base + 150 min, which closes every session

Every click is at least minutes away from any boundary (a session gap, the watermark), so the
expected sessions and the late clicks do not depend on how exactly Spark compares times.

The users topic changes between the waves too: updates of a user's profile (so only the latest
value per key may count), tombstones (the user is gone), and a deleted user written again. A
session is enriched with its user's profile as the table stands when the session is emitted:
wave 0's sessions with the table after phase 0, wave 1's with the table after phase 1.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections.abc import Iterable
from dataclasses import dataclass

from clickstream.events import PAGES, Event
from zkafka.client import Producer

SESSION_GAP_MS = 60_000
"""A session ends when its user is idle this long (the pipeline's `session_window` gap)."""
WATERMARK_DELAY_MS = 2 * 60_000
MINUTE = 60_000
MARKERS = (60 * MINUTE, 150 * MINUTE)
"""Event time (after base) of each wave's marker: it moves the watermark past the wave's sessions."""
WAVE_STARTS = (0, 70 * MINUTE)
COUNTRIES = ("DE", "FR", "US", "JP", "BR")
PLANS = ("free", "pro", "team")


@dataclass(frozen=True)
class Profile:
    country: str
    plan: str

    def to_json(self) -> bytes:
        return json.dumps(self.__dict__, separators=(",", ":")).encode()


UserRecord = tuple[str, Profile | None]
"""One record of the users topic: the user id (its key) and the profile, None for a tombstone."""


@dataclass(frozen=True)
class Session:
    user: str
    wave: int
    clicks: tuple[int, ...]
    """event times (ms) of its clicks, ascending; consecutive ones less than the gap apart"""

    @property
    def start_ms(self) -> int:
        return self.clicks[0]

    @property
    def end_ms(self) -> int:
        """Spark's session_window end: the last event plus the gap."""
        return self.clicks[-1] + SESSION_GAP_MS


@dataclass
class SessionPlan:
    """What the generator produced, in production order, and what follows from it."""

    base_ms: int
    user_records: list[list[UserRecord]]
    """per phase: the users-topic records written before wave `phase` runs"""
    waves: list[list[Event]]
    """per wave: the click events produced (late ones mixed in), the marker last"""
    sessions: list[Session]
    late: list[Event]

    def table(self, phase: int) -> dict[str, Profile]:
        """The users table after the records of phases 0..`phase`: latest value per key, a
        tombstone removing the key."""
        table: dict[str, Profile] = {}
        for records in self.user_records[: phase + 1]:
            for user, profile in records:
                if profile is None:
                    table.pop(user, None)
                else:
                    table[user] = profile
        return table

    def expected(self) -> dict[tuple[str, int], tuple[int, int, str | None, str | None]]:
        """(user, session start) -> (clicks, session end, country, plan) of every session, enriched
        by the table as it stands in the wave that emits it."""
        out = {}
        for s in self.sessions:
            profile = self.table(s.wave).get(s.user)
            out[(s.user, s.start_ms)] = (
                len(s.clicks),
                s.end_ms,
                profile.country if profile else None,
                profile.plan if profile else None,
            )
        return out

    @property
    def clicks(self) -> int:
        """Click events produced, late ones included (markers are not clicks)."""
        return sum(1 for wave in self.waves for e in wave if e.type != "end")


def _user(i: int) -> str:
    return f"u{i:02d}"


def _profile(rng: random.Random) -> Profile:
    return Profile(rng.choice(COUNTRIES), rng.choice(PLANS))


def _user_records(rng: random.Random, users: int) -> list[list[UserRecord]]:
    """Phase 0: every user, then a second profile for two users and tombstones for two. Phase 1
    (between the waves): a plan change, a tombstone, and one of the deleted users written again."""
    phase0: list[UserRecord] = [(_user(i), _profile(rng)) for i in range(users)]
    phase0 += [(_user(1), Profile("FR", "team")), (_user(2), Profile("JP", "pro"))]  # updates
    phase0 += [(_user(4), None), (_user(5), None)]  # tombstones
    phase1: list[UserRecord] = [
        (_user(3), Profile(phase0[3][1].country if phase0[3][1] else "DE", "pro")),  # upgrade
        (_user(6), None),  # deleted between the waves
        (_user(5), Profile("BR", "free")),  # deleted in phase 0, back in phase 1
    ]
    return [phase0, phase1]


def _sessions(rng: random.Random, users: int, wave: int, base_ms: int) -> list[Session]:
    """1-3 sessions per user in wave 0, 0-2 in wave 1; 1-8 clicks each, 1-45 s apart (less
    than the gap), sessions of a user at least 2 minutes apart (more than the gap)."""
    sessions = []
    for i in range(users):
        cursor = base_ms + WAVE_STARTS[wave] + rng.randrange(0, 10 * MINUTE)
        for _ in range(rng.randint(1, 3) if wave == 0 else rng.randint(0, 2)):
            clicks = [cursor]
            for _ in range(rng.randint(1, 8) - 1):
                clicks.append(clicks[-1] + rng.randrange(1_000, 45_000))
            sessions.append(Session(_user(i), wave, tuple(clicks)))
            cursor = clicks[-1] + SESSION_GAP_MS + rng.randrange(MINUTE, 3 * MINUTE)
    return sessions


def plan_sessions(
    users: int = 12, late: int = 7, *, seed: int = 11, base_ms: int | None = None
) -> SessionPlan:
    """The whole plan, deterministic for a seed. `base_ms` defaults to a whole minute three hours
    ago: every event time recent enough for any retention."""
    if users < 7:
        raise ValueError("the plan updates and deletes users u01..u06: at least 7 users")
    rng = random.Random(seed)
    if base_ms is None:
        base_ms = (int(time.time()) // 60 - 180) * MINUTE
    user_records = _user_records(rng, users)
    sessions = [s for wave in (0, 1) for s in _sessions(rng, users, wave, base_ms)]
    ids = iter(range(1_000_000))

    def click(user: str, ts: int) -> Event:
        return Event(next(ids), user, rng.choice(PAGES), rng.choice(("view", "click")), None, ts)

    waves: list[list[Event]] = []
    late_events: list[Event] = []
    for wave in (0, 1):
        events = [click(s.user, ts) for s in sessions if s.wave == wave for ts in s.clicks]
        events.sort(key=lambda e: e.ts_ms)  # a user's clicks in time order, users interleaved
        if wave == 1:
            # late clicks: distinct (user, time) pairs, inserted at random places of the wave
            seen: set[tuple[str, int]] = set()
            while len(seen) < late:
                seen.add((_user(rng.randrange(users)), base_ms + rng.randrange(0, 30 * MINUTE)))
            for user, ts in sorted(seen):
                late_events.append(click(user, ts))
                events.insert(rng.randrange(len(events) + 1), late_events[-1])
        events.append(Event(next(ids), "system", "-", "end", None, base_ms + MARKERS[wave]))
        waves.append(events)
    return SessionPlan(base_ms, user_records, waves, sessions, late_events)


def produce_users(bootstrap: str, topic: str, records: Iterable[UserRecord]) -> None:
    """Write users-topic records in order, keyed by user id (a tombstone has no value)."""

    async def main() -> None:
        async with Producer(bootstrap, enable_idempotence=True, linger_ms=5) as producer:
            pending = [
                await producer.send(topic, profile.to_json() if profile else None, user.encode())
                for user, profile in records
            ]
            await producer.flush()
            for future in pending:
                await future

    asyncio.run(main())
