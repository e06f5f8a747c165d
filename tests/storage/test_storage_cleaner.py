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


# ---- transactions: aborted data, markers (KIP-534), each producer's last batch ----------------


def txn_batch(pairs: list[tuple[bytes, bytes | None]], pid: int, *, seq: int = 0, epoch: int = 0) -> bytes:
    from zkafka.records.record import build_batch

    return build_batch(
        [Record(i, BASE_TS, k, v) for i, (k, v) in enumerate(pairs)],
        base_offset=0,
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        is_transactional=True,
    )


def end_txn(log: Log, pid: int, *, commit: bool, first_offset: int, epoch: int = 0) -> int:
    """Append a COMMIT/ABORT marker as the leader does, with the `.txnindex` entry of an abort."""
    from zkafka.records.record import build_end_txn_marker
    from zkafka.storage.txn_index import AbortedTxn

    offset = append(log, build_end_txn_marker(pid, epoch, commit, 0, BASE_TS)).first_offset
    if not commit:
        log.append_aborted_txn(AbortedTxn(pid, first_offset, offset, offset + 1))
    return offset


def markers(log: Log) -> list[tuple[int, int, bool, int]]:
    """(offset, producer id, has the delete-horizon bit, base timestamp) of each non-empty marker."""
    data = read_all(log)
    return [
        (h.base_offset, h.producer_id, h.has_delete_horizon, h.base_timestamp)
        for h in iter_headers(data)
        if h.is_control and h.records_count
    ]


def read_committed(log: Log) -> list[tuple[int, bytes | None, bytes | None]]:
    """What a read_committed consumer gets: Kafka's client algorithm over the `.txnindex` entries
    (a producer's batches from an aborted txn's first offset up to its ABORT marker are skipped)."""
    from zkafka.records.record import end_txn_marker, iter_records

    data = read_all(log)
    pending = sorted(log.collect_aborted_txns(0, log.log_end_offset), key=lambda t: t.first_offset)
    aborting: set[int] = set()
    out = []
    for h in iter_headers(data):
        while pending and pending[0].first_offset <= h.last_offset:
            aborting.add(pending.pop(0).producer_id)
        if h.is_control:
            marker = end_txn_marker(data, h) if h.records_count else None
            if marker is not None and not marker[0]:
                aborting.discard(h.producer_id)
            continue
        if h.is_transactional and h.producer_id in aborting:
            continue
        out += [(r.offset, r.key, r.value) for r in iter_records(data, h)]
    return out


def data_values(log: Log) -> list[bytes | None]:
    """The values of the data records (markers left out), whatever their transaction."""
    from zkafka.records.record import iter_records

    data = read_all(log)
    return [r.value for h in iter_headers(data) if not h.is_control for r in iter_records(data, h)]


def txn_log(tmp_path: Path, **kw: object) -> Log:
    kw.setdefault("segment_bytes", 100_000)
    return Log(tmp_path / "t-0", compact_config(**kw))


def test_commit_marker_gets_a_horizon_once_its_data_is_gone_and_goes_after_it(tmp_path: Path) -> None:
    log = txn_log(tmp_path)
    append(log, txn_batch([(b"a", b"txn-a")], pid=7))  # 0
    end_txn(log, 7, commit=True, first_offset=0)  # 1
    append(log, txn_batch([(b"b", b"txn-b")], pid=8))  # 2
    end_txn(log, 8, commit=True, first_offset=2)  # 3
    append(log, keyed_batch([(b"a", b"plain-a")]))  # 4: shadows the txn's record
    append(log, keyed_batch([(b"z", b"last")]))  # 5
    log.roll()
    expected = [(2, b"b", b"txn-b"), (4, b"a", b"plain-a"), (5, b"z", b"last")]
    # round 1: the txn's record goes, but it was traversed: both markers stay as they were
    clean_log(log, None, BASE_TS, force=True)
    assert read_committed(log) == expected
    assert markers(log) == [(1, 7, False, BASE_TS), (3, 8, False, BASE_TS)]
    # round 2: nothing of pid 7's txn is left: its marker gets the horizon; pid 8's data stays,
    # and so does its marker, untouched
    clean_log(log, None, BASE_TS + 10, force=True)
    assert markers(log) == [(1, 7, True, BASE_TS + 10 + HOUR), (3, 8, False, BASE_TS)]
    assert log.latest_delete_horizon == BASE_TS + 10 + HOUR
    # before the horizon the marker stays
    clean_log(log, None, BASE_TS + HOUR, force=True)
    assert markers(log) == [(1, 7, True, BASE_TS + 10 + HOUR), (3, 8, False, BASE_TS)]
    # at the horizon it goes; the offsets and the log end are unchanged
    clean_log(log, None, BASE_TS + 10 + HOUR, force=True)
    assert markers(log) == [(3, 8, False, BASE_TS)]
    assert read_committed(log) == expected
    assert log.log_end_offset == 6
    log.close()


