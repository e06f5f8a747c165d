"""The fetch-session rules (KIP-227) on their own: the broker's cache and contexts
(`zkafka.server.fetch_sessions`) against the fetcher's handler (`zkafka.client.fetch_session`).

The model test drives both with random appends, errors, log-start moves, partitions followed and
dropped, evictions and lost answers, and checks what sessions promise: after every answered
fetch the fetcher knows every partition as a sessionless fetch would have told it (no record,
high watermark or error withheld), though the requests list only what changed. Run as a follower,
both ends work by changes: the broker's session reads only partitions that are pending or were
reported changed (`ChangeTracking`), and the fetcher builds its request from the partitions it
answered or added (`build_changes`); the promise is the same."""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import example, given, settings
from hypothesis import strategies as st

from zkafka.client.fetch_session import FetchSessionHandler
from zkafka.protocol import ErrorCode
from zkafka.protocol.messages import FetchRequest
from zkafka.server.fetch_sessions import (
    FINAL_EPOCH,
    MAX_EPOCH,
    Answer,
    FetchSessionCache,
    FullFetch,
    IncrementalFetch,
    SessionError,
    Sessionless,
    new_context,
    next_epoch,
)

CONSUMER = ("User:alice", -1)
FOLLOWER = ("User:broker", 2)


def _part(offset: int, log_start: int = 0) -> FetchRequest.FetchPartition:
    return FetchRequest.FetchPartition(
        partition=0, fetch_offset=offset, log_start_offset=log_start, partition_max_bytes=1024
    )


def _context(cache: FetchSessionCache, sid: int, epoch: int, owner=CONSUMER, parts=None, forgotten=(), now=0):  # type: ignore[no-untyped-def]
    return new_context(
        cache,
        session_id=sid,
        epoch=epoch,
        owner=owner,
        uses_topic_ids=False,
        requested=lambda: dict(parts or {}),
        forgotten=lambda: list(forgotten),
        now_ms=now,
    )


def _open(cache: FetchSessionCache, owner=CONSUMER, n: int = 1, now: int = 0) -> int:  # type: ignore[no-untyped-def]
    context = _context(cache, 0, 0, owner, {("t", i): _part(0) for i in range(n)}, now=now)
    assert isinstance(context, FullFetch)
    return context.create_session(now, {})


def test_epochs_ids_and_owners() -> None:
    cache = FetchSessionCache(10)
    sid = _open(cache)
    assert sid > 0 and len(cache) == 1 and cache.total_partitions == 1
    wrong = _context(cache, sid, 5)
    assert wrong == SessionError(ErrorCode.INVALID_FETCH_SESSION_EPOCH)
    assert _context(cache, sid + 1 if sid < MAX_EPOCH - 1 else 1, 1) == SessionError(
        ErrorCode.FETCH_SESSION_ID_NOT_FOUND
    )
    # someone else's session is not found (and a full fetch naming it does not close it)
    assert _context(cache, sid, 1, FOLLOWER) == SessionError(ErrorCode.FETCH_SESSION_ID_NOT_FOUND)
    assert isinstance(_context(cache, sid, FINAL_EPOCH, FOLLOWER), Sessionless) and len(cache) == 1
    first = _context(cache, sid, 1)
    assert isinstance(first, IncrementalFetch) and first.session.epoch == 2
    assert _context(cache, sid, 1) == SessionError(ErrorCode.INVALID_FETCH_SESSION_EPOCH)  # a replay
    # a full fetch naming the session closes it and opens another
    again = _context(cache, sid, 0, parts={("t", 0): _part(0)})
    assert isinstance(again, FullFetch) and len(cache) == 0
    sid2 = again.create_session(0, {})
    assert isinstance(_context(cache, sid2, FINAL_EPOCH), Sessionless) and len(cache) == 0
    assert next_epoch(MAX_EPOCH) == 1 and next_epoch(FINAL_EPOCH) == FINAL_EPOCH and next_epoch(0) == 1


def test_topic_id_sessions_do_not_mix_with_names() -> None:
    cache = FetchSessionCache(10)
    full = new_context(
        cache,
        session_id=0,
        epoch=0,
        owner=CONSUMER,
        uses_topic_ids=True,
        requested=lambda: {("id", 0): _part(0)},
        forgotten=list,
        now_ms=0,
    )
    assert isinstance(full, FullFetch)
    sid = full.create_session(0, {})
    assert _context(cache, sid, 1) == SessionError(ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR)


