"""Start-up of a log dir with many replicas: each partition directory is listed once and that
listing serves its whole load (segments, leftovers, the leader-epoch checkpoint), and a recovery
that re-validates an intact segment leaves its index files as they are. What a crash leaves must
load exactly as before: torn tails past the recovery point cut, intact ones kept, indexes that
differ from the rebuilt ones rewritten."""

from __future__ import annotations

import os
from pathlib import Path

from storage_helpers import append, batch, read_all, segment_files, small_config

from zkafka.storage.checkpoint import LEADER_EPOCH_CHECKPOINT
from zkafka.storage.log import Log
from zkafka.storage.log_loader import LISTING_CHUNK, prefetch_listings
from zkafka.storage.manager import LogManager

INDEX0 = f"{0:020d}.index"
TIMEINDEX0 = f"{0:020d}.timeindex"
OLD_NS = 1_000_000_000  # an mtime no write made: a file still carrying it was not rewritten


def manager(d: Path) -> LogManager:
    return LogManager([d], small_config(segment_bytes=1 << 20, index_interval_bytes=64), broker_id=1)


def crash(mgr: LogManager) -> None:
    """What a SIGKILL leaves: nothing flushed or closed, no checkpoint, no clean-shutdown marker."""
    for lg in mgr.all_logs().values():
        lg.close_without_flush()
    for lock in mgr._locks:
        lock.release()


def test_restart_after_a_crash_loads_each_kind_of_replica(tmp_path: Path) -> None:
    d = tmp_path / "data"
    mgr = manager(d)
    empty = mgr.get_or_create_log("t", 0)
    flushed = mgr.get_or_create_log("t", 1)
    intact = mgr.get_or_create_log("t", 2)
    torn = mgr.get_or_create_log("t", 3)
    for lg in (flushed, intact, torn):
        for _ in range(4):
            append(lg, batch(3, value_size=30), leader_epoch=2)
        lg.flush()
    mgr.checkpoint_recovery_points()
    for lg in (intact, torn):  # past the checkpointed recovery point
        for _ in range(3):
            append(lg, batch(2, value_size=30), leader_epoch=3)
    contents = {lg.topic_partition: read_all(lg) for lg in (empty, flushed, intact, torn)}
    torn_path = torn.active_segment.log_path
    torn_keep = torn.active_segment.size - 20  # inside the last batch
    crash(mgr)
    os.truncate(torn_path, torn_keep)

    again = manager(d)
    assert again.had_clean_shutdown[d.absolute()] is False
    logs = {tp.partition: lg for tp, lg in again.all_logs().items()}
    assert all(lg.has_dir is True for lg in logs.values())  # loaded from their directories
    # never written, so nothing of it on disk: not loaded (the controller's LeaderAndIsr makes it again)
    assert 0 not in logs and not (d / "t-0").exists() and contents[empty.topic_partition] == b""
    assert read_all(logs[1]) == contents[flushed.topic_partition] and logs[1].log_end_offset == 12
    assert read_all(logs[2]) == contents[intact.topic_partition] and logs[2].log_end_offset == 18
    assert logs[2].epochs.entries() == [(2, 0), (3, 12)]  # the epoch of the tail, from its batches
    assert logs[3].log_end_offset == 16  # the torn batch cut, the two before it kept
    assert read_all(logs[3]) == contents[torn.topic_partition][: logs[3].active_segment.size]
    assert logs[3].active_segment.size < torn_keep
    assert logs[3].epochs.entries() == [(2, 0), (3, 12)]
    info = append(logs[3], batch(1), leader_epoch=4)  # it goes on from the cut
    assert info.first_offset == 16
    again.shutdown()


def test_recovery_leaves_an_intact_index_alone_and_rewrites_one_that_differs(tmp_path: Path) -> None:
    config = small_config(segment_bytes=1 << 20, index_interval_bytes=64)
    d = tmp_path / "t-0"
    lg = Log(d, config)
    for _ in range(10):
        append(lg, batch(2, value_size=40))
    lg.flush()
    expected = read_all(lg)
    lg.close_without_flush()
    index, time_index = d / INDEX0, d / TIMEINDEX0
    good_index, good_time_index = index.read_bytes(), time_index.read_bytes()
    assert len(good_index) >= 16 and good_time_index
    for p in (index, time_index):
        os.utime(p, ns=(OLD_NS, OLD_NS))

    # re-validated from offset 0 (recovery point 0) and found intact: the index files stay
    same = Log(d, config, recovery_point=0)
    assert same.recovery_point == 0 and read_all(same) == expected
    assert index.stat().st_mtime_ns == OLD_NS and time_index.stat().st_mtime_ns == OLD_NS
    for w in range(0, 20, 2):
        assert same.read(w, 1).read_bytes() == expected[same.read(w, 1).position :][: same.read(w, 1).size]
    same.close_without_flush()

    # an index holding a stale extra entry and a time index cut short: both rewritten
    index.write_bytes(good_index + good_index[-8:])
    time_index.write_bytes(good_time_index[:-12])
    fixed = Log(d, config, recovery_point=0)
    assert index.read_bytes() == good_index and time_index.read_bytes() == good_time_index
    assert read_all(fixed) == expected
    fixed.close_without_flush()

    # missing index files: the recovery rebuilds the entries and serves reads from them, and the
    # files are made by the segment's next flush, roll or close (here the close), not at load
    index.unlink()
    time_index.unlink()
    remade = Log(d, config, recovery_point=0)
    assert not index.exists() and not time_index.exists()
    assert read_all(remade) == expected
    for w in range(0, 20, 2):
        assert (
            remade.read(w, 1).read_bytes() == expected[remade.read(w, 1).position :][: remade.read(w, 1).size]
        )
    remade.close()
    assert index.read_bytes() == good_index and time_index.read_bytes() == good_time_index