def test_abort_marker_and_its_index_entry_go_once_all_its_data_is_gone(tmp_path: Path) -> None:
    from zkafka.storage.txn_index import AbortedTxn

    log = txn_log(tmp_path, delete_retention_ms=0)
    append(log, keyed_batch([(b"a", b"committed")]))  # 0
    append(log, txn_batch([(b"a", b"aborted"), (b"c", b"aborted")], pid=7))  # 1-2
    end_txn(log, 7, commit=False, first_offset=1)  # 3
    append(log, keyed_batch([(b"z", b"last")]))  # 4
    log.roll()
    expected = [(0, b"a", b"committed"), (4, b"z", b"last")]
    assert read_committed(log) == expected
    # round 1: the aborted records go (and do not hide offset 0); their batch was seen, so the
    # marker stays and the cleaned segment keeps the aborted txn in its .txnindex
    clean_log(log, None, BASE_TS, force=True)
    assert data_values(log) == [b"committed", b"last"]
    assert markers(log) == [(3, 7, False, BASE_TS)]
    assert log.collect_aborted_txns(0, log.log_end_offset) == [AbortedTxn(7, 1, 3, 4)]
    assert read_committed(log) == expected
    # round 2: no batch of the txn is left: the marker gets its horizon (now + 0) and the index
    # entry, which no record needs any more, is not carried over
    clean_log(log, None, BASE_TS, force=True)
    assert markers(log) == [(3, 7, True, BASE_TS)]
    assert log.collect_aborted_txns(0, log.log_end_offset) == []
    assert read_committed(log) == expected
    # round 3: past the horizon: the marker goes
    clean_log(log, None, BASE_TS, force=True)
    assert markers(log) == []
    assert read_committed(log) == expected
    assert [h.base_offset for h in iter_headers(read_all(log))] == [0, 4]
    index = tmp_path / "t-0" / f"{0:020d}.txnindex"
    assert not index.exists() or index.stat().st_size == 0
    log.close()


def test_abort_marker_stays_while_aborted_data_remains_beyond_the_round(tmp_path: Path) -> None:
    from zkafka.storage.txn_index import AbortedTxn

    log = txn_log(tmp_path, delete_retention_ms=0)
    append(log, txn_batch([(b"a", b"aborted-1")], pid=7))  # 0
    append(log, keyed_batch([(b"x", b"committed")]))  # 1: fills the tiny offset map
    append(log, txn_batch([(b"b", b"aborted-2")], pid=7, seq=1))  # 2
    end_txn(log, 7, commit=False, first_offset=0)  # 3
    append(log, keyed_batch([(b"z", b"last")]))  # 4
    log.roll()
    expected = [(1, b"x", b"committed"), (4, b"z", b"last")]
    # a round that ends at offset 2: the aborted batch below it goes, the one beyond stays, and
    # so do the marker and its .txnindex entry (a read_committed reader still needs them)
    result = clean_log(log, None, BASE_TS, force=True, dedupe_buffer_bytes=1)
    assert result is not None and result.end_offset == 2
    assert data_values(log) == [b"committed", b"aborted-2", b"last"]
    assert markers(log) == [(3, 7, False, BASE_TS)]
    assert log.collect_aborted_txns(0, log.log_end_offset) == [AbortedTxn(7, 0, 3, 4)]
    assert read_committed(log) == expected
    # a full round: the rest of the data goes, the marker (its data was seen) and entry stay
    clean_log(log, result.end_offset, BASE_TS, force=True)
    assert data_values(log) == [b"committed", b"last"]
    assert markers(log) == [(3, 7, False, BASE_TS)]
    assert log.collect_aborted_txns(0, log.log_end_offset) == [AbortedTxn(7, 0, 3, 4)]
    assert read_committed(log) == expected
    # then the horizon, then the marker goes
    clean_log(log, None, BASE_TS, force=True)
    assert markers(log) == [(3, 7, True, BASE_TS)]
    clean_log(log, None, BASE_TS, force=True)
    assert markers(log) == []
    assert log.collect_aborted_txns(0, log.log_end_offset) == []
    assert read_committed(log) == expected
    log.close()


