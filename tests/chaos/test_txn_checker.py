"""The transactional checker against a small model of a consume-transform-produce run: hypothesis
generates the application's transactions (some aborted and redone, some of unknown outcome) and
the log they leave, the clean history is clean, and each injected anomaly is found, alone."""

from __future__ import annotations

import random
from dataclasses import dataclass, field, replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zkafka.chaos.txn_checker import (
    KINDS,
    Output,
    Txn,
    check_transactions,
    decode_output,
    encode_output,
    outputs_of,
)

TOPIC = "out"


@dataclass
class History:
    """A run as the model makes it: inputs, the application's transactions, and the log (every
    output record, aborted ones included, in offset order per partition)."""

    inputs: list[str]
    txns: list[Txn] = field(default_factory=list)
    log: list[Output] = field(default_factory=list)
    next_offset: dict[int, int] = field(default_factory=dict)
    partitions: int = 1

    def append(self, rng: random.Random, sources: list[str], outcome: str) -> Txn:
        """The transaction written to the log, one marker per partition it touched after it."""
        txn = Txn(f"app:{len(self.txns)}", tuple(sources), outcome)  # type: ignore[arg-type]
        self.txns.append(txn)
        touched = set()
        for seq, source in enumerate(sources):
            p = rng.randrange(self.partitions)
            touched.add(p)
            offset = self.next_offset.get(p, 0)
            self.log.append(Output(TOPIC, p, offset, source, txn.txn, seq))
            self.next_offset[p] = offset + 1 + rng.choice((0, 0, 1))  # now and then another writer's
        for p in touched:
            self.next_offset[p] += 1  # the marker
        return txn

    def committed(self) -> list[Output]:
        """What a correct read_committed read returns: the visible transactions' records."""
        hidden = {t.txn for t in self.txns if t.outcome == "abort" or t.txn.endswith("!")}
        return _ordered(r for r in self.log if r.txn not in hidden)

    def uncommitted(self) -> list[Output]:
        return _ordered(self.log)


def _ordered(records) -> list[Output]:  # type: ignore[no-untyped-def]
    return sorted(records, key=lambda r: (r.partition, r.offset))


def model(seed: int, n: int, partitions: int) -> History:
    """Inputs processed in chunks; a chunk's transaction may abort (or fail with an unknown outcome
    and not be visible), and the chunk is redone until one commits (or ends unknown but visible)."""
    rng = random.Random(seed)
    h = History([f"in-{i}" for i in range(n)], partitions=partitions)
    i = 0
    while i < n:
        chunk = h.inputs[i : i + rng.randint(1, 6)]
        roll = rng.random()
        if roll < 0.2:
            h.append(rng, chunk, "abort")
            continue
        if roll < 0.3:  # unknown, and it did not commit: a hidden transaction, redone
            txn = h.append(rng, chunk, "unknown")
            _rename(h, txn, txn.txn + "!")
            continue
        h.append(rng, chunk, "unknown" if roll < 0.4 else "commit")
        i += len(chunk)
    return h


def _rename(h: History, txn: Txn, name: str) -> None:
    h.txns[h.txns.index(txn)] = replace(txn, txn=name)
    h.log = [replace(r, txn=name) if r.txn == txn.txn else r for r in h.log]


def verdict_of(h: History, committed: list[Output] | None = None, uncommitted: list[Output] | None = None):  # type: ignore[no-untyped-def]
    return check_transactions(
        h.inputs,
        h.txns,
        h.committed() if committed is None else committed,
        uncommitted_read=h.uncommitted() if uncommitted is None else uncommitted,
    )


def kinds(verdict) -> set[str]:  # type: ignore[no-untyped-def]
    return {k for k, n in verdict.counts().items() if n}


histories = st.builds(model, st.integers(0, 2**32), st.integers(1, 40), st.integers(1, 3))


@settings(max_examples=200, deadline=None)
@given(histories)
def test_a_clean_history_is_clean(h: History) -> None:
    verdict = verdict_of(h)
    assert verdict.ok, verdict.anomalies
    assert verdict.visible == verdict.distinct == len(h.inputs)
    # without the uncommitted read too
    assert check_transactions(h.inputs, h.txns, h.committed()).ok
    hidden = {t.txn for t in h.txns if t.outcome == "abort" or t.txn.endswith("!")}
    assert set(verdict.aborted_txns) == hidden


def _visible_txns(h: History) -> list[Txn]:
    return [t for t in h.txns if t.outcome != "abort" and not t.txn.endswith("!")]


@settings(max_examples=200, deadline=None)
@given(histories, st.randoms(use_true_random=False))
def test_a_lost_transaction_is_lost(h: History, rng: random.Random) -> None:
    gone = rng.choice(_visible_txns(h)).txn
    h.log = [r for r in h.log if r.txn != gone]
    assert kinds(verdict_of(h)) == {"lost"}


@settings(max_examples=200, deadline=None)
@given(histories, st.randoms(use_true_random=False))
def test_an_input_never_processed_is_lost(h: History, rng: random.Random) -> None:
    h.inputs.append("in-never")
    verdict = verdict_of(h)
    assert kinds(verdict) == {"lost"} and verdict.totals["lost"] == 1


