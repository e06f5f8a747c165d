"""Incremental fetch sessions (KIP-227): the broker's session cache and the session rules.

A Fetch v7+ names a session by (`session_id`, `session_epoch`):

* id 0, epoch 0: a full fetch asking for a new session; epoch -1 (FINAL_EPOCH): sessionless, or
  the close of the session the id names. Any session a full fetch names is closed.
* id N, epoch E > 0: an incremental fetch of session N. E must be the epoch the session expects
  (INVALID_FETCH_SESSION_EPOCH otherwise), N must exist (FETCH_SESSION_ID_NOT_FOUND). The request
  lists only partitions added or changed since the last one and `forgotten_topics_data`; every
  partition cached in the session is read, and the answer lists only partitions with something
  new: records, a changed high watermark, last stable offset or log start offset, a preferred
  read replica, or an error (Kafka's rule, plus the LSO, which a read_committed consumer waits
  for). A partition that answered an error is answered again once the error is gone.

The cache holds at most `max.incremental.fetch.session.cache.slots` sessions (Kafka's default
1000). When it is full a new session may evict one (Kafka's FetchSessionCache): the least
recently used if idle longer than `eviction_ms` (Kafka's fixed 120 s), else, for a follower (a
privileged session), any consumer session, and for anyone, a session older than `eviction_ms`
that caches no more partitions than the new one. Else the fetch is answered without a session.

A follower's session (replica id >= 0, topics by name) is read by changes (`ChangeTracking`): its
rounds read only the partitions the request lists, those not settled (not caught up, out of the
ISR, in error) and those `FetchSessionCache.partition_changed` named since; a partition nothing
happened to costs nothing per round. The answer follows the same rule: a partition not read has
nothing new, since anything new would have been reported.

Sessions are not tied to a connection (a client reconnecting keeps its session), as in Kafka;
unlike Kafka, a session answers only the principal and replica id that created it (anyone else
is told FETCH_SESSION_ID_NOT_FOUND), so a guessed id cannot read or close someone else's session.

Nothing here reads logs or the wire format: `new_context` says what a fetch is (an error, a
sessionless, full or incremental fetch), and `zkafka.server.apis.fetch_session_layer` applies
that to Fetch requests and responses.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

from zkafka.protocol import ErrorCode

INVALID_SESSION_ID = 0
INITIAL_EPOCH = 0
FINAL_EPOCH = -1
MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS = 120_000
"""Kafka's KafkaServer.MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS (a constant there, not a key)."""
MAX_EPOCH = 0x7FFFFFFF

PartitionKey = tuple[str | uuid.UUID, int]
"""A cached partition: (topic name, partition) below Fetch v13, (topic id, partition) from v13."""


def next_epoch(epoch: int) -> int:
    """The epoch after `epoch`: FINAL_EPOCH stays final, the largest int32 wraps to 1 (never 0)."""
    if epoch < 0:
        return FINAL_EPOCH
    return 1 if epoch == MAX_EPOCH else epoch + 1


def is_full(epoch: int) -> bool:
    return epoch in (INITIAL_EPOCH, FINAL_EPOCH)


class Answer(NamedTuple):
    """What a read answered for one partition, as far as the session rules look at it. (A
    NamedTuple: one is made per partition of every answer, and a tuple is built several times
    faster than a frozen dataclass.)"""

    has_records: bool
    high_watermark: int
    last_stable_offset: int
    log_start_offset: int
    preferred_read_replica: int = -1
    error_code: int = 0


@dataclass(slots=True)
class CachedPartition:
    """One partition of a session: what the fetcher last asked (`request`, the protocol's
    FetchPartition object, re-used to build each read) and what the broker last answered."""

    request: object
    high_watermark: int = -1
    last_stable_offset: int = -1
    log_start_offset: int = -1

    def must_respond(self, answer: Answer) -> bool:
        """Whether an incremental answer must list this partition; records what it answers."""
        respond = answer.has_records or answer.preferred_read_replica >= 0
        offsets = (answer.high_watermark, answer.last_stable_offset, answer.log_start_offset)
        if offsets != (self.high_watermark, self.last_stable_offset, self.log_start_offset):
            respond = True
            self.high_watermark, self.last_stable_offset, self.log_start_offset = offsets
        if answer.error_code:
            # answered again once the error is gone: the next high watermark differs from -1
            self.high_watermark = -1
            respond = True
        return respond