def test_markers_of_an_unsettled_transaction_are_not_touched(tmp_path: Path) -> None:
    log = txn_log(tmp_path, delete_retention_ms=0)
    append(log, keyed_batch([(b"a", b"v")]))  # 0
    append(log, txn_batch([(b"a", b"open")], pid=7))  # 1: not settled yet
    end_txn(log, 7, commit=True, first_offset=1)  # 2: its marker not yet below the HW
    append(log, keyed_batch([(b"z", b"last")]))  # 3
    log.roll()
    log.first_unstable_offset = lambda: 1
    for _ in range(3):
        result = clean_log(log, None, BASE_TS, force=True)
        assert result is not None and result.end_offset == 1
    assert markers(log) == [(2, 7, False, BASE_TS)]
    assert data_values(log) == [b"v", b"open", b"last"]
    log.close()


def _replayed_state(log: Log):
    from zkafka.records.record import end_txn_marker
    from zkafka.storage.producer_state import ProducerStateManager

    data = read_all(log)
    state = ProducerStateManager()
    state.replay((h, end_txn_marker(data, h) if h.is_control else None) for h in iter_headers(data))
    return state


def test_each_producers_last_batch_is_kept_empty(tmp_path: Path) -> None:
    from zkafka.records.record import build_batch

    log = txn_log(tmp_path, delete_retention_ms=0)
    idem = build_batch(
        [Record(0, BASE_TS, b"a", b"idempotent")],
        base_offset=0,
        producer_id=9,
        producer_epoch=2,
        base_sequence=4,
    )
    append(log, idem)  # 0: pid 9's last batch, seq 4
    append(log, txn_batch([(b"b", b"aborted")], pid=7, seq=3))  # 1: pid 7's last data batch
    end_txn(log, 7, commit=False, first_offset=1)  # 2
    append(log, keyed_batch([(b"a", b"newer"), (b"z", b"last")]))  # 3-4
    log.roll()
    log.last_producer_records = _replayed_state(log).last_records
    for _ in range(3):
        clean_log(log, None, BASE_TS, force=True)
    headers = {h.base_offset: h for h in iter_headers(read_all(log))}
    # no record survives of either batch, but their headers do: producer, epoch, sequences
    assert headers[0].records_count == 0 and headers[0].last_offset == 0
    assert (headers[0].producer_id, headers[0].producer_epoch, headers[0].base_sequence) == (9, 2, 4)
    assert headers[1].records_count == 0 and (headers[1].producer_id, headers[1].base_sequence) == (7, 3)
    # pid 7's aborted batch is still traversed, so its marker and .txnindex entry stay
    assert markers(log) == [(2, 7, False, BASE_TS)]
    assert [t.producer_id for t in log.collect_aborted_txns(0, log.log_end_offset)] == [7]
    assert read_committed(log) == [(3, b"a", b"newer"), (4, b"z", b"last")]
    # a producer state rebuilt from the cleaned log still knows both producers' sequences
    rebuilt = _replayed_state(log)
    assert rebuilt.producers[9].last_seq == 4 and rebuilt.producers[9].epoch == 2
    assert rebuilt.producers[7].last_seq == 3
    # once pid 9 has written again, its emptied batch is no longer its last: it goes
    newer = build_batch(
        [Record(0, BASE_TS, b"q", b"v")], base_offset=0, producer_id=9, producer_epoch=2, base_sequence=5
    )
    append(log, newer)
    log.roll()
    log.last_producer_records = _replayed_state(log).last_records
    clean_log(log, None, BASE_TS, force=True)
    assert 0 not in {h.base_offset for h in iter_headers(read_all(log))}
    assert _replayed_state(log).producers[9].last_seq == 5
    log.close()


