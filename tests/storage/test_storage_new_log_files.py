"""A new log is its directory: its `.log` is made by the first write, its index files by their
first entries or once the segment holds data and is flushed, rolled or closed (topic creation makes
thousands of logs at once). Whatever a crash leaves at any point must load: a directory without a
`.log` is an empty log from offset 0, an empty segment without index files an empty log, a segment
with data but no index files is rebuilt from its `.log`."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest
from storage_helpers import (
    BASE_TS,
    all_records,
    append,
    append_follower,
    batch,
    read_all,
    segment_files,
    small_config,
    with_offset,
)

from zkafka.records.batch import read_header
from zkafka.storage.checkpoint import LeaderEpochCheckpointFile
from zkafka.storage.config import LogConfig
from zkafka.storage.errors import LogDirIOError
from zkafka.storage.index import OffsetIndex
from zkafka.storage.log import Log
from zkafka.storage.manager import LogManager
from zkafka.storage.naming import TopicPartition
from zkafka.storage.time_index import TimeIndex

LOG0 = f"{0:020d}.log"
INDEX0 = f"{0:020d}.index"
TIMEINDEX0 = f"{0:020d}.timeindex"


def test_a_new_log_is_its_directory_until_written(tmp_path: Path) -> None:
    lg = Log(tmp_path / "t-0", LogConfig())
    assert segment_files(tmp_path / "t-0") == []
    assert lg.log_end_offset == 0 and lg.log_start_offset == 0 and lg.recovery_point == 0
    assert lg.read(0, 1 << 20).is_empty and lg.active_segment.largest_timestamp >= 0
    lg.close()
    assert segment_files(tmp_path / "t-0") == []  # closing an empty log makes nothing
    again = Log(tmp_path / "t-0", LogConfig(), had_clean_shutdown=True)
    assert again.log_end_offset == 0 and again.log_start_offset == 0
    again.close()
    written = Log(tmp_path / "w-0", LogConfig())
    append(written, batch(2))
    assert LOG0 in segment_files(tmp_path / "w-0")
    written.close()
    assert [r.offset for r in all_records(Log(tmp_path / "w-0", LogConfig(), had_clean_shutdown=True))] == [
        0,
        1,
    ]


def test_a_new_log_from_another_offset_makes_its_log_file_at_once(tmp_path: Path) -> None:
    """The `.log`'s name records where the log starts: only a log from 0 may go without one."""
    lg = Log(tmp_path / "t-0", LogConfig(), log_start_offset=40)
    assert segment_files(tmp_path / "t-0") == [f"{40:020d}.log"]
    lg.close()


def test_a_never_written_log_restarts_at_another_offset(tmp_path: Path) -> None:
    """A new follower whose leader's log starts above 0 (retention, DeleteRecords, then a
    reassignment) restarts its log there before any write: the first segment's `.log`, never made,
    has nothing to rename `.deleted`, and the log stays open and takes the leader's batches."""
    lg = Log(tmp_path / "t-0", LogConfig())
    lg.truncate_fully_and_start_at(40)
    assert not lg.closed and lg.log_start_offset == lg.log_end_offset == 40
    files = segment_files(tmp_path / "t-0")
    assert f"{40:020d}.log" in files and not any(f.startswith(f"{0:020d}") for f in files)
    append_follower(lg, with_offset(batch(2), 40))
    assert [r.offset for r in all_records(lg)] == [40, 41]
    lg.close()


def test_new_leaders_write_their_epoch_checkpoint_with_their_first_batch(tmp_path: Path) -> None:
    """A new leader's epoch starts at offset 0 of a log with no data: the checkpoint waits for a
    batch (the background writer skips the log, the first append queues it again), and a log
    closed or reloaded before it has one starts with no epoch, as an empty log may."""
    checkpoint = "leader-epoch-checkpoint"
    with LogManager([tmp_path / "d"], LogConfig(), broker_id=1, cluster_id="c") as manager:
        logs = [manager.get_or_create_log("t", p, sync_dir=False) for p in range(20)]
        manager.sync_created_dirs()
        for lg in logs:
            lg.assign_leader_epoch(0)
        assert manager.write_leader_epoch_checkpoints() == 0
        assert partition_dirs(tmp_path / "d") == []  # no directory either (see below)
        append(logs[0], batch(2), leader_epoch=0)
        assert manager.write_leader_epoch_checkpoints() == 1
        assert checkpoint in segment_files(tmp_path / "d" / "t-0")
        assert LeaderEpochCheckpointFile(tmp_path / "d" / "t-0" / checkpoint).read() == [(0, 0)]
        logs[1].flush()  # a flush of an empty log writes nothing either
        assert partition_dirs(tmp_path / "d") == ["t-0"]
    assert partition_dirs(tmp_path / "d") == ["t-0"]  # nor does the shutdown
    with LogManager([tmp_path / "d"], LogConfig(), broker_id=1, cluster_id="c") as manager:
        assert manager.get_log("t", 1) is None  # nothing of it on disk: made again when asked
        assert manager.get_or_create_log("t", 1).epochs.entries() == []
        assert manager.log_or_raise("t", 0).epochs.entries() == [(0, 0)]