def test_eviction_follows_kafkas_preferences() -> None:
    cache = FetchSessionCache(2, eviction_ms=100)
    a = _open(cache, CONSUMER, n=5, now=0)
    b = _open(cache, CONSUMER, n=1, now=0)
    # full of young consumer sessions: another consumer gets none, a follower evicts the smaller
    assert _open(cache, CONSUMER, n=50, now=10) == 0
    f = _open(cache, FOLLOWER, n=1, now=10)
    assert f and cache.get(b, CONSUMER) is None and cache.get(a, CONSUMER) is not None
    assert cache.evictions == 1
    # a young follower session is safe from consumers; the consumer one is evicted once it is old
    # (not stale: used recently) by a newcomer with more partitions, not by one with fewer
    _context(cache, a, 1, now=150)
    _context(cache, f, 1, FOLLOWER, now=150)
    assert _open(cache, CONSUMER, n=1, now=160) == 0
    c = _open(cache, CONSUMER, n=6, now=160)
    assert c and cache.get(a, CONSUMER) is None and cache.evictions == 2
    # the least recently used session, idle longer than eviction_ms, goes to anyone
    _context(cache, c, 1, now=300)
    assert _open(cache, CONSUMER, n=1, now=300) != 0 and cache.get(f, FOLLOWER) is None
    assert cache.total_partitions == 6 + 1 and cache.evictions == 3


def test_no_slots_means_sessionless_answers() -> None:
    cache = FetchSessionCache(0)
    assert _open(cache) == 0 and len(cache) == 0


# -- the model ------------------------------------------------------------------------------------
@dataclass
class Truth:
    high_watermark: int = 0
    log_start: int = 0
    error: int = 0
    """0 none; 1 an error answered with offsets -1 (NOT_LEADER_OR_FOLLOWER); 2 one answered with
    the partition's offsets (the read's OFFSET_OUT_OF_RANGE)."""

    def answer(self, fetch_offset: int) -> Answer:
        blank = self.error == 1
        return Answer(
            has_records=not self.error and fetch_offset < self.high_watermark,
            high_watermark=-1 if blank else self.high_watermark,
            last_stable_offset=-1 if blank else self.high_watermark,
            log_start_offset=-1 if blank else self.log_start,
            error_code=(0, ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.OFFSET_OUT_OF_RANGE)[self.error],
        )


@dataclass
class Fetcher:
    handler: FetchSessionHandler = field(default_factory=FetchSessionHandler)
    offsets: dict[tuple[str, int], int] = field(default_factory=dict)
    seen: dict[tuple[str, int], Answer] = field(default_factory=dict)
    by_changes: bool = False
    """Build incremental requests from `dirty` and `removed` only (a replica fetcher)."""
    dirty: set[tuple[str, int]] = field(default_factory=set)
    removed: set[tuple[str, int]] = field(default_factory=set)

    def wanted(self) -> dict[tuple[str, int], FetchRequest.FetchPartition]:
        return {k: _part(o) for k, o in self.offsets.items()}

    def plan(self):  # type: ignore[no-untyped-def]
        if self.by_changes and not self.handler.needs_full:
            changed = {k: _part(self.offsets[k]) for k in self.dirty if k in self.offsets}
            plan = self.handler.build_changes(changed, self.removed)
        else:
            plan = self.handler.build(self.wanted())
        self.dirty.clear()
        self.removed.clear()
        return plan

    def follow(self, key: tuple[str, int], on: bool) -> None:
        if on:
            self.offsets.setdefault(key, 0)
            self.dirty.add(key)
            self.removed.discard(key)
        elif self.offsets.pop(key, None) is not None:
            self.dirty.discard(key)
            self.removed.add(key)


KEYS = [("t", 0), ("t", 1), ("u", 0)]
key = st.sampled_from(KEYS)
fetch = st.just(("fetch", KEYS[0], 0))
ops = st.one_of(
    st.tuples(st.just("append"), key, st.integers(1, 3)),
    st.tuples(st.just("error"), key, st.sampled_from([0, 0, 1, 2])),
    st.tuples(st.just("log_start"), key, st.integers(1, 2)),
    st.tuples(st.just("follow"), key, st.booleans()),
    st.tuples(st.sampled_from(["evict", "lost"]), st.just(KEYS[0]), st.just(0)),
    fetch,
    fetch,
    fetch,
)