def test_a_producers_last_marker_is_kept_empty_after_its_horizon(tmp_path: Path) -> None:
    log = txn_log(tmp_path, delete_retention_ms=0)
    append(log, txn_batch([(b"a", b"committed")], pid=7))  # 0
    append(log, keyed_batch([(b"a", b"newer")]))  # 1
    # when the producer state has no data batch of a producer (its epoch was bumped, or the
    # batches expired), Kafka keeps the producer's markers of its current epoch instead
    end_txn(log, 7, commit=True, first_offset=0)  # 2
    append(log, keyed_batch([(b"z", b"last")]))  # 3
    log.roll()
    log.last_producer_records = lambda: {7: (-1, 0)}  # pid 7 has no data batch cached, epoch 0
    for _ in range(4):
        clean_log(log, None, BASE_TS, force=True)
    headers = {h.base_offset: h for h in iter_headers(read_all(log))}
    assert 0 not in headers  # the txn's data went
    assert headers[2].is_control and headers[2].records_count == 0 and headers[2].producer_id == 7
    assert read_committed(log) == [(1, b"a", b"newer"), (3, b"z", b"last")]
    log.close()


pids = st.sampled_from([7, 8])
txn_ops = st.lists(
    st.one_of(
        st.tuples(st.just("plain"), st.lists(st.tuples(keys, values), min_size=1, max_size=4)),
        st.tuples(st.just("txn"), pids, st.lists(st.tuples(keys, values), min_size=1, max_size=3)),
        st.tuples(st.just("end"), pids, st.booleans()),  # commit or abort, if open
    ),
    min_size=1,
    max_size=14,
)


