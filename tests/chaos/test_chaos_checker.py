"""The chaos checker's verdicts on hand-made histories: one per anomaly kind, and clean runs."""

from __future__ import annotations

import pytest

from zkafka.chaos.checker import KINDS, Ack, Commit, Read, check, decode_value, encode_value, expected_kinds


def v(producer: str, seq: int) -> bytes:
    return encode_value(producer, seq)


def clean_log() -> dict[int, list[tuple[int, bytes]]]:
    return {0: [(0, v("a", 0)), (1, v("b", 0)), (2, v("a", 1))], 1: [(0, v("a", 2))]}


def clean_acks() -> list[Ack]:
    return [Ack(0, 0, v("a", 0)), Ack(0, 1, v("b", 0)), Ack(0, 2, v("a", 1)), Ack(1, 0, v("a", 2))]


def kinds(verdict) -> dict[str, int]:  # type: ignore[no-untyped-def]
    return {k: n for k, n in verdict.counts().items() if n}


def test_values_round_trip_and_foreign_ones_are_none() -> None:
    assert decode_value(encode_value("p-1", 42)) == ("p-1", 42)
    assert decode_value(b"junk") is None and decode_value(None) is None and decode_value(b"a:-1") is None
    with pytest.raises(ValueError):
        encode_value("a:b", 1)


def test_a_clean_run_is_ok() -> None:
    reads = [Read("c1", 0, 0, o, val) for o, val in clean_log()[0]]
    verdict = check(clean_acks(), clean_log(), reads=reads)
    assert verdict.ok and verdict.anomalies == []
    assert (verdict.acknowledged, verdict.in_log, verdict.consumed) == (4, 4, 3)
    assert list(verdict.counts()) == list(KINDS) and not any(verdict.counts().values())


def test_unacknowledged_records_in_the_log_are_fine() -> None:
    """A record whose acknowledgement was lost (a timeout) may be there: that is not an anomaly."""
    assert check(clean_acks()[:2], clean_log()).ok


def test_lost_and_moved_records() -> None:
    log = {0: [(0, v("a", 0)), (1, v("a", 1))], 1: [(0, v("a", 2))]}
    verdict = check(clean_acks(), log)
    assert kinds(verdict) == {"lost": 1, "moved": 1}
    lost = next(a for a in verdict.anomalies if a.kind == "lost")
    assert "b:0" in lost.detail and "offset 1" in lost.detail
    moved = next(a for a in verdict.anomalies if a.kind == "moved")
    assert "a:1" in moved.detail and "[(0, 1)]" in moved.detail


def test_duplicates_reordering_and_foreign_records() -> None:
    log = {0: [(0, v("a", 0)), (1, v("a", 2)), (2, v("a", 1)), (3, v("a", 1)), (4, b"garbage")]}
    verdict = check([], log)
    assert kinds(verdict) == {"duplicate": 1, "reordered": 2, "unexpected": 1}


def test_consumer_skips_backwards_offsets_and_divergent_reads() -> None:
    log = {0: [(o, v("a", o)) for o in range(6)]}
    reads = [
        Read("c1", 0, 0, 0, v("a", 0)),
        Read("c1", 0, 0, 3, v("a", 3)),  # skipped 1 and 2
        Read("c1", 0, 0, 2, v("a", 2)),  # backwards
        Read("c1", 1, 0, 0, v("a", 0)),  # a new stretch (a seek): starting over is fine
        Read("c2", 0, 0, 5, v("x", 9)),  # the log holds a:5 there: read data later truncated
    ]
    verdict = check([], log, reads=reads)
    assert kinds(verdict) == {"skip": 1, "backwards": 1, "divergent_read": 1}
    skip = next(a for a in verdict.anomalies if a.kind == "skip")
    assert "from offset 0 to 3" in skip.detail and "2 record(s)" in skip.detail