@settings(max_examples=500, deadline=None)
@given(st.lists(ops, max_size=40), st.sampled_from([1, 1, 2, 0]), st.booleans())
@example(  # an error answered with the partition's offsets, then gone: answered again
    [
        ("append", KEYS[0], 2),
        ("fetch", KEYS[0], 0),
        ("error", KEYS[0], 2),
        ("fetch", KEYS[0], 0),
        ("error", KEYS[0], 0),
        ("fetch", KEYS[0], 0),
    ],
    1,
    False,
)
@example(  # only the log start moved
    [("append", KEYS[0], 3), ("fetch", KEYS[0], 0), ("log_start", KEYS[0], 2), ("fetch", KEYS[0], 0)],
    1,
    False,
)
@example(  # a follower's settled partition, then a change only the broker's side reports
    [("fetch", KEYS[0], 0), ("fetch", KEYS[0], 0), ("append", KEYS[0], 2), ("fetch", KEYS[0], 0)],
    1,
    True,
)
def test_incremental_fetches_tell_what_full_fetches_would(
    steps: list[tuple[str, tuple[str, int], int]], slots: int, follower: bool
) -> None:
    cache = FetchSessionCache(slots)
    owner = FOLLOWER if follower else CONSUMER
    truth = {k: Truth() for k in KEYS}
    fetcher = Fetcher(offsets={KEYS[0]: 0}, by_changes=follower)
    for op, key, n in steps:
        if op == "append":
            truth[key].high_watermark += n
        elif op == "error":
            truth[key].error = n
        elif op == "log_start":
            truth[key].log_start = min(truth[key].log_start + n, truth[key].high_watermark)
        elif op == "follow":
            # unfollowed: what it knew stays true: followed again before the next fetch, the
            # session still holds it and answers only its changes (as Kafka's FetchSessionHandler)
            fetcher.follow(key, bool(n))
        elif op == "evict":
            for sid in list(cache._sessions):
                cache.remove(cache._sessions[sid])
        elif op == "lost":  # a request whose answer never came
            if fetcher.offsets:
                fetcher.plan()
                fetcher.handler.handle_error()
        elif op == "fetch" and fetcher.offsets:
            _round(cache, truth, fetcher, owner)
        if op in ("append", "error", "log_start"):
            cache.partition_changed(key)  # what the replica manager reports
        assert cache.total_partitions == sum(len(s.partitions) for s in cache._sessions.values())
        assert len(cache) <= slots
        for s in cache._sessions.values():  # only followers' sessions read by changes
            assert (s.tracking is not None) == follower
            if s.tracking is not None:
                assert set(s.tracking.pending) <= set(s.partitions)
    # two rounds in a row always end answered (a session error costs one round)
    if fetcher.offsets and not _round(cache, truth, fetcher, owner):
        assert _round(cache, truth, fetcher, owner)


def _round(
    cache: FetchSessionCache,
    truth: dict[tuple[str, int], Truth],
    fetcher: Fetcher,
    owner: tuple[str, int] = CONSUMER,
) -> bool:
    plan = fetcher.plan()
    context = _context(cache, plan.session_id, plan.epoch, owner, plan.to_send, plan.to_forget)
    if isinstance(context, SessionError):
        assert not fetcher.handler.handle_response(plan, context.error_code, 0, [])
        return False
    tracking = context.session.tracking if isinstance(context, IncrementalFetch) else None
    if isinstance(context, Sessionless):
        parts = plan.to_send
    elif tracking is not None:
        parts = context.take()  # type: ignore[union-attr]
        assert set(plan.to_send) <= set(parts)
    else:
        parts = context.parts  # type: ignore[union-attr]
    answers = {k: truth[k].answer(p.fetch_offset) for k, p in parts.items()}  # type: ignore[attr-defined]
    sid = 0
    if isinstance(context, FullFetch):
        sid = context.create_session(0, answers)
        answered = answers
    elif isinstance(context, IncrementalFetch):
        kept = context.select(answers.items())
        assert kept is not None
        answered = {k: a for k, a in answers.items() if k in kept}
        sid = context.session.id
        if tracking is not None:  # the layer's rule: settled when caught up and error-free
            for k, p in parts.items():
                settled = not truth[k].error and p.fetch_offset >= truth[k].high_watermark  # type: ignore[attr-defined]
                tracking.settle(k, settled, moved=answers[k].has_records)
    else:
        answered = answers
    if plan.full:  # a full fetch lists everything it follows
        assert set(parts) == set(fetcher.offsets)
    if not fetcher.handler.handle_response(plan, 0, sid, list(answered)):
        return False
    for k, a in answered.items():
        fetcher.seen[k] = a
        fetcher.dirty.add(k)
        if a.has_records:
            fetcher.offsets[k] = a.high_watermark  # consumed up to the high watermark
    # what sessions promise: the fetcher's picture is the truth, every record fetched
    for k in fetcher.offsets:
        want = truth[k].answer(fetcher.offsets[k])
        got = fetcher.seen[k]
        assert (got.high_watermark, got.log_start_offset, got.error_code) == (
            want.high_watermark,
            want.log_start_offset,
            want.error_code,
        ), k
        assert not want.has_records, k
    return True


def test_a_settled_followers_caught_up_time_is_its_sessions_last_round() -> None:
    from zkafka.server.fetch_sessions import ChangeTracking
    from zkafka.server.partition import FollowerState

    tracking = ChangeTracking({("t", 0): None}, ms=100)
    f = FollowerState(last_caught_up_ms=50)
    f.attach(tracking)
    tracking.ms = 200  # a round that left the partition out: caught up as of then
    assert f.last_caught_up_ms == 200
    f.detach()  # read again (a change): from here on only what its reads say
    tracking.ms = 300
    assert f.last_caught_up_ms == 200
    f.attach(tracking)
    f.last_caught_up_ms = 250  # a read that found it caught up detaches it too
    assert f.last_caught_up_ms == 250 and f.clock is None
    tracking.settle(("t", 0), True)
    assert not tracking.pending
    tracking.settle(("t", 1), False)
    tracking.settle(("t", 2), False)
    tracking.settle(("t", 1), False, moved=True)  # returned records: read last among the pending
    assert list(tracking.pending) == [("t", 2), ("t", 1)]
    tracking.changed[("t", 3)] = None
    assert tracking.take() == [("t", 2), ("t", 1), ("t", 3)] and not tracking.changed