def test_a_torn_tail_cuts_the_index_entries_past_it(tmp_path: Path) -> None:
    config = small_config(segment_bytes=1 << 20, index_interval_bytes=64)
    d = tmp_path / "t-0"
    lg = Log(d, config)
    for _ in range(10):
        append(lg, batch(2, value_size=40))
    lg.flush()
    size = lg.active_segment.size
    lg.close_without_flush()
    full_index = (d / INDEX0).read_bytes()
    os.truncate(d / f"{0:020d}.log", size // 2 + 5)  # inside a batch in the middle
    cut = Log(d, config, recovery_point=0)
    assert cut.log_end_offset < 20 and cut.active_segment.size <= size // 2 + 5
    rebuilt = (d / INDEX0).read_bytes()
    assert rebuilt == full_index[: len(rebuilt)] and len(rebuilt) < len(full_index)
    for off in range(cut.log_end_offset):
        assert not cut.read(off, 1).is_empty
    cut.close()


def test_start_up_listing_serves_leftovers_and_the_epoch_checkpoint(tmp_path: Path) -> None:
    d = tmp_path / "data"
    mgr = manager(d)
    lg = mgr.get_or_create_log("t", 0)
    kept = mgr.get_or_create_log("t", 1)
    for epoch in (1, 2):
        append(lg, batch(2), leader_epoch=epoch)
        append(kept, batch(2), leader_epoch=epoch)
    expected = read_all(lg)
    mgr.shutdown()
    part = d / "t-0"
    leftovers = [f"{0:020d}.log.deleted", f"{7:020d}.index", "x.tmp", f"{4:020d}.index.swap"]
    for name in leftovers:
        (part / name).write_bytes(b"junk")
    (part / LEADER_EPOCH_CHECKPOINT).unlink()  # rebuilt from the batches
    assert (d / "t-1" / LEADER_EPOCH_CHECKPOINT).exists()
    (d / "t-1" / LEADER_EPOCH_CHECKPOINT).write_text("0\n1\n1 0\n")  # read as it is (clean shutdown)

    again = manager(d)
    loaded = again.get_log("t", 0)
    assert loaded is not None and read_all(loaded) == expected
    assert not set(leftovers) & set(segment_files(part))
    assert loaded.epochs.entries() == [(1, 0), (2, 2)]
    other = again.get_log("t", 1)
    assert other is not None and other.epochs.entries() == [(1, 0)]
    again.shutdown()


def test_listings_are_prefetched_in_order_by_any_number_of_threads(tmp_path: Path) -> None:
    paths = []
    for i in range(2 * LISTING_CHUNK + 7):  # more than one chunk, the last one short
        p = tmp_path / f"d{i:04d}"
        p.mkdir()
        for j in range(i % 3):
            (p / f"f{j}").touch()
        paths.append(str(p))
    paths.insert(5, str(tmp_path / "missing"))  # listed again by its own load, which reports it
    expected = [sorted(os.listdir(p)) if os.path.isdir(p) else None for p in paths]
    for threads in (1, 3):
        got = [None if names is None else sorted(names) for names in prefetch_listings(paths, threads)]
        assert got == expected
    assert list(prefetch_listings([], 2)) == []


def test_a_manager_with_recovery_threads_loads_every_log_after_a_crash(tmp_path: Path) -> None:
    d = tmp_path / "data"
    mgr = manager(d)
    for p in range(LISTING_CHUNK + 40):
        mgr.get_or_create_log("t", p)
    for p in range(0, LISTING_CHUNK + 40, 7):
        append(mgr.log_or_raise("t", p), batch(2), leader_epoch=1)
    mgr.checkpoint_recovery_points()
    contents = {tp: read_all(lg) for tp, lg in mgr.all_logs().items()}
    crash(mgr)
    again = LogManager([d], small_config(), broker_id=1, recovery_threads=3)
    # every log written (the others have nothing on disk to load: no directory before a write)
    written = {tp: data for tp, data in contents.items() if data}
    assert len(written) == len(range(0, LISTING_CHUNK + 40, 7))
    assert {tp: read_all(lg) for tp, lg in again.all_logs().items()} == written
    again.shutdown()