@settings(max_examples=200, deadline=None)
@given(histories, st.randoms(use_true_random=False))
def test_a_source_committed_twice_is_a_duplicate(h: History, rng: random.Random) -> None:
    again = rng.sample(h.inputs, rng.randint(1, min(3, len(h.inputs))))
    h.append(rng, again, "commit")
    verdict = verdict_of(h)
    assert kinds(verdict) == {"duplicate"} and verdict.totals["duplicate"] == len(again)


@settings(max_examples=200, deadline=None)
@given(histories, st.randoms(use_true_random=False))
def test_a_visible_aborted_record_is_an_aborted_read(h: History, rng: random.Random) -> None:
    aborted = h.append(rng, rng.sample(h.inputs, rng.randint(1, min(4, len(h.inputs)))), "abort")
    records = [r for r in h.log if r.txn == aborted.txn]
    shown = rng.sample(records, rng.randint(1, len(records)))
    verdict = verdict_of(h, committed=_ordered([*h.committed(), *shown]))
    assert kinds(verdict) == {"aborted_read"} and verdict.totals["aborted_read"] == len(shown)


@settings(max_examples=200, deadline=None)
@given(histories, st.randoms(use_true_random=False))
def test_part_of_a_transaction_missing_from_the_log_is_torn(h: History, rng: random.Random) -> None:
    candidates = [t for t in _visible_txns(h) if len(t.sources) > 1]
    if not candidates:
        candidates = [h.append(rng, ["in-extra-0", "in-extra-1"], "commit")]
        h.inputs += ["in-extra-0", "in-extra-1"]
    txn = rng.choice(candidates)
    cut = set(rng.sample(range(len(txn.sources)), rng.randint(1, len(txn.sources) - 1)))
    h.log = [r for r in h.log if not (r.txn == txn.txn and r.seq in cut)]
    verdict = verdict_of(h)
    assert kinds(verdict) == {"torn"} and verdict.totals["torn"] == 1


@settings(max_examples=200, deadline=None)
@given(histories, st.randoms(use_true_random=False))
def test_a_read_ending_inside_a_transaction_is_torn(h: History, rng: random.Random) -> None:
    """The commit marker reached one partition and not another: the second's read stops before."""
    txn = h.append(rng, ["in-x", "in-y"], "commit")
    h.inputs += ["in-x", "in-y"]
    first, second = (r for r in h.log if r.txn == txn.txn)
    if first.partition == second.partition:
        return
    committed = [
        r for r in h.committed() if not (r.partition == second.partition and r.offset >= second.offset)
    ]
    verdict = verdict_of(h, committed=committed)
    assert kinds(verdict) == {"torn"}


@settings(max_examples=200, deadline=None)
@given(histories, st.randoms(use_true_random=False))
def test_a_committed_record_jumped_over_is_a_skip(h: History, rng: random.Random) -> None:
    """(Of a committed transaction: one of unknown outcome left wholly invisible may have aborted.)"""
    committed = h.committed()
    outcome = {t.txn: t.outcome for t in h.txns}
    inner = [
        i
        for i, r in enumerate(committed)
        if outcome[r.txn] == "commit"
        and any(o.partition == r.partition and o.offset > r.offset for o in committed)
    ]
    if not inner:
        return
    del committed[rng.choice(inner)]
    verdict = verdict_of(h, committed=committed)
    assert kinds(verdict) == {"skip"} and verdict.totals["skip"] == 1


@settings(max_examples=200, deadline=None)
@given(histories, st.randoms(use_true_random=False))
def test_an_offset_read_again_is_backwards(h: History, rng: random.Random) -> None:
    committed = h.committed()
    i = rng.randrange(len(committed))
    later = [j for j in range(i + 1, len(committed)) if committed[j].partition == committed[i].partition]
    at = (later[-1] + 1) if later else i + 1
    committed.insert(at, committed[i])
    verdict = verdict_of(h, committed=committed)
    assert kinds(verdict) == {"backwards"} and verdict.totals["backwards"] == 1
    assert verdict.visible == len(h.inputs)


def test_values_round_trip() -> None:
    assert decode_output(encode_output("in-7", "app:3", 2)) == ("in-7", "app:3", 2)
    assert decode_output(b"junk") is None and decode_output(None) is None and decode_output(b"a|b|x") is None
    with pytest.raises(ValueError):
        encode_output("a|b", "t", 0)
    assert outputs_of([("t", 1, 5, encode_output("s", "x:1", 0)), ("t", 1, 6, b"other")]) == [
        Output("t", 1, 5, "s", "x:1", 0)
    ]


def test_the_details_name_what_happened() -> None:
    txns = [Txn("a:0", ("s0", "s1"), "commit"), Txn("a:1", ("s2",), "abort")]
    read = [Output(TOPIC, 0, 0, "s0", "a:0", 0), Output(TOPIC, 0, 3, "s2", "a:1", 0)]
    log = [*read, Output(TOPIC, 0, 1, "s1", "a:0", 1)]
    verdict = check_transactions(["s0", "s1", "s2"], txns, read, uncommitted_read=log)
    details = {a.kind: a.detail for a in verdict.anomalies}
    assert set(details) == {"aborted_read", "skip", "lost"}  # s1 jumped over, s2 only in an aborted txn
    assert "aborted a:1" in details["aborted_read"] and "from offset 0 to 3" in details["skip"]
    assert "'s2'" in details["lost"]
    assert list(verdict.counts()) == list(KINDS)