def partition_dirs(log_dir: Path) -> list[str]:
    return sorted(p.name for p in log_dir.iterdir() if p.is_dir())


def test_a_new_replica_has_no_directory_until_its_first_write(tmp_path: Path) -> None:
    """`LogManager.get_or_create_log` makes no directory (a topic's creation would make one per
    replica, the largest file-system cost left of it): the first write makes it, in the data dir
    chosen at creation; a log never written is deleted without one, is absent after a restart
    (checkpoints naming it or not) and comes back empty when asked for again."""
    dirs = [tmp_path / "a", tmp_path / "b"]
    with LogManager(dirs, LogConfig(), broker_id=1, cluster_id="c") as manager:
        logs = [manager.get_or_create_log("t", p) for p in range(6)]
        # placed as before, fewest logs first, though nothing is on disk yet
        assert [manager.log_dir_of("t", p) for p in range(6)] == [dirs[0], dirs[1]] * 3
        assert partition_dirs(dirs[0]) == partition_dirs(dirs[1]) == []
        assert all(not lg.has_dir and lg.read(0, 1024).is_empty for lg in logs)
        append(logs[1], batch(2))  # the leader's first write
        logs[2].truncate_fully_and_start_at(40)  # a follower restarted at its leader's log start
        logs[3].flush()
        logs[3].roll()  # empty: nothing to roll, nothing made
        assert partition_dirs(dirs[0]) == ["t-2"] and partition_dirs(dirs[1]) == ["t-1"]
        assert LOG0 in segment_files(dirs[1] / "t-1")
        assert f"{40:020d}.log" in segment_files(dirs[0] / "t-2")
        manager.checkpoint_recovery_points()  # names the never-written logs too
        manager.checkpoint_high_watermarks({TopicPartition("t", p): 0 for p in range(6)})
        assert manager.delete_log("t", 4) is not None and manager.get_log("t", 4) is None
        assert manager.delete_log("t", 1) is not None
        # the written one renamed for deletion as before, the other had nothing to rename
        assert partition_dirs(dirs[0]) == ["t-2"]
        assert [d.endswith("-delete") and d.startswith("t-1.") for d in partition_dirs(dirs[1])] == [True]
    with LogManager(dirs, LogConfig(), broker_id=1, cluster_id="c") as manager:
        assert sorted(manager.all_logs()) == [TopicPartition("t", 2)]
        loaded = manager.log_or_raise("t", 2)
        assert loaded.log_end_offset == 40 and loaded.has_dir is True
        again = manager.get_or_create_log("t", 3)
        assert again.log_end_offset == again.log_start_offset == 0 and not again.has_dir
        append(again, batch(1))
        assert [r.offset for r in all_records(again)] == [0]
        manager.delete_log("t", 2)  # a loaded log is renamed for deletion, as ever
        assert [d.startswith("t-2.") and d.endswith("-delete") for d in partition_dirs(dirs[0])] == [True]


def test_a_first_write_whose_directory_cannot_be_made_fails_its_data_dir(tmp_path: Path) -> None:
    """The directory made by the first write is the data dir's first write for that replica: when
    it fails, the error names the data dir (the broker takes it offline, as for any write)."""
    data = tmp_path / "d"
    with LogManager([data], LogConfig(), broker_id=1, cluster_id="c") as manager:
        lg = manager.get_or_create_log("t", 0)
        (data / "t-0").write_bytes(b"")  # a file where the directory goes: mkdir fails
        with pytest.raises(LogDirIOError) as failed:
            append(lg, batch(1))
        assert Path(failed.value.path).parent == data and not lg.has_dir
        (data / "t-0").unlink()
        append(lg, batch(1))  # nothing was half-done: the next write makes it
        assert LOG0 in segment_files(data / "t-0")