Owner = tuple[str, int]
"""(principal, replica id) of the fetcher that created a session."""


@dataclass(slots=True, eq=False)
class ChangeTracking:
    """A follower's session read by changes (its rounds cost what changed, not what it holds).

    A partition whose last answer left the follower caught up, in the ISR and error-free is
    *settled*: later rounds do not read it until `FetchSessionCache.partition_changed` names it (an
    append, a high watermark, log start, leader or ISR change) or the request lists it. Every other
    partition is *pending*: read each round, as a session without tracking reads all of them.
    `ms` is the time of the session's last round: a settled partition's follower counts as caught
    up as of then (`partition.FollowerState.attach`), so the ISR keeps it without a read."""

    pending: dict[PartitionKey, None]
    """Read every round until settled, in the order they became pending."""
    changed: dict[PartitionKey, None] = field(default_factory=dict)
    """Named by a change since the last round's read."""
    ms: int = 0

    def take(self) -> list[PartitionKey]:
        """What this round reads (the request's own partitions are in `changed`)."""
        keys = list(self.pending)
        keys.extend(k for k in self.changed if k not in self.pending)
        self.changed.clear()
        return keys

    def settle(self, key: PartitionKey, settled: bool, moved: bool = False) -> None:
        """After `key` was answered: settled (left out of rounds until it changes) or still pending
        (`moved`: it returned records, so it goes last among the pending, for fairness)."""
        if settled:
            self.pending.pop(key, None)
        elif moved or key not in self.pending:
            self.pending.pop(key, None)
            self.pending[key] = None


@dataclass(slots=True, eq=False)
class FetchSession:
    id: int
    privileged: bool
    """Created by a follower (replica id >= 0): may evict consumer sessions."""
    owner: Owner
    uses_topic_ids: bool
    """Created by Fetch v13+ (keys are topic ids); an incremental fetch must agree."""
    partitions: dict[PartitionKey, CachedPartition]
    """In read order: a partition that returned records moves to the end, so a response byte limit
    does not serve the same partitions first every time."""
    creation_ms: int
    last_used_ms: int
    epoch: int
    cached_size: int = field(default=0)
    tracking: ChangeTracking | None = None
    """A follower's session read by changes; None: every round reads every partition."""

    def update(self, added: dict[PartitionKey, object], forgotten: list[PartitionKey]) -> None:
        """An incremental request's changes: new and changed partitions, then forgotten ones (a
        partition never in the session is ignored, as in Kafka)."""
        parts = self.partitions
        tracking = self.tracking
        for key, request in added.items():
            cached = parts.get(key)
            if cached is None:
                parts[key] = CachedPartition(request)
            else:
                cached.request = request
            if tracking is not None:
                tracking.changed[key] = None
        for key in forgotten:
            parts.pop(key, None)
            if tracking is not None:
                tracking.pending.pop(key, None)
                tracking.changed.pop(key, None)

    def moved_to_end(self, key: PartitionKey) -> None:
        cached = self.partitions.pop(key, None)
        if cached is not None:
            self.partitions[key] = cached


