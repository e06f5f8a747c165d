"""The checker of a transactional (exactly-once) run: what a consume-transform-produce application
tried to commit, and what consumers read back from its output, turned into a verdict. Pure: no I/O,
no clocks.

The application reads input records (each named by a *source* id, its value) and writes, per
transaction, one output record per input record. Every output record carries its source and its
*transaction identity*: the transaction's id (unique over the run, e.g. "producer:17") and the
record's position in it (`encode_output`). The application logs every transaction it began, with
the sources in order and what became of it: `commit` (commit_transaction returned), `abort`
(abort_transaction returned) or `unknown` (the producer failed in between; a transaction whose
outcome is unknown may be visible entirely or not at all, never in part).

The final read is a read_committed consumer's, partition by partition, in the order it returned the
records; a read_uncommitted one of the same partitions is optional and shows what the log holds,
aborted transactions included (a read_committed read alone cannot show a record it skipped).

The anomalies, each record's trouble reported under one kind (the first that explains it):

* `aborted_read`: the committed read returned a record of an aborted transaction (such records are
  then left out of every other check);
* `backwards`: within a partition, the committed read returned an offset not above the previous one;
* `skip`: within a partition, the committed read jumped over a record the uncommitted read holds
  between the two offsets, of a transaction that committed or is visible elsewhere;
* `torn`: part of a transaction is visible and part is not (and no skip explains the missing part);
* `duplicate`: one source is visible in the output more than once (at different offsets);
* `lost`: an input record none of whose outputs is visible (and no skip or tear explains it).

A clean run of N input records has no anomaly and `visible == distinct == N`.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from zkafka.chaos.checker import bounded

KINDS = ("lost", "duplicate", "aborted_read", "torn", "backwards", "skip")

Outcome = Literal["commit", "abort", "unknown"]
TopicPartition = tuple[str, int]


def encode_output(source: str, txn: str, seq: int) -> bytes:
    """The value of the output record made from `source`, record `seq` of transaction `txn`."""
    if "|" in source or "|" in txn:
        raise ValueError(f"neither a source nor a transaction id may contain '|': {source!r}, {txn!r}")
    return f"{source}|{txn}|{seq}".encode()


def decode_output(value: bytes | None) -> tuple[str, str, int] | None:
    """(source, txn, seq) of a value `encode_output` made; None for anything else."""
    if value is None:
        return None
    parts = value.decode(errors="replace").split("|")
    if len(parts) != 3 or not parts[2].isdigit():
        return None
    return parts[0], parts[1], int(parts[2])


@dataclass(frozen=True, slots=True)
class Txn:
    """A transaction the application began: its id, the sources it wrote (record i is sources[i]),
    and what became of it."""

    txn: str
    sources: tuple[str, ...]
    outcome: Outcome


@dataclass(frozen=True, slots=True)
class Output:
    """One output record as a consumer returned it."""

    topic: str
    partition: int
    offset: int
    source: str
    txn: str
    seq: int

    @property
    def tp(self) -> TopicPartition:
        return (self.topic, self.partition)


@dataclass(frozen=True, slots=True)
class Anomaly:
    kind: str
    detail: str
    """What happened, with the sources, transactions and offsets involved."""


@dataclass
class Verdict:
    inputs: int = 0
    visible: int = 0
    """Output records the committed read returned (a position read twice counts once), aborted
    reads left out."""
    distinct: int = 0
    """Distinct sources among them."""
    aborted_txns: list[str] = field(default_factory=list)
    """Transactions that are in the log but not visible: aborted, by the application's log or by
    the reads (in the uncommitted read, absent from the committed one)."""
    anomalies: list[Anomaly] = field(default_factory=list)
    """The first `max_per_kind` anomalies of each kind, in the order found."""
    totals: Counter[str] = field(default_factory=Counter)

    @property
    def ok(self) -> bool:
        return not self.totals

    def counts(self) -> dict[str, int]:
        return {kind: self.totals.get(kind, 0) for kind in KINDS}


def check_transactions(
    inputs: Iterable[str],
    txns: Iterable[Txn],
    committed_read: Iterable[Output],
    *,
    uncommitted_read: Iterable[Output] = (),
    max_per_kind: int = 20,
) -> Verdict:
    """The verdict over one run; at most `max_per_kind` anomalies of each kind are detailed, all are
    counted (`Verdict.totals`)."""
    inputs = list(inputs)
    by_id: dict[str, Txn] = {t.txn: t for t in txns}
    outcome = {t: tx.outcome for t, tx in by_id.items()}
    found: list[Anomaly] = []

    # the committed read: aborted reads set aside, offsets checked per partition, positions deduped
    visible: dict[tuple[TopicPartition, int], Output] = {}
    read_offsets: dict[TopicPartition, list[int]] = defaultdict(list)
    last: dict[TopicPartition, int] = {}
    for r in committed_read:
        before = last.get(r.tp)
        if before is not None and r.offset <= before:
            found.append(Anomaly("backwards", f"{r.tp}: offset {r.offset} returned after offset {before}"))
        else:
            last[r.tp] = r.offset
            read_offsets[r.tp].append(r.offset)
        if outcome.get(r.txn) == "abort":
            found.append(
                Anomaly(
                    "aborted_read", f"{r.tp} offset {r.offset}: {r.source!r}, seq {r.seq} of aborted {r.txn}"
                )
            )
            continue
        visible.setdefault((r.tp, r.offset), r)

    seen_seqs: dict[str, set[int]] = defaultdict(set)
    places: dict[str, list[tuple[TopicPartition, int]]] = defaultdict(list)
    for (tp, offset), r in visible.items():
        seen_seqs[r.txn].add(r.seq)
        places[r.source].append((tp, offset))

    # what the log holds that the committed read did not return: skipped, or legitimately hidden
    in_log: dict[str, dict[int, Output]] = defaultdict(dict)
    explained: set[tuple[str, int]] = set()
    skips: dict[tuple[TopicPartition, int, int], int] = Counter()
    for r in uncommitted_read:
        in_log[r.txn].setdefault(r.seq, r)
        if (r.tp, r.offset) in visible or outcome.get(r.txn) == "abort":
            continue
        if outcome.get(r.txn) != "commit" and not seen_seqs.get(r.txn):
            continue  # outcome unknown and nothing of it visible: it was aborted
        jump = _jump_over(read_offsets.get(r.tp, []), r.offset)
        if jump is not None:
            skips[(r.tp, *jump)] += 1
            explained.add((r.txn, r.seq))
    for (tp, low, high), n in skips.items():
        found.append(
            Anomaly("skip", f"{tp}: went from offset {low} to {high} over {n} record(s) the log holds")
        )

    aborted = {t for t, o in outcome.items() if o == "abort"}
    aborted |= {t for t in in_log if not seen_seqs.get(t)}

    # torn transactions: some of it visible, some not
    for t, seqs in seen_seqs.items():
        tx = by_id.get(t)
        expected = set(range(len(tx.sources))) if tx is not None else set(in_log.get(t, {}))
        expected |= set(in_log.get(t, {}))
        missing = sorted(s for s in expected - seqs if (t, s) not in explained)
        if missing:
            explained.update((t, s) for s in missing)
            found.append(Anomaly("torn", f"{t}: {len(seqs)} record(s) visible, seq {_sample(missing)} not"))

    for source, where in places.items():
        if len(where) > 1:
            found.append(Anomaly("duplicate", f"{source!r} visible at {sorted(where)}"))

    # lost: an input whose outputs are all invisible, unexplained by a skip or a tear
    written: dict[str, list[tuple[str, int]]] = defaultdict(list)
    for tx in by_id.values():
        for seq, source in enumerate(tx.sources):
            written[source].append((tx.txn, seq))
    for t, records in in_log.items():
        if t not in by_id:
            for seq, r in records.items():
                written[r.source].append((t, seq))
    for source in inputs:
        if source in places:
            continue
        if any(w in explained for w in written.get(source, ())):
            continue
        tried = [t for t, _ in written.get(source, ())]
        found.append(
            Anomaly("lost", f"{source!r} not visible (written by {_sample(tried) or 'no transaction'})")
        )

    verdict = Verdict(inputs=len(inputs), visible=len(visible), distinct=len(places))
    verdict.aborted_txns = sorted(aborted)
    verdict.totals = Counter(a.kind for a in found)
    verdict.anomalies = bounded(found, max_per_kind)
    return verdict


def _jump_over(offsets: list[int], offset: int) -> tuple[int, int] | None:
    """The two consecutive offsets of a partition's committed read that `offset` lies strictly
    between, or (-1, first) before the first; None past the last read (the read ended there: that
    is not a skip) or when the partition was not read at all."""
    i = bisect_left(offsets, offset)
    if i == len(offsets) or offsets[i] == offset:
        return None
    return (offsets[i - 1] if i else -1), offsets[i]


def _sample(items: Sequence[object], n: int = 5) -> str:
    shown = ", ".join(str(i) for i in items[:n])
    return shown + (f" and {len(items) - n} more" if len(items) > n else "")


def outputs_of(records: Iterable[tuple[str, int, int, bytes | None]]) -> list[Output]:
    """Output records from a consumer's (topic, partition, offset, value) tuples; values that are
    not `encode_output`'s are left out (the caller counts them if it cares)."""
    out: list[Output] = []
    for topic, partition, offset, value in records:
        decoded = decode_output(value)
        if decoded is not None:
            out.append(Output(topic, partition, offset, *decoded))
    return out