def test_a_deleted_log_whose_rename_failed_is_loaded_when_asked_for_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The manager creates new logs without looking for their directory (it loaded every one at
    start-up and made or renamed each since), except where a deletion could not rename one: that
    directory is still there, and a log asked for again loads it, as Kafka loads what it finds."""
    data = tmp_path / "d"
    with LogManager([data], LogConfig(), broker_id=1, cluster_id="c") as manager:
        append(manager.get_or_create_log("t", 0), batch(3))

        def refuse(src: object, dst: object) -> None:
            raise OSError(5, "Input/output error")

        monkeypatch.setattr(os, "replace", refuse)
        with pytest.raises(OSError):
            manager.delete_log("t", 0)
        monkeypatch.undo()
        assert partition_dirs(data) == ["t-0"]
        again = manager.get_or_create_log("t", 0)
        assert again.has_dir and again.log_end_offset == 3
        assert manager.delete_log("t", 0) is not None  # renamed this time
        fresh = manager.get_or_create_log("t", 0)  # and no longer looked for
        assert not fresh.has_dir and fresh.log_end_offset == 0


def test_a_directory_made_behind_the_managers_back_is_warned_about(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A directory the manager did not make or load (something else made it while the broker
    ran) is not looked for: the first write finds it, says so, and starts the log empty."""
    data = tmp_path / "d"
    with LogManager([data], LogConfig(), broker_id=1, cluster_id="c") as manager:
        lg = manager.get_or_create_log("t", 0)
        (data / "t-0").mkdir()
        (data / "t-0" / LOG0).write_bytes(b"stale bytes")
        with caplog.at_level(logging.WARNING, logger="zkafka.storage.log"):
            append(lg, batch(2))
        assert "already existed" in caplog.text
        assert [r.offset for r in all_records(lg)] == [0, 1]


def test_an_existing_directory_is_loaded_not_recreated(tmp_path: Path) -> None:
    config = small_config()
    lg = Log(tmp_path / "t-0", config)
    append(lg, batch(3))
    lg.flush()
    lg.close()
    again = Log(tmp_path / "t-0", config, had_clean_shutdown=True)
    assert again.log_end_offset == 3 and [r.offset for r in all_records(again)] == [0, 1, 2]
    again.close()


@pytest.mark.parametrize("clean", [True, False])
def test_an_empty_log_without_index_files_loads_quietly_and_takes_appends(
    tmp_path: Path, clean: bool, caplog: pytest.LogCaptureFixture
) -> None:
    """What a broker SIGKILLed (or stopped) right after creating a log leaves: no index files."""
    config = small_config()
    lg = Log(tmp_path / "t-0", config)
    lg.close_without_flush()
    caplog.set_level(logging.INFO, logger="zkafka.storage")
    again = Log(tmp_path / "t-0", config, had_clean_shutdown=clean)
    assert again.log_end_offset == 0
    assert again.active_segment.max_timestamp_so_far == -1
    assert not [r for r in caplog.records if "index" in r.getMessage()]  # no rebuild, no warning
    for i in range(10):
        append(again, batch(2, ts=BASE_TS + i, value_size=40))
    assert [r.offset for r in all_records(again)] == list(range(20))
    again.close()
    names = segment_files(tmp_path / "t-0")
    assert INDEX0 in names and TIMEINDEX0 in names


def test_data_below_the_index_interval_gets_index_files_on_flush_and_on_close(tmp_path: Path) -> None:
    """No entry is ever written for a segment smaller than `index.interval.bytes`, but a segment a
    load trusts (flushed, or closed cleanly) has both files, as Kafka's."""
    config = LogConfig(index_interval_bytes=4096)
    flushed = Log(tmp_path / "a-0", config)
    append(flushed, batch(1))
    assert not {INDEX0, TIMEINDEX0} & set(segment_files(tmp_path / "a-0"))
    flushed.flush()
    assert {INDEX0, TIMEINDEX0} <= set(segment_files(tmp_path / "a-0"))
    flushed.close()
    closed = Log(tmp_path / "b-0", config)
    append(closed, batch(1))
    closed.close()
    assert {INDEX0, TIMEINDEX0} <= set(segment_files(tmp_path / "b-0"))