class FetchSessionCache:
    """The broker's fetch sessions, bounded by `max_entries` (Kafka's FetchSessionCache)."""

    def __init__(
        self,
        max_entries: int,
        eviction_ms: int = MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS,
        rng: random.Random | None = None,
        *,
        track_followers: bool = True,
    ) -> None:
        self.max_entries = max_entries
        self.track_followers = track_followers
        """Followers' sessions (by topic name) are read by changes (`ChangeTracking`): whoever
        changes a partition must call `partition_changed`."""
        self._tracked: dict[int, FetchSession] = {}
        self.eviction_ms = eviction_ms
        self._rng = rng or random.Random()
        self._sessions: dict[int, FetchSession] = {}
        """By id, least recently used first (a touch moves a session to the end)."""
        self.total_partitions = 0
        self.evictions = 0

    def __len__(self) -> int:
        return len(self._sessions)

    def get(self, session_id: int, owner: Owner) -> FetchSession | None:
        session = self._sessions.get(session_id)
        return session if session is not None and session.owner == owner else None

    def remove(self, session: FetchSession) -> None:
        if self._sessions.pop(session.id, None) is not None:
            self.total_partitions -= session.cached_size
            self._tracked.pop(session.id, None)

    def partition_changed(self, key: PartitionKey) -> list[FetchSession]:
        """Something a fetcher of `key` could see changed: the tracked sessions holding it read it
        in their next round. Returns them (their parked fetches may now have something new)."""
        if not self._tracked:
            return _NONE
        hit = []
        for session in self._tracked.values():
            if key in session.partitions:
                session.tracking.changed[key] = None  # type: ignore[union-attr]
                hit.append(session)
        return hit

    def touch(self, session: FetchSession, now_ms: int) -> None:
        """Mark used now (last in the eviction order) and account its current size."""
        self._sessions.pop(session.id, None)
        self._sessions[session.id] = session
        session.last_used_ms = now_ms
        self.total_partitions += len(session.partitions) - session.cached_size
        session.cached_size = len(session.partitions)

    def maybe_create(
        self,
        now_ms: int,
        *,
        privileged: bool,
        owner: Owner,
        uses_topic_ids: bool,
        size: int,
        partitions: Callable[[], dict[PartitionKey, CachedPartition]],
    ) -> int:
        """A new session's id, or INVALID_SESSION_ID when the cache is full of sessions worth more.
        A follower's session by topic names is tracked (`ChangeTracking`): its first incremental
        round reads every partition (all pending), later ones what changed."""
        if len(self._sessions) >= self.max_entries and not self._try_evict(privileged, size, now_ms):
            return INVALID_SESSION_ID
        session = FetchSession(
            id=self._new_id(),
            privileged=privileged,
            owner=owner,
            uses_topic_ids=uses_topic_ids,
            partitions=partitions(),
            creation_ms=now_ms,
            last_used_ms=now_ms,
            epoch=next_epoch(INITIAL_EPOCH),
        )
        if privileged and not uses_topic_ids and self.track_followers:
            session.tracking = ChangeTracking(dict.fromkeys(session.partitions), ms=now_ms)
            self._tracked[session.id] = session
        self._sessions[session.id] = session
        self.touch(session, now_ms)
        return session.id

    def _new_id(self) -> int:
        while True:
            candidate = self._rng.randint(1, MAX_EPOCH - 1)
            if candidate not in self._sessions:
                return candidate

    def _try_evict(self, privileged: bool, size: int, now_ms: int) -> bool:
        """Kafka's tryEvict: the least recently used session if stale; else the least valuable
        (consumer before follower, then fewest partitions, then lowest id) of those the new
        session may evict, when it is worth less than the new one."""
        if not self._sessions:
            return False
        oldest = next(iter(self._sessions.values()))
        if now_ms - oldest.last_used_ms > self.eviction_ms:
            self._evict(oldest)
            return True
        candidates = [
            s
            for s in self._sessions.values()
            if now_ms - s.creation_ms > self.eviction_ms or (privileged and not s.privileged)
        ]
        if not candidates:
            return False
        victim = min(candidates, key=lambda s: (s.privileged, s.cached_size, s.id))
        if (privileged, size) <= (victim.privileged, victim.cached_size):
            return False
        self._evict(victim)
        return True

    def _evict(self, session: FetchSession) -> None:
        self.remove(session)
        self.evictions += 1


# -- a fetch's context (Kafka's FetchManager.newContext and its FetchContexts) ----------------------
@dataclass(frozen=True, slots=True)
class SessionError:
    """Answer the fetch with this top-level error, session id 0 and no partitions; read nothing."""

    error_code: int


@dataclass(frozen=True, slots=True)
class Sessionless:
    """Read what the request lists; answer everything, session id 0."""


