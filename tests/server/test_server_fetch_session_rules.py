"""The fetch-session rules (KIP-227) on their own: the broker's cache and contexts
(`zkafka.server.fetch_sessions`) against the fetcher's handler (`zkafka.client.fetch_session`).

The model test drives both with random appends, errors, log-start moves, partitions followed and
dropped, evictions and lost answers, and checks what sessions promise: after every answered
fetch the fetcher knows every partition as a sessionless fetch would have told it (no record,
high watermark or error withheld), though the requests list only what changed."""

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

    def wanted(self) -> dict[tuple[str, int], FetchRequest.FetchPartition]:
        return {k: _part(o) for k, o in self.offsets.items()}


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
@given(st.lists(ops, max_size=40), st.sampled_from([1, 1, 2, 0]))
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
)
@example(  # only the log start moved
    [("append", KEYS[0], 3), ("fetch", KEYS[0], 0), ("log_start", KEYS[0], 2), ("fetch", KEYS[0], 0)], 1
)
def test_incremental_fetches_tell_what_full_fetches_would(
    steps: list[tuple[str, tuple[str, int], int]], slots: int
) -> None:
    cache = FetchSessionCache(slots)
    truth = {k: Truth() for k in KEYS}
    fetcher = Fetcher(offsets={KEYS[0]: 0})
    for op, key, n in steps:
        if op == "append":
            truth[key].high_watermark += n
        elif op == "error":
            truth[key].error = n
        elif op == "log_start":
            truth[key].log_start = min(truth[key].log_start + n, truth[key].high_watermark)
        elif op == "follow":
            if n:
                fetcher.offsets.setdefault(key, 0)
            else:
                # what it knew stays true: followed again before the next fetch, the session
                # still holds it and answers only its changes (as Kafka's FetchSessionHandler)
                fetcher.offsets.pop(key, None)
        elif op == "evict":
            for sid in list(cache._sessions):
                cache.remove(cache._sessions[sid])
        elif op == "lost":  # a request whose answer never came
            if fetcher.offsets:
                fetcher.handler.build(fetcher.wanted())
                fetcher.handler.handle_error()
        elif op == "fetch" and fetcher.offsets:
            _round(cache, truth, fetcher)
        assert cache.total_partitions == sum(len(s.partitions) for s in cache._sessions.values())
        assert len(cache) <= slots
    # two rounds in a row always end answered (a session error costs one round)
    if fetcher.offsets and not _round(cache, truth, fetcher):
        assert _round(cache, truth, fetcher)


def _round(cache: FetchSessionCache, truth: dict[tuple[str, int], Truth], fetcher: Fetcher) -> bool:
    plan = fetcher.handler.build(fetcher.wanted())
    context = _context(cache, plan.session_id, plan.epoch, CONSUMER, plan.to_send, plan.to_forget)
    if isinstance(context, SessionError):
        assert not fetcher.handler.handle_response(plan, context.error_code, 0, [])
        return False
    parts = plan.to_send if isinstance(context, Sessionless) else context.parts
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
    else:
        answered = answers
    if plan.full:  # a full fetch lists everything it follows
        assert set(parts) == set(fetcher.offsets)
    if not fetcher.handler.handle_response(plan, 0, sid, list(answered)):
        return False
    for k, a in answered.items():
        fetcher.seen[k] = a
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