def test_a_reloaded_empty_log_makes_its_index_files_with_its_first_data(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """An empty segment loaded without index files, then given less data than one index entry
    needs: its files are still made before a load may trust it."""
    config = LogConfig(index_interval_bytes=4096)
    Log(tmp_path / "t-0", config).close()
    again = Log(tmp_path / "t-0", config, had_clean_shutdown=True)
    append(again, batch(1))
    again.close()
    assert {INDEX0, TIMEINDEX0} <= set(segment_files(tmp_path / "t-0"))
    caplog.set_level(logging.INFO, logger="zkafka.storage")
    third = Log(tmp_path / "t-0", config, had_clean_shutdown=True, recovery_point=1)
    assert [r.offset for r in all_records(third)] == [0]
    assert not [r for r in caplog.records if "index" in r.getMessage()]
    third.close()


def test_a_clean_reload_of_a_small_segment_does_not_rebuild_its_indexes(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    config = LogConfig(index_interval_bytes=4096)
    lg = Log(tmp_path / "t-0", config)
    append(lg, batch(2))
    lg.flush()
    lg.close()
    caplog.set_level(logging.INFO, logger="zkafka.storage")
    again = Log(tmp_path / "t-0", config, had_clean_shutdown=True, recovery_point=2)
    assert [r.offset for r in all_records(again)] == [0, 1]
    assert not [r for r in caplog.records if "index" in r.getMessage()]
    again.close()


@pytest.mark.parametrize("appended", [1, 5, 40])
def test_a_crash_after_the_first_appends_loses_nothing_written(tmp_path: Path, appended: int) -> None:
    """SIGKILL keeps the page cache: every appended byte is in the `.log`, the index files may not
    exist yet. The unclean load re-validates from the recovery point and rebuilds them."""
    config = small_config(segment_bytes=1 << 20)
    lg = Log(tmp_path / "t-0", config)
    for i in range(appended):
        append(lg, batch(2, ts=BASE_TS + i, value_size=50))
    written = read_all(lg)
    lg.close_without_flush()
    again = Log(tmp_path / "t-0", config, had_clean_shutdown=False, recovery_point=0)
    assert read_all(again) == written
    assert again.log_end_offset == 2 * appended
    for offset in range(0, 2 * appended, 3):  # reads find their batch through the rebuilt index
        first = read_header(again.read(offset, 1).read_bytes(), 0)
        assert first.base_offset <= offset <= first.last_offset
    append(again, batch(1))
    again.close()
    assert {INDEX0, TIMEINDEX0} <= set(segment_files(tmp_path / "t-0"))


def test_rolled_segments_have_their_index_files(tmp_path: Path) -> None:
    config = small_config(segment_bytes=600, index_interval_bytes=4096)
    lg = Log(tmp_path / "t-0", config)
    for i in range(12):
        append(lg, batch(2, ts=BASE_TS + i, value_size=60))
    assert lg.num_segments > 2
    names = set(segment_files(tmp_path / "t-0"))
    for seg in lg.segments()[:-1]:
        assert {f"{seg.base_offset:020d}.index", f"{seg.base_offset:020d}.timeindex"} <= names
    stored = read_all(lg)
    lg.close()
    again = Log(tmp_path / "t-0", config, had_clean_shutdown=True, recovery_point=lg.log_end_offset)
    assert read_all(again) == stored
    again.close()


def test_the_first_write_of_a_new_index_empties_a_stale_file(tmp_path: Path) -> None:
    """Making the file up front emptied whatever was at its path; the first write still does."""
    path = tmp_path / "x.index"
    path.write_bytes(b"\xff" * 24)
    idx = OffsetIndex(path, 100, 1024, create=True)
    assert path.read_bytes() == b"\xff" * 24  # untouched until written
    idx.append(105, 10)
    idx.close()
    assert path.read_bytes() == bytes.fromhex("000000050000000a")
    tpath = tmp_path / "x.timeindex"
    tpath.write_bytes(b"\xff" * 12)
    ti = TimeIndex(tpath, 0, 1024, create=True)
    assert ti.ensure_file() and tpath.read_bytes() == b""
    assert not ti.ensure_file()  # made once


def test_an_unwritten_index_renames_without_a_file(tmp_path: Path) -> None:
    """The cleaner renames a cleaned segment's files; an index never written has none to rename."""
    idx = OffsetIndex(tmp_path / "a.index.cleaned", 0, 1024, create=True)
    idx.rename(tmp_path / "a.index.swap")
    assert not list(tmp_path.iterdir())
    idx.append(3, 7)
    idx.close()
    assert [p.name for p in tmp_path.iterdir()] == ["a.index.swap"]
