"""The checker of a chaos run: what producers had acknowledged, what consumers saw, and the log as
read back at the end, turned into a verdict. Pure: no I/O, no clocks.

The anomalies are those Jepsen's Kafka workloads look for:

* `lost`: an acknowledged record is not in the final log;
* `moved`: an acknowledged record is in the final log, but not at the offset it was acknowledged at
  (the acknowledged offset holds something else, or nothing);
* `duplicate`: one record (producer, sequence number) is in the final log more than once;
* `reordered`: within a partition, one producer's records are not in the order it sent them;
* `unexpected`: the final log holds a record no producer ever sent (corruption, a stray writer);
* `skip`: a consumer, reading a partition without a seek or reassignment in between, jumped over
  records that the final log holds between two offsets it returned;
* `backwards`: the same consumer returned an offset not above the previous one;
* `divergent_read`: a consumer read a record at an offset where the final log holds another one (it
  read data that was later truncated: what acks=1 or unclean elections allow);
* `group_skip`: in a consumer group, a partition's successive owners together left out records the
  final log holds below what the group had committed, or below the highest offset a member read:
  a new owner started past the committed position (or a commit claimed records nobody read).

`expected` names kinds the run's configuration allows (acks=1, unclean leader election, the last
replica standing losing its unflushed tail under min.insync.replicas=1: `lost`, `moved`,
`divergent_read`, ...): they are counted and detailed as usual but do not fail the verdict.

Records are identified by their value, `encode_value(producer, seq)`; the producers of a chaos
workload write such values, so the checker needs nothing else from them.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

KINDS = (
    "lost",
    "moved",
    "duplicate",
    "reordered",
    "unexpected",
    "skip",
    "backwards",
    "divergent_read",
    "group_skip",
)


TRUNCATION = frozenset({"lost", "moved", "divergent_read", "skip", "backwards", "group_skip"})
"""What a leader that lacks acknowledged records causes (acks=1, unclean leader election): they are
gone, other records take their offsets, and consumers that had read them see the log move under
them."""
NOT_IDEMPOTENT = frozenset({"duplicate", "reordered"})
"""What retries of a producer without idempotence cause."""


def expected_kinds(
    *, acks: str, unclean: bool, power_loss: bool = False, min_insync_replicas: int = 2
) -> frozenset[str]:
    """The anomaly kinds a configuration allows: none for idempotent acks=all producers with clean
    leader elections; truncation's with acks=1 or unclean elections, or when the last replica
    standing loses its unflushed tail (`power_loss`) while min.insync.replicas=1 let it acknowledge
    writes alone (Kafka documents its guarantee only while at least min.insync.replicas replicas
    have the record); duplicates and reordering too without idempotence (acks=1 here). A loss by
    power loss under min.insync.replicas>=2 is not expected: it is reported."""
    kinds: frozenset[str] = frozenset()
    if acks != "all" or unclean or (power_loss and min_insync_replicas < 2):
        kinds |= TRUNCATION
    if acks != "all":
        kinds |= NOT_IDEMPOTENT
    return kinds


def encode_value(producer: str, seq: int) -> bytes:
    """The value of record `seq` of `producer` (no ':' in the producer's name)."""
    if ":" in producer:
        raise ValueError(f"a producer name may not contain ':', got {producer!r}")
    return f"{producer}:{seq}".encode()


def decode_value(value: bytes | None) -> tuple[str, int] | None:
    """(producer, seq) of a value `encode_value` made; None for anything else."""
    if value is None:
        return None
    producer, sep, seq = value.decode(errors="replace").rpartition(":")
    if not sep or not producer or not seq.isdigit():
        return None
    return producer, int(seq)


@dataclass(frozen=True, slots=True)
class Ack:
    """A producer's acknowledgement: `value` written to `partition` at `offset`."""

    partition: int
    offset: int
    value: bytes


@dataclass(frozen=True, slots=True)
class Read:
    """One record a consumer returned. `stretch` changes whenever the consumer's position may
    legitimately jump (a (re)assignment, a seek, a restart): continuity is only checked within one."""

    consumer: str
    stretch: int
    partition: int
    offset: int
    value: bytes
    group: str = ""
    """The consumer group of the consumer, "" for one reading assigned partitions."""


@dataclass(frozen=True, slots=True)
class Commit:
    """An acknowledged offset commit: `group` has consumed `partition` below `offset`."""

    group: str
    consumer: str
    partition: int
    offset: int


@dataclass(frozen=True, slots=True)
class Anomaly:
    kind: str
    partition: int
    detail: str
    """What happened, with the offsets and values involved (the exact history of the anomaly)."""


@dataclass
class Verdict:
    acknowledged: int = 0
    in_log: int = 0
    consumed: int = 0
    anomalies: list[Anomaly] = field(default_factory=list)
    """The first `max_per_kind` anomalies of each kind, in the order found."""
    totals: Counter[str] = field(default_factory=Counter)
    """Every anomaly counted, by kind."""
    expected: frozenset[str] = frozenset()
    """Kinds the configuration allows: counted, but not failing the verdict."""
    commits: int = 0

    @property
    def ok(self) -> bool:
        return not any(n for kind, n in self.totals.items() if kind not in self.expected)

    def counts(self) -> dict[str, int]:
        """Every kind, zero included (for a verdict table)."""
        return {kind: self.totals.get(kind, 0) for kind in KINDS}


FinalLog = Mapping[int, Sequence[tuple[int, bytes]]]
"""partition -> [(offset, value)] in offset order: every record read back at the end."""


def check(
    acked: Iterable[Ack],
    final_log: FinalLog,
    *,
    reads: Iterable[Read] = (),
    commits: Iterable[Commit] = (),
    expected: Iterable[str] = (),
    max_per_kind: int = 20,
) -> Verdict:
    """The verdict over one run; at most `max_per_kind` anomalies of each kind are detailed, all
    are counted (`Verdict.totals`). `expected`: kinds the configuration allows (see above)."""
    acked = list(acked)
    reads = list(reads)
    commits = list(commits)
    unknown = set(expected) - set(KINDS)
    if unknown:
        raise ValueError(f"unknown anomaly kinds {sorted(unknown)}")
    verdict = Verdict(
        acknowledged=len(acked), consumed=len(reads), expected=frozenset(expected), commits=len(commits)
    )
    found: list[Anomaly] = []
    at: dict[int, dict[int, bytes]] = {p: dict(records) for p, records in final_log.items()}
    where: dict[bytes, list[tuple[int, int]]] = defaultdict(list)
    for p, records in final_log.items():
        for offset, value in records:
            where[value].append((p, offset))
            verdict.in_log += 1

    for a in acked:
        if a.value not in where:
            found.append(
                Anomaly("lost", a.partition, f"{a.value!r} acknowledged at offset {a.offset}, not in the log")
            )
        elif at.get(a.partition, {}).get(a.offset) != a.value:
            holds = at.get(a.partition, {}).get(a.offset)
            found.append(
                Anomaly(
                    "moved",
                    a.partition,
                    f"{a.value!r} acknowledged at offset {a.offset}, which holds {holds!r}; "
                    f"the record is at {sorted(where[a.value])}",
                )
            )

    for value, places in where.items():
        if len(places) > 1:
            found.append(
                Anomaly("duplicate", places[0][0], f"{value!r} at (partition, offset) {sorted(places)}")
            )

    for p, records in final_log.items():
        last: dict[str, tuple[int, int]] = {}
        for offset, value in records:
            decoded = decode_value(value)
            if decoded is None:
                found.append(
                    Anomaly("unexpected", p, f"offset {offset} holds {value!r}, which no producer sent")
                )
                continue
            producer, seq = decoded
            previous = last.get(producer)
            if previous is not None and seq <= previous[1]:
                found.append(
                    Anomaly(
                        "reordered",
                        p,
                        f"{producer} seq {seq} at offset {offset} "
                        f"after seq {previous[1]} at offset {previous[0]}",
                    )
                )
            last[producer] = (offset, seq)

    found += _check_reads(reads, at)
    found += _check_groups(reads, commits, at)
    verdict.totals = Counter(a.kind for a in found)
    verdict.anomalies = bounded(found, max_per_kind)
    return verdict


def _check_reads(reads: Iterable[Read], at: Mapping[int, Mapping[int, bytes]]) -> list[Anomaly]:
    found: list[Anomaly] = []
    offsets = {p: sorted(records) for p, records in at.items()}
    previous: dict[tuple[str, int, int], int] = {}
    for r in reads:
        logged = at.get(r.partition, {}).get(r.offset)
        if logged is not None and logged != r.value:
            found.append(
                Anomaly(
                    "divergent_read",
                    r.partition,
                    f"{r.consumer} read {r.value!r} at offset {r.offset}, where the log holds {logged!r}",
                )
            )
        key = (r.consumer, r.stretch, r.partition)
        before = previous.get(key)
        previous[key] = r.offset
        if before is None:
            continue
        if r.offset <= before:
            found.append(
                Anomaly(
                    "backwards", r.partition, f"{r.consumer} returned offset {r.offset} after offset {before}"
                )
            )
            continue
        skipped = _between(offsets.get(r.partition, []), before, r.offset)
        if skipped:
            found.append(
                Anomaly(
                    "skip",
                    r.partition,
                    f"{r.consumer} went from offset {before} to {r.offset}, skipping {skipped} record(s) "
                    "the log holds in between",
                )
            )
    return found


def _check_groups(
    reads: Iterable[Read], commits: Iterable[Commit], at: Mapping[int, Mapping[int, bytes]]
) -> list[Anomaly]:
    """Per group and partition: every record of the final log below the group's bound (its highest
    commit, or one past the highest offset a member read) was read by some member."""
    read: dict[tuple[str, int], set[int]] = defaultdict(set)
    bound: dict[tuple[str, int], tuple[int, str]] = {}
    for r in reads:
        if r.group:
            key = (r.group, r.partition)
            read[key].add(r.offset)
            if r.offset + 1 > bound.get(key, (-1, ""))[0]:
                bound[key] = (r.offset + 1, f"{r.consumer} read offset {r.offset}")
    for c in commits:
        key = (c.group, c.partition)
        if c.offset > bound.get(key, (-1, ""))[0]:
            bound[key] = (c.offset, f"{c.consumer} committed offset {c.offset}")
    found = []
    for (group, p), (end, why) in sorted(bound.items()):
        missing = [o for o in sorted(at.get(p, {})) if o < end and o not in read[(group, p)]]
        if missing:
            shown = ", ".join(map(str, missing[:10])) + (", ..." if len(missing) > 10 else "")
            found.append(
                Anomaly(
                    "group_skip",
                    p,
                    f"group {group}: {why}, but no member ever read {len(missing)} record(s) the log "
                    f"holds below it (offsets {shown})",
                )
            )
    return found


def _between(sorted_offsets: list[int], low: int, high: int) -> int:
    """How many of `sorted_offsets` are strictly between `low` and `high`."""
    return max(0, bisect_left(sorted_offsets, high) - bisect_right(sorted_offsets, low))


class _Kinded(Protocol):
    @property
    def kind(self) -> str: ...


K = TypeVar("K", bound=_Kinded)


def bounded(found: list[K], max_per_kind: int) -> list[K]:
    """The first `max_per_kind` of each kind, in the order found (both checkers' verdicts)."""
    kept: list[K] = []
    per_kind: Counter[str] = Counter()
    for a in found:
        per_kind[a.kind] += 1
        if per_kind[a.kind] <= max_per_kind:
            kept.append(a)
    return kept