def test_gaps_the_log_has_too_are_not_skips() -> None:
    """Offsets with nothing behind them (transaction markers, compaction) may be jumped over."""
    log = {0: [(0, v("a", 0)), (5, v("a", 1))]}
    reads = [Read("c", 0, 0, 0, v("a", 0)), Read("c", 0, 0, 5, v("a", 1))]
    assert check([], log, reads=reads).ok


def test_details_are_bounded_but_everything_is_counted() -> None:
    acks = [Ack(0, o, v("a", o)) for o in range(100)]
    verdict = check(acks, {0: []}, max_per_kind=5)
    assert verdict.counts()["lost"] == 100 and len(verdict.anomalies) == 5 and not verdict.ok


def test_group_owners_that_leave_out_records_are_group_skips() -> None:
    """Successive owners of a partition: g1 reads 0..2 and commits 3; g2 takes over at 5 (past the
    commit), leaving 3 and 4 unread by the whole group."""
    log = {0: [(o, v("a", o)) for o in range(8)]}
    g = "grp"
    reads = [Read("g1", 1, 0, o, v("a", o), group=g) for o in range(3)]
    reads += [Read("g2", 1, 0, o, v("a", o), group=g) for o in range(5, 8)]
    verdict = check([], log, reads=reads, commits=[Commit(g, "g1", 0, 3)])
    assert kinds(verdict) == {"group_skip": 1}
    assert "offsets 3, 4" in verdict.anomalies[0].detail


def test_a_new_owner_re_reading_from_the_commit_is_fine_and_a_commit_past_the_reads_is_not() -> None:
    log = {0: [(o, v("a", o)) for o in range(6)]}
    reads = [Read("g1", 1, 0, o, v("a", o), group="grp") for o in range(4)]
    reads += [Read("g2", 1, 0, o, v("a", o), group="grp") for o in range(2, 6)]  # from the commit at 2
    assert check([], log, reads=reads, commits=[Commit("grp", "g1", 0, 2)]).ok
    early = [Read("g1", 1, 0, o, v("a", o), group="grp") for o in range(2)]
    verdict = check([], log, reads=early, commits=[Commit("grp", "g1", 0, 5)])
    assert kinds(verdict) == {"group_skip": 1} and "committed offset 5" in verdict.anomalies[0].detail


def test_losses_a_configuration_allows_are_counted_but_do_not_fail_the_verdict() -> None:
    log = {0: [(0, v("a", 0))]}
    acks = [Ack(0, 0, v("a", 0)), Ack(0, 1, v("a", 1))]
    strict = check(acks, log, expected=expected_kinds(acks="all", unclean=False))
    assert not strict.ok and strict.counts()["lost"] == 1
    weak = check(acks, log, expected=expected_kinds(acks="1", unclean=True))
    assert weak.ok and weak.counts()["lost"] == 1 and "lost" in weak.expected
    assert "duplicate" in expected_kinds(acks="1", unclean=False)
    assert "duplicate" not in expected_kinds(acks="all", unclean=True)
    corrupt = check([], {0: [(0, b"garbage")]}, expected=expected_kinds(acks="1", unclean=True))
    assert not corrupt.ok  # nothing allows a record no producer sent
    with pytest.raises(ValueError):
        check([], {}, expected=["nonsense"])


def test_a_power_loss_is_an_expected_loss_only_under_min_insync_replicas_1() -> None:
    """Kafka's acks=all guarantee holds while min.insync.replicas replicas have a record: a leader
    alone acknowledging (min.insync.replicas=1) and then losing its unflushed tail is allowed; the
    same loss under min.insync.replicas=2 is reported."""
    alone = expected_kinds(acks="all", unclean=False, power_loss=True, min_insync_replicas=1)
    assert "lost" in alone and "duplicate" not in alone
    assert not expected_kinds(acks="all", unclean=False, power_loss=True, min_insync_replicas=2)
    assert not expected_kinds(acks="all", unclean=False, power_loss=False, min_insync_replicas=1)