@given(phases=st.lists(txn_ops, min_size=1, max_size=3), dedupe=st.sampled_from([1, 150, 600]))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_compaction_property_with_transactions(
    tmp_path_factory: pytest.TempPathFactory, phases: list, dedupe: int
) -> None:
    """The model, with two producers' transactions interleaved and some left open across rounds
    (the producer state's first unstable offset stops the cleaner, as on a broker): a
    read_committed reader sees, below that offset, exactly the latest committed record per key
    (after a partial round: a subset of the committed records holding those) and above it every
    record not aborted; a marker goes only once no batch of its transaction is left; an aborted
    txn with a batch left keeps its marker and its `.txnindex` entry; every entry names a marker
    still in the log."""
    from zkafka.storage.producer_state import ProducerStateManager

    log = Log(tmp_path_factory.mktemp("txn") / "t-0", compact_config(segment_bytes=700))
    state = ProducerStateManager()  # the producer state a partition keeps of what was appended
    log.last_producer_records = state.last_records
    log.first_unstable_offset = state.first_unstable_offset
    committed: list[Record] = []  # plain records and those of committed transactions
    open_txns: dict[int, list[Record]] = {}  # producer id -> records of its open transaction
    not_aborted: list[Record] = []  # records of open transactions count too
    seqs = {7: 0, 8: 0}
    marker_of: dict[int, int] = {}  # offset of a transactional batch -> its txn's marker offset

    def end(pid: int, commit: bool) -> None:
        nonlocal not_aborted
        written = open_txns.pop(pid)
        marker = end_txn(log, pid, commit=commit, first_offset=written[0].offset)
        marker_of.update((r.offset, marker) for r in written)
        if commit:  # kept in offset order: latest_per_key takes the last one
            committed.extend(written)
            committed.sort(key=lambda r: r.offset)
        else:
            not_aborted = [r for r in not_aborted if r not in written]

    def settle() -> None:
        log.roll()
        state.replay(_replay_items(log))  # the batches appended since the last phase
        state.on_high_watermark(log.log_end_offset)  # one replica: everything is replicated

    def check_read_committed(*, full: bool) -> None:
        lso = state.first_unstable_offset()
        lso = log.log_end_offset if lso is None else lso
        as_set = lambda rs: {(r.offset, r.key, r.value) for r in rs}  # noqa: E731
        seen = {(o, k, v) for o, k, v in read_committed(log)}
        below = [r for r in committed if r.offset < lso]
        above = as_set(r for r in not_aborted if r.offset >= lso)
        latest = as_set(latest_per_key(below).values())
        if full:
            assert seen == latest | above
        else:
            assert latest | above <= seen <= as_set(below) | above

    for phase in phases:
        for op in phase:
            if op[0] == "plain":
                written = write_pairs(log, op[1], per_batch=4)
                committed += written
                not_aborted += written
            elif op[0] == "txn":
                _, pid, pairs = op
                info = append(log, txn_batch(pairs, pid, seq=seqs[pid]))
                seqs[pid] += len(pairs)
                written = [Record(info.first_offset + j, BASE_TS, k, v) for j, (k, v) in enumerate(pairs)]
                open_txns.setdefault(pid, []).extend(written)
                not_aborted += written
            elif op[1] in open_txns:
                end(op[1], op[2])
        settle()
        result = clean_log(log, None, BASE_TS, force=True, dedupe_buffer_bytes=dedupe)
        check_read_committed(full=False)
        clean_log(log, result.end_offset if result else None, BASE_TS, force=True)
        check_read_committed(full=True)
        _check_markers(log, marker_of)
    for pid in sorted(open_txns):
        end(pid, commit=pid == 7)
    settle()
    # rounds an hour apart (past every horizon set before) until nothing changes: a batch kept
    # empty as a group's last goes when groups merge, and its marker then needs two more rounds
    previous = read_all(log)
    for hours in range(1, 16):
        clean_log(log, None, BASE_TS + hours * HOUR, force=True)
        _check_markers(log, marker_of)
        current = read_all(log)
        if current == previous:
            break
        previous = current
    latest = latest_per_key(committed)
    assert {(o, k, v) for o, k, v in read_committed(log)} == {
        (r.offset, r.key, r.value) for r in latest.values() if r.value is not None
    }
    # after the horizons, no marker is left without a batch of its transaction (maybe emptied:
    # a producer's last batch)
    data = read_all(log)
    with_batches = {marker_of[h.base_offset] for h in iter_headers(data) if h.base_offset in marker_of}
    assert {o for o, *_ in markers(log)} == with_batches
    log.close()


def _check_markers(log: Log, marker_of: dict[int, int]) -> None:
    from zkafka.records.record import end_txn_marker

    data = read_all(log)
    headers = list(iter_headers(data))
    live_markers = {
        h.base_offset: end_txn_marker(data, h) for h in headers if h.is_control and h.records_count
    }
    indexed = {t.last_offset for t in log.collect_aborted_txns(0, log.log_end_offset)}
    assert indexed <= set(live_markers)
    for h in headers:
        if not h.is_control and h.base_offset in marker_of:  # a batch left of a transaction
            marker = marker_of[h.base_offset]
            assert marker in live_markers, f"the marker at {marker} went before its batch at {h.base_offset}"
            live = live_markers[marker]
            if live is not None and not live[0]:
                assert marker in indexed, f"aborted txn of {h.base_offset} lost its .txnindex entry"


def _replay_items(log: Log):
    from zkafka.records.record import end_txn_marker

    data = read_all(log)
    return [(h, end_txn_marker(data, h) if h.is_control else None) for h in iter_headers(data)]
