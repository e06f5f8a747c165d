"""cleanup.policy=compact,delete on one log: compaction and time retention working together.

Driven as the broker drives them (`zkafka.server.broker` schedules `LogManager.check_retention`
and `LogManager.run_cleaner` as independent periodic tasks), with a fake clock: retention drops
whole segments older than retention.ms and moves the log start offset, compaction keeps the latest
record per key at its original offset, tombstones go once delete.retention.ms has passed.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from storage_helpers import BASE_TS, all_records, append, keyed_batch, read_all, small_config

from zkafka.records.batch import iter_headers
from zkafka.records.record import Record
from zkafka.storage.config import LogConfig
from zkafka.storage.log import Log
from zkafka.storage.manager import LogManager
from zkafka.storage.naming import TopicPartition

MINUTE = 60_000
HOUR = 60 * MINUTE
TOPIC = "cd"
TP = TopicPartition(TOPIC, 0)
COMPACT_DELETE = frozenset({"compact", "delete"})


class Clock:
    def __init__(self, ms: int = BASE_TS) -> None:
        self.ms = ms

    def __call__(self) -> float:
        return self.ms / 1000


def cd_config(**kw: object) -> LogConfig:
    kw.setdefault("cleanup_policy", COMPACT_DELETE)
    kw.setdefault("segment_bytes", 600)
    kw.setdefault("retention_ms", HOUR)
    kw.setdefault("delete_retention_ms", 10 * MINUTE)
    kw.setdefault("min_cleanable_dirty_ratio", 0.01)  # clean whenever anything is dirty
    return small_config(**kw)


def open_log(directory: Path, config: LogConfig, clock: Clock) -> tuple[LogManager, Log]:
    mgr = LogManager([directory], small_config(), broker_id=1, clock=clock, topic_configs={TOPIC: config})
    return mgr, mgr.get_or_create_log(TOPIC, 0)


def write(log: Log, pairs: list[tuple[bytes | None, bytes | None]], ts: int, per_batch: int) -> list[Record]:
    """Append `pairs` in batches stamped `ts`; returns them as Records at their assigned offsets."""
    out: list[Record] = []
    for i in range(0, len(pairs), per_batch):
        chunk = pairs[i : i + per_batch]
        info = append(log, keyed_batch(chunk, ts=ts))
        out += [Record(info.first_offset + j, ts, k, v) for j, (k, v) in enumerate(chunk)]
    return out


def tick(mgr: LogManager, now: int) -> tuple[int, int | None]:
    """One round of the broker's periodic storage work at `now`: retention, then the cleaner
    until it has nothing left to do. Returns (segments deleted, last cleaned end offset)."""
    deleted = mgr.check_retention(now)
    end = None
    for _ in range(10):
        result = mgr.run_cleaner(now)
        if result is None:
            break
        end = result[1].end_offset
    return deleted, end


def snapshot(log: Log) -> list[tuple[int, int, int]]:
    """(base offset, largest timestamp, size) of every segment."""
    return [(s.base_offset, s.largest_timestamp, s.size) for s in log.segments()]


def check_offsets_unchanged(log: Log, written: list[Record]) -> list[Record]:
    """Every surviving record sits at the offset it was written at, with the same key and value."""
    by_offset = {r.offset: r for r in written}
    survivors = all_records(log)
    for r in survivors:
        original = by_offset[r.offset]
        assert (r.key, r.value, r.timestamp) == (original.key, original.value, original.timestamp)
    offsets = [r.offset for r in survivors]
    assert offsets == sorted(set(offsets))
    return survivors


def expected_survivors(
    written: list[Record], log_start: int, cleaned_end: int
) -> set[tuple[int, bytes | None, bytes | None]]:
    """Kafka's answer for a log compacted up to `cleaned_end` and retained from `log_start`:
    below `cleaned_end` the latest keyed record per key (the map covers only the cleaned range),
    at and above it everything; nothing below the log start."""
    latest: dict[bytes, Record] = {}
    for r in written:
        if r.offset < cleaned_end and r.key is not None:
            latest[r.key] = r
    keep = {(r.offset, r.key, r.value) for r in latest.values() if r.offset >= log_start}
    keep |= {(r.offset, r.key, r.value) for r in written if r.offset >= cleaned_end}
    return keep


def expected_retention_prefix(before: list[tuple[int, int, int]], now: int, retention_ms: int) -> int:
    """How many leading segments are older than retention.ms (the active one counts when non-empty)."""
    n = 0
    for i, (_, largest, size) in enumerate(before):
        if (i == len(before) - 1 and size == 0) or now - largest <= retention_ms:
            break
        n += 1
    return n


def test_compact_delete_retention_compaction_and_tombstones(tmp_path: Path) -> None:
    clock = Clock(BASE_TS)
    mgr, log = open_log(tmp_path / "data", cd_config(), clock)
    t0 = BASE_TS

    # Phase A at t0: 30 keys written once (they survive compaction, so the old data keeps several
    # segments of its own) and 8 hot keys written 5 times each, plus keyless records.
    unique = [(b"u%02d" % i, b"old-unique-%02d" % i) for i in range(30)]
    hot = [(b"h%d" % (i % 8), b"old-hot-%02d" % i) for i in range(40)]
    keyless = [(None, b"old-keyless-%d" % i) for i in range(4)]
    written = write(log, unique + hot[:20] + keyless + hot[20:], ts=t0, per_batch=3)
    assert log.num_segments >= 5

    # t0 + 10 min: the cleaner compacts the old data; nothing is old enough for retention
    clock.ms = t0 + 10 * MINUTE
    deleted, cleaned_end = tick(mgr, clock.ms)
    assert deleted == 0 and cleaned_end == log.active_segment.base_offset
    assert log.log_start_offset == 0
    survivors = check_offsets_unchanged(log, written)
    assert {(r.offset, r.key, r.value) for r in survivors} == expected_survivors(written, 0, cleaned_end)
    assert not [r for r in survivors if r.offset < cleaned_end and r.key is None]

    # Phase B at t0 + 30 min: new values for half the hot keys, tombstones for two hot keys and
    # two unique keys, more keyless records, a few fresh keys.
    t1 = t0 + 30 * MINUTE
    clock.ms = t1
    new = [(b"h%d" % i, b"new-hot-%d" % i) for i in range(4)]
    tombstones = [(b"h5", None), (b"h6", None), (b"u03", None), (b"u27", None)]
    fresh = [(b"f%02d" % i, b"new-fresh-%02d" % i) for i in range(20)]
    written += write(log, new + tombstones + [(None, b"new-keyless")] + fresh + new, ts=t1, per_batch=4)

    clock.ms = t1 + MINUTE
    deleted, cleaned_end = tick(mgr, clock.ms)
    assert deleted == 0 and log.log_start_offset == 0
    assert cleaned_end == log.active_segment.base_offset
    survivors = check_offsets_unchanged(log, written)
    assert {(r.offset, r.key, r.value) for r in survivors} == expected_survivors(written, 0, cleaned_end)
    # the tombstones below the cleaned end are still there, stamped with their delete horizon
    kept_tombstones = {r.key for r in survivors if r.value is None and r.offset < cleaned_end}
    assert kept_tombstones == {k for k, _ in tombstones}
    horizon = t1 + MINUTE + 10 * MINUTE
    assert log.latest_delete_horizon == horizon
    data = read_all(log)
    assert any(h.has_delete_horizon and h.base_timestamp == horizon for h in iter_headers(data))

    # one ms before the horizon the tombstones stay; from the horizon on the cleaner drops them
    clock.ms = horizon - 1
    assert tick(mgr, clock.ms)[0] == 0
    assert {r.key for r in all_records(log) if r.value is None} == kept_tombstones
    clock.ms = horizon
    deleted, _ = tick(mgr, clock.ms)
    assert deleted == 0 and log.log_start_offset == 0
    survivors = check_offsets_unchanged(log, written)
    assert not [r for r in survivors if r.value is None]
    live = {(r.offset, r.key, r.value) for r in survivors}
    assert live == {e for e in expected_survivors(written, 0, cleaned_end) if e[2] is not None}
    assert log.latest_delete_horizon == -1

    # Phase C: t0 + 80 min, the phase A data is more than retention.ms old. Retention drops the
    # segments holding only old records, whole; the log start moves to the first kept segment.
    t2 = t0 + 80 * MINUTE
    clock.ms = t2
    written += write(log, [(b"c%d" % i, b"newest-%d" % i) for i in range(6)], ts=t2, per_batch=2)
    before = snapshot(log)
    end_before = log.log_end_offset
    unique_before = [r for r in all_records(log) if r.key is not None and r.key.startswith(b"u")]
    n = expected_retention_prefix(before, t2, HOUR)
    assert n >= 1, f"the layout {before} left no segment of old data only"
    deleted, cleaned_end = tick(mgr, t2)
    assert deleted == n
    assert log.segment_bases()[: len(before) - n] == [b for b, _, _ in before[n:]]  # the rest is untouched
    assert log.log_start_offset == before[n][0] > 0
    assert log.log_end_offset == end_before  # offsets never move
    assert not any(p.name.startswith(f"{b:020d}.") for b, _, _ in before[:n] for p in log.dir_path.iterdir())
    survivors = check_offsets_unchanged(log, written)
    assert min(r.offset for r in survivors) >= log.log_start_offset
    # old records of keys never written again went with their segments, even though they were the
    # latest for their key: with compact,delete retention wins over compaction
    assert len(unique_before) == 28  # u00..u29 but the two tombstoned keys
    assert not [r for r in survivors if r.key is not None and r.key.startswith(b"u")]
    # what is left is still the latest value per key, at its original offset
    latest_end = cleaned_end if cleaned_end is not None else mgr.cleaner_offset(TOPIC, 0)
    assert latest_end is not None
    assert {(r.offset, r.key, r.value) for r in survivors} == {
        e for e in expected_survivors(written, log.log_start_offset, latest_end) if e[2] is not None
    }
    # appends continue at the old log end
    assert append(log, keyed_batch([(b"z", b"z")], ts=t2)).first_offset == end_before
    mgr.shutdown()


def test_compact_delete_everything_expired_keeps_the_log_end(tmp_path: Path) -> None:
    """All data older than retention.ms: every segment goes (the active one is replaced by an empty
    one), the log start reaches the log end, and the cleaner has nothing left to do."""
    clock = Clock(BASE_TS)
    mgr, log = open_log(tmp_path / "data", cd_config(), clock)
    written = write(log, [(b"k%d" % (i % 5), b"v%02d" % i) for i in range(60)], ts=BASE_TS, per_batch=3)
    clock.ms = BASE_TS + MINUTE
    tick(mgr, clock.ms)
    check_offsets_unchanged(log, written)
    end = log.log_end_offset
    clock.ms = BASE_TS + HOUR + 1
    deleted, cleaned = tick(mgr, clock.ms)
    assert deleted >= 1 and cleaned is None
    assert log.log_start_offset == log.log_end_offset == end
    assert all_records(log) == []
    assert log.segment_bases() == [end]
    assert append(log, keyed_batch([(b"k0", b"after")], ts=clock.ms)).first_offset == end
    mgr.shutdown()


@pytest.mark.parametrize("crash", [False, True], ids=["clean-shutdown", "crash"])
def test_compact_delete_state_survives_a_restart(tmp_path: Path, crash: bool) -> None:
    """Cleaned segments (with delete-horizon batches), the retention-moved log start and the
    cleaner checkpoint come back after a restart, and retention keeps dating segments by their
    records (not by the delete horizon stamped into a batch's base timestamp)."""
    clock = Clock(BASE_TS)
    directory = tmp_path / "data"
    mgr, log = open_log(directory, cd_config(delete_retention_ms=HOUR), clock)
    written = write(log, [(b"k%d" % (i % 5), b"old-%02d" % i) for i in range(40)], ts=BASE_TS, per_batch=3)
    t1 = BASE_TS + 40 * MINUTE
    written += write(log, [(b"k1", None), (b"k2", None)], ts=t1, per_batch=2)
    written += write(log, [(b"x%02d" % i, b"y" * 20) for i in range(30)], ts=t1, per_batch=3)
    clock.ms = t1 + MINUTE
    tick(mgr, clock.ms)  # compacts; stamps the tombstones with horizon t1 + 1 min + 1 h
    clock.ms = BASE_TS + HOUR + 1
    deleted, _ = tick(mgr, clock.ms)  # the old-only segments expire
    assert deleted >= 1 and log.log_start_offset > 0
    layout, start, checkpoint = snapshot(log), log.log_start_offset, mgr.cleaner_offset(TOPIC, 0)
    records = check_offsets_unchanged(log, written)
    assert {r.key for r in records if r.value is None} == {b"k1", b"k2"}
    if crash:
        for lg in mgr.all_logs().values():
            lg.close_without_flush()
        for lock in mgr._locks:
            lock.release()
    else:
        mgr.shutdown()

    mgr, log = open_log(directory, cd_config(delete_retention_ms=HOUR), clock)
    assert snapshot(log) == layout
    assert log.log_start_offset == start
    assert mgr.cleaner_offset(TOPIC, 0) == checkpoint
    assert check_offsets_unchanged(log, written) == records
    # the tombstone segment is dated by its records (t1), not by the horizon stamped in the batch
    clock.ms = t1 + HOUR + 1
    assert mgr.check_retention(clock.ms) == expected_retention_prefix(layout, clock.ms, HOUR) >= 1
    assert all_records(log) == [] or min(r.offset for r in all_records(log)) >= log.log_start_offset
    mgr.shutdown()


# -- property -------------------------------------------------------------------------------------

KEYS = st.sampled_from([b"a", b"b", b"c", b"d", b"e", b"f", None])
VALUES = st.one_of(st.none(), st.binary(min_size=1, max_size=30))
STEP = st.tuples(
    st.lists(st.tuples(KEYS, VALUES), min_size=1, max_size=12),  # records appended now
    st.integers(min_value=1, max_value=4),  # records per batch
    st.integers(min_value=0, max_value=40),  # minutes that pass before the tick
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.lists(STEP, min_size=1, max_size=10))
def test_compact_delete_invariants_property(
    steps: list[tuple[list[tuple[bytes | None, bytes | None]], int, int]],
) -> None:
    retention = HOUR
    with tempfile.TemporaryDirectory() as d:
        clock = Clock(BASE_TS)
        mgr, log = open_log(Path(d), cd_config(segment_bytes=300, delete_retention_ms=20 * MINUTE), clock)
        written: list[Record] = []
        previous_start = 0
        for pairs, per_batch, minutes in steps:
            written += write(log, pairs, ts=clock.ms, per_batch=per_batch)
            clock.ms += minutes * MINUTE
            before = snapshot(log)
            deleted, _ = tick(mgr, clock.ms)
            # retention deletes exactly the leading segments older than retention.ms (the log
            # start rule may add none here: nothing else moves the log start)
            assert deleted == expected_retention_prefix(before, clock.ms, retention)
            start = log.log_start_offset
            assert start >= previous_start
            previous_start = start
            bases = log.segment_bases()
            assert bases[0] == start
            assert log.log_end_offset == len(written)  # offsets never change
            survivors = check_offsets_unchanged(log, written)
            assert all(r.offset >= start for r in survivors)
            # nothing old enough for retention is left at the head of the log
            first = log.segments()[0]
            assert first.size == 0 or clock.ms - first.largest_timestamp <= retention
            # the latest record of every key survives while it is retained (a tombstone may go
            # once its horizon has passed)
            latest: dict[bytes, Record] = {}
            for r in written:
                if r.key is not None:
                    latest[r.key] = r
            have = {r.offset for r in survivors}
            for r in latest.values():
                if r.offset >= start and r.value is not None:
                    assert r.offset in have, f"latest {r} of its key was removed"
            # below the cleaner checkpoint: no keyless record, no superseded record
            checkpoint = mgr.cleaner_offset(TOPIC, 0)
            if checkpoint is not None and checkpoint > start:
                cleaned = [r for r in survivors if r.offset < checkpoint]
                assert all(r.key is not None for r in cleaned)
                for r in cleaned:
                    assert not any(w.key == r.key and r.offset < w.offset < checkpoint for w in written), (
                        f"{r} survived although superseded below the checkpoint {checkpoint}"
                    )
        mgr.shutdown()