@dataclass(slots=True)
class FullFetch:
    """Read `parts` (the request's partitions, once each); answer everything, and cache them as
    a new session if there is room (`create_session`)."""

    cache: FetchSessionCache
    parts: dict[PartitionKey, object]
    privileged: bool
    owner: Owner
    uses_topic_ids: bool

    def create_session(self, now_ms: int, answers: Mapping[PartitionKey, Answer]) -> int:
        def cached() -> dict[PartitionKey, CachedPartition]:
            out = {}
            for key, request in self.parts.items():
                entry = out[key] = CachedPartition(request)
                answer = answers.get(key)
                if answer is not None:
                    entry.must_respond(answer)
            return out

        return self.cache.maybe_create(
            now_ms,
            privileged=self.privileged,
            owner=self.owner,
            uses_topic_ids=self.uses_topic_ids,
            size=len(self.parts),
            partitions=cached,
        )


@dataclass(slots=True)
class IncrementalFetch:
    """Read every partition of `session` (`parts`), or for a tracked session only what changed
    (`take`, then `settle` each answered one); answer only what `select` keeps."""

    session: FetchSession
    expected_epoch: int
    forgotten: list[PartitionKey] = field(default_factory=list)

    @property
    def parts(self) -> dict[PartitionKey, object]:
        return {key: cached.request for key, cached in self.session.partitions.items()}

    def take(self) -> dict[PartitionKey, object]:
        """A tracked session's partitions to read this round: pending ones and changed ones."""
        tracking = self.session.tracking
        assert tracking is not None
        parts = self.session.partitions
        return {key: parts[key].request for key in tracking.take() if key in parts}

    def select(self, answers: Iterable[tuple[PartitionKey, Answer]]) -> set[PartitionKey] | None:
        """The partitions to answer (a partition the session does not hold always is); None when
        another fetch of the session came in meanwhile (INVALID_FETCH_SESSION_EPOCH)."""
        session = self.session
        if session.epoch != self.expected_epoch:
            return None
        kept: set[PartitionKey] = set()
        moved = []
        for key, answer in answers:
            cached = session.partitions.get(key)
            if cached is None or cached.must_respond(answer):
                kept.add(key)
                if answer.has_records:
                    moved.append(key)
        if session.tracking is None:  # a tracked session's read order is its pending order
            for key in moved:
                session.moved_to_end(key)
        return kept


_NONE: list[FetchSession] = []

FetchContext = SessionError | Sessionless | FullFetch | IncrementalFetch


def new_context(
    cache: FetchSessionCache,
    *,
    session_id: int,
    epoch: int,
    owner: Owner,
    uses_topic_ids: bool,
    requested: Callable[[], dict[PartitionKey, object]],
    forgotten: Callable[[], list[PartitionKey]],
    now_ms: int,
) -> FetchContext:
    """What a fetch with these session fields is (Kafka's FetchManager.newContext). `requested`
    are the request's partitions by key (a partition listed twice: the last), `forgotten` its
    forgotten partitions; both are only built when needed."""
    privileged = owner[1] >= 0
    if is_full(epoch):
        if session_id != INVALID_SESSION_ID:
            closed = cache.get(session_id, owner)
            if closed is not None:  # any session a full fetch names is closed
                cache.remove(closed)
        if epoch == FINAL_EPOCH:
            return Sessionless()
        return FullFetch(cache, requested(), privileged, owner, uses_topic_ids)
    session = cache.get(session_id, owner)
    if session is None:
        return SessionError(ErrorCode.FETCH_SESSION_ID_NOT_FOUND)
    if session.epoch != epoch:
        return SessionError(ErrorCode.INVALID_FETCH_SESSION_EPOCH)
    if session.uses_topic_ids != uses_topic_ids:
        return SessionError(ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR)
    gone = forgotten()
    session.update(requested(), gone)
    if not session.partitions:
        cache.remove(session)  # nothing left to fetch: the session ends, answered sessionless
        return Sessionless()
    cache.touch(session, now_ms)
    session.epoch = next_epoch(session.epoch)
    return IncrementalFetch(session, session.epoch, gone)
