"""Compaction (Kafka §5): latest record per key, unchanged offsets, tombstone horizon, safe swap."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from storage_helpers import BASE_TS, all_records, append, keyed_batch, read_all, segment_files, small_config

from zkafka.records.batch import iter_headers, validate_batches
from zkafka.records.record import Record
from zkafka.storage.cleaner import clean_log, cleanable_range
from zkafka.storage.log import Log
from zkafka.storage.segment import LogSegment

COMPACT = frozenset({"compact"})
HOUR = 3_600_000


def compact_config(**kw: object):
    kw.setdefault("cleanup_policy", COMPACT)
    kw.setdefault("delete_retention_ms", HOUR)
    kw.setdefault("segment_bytes", 600)
    return small_config(**kw)


def write_pairs(log: Log, pairs: list[tuple[bytes | None, bytes | None]], per_batch: int) -> list[Record]:
    """Append the pairs in batches; returns them as Records with their assigned offsets."""
    out = []
    for i in range(0, len(pairs), per_batch):
        chunk = pairs[i : i + per_batch]
        info = append(log, keyed_batch(chunk))
        out += [Record(info.first_offset + j, BASE_TS, k, v) for j, (k, v) in enumerate(chunk)]
    return out


def latest_per_key(records: list[Record]) -> dict[bytes, Record]:
    latest: dict[bytes, Record] = {}
    for r in records:
        if r.key is not None:
            latest[r.key] = r
    return latest


def test_compaction_keeps_latest_per_key_and_offsets(tmp_path: Path) -> None:
    log = Log(tmp_path / "t-0", compact_config())
    pairs = [
        (b"a", b"a1"), (b"b", b"b1"), (None, b"keyless"), (b"c", b"c1"),
        (b"a", b"a2"), (b"b", None), (b"c", b"c2"), (b"a", b"a3"),
    ]  # fmt: skip
    written = write_pairs(log, pairs * 3, per_batch=3)
    log.roll()
    end = log.log_end_offset
    result = clean_log(log, None, BASE_TS, force=True)
    assert result is not None and result.end_offset == end and result.records_removed > 0
    assert log.log_end_offset == end
    survivors = all_records(log)
    expected = latest_per_key(written)
    assert {(r.offset, r.key, r.value) for r in survivors} == {
        (r.offset, r.key, r.value) for r in expected.values()
    }
    # the tombstone's batch now carries a delete horizon
    data = read_all(log)
    validate_batches(data)
    horizon_batches = [h for h in iter_headers(data) if h.has_delete_horizon]
    assert horizon_batches and all(h.base_timestamp == BASE_TS + HOUR for h in horizon_batches)
    assert log.latest_delete_horizon == BASE_TS + HOUR
    # the last batch of the cleaned range is kept, so the offsets of the segments are unchanged
    assert iter_headers(data).__next__().base_offset >= 0
    assert max(h.last_offset for h in iter_headers(data)) == end - 1
    # before the horizon the tombstone stays, from the horizon on it goes
    clean_log(log, result.end_offset, BASE_TS + HOUR - 1, force=True)
    assert any(r.value is None for r in all_records(log))
    clean_log(log, result.end_offset, BASE_TS + HOUR, force=True)
    assert [(r.key, r.value) for r in all_records(log)] == [(b"c", b"c2"), (b"a", b"a3")]
    assert log.latest_delete_horizon == -1
    assert log.log_end_offset == end
    assert append(log, keyed_batch([(b"z", b"z")])).first_offset == end
    log.close()
    reopened = Log(tmp_path / "t-0", compact_config(), had_clean_shutdown=False)
    assert [(r.key, r.value) for r in all_records(reopened)] == [(b"c", b"c2"), (b"a", b"a3"), (b"z", b"z")]
    reopened.close()


def test_active_segment_is_never_cleaned(tmp_path: Path) -> None:
    log = Log(tmp_path / "t-0", compact_config(segment_bytes=1 << 20))
    write_pairs(log, [(b"k", b"%d" % i) for i in range(20)], per_batch=2)
    assert clean_log(log, None, BASE_TS, force=True) is None
    assert len(all_records(log)) == 20
    log.close()


def test_compressed_batches_keep_their_codec(tmp_path: Path) -> None:
    from zkafka.records.record import simple_batch

    log = Log(tmp_path / "t-0", compact_config())
    for i in range(4):
        append(log, simple_batch([(b"k", b"v%d" % i), (b"j%d" % i, b"x")], timestamp=BASE_TS, compression=4))
    log.roll()
    clean_log(log, None, BASE_TS, force=True)
    data = read_all(log)
    assert {h.compression for h in iter_headers(data) if h.records_count} == {4}
    assert [(r.key, r.value) for r in all_records(log)] == [
        (b"j0", b"x"), (b"j1", b"x"), (b"j2", b"x"), (b"k", b"v3"), (b"j3", b"x"),
    ]  # fmt: skip
    log.close()


def test_dirty_ratio_and_compaction_lag(tmp_path: Path) -> None:
    log = Log(tmp_path / "t-0", compact_config(min_cleanable_dirty_ratio=0.5))
    write_pairs(log, [(b"k%d" % (i % 5), b"v" * 20) for i in range(40)], per_batch=4)
    log.roll()
    rng = cleanable_range(log, None, BASE_TS)
    assert rng.first_dirty == 0 and rng.clean_bytes == 0 and rng.dirty_ratio == 1.0
    result = clean_log(log, None, BASE_TS)
    assert result is not None
    rng = cleanable_range(log, result.end_offset, BASE_TS)
    assert rng.dirty_bytes == 0 and not rng.eligible(0.5)
    assert clean_log(log, result.end_offset, BASE_TS) is None
    # a little new dirty data: below the ratio
    write_pairs(log, [(b"k0", b"new")], per_batch=1)
    log.roll()
    rng = cleanable_range(log, result.end_offset, BASE_TS)
    assert 0 < rng.dirty_ratio < 0.5 and clean_log(log, result.end_offset, BASE_TS) is None
    # min.compaction.lag.ms keeps young segments dirty but uncleanable
    log.update_config(compact_config(min_compaction_lag_ms=HOUR))
    rng = cleanable_range(log, result.end_offset, BASE_TS + 10)
    assert rng.first_uncleanable == result.end_offset and rng.dirty_bytes == 0
    rng = cleanable_range(log, result.end_offset, BASE_TS + HOUR + 1)
    assert rng.dirty_bytes > 0
    # max.compaction.lag.ms forces a round whatever the ratio
    log.update_config(compact_config(max_compaction_lag_ms=HOUR))
    rng = cleanable_range(log, result.end_offset, BASE_TS + HOUR + 1)
    assert rng.max_lag_exceeded and rng.eligible(0.99)
    log.close()


@pytest.mark.parametrize("crash_at", [1, 2, 3, 4, 5, 6])
def test_crash_during_swap_recovers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, crash_at: int
) -> None:
    config = compact_config(segment_bytes=500)
    log = Log(tmp_path / "t-0", config)
    written = write_pairs(log, [(b"k%d" % (i % 7), b"v%03d" % i) for i in range(60)], per_batch=3)
    log.roll()
    assert log.num_segments == 5
    log.update_config(compact_config(segment_bytes=5000))  # one group: 4 segments into 1
    # renames: .cleaned -> .swap (1), 4 old segments -> .deleted (2-5), .swap -> final (6)
    end = log.log_end_offset
    expected = {k: (r.offset, r.value) for k, r in latest_per_key(written).items()}
    calls = 0
    real = LogSegment.change_suffix

    def crashing(self: LogSegment, new_suffix: str) -> None:
        nonlocal calls
        calls += 1
        if calls == crash_at:
            raise KeyboardInterrupt("simulated crash")
        real(self, new_suffix)

    monkeypatch.setattr(LogSegment, "change_suffix", crashing)
    with pytest.raises(KeyboardInterrupt):
        clean_log(log, None, BASE_TS, force=True)
    monkeypatch.setattr(LogSegment, "change_suffix", real)
    log.close_without_flush()
    with caplog.at_level("INFO", logger="zkafka.storage.log"):
        reopened = Log(tmp_path / "t-0", config)
    assert ("completed the interrupted swap" in caplog.text) == (crash_at > 1)
    assert reopened.log_end_offset == end
    records = all_records(reopened)
    offsets = [r.offset for r in records]
    assert offsets == sorted(set(offsets))
    assert {k: (r.offset, r.value) for k, r in latest_per_key(records).items()} == expected
    assert not any(n.endswith((".swap", ".cleaned", ".deleted")) for n in segment_files(tmp_path / "t-0"))
    reopened.roll()  # recovery dropped the empty active segment: make the data cleanable again
    clean_log(reopened, None, BASE_TS, force=True)
    assert {(r.key, r.offset, r.value) for r in all_records(reopened)} == {
        (k, o, v) for k, (o, v) in expected.items()
    }
    reopened.close()


keys = st.sampled_from([b"a", b"b", b"c", b"d", b"e", None])
values = st.one_of(st.none(), st.binary(min_size=0, max_size=30))
phases = st.lists(st.lists(st.tuples(keys, values), min_size=1, max_size=40), min_size=1, max_size=3)


@given(phases=phases, per_batch=st.integers(1, 5), segment_bytes=st.integers(300, 1500))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_compaction_property(
    tmp_path_factory: pytest.TempPathFactory, phases: list, per_batch: int, segment_bytes: int
) -> None:
    log = Log(tmp_path_factory.mktemp("compact") / "t-0", compact_config(segment_bytes=segment_bytes))
    written: list[Record] = []
    checkpoint = None
    for phase in phases:
        written += write_pairs(log, phase, per_batch)
        log.roll()
        end = log.log_end_offset
        result = clean_log(log, checkpoint, BASE_TS, force=True)
        if result is not None:
            checkpoint = result.end_offset
        assert log.log_end_offset == end
        records = all_records(log)
        offsets = [r.offset for r in records]
        assert offsets == sorted(set(offsets))  # increasing, no duplicates
        validate_batches(read_all(log))
        latest = latest_per_key(written)
        # exactly the last record per key survives, at its original offset (tombstones included,
        # they are inside their horizon); keyless records are gone
        assert {(r.offset, r.key, r.value) for r in records} == {
            (r.offset, r.key, r.value) for r in latest.values()
        }
    # after the horizon the tombstones are gone too
    clean_log(log, checkpoint, BASE_TS + HOUR, force=True)
    latest = latest_per_key(written)
    assert {(r.offset, r.key, r.value) for r in all_records(log)} == {
        (r.offset, r.key, r.value) for r in latest.values() if r.value is not None
    }
    assert log.log_end_offset == written[-1].offset + 1
    log.close()


def test_cleaning_is_exclusive_and_defers_deletes(tmp_path: Path) -> None:
    log = Log(tmp_path / "t-0", compact_config(segment_bytes=300))
    write_pairs(log, [(b"k%d" % (i % 3), b"v%d" % i) for i in range(40)], per_batch=2)
    log.roll()
    assert log.begin_cleaning()
    assert clean_log(log, None, BASE_TS, force=True) is None  # another round is running
    log.truncate_to(log.segment_bases()[1])  # segments leave the log ...
    deleted = [p for p in (tmp_path / "t-0").iterdir() if p.name.endswith(".log.deleted")]
    assert deleted  # ... but their files stay readable while the cleaner may hold them
    log.end_cleaning()
    log.delete_expired_files(BASE_TS * 2)
    assert not [p for p in (tmp_path / "t-0").iterdir() if p.name.endswith(".deleted")]
    log.close()


def test_close_aborts_a_running_cleaner(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import threading
    import time

    import zkafka.storage.cleaner as cleaner_module

    log = Log(tmp_path / "t-0", compact_config(segment_bytes=300))
    write_pairs(log, [(b"k%d" % (i % 3), b"v%d" % i) for i in range(80)], per_batch=2)
    log.roll()
    started = threading.Event()
    real = cleaner_module.iter_records

    def slow(*args: object, **kw: object):
        started.set()
        time.sleep(0.01)
        return real(*args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(cleaner_module, "iter_records", slow)
    results: list[object] = []
    worker = threading.Thread(target=lambda: results.append(clean_log(log, None, BASE_TS, force=True)))
    worker.start()
    assert started.wait(10)
    log.close()  # waits for the cleaner to notice and stop
    worker.join(10)
    assert not worker.is_alive() and results == [None]
    reopened = Log(tmp_path / "t-0", compact_config(segment_bytes=300), had_clean_shutdown=True)
    assert len({r.key for r in all_records(reopened)}) == 3
    assert not any(n.endswith((".cleaned", ".swap")) for n in segment_files(tmp_path / "t-0"))
    reopened.close()
