"""LogManager: dir locking, meta.properties, checkpoints, restarts clean and unclean, periodic tasks."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from storage_helpers import BASE_TS, all_records, append, batch, keyed_batch, read_all, small_config

from zkafka.storage.checkpoint import REPLICATION_OFFSET_CHECKPOINT, OffsetCheckpointFile
from zkafka.storage.config import LogConfig
from zkafka.storage.errors import InconsistentMetadataError, LogDirIOError, LogDirLockedError, StorageError
from zkafka.storage.log import Log
from zkafka.storage.manager import LogManager
from zkafka.storage.naming import TopicPartition as TP

DAY = 86_400_000


class Clock:
    def __init__(self, ms: int = BASE_TS) -> None:
        self.ms = ms

    def __call__(self) -> float:
        return self.ms / 1000


def manager(dirs: list[Path], **kw: object) -> LogManager:
    kw.setdefault("broker_id", 1)
    return LogManager(dirs, small_config(segment_bytes=400), **kw)  # type: ignore[arg-type]


def fill(mgr: LogManager, topic: str, partition: int, n: int = 10) -> None:
    log = mgr.get_or_create_log(topic, partition)
    for i in range(n):
        append(log, batch(2, ts=BASE_TS + i, value_size=30))


def test_layout_placement_and_meta(tmp_path: Path) -> None:
    d1, d2 = tmp_path / "a", tmp_path / "b"
    mgr = manager([d1, d2], cluster_id="clu")
    for p in range(4):
        mgr.get_or_create_log("t", p)
    assert {mgr.log_dir_of("t", p) for p in range(4)} == {d1.absolute(), d2.absolute()}
    assert mgr.logs_in_dir_count(d1.absolute()) == mgr.logs_in_dir_count(d2.absolute()) == 2
    in_d1 = mgr.logs_in_dir(str(d2 / ".." / "a"))  # any spelling of the path
    assert sorted(in_d1) == sorted(tp for tp in mgr.all_logs() if mgr.log_dir_of(*tp) == d1.absolute())
    assert len(in_d1) == 2 and mgr.logs_in_dir(tmp_path / "elsewhere") == []
    assert not (d1 / "t-0").exists() and not (d2 / "t-0").exists()  # made by the first write
    append(mgr.log_or_raise("t", 0), batch(1))
    assert (mgr.log_dir_of("t", 0) / "t-0").is_dir()  # where it was placed
    assert mgr.get_or_create_log("t", 0) is mgr.get_log("t", 0)
    for d in (d1, d2):
        props = (d / "meta.properties").read_text()
        assert "version=0" in props and "broker.id=1" in props and "cluster.id=clu" in props
        assert (d / ".lock").exists()
    with pytest.raises(ValueError):
        mgr.get_or_create_log("bad/topic", 0)
    mgr.shutdown()


def test_second_manager_on_same_dir_fails(tmp_path: Path) -> None:
    mgr = manager([tmp_path / "a"])
    with pytest.raises(LogDirLockedError):
        manager([tmp_path / "a"])
    code = (
        "import sys; from pathlib import Path\n"
        "from zkafka.storage import LogManager, LogConfig, LogDirLockedError\n"
        "try:\n"
        f"    LogManager([Path({str(tmp_path / 'a')!r})], LogConfig(), broker_id=1)\n"
        "except LogDirLockedError as e:\n"
        "    print(e); sys.exit(3)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 3 and "locked by another process" in proc.stdout
    mgr.shutdown()
    manager([tmp_path / "a"]).shutdown()  # released on shutdown


def test_meta_properties_mismatch(tmp_path: Path) -> None:
    manager([tmp_path / "a"], cluster_id="one").shutdown()
    with pytest.raises(InconsistentMetadataError):
        manager([tmp_path / "a"], broker_id=2)
    with pytest.raises(InconsistentMetadataError):
        manager([tmp_path / "a"], cluster_id="two")
    mgr = manager([tmp_path / "a"])
    assert mgr.cluster_id == "one"
    mgr.shutdown()


def test_restart_after_clean_shutdown(tmp_path: Path) -> None:
    d = tmp_path / "a"
    mgr = manager([d])
    fill(mgr, "t", 0)
    fill(mgr, "u", 3)
    mgr.get_log("t", 0).increment_log_start_offset(5)  # type: ignore[union-attr]
    contents = {tp: read_all(lg) for tp, lg in mgr.all_logs().items()}
    ends = {tp: lg.log_end_offset for tp, lg in mgr.all_logs().items()}
    mgr.checkpoint_high_watermarks({TP("t", 0): 12, TP("u", 3): 20})
    mgr.shutdown()
    assert (d / ".kafka_cleanshutdown").exists()
    assert OffsetCheckpointFile(d / "recovery-point-offset-checkpoint").read() == ends
    assert OffsetCheckpointFile(d / "log-start-offset-checkpoint").read() == {TP("t", 0): 5}
    assert (d / "replication-offset-checkpoint").read_text() in (
        "0\n2\nt 0 12\nu 3 20\n",
        "0\n2\nu 3 20\nt 0 12\n",
    )
    # a corrupt tail after a clean shutdown is not looked for: recovery is skipped
    mgr2 = manager([d])
    assert mgr2.had_clean_shutdown[d.absolute()] is True
    assert not (d / ".kafka_cleanshutdown").exists()  # removed at startup
    assert {tp: read_all(lg) for tp, lg in mgr2.all_logs().items()} == contents
    t0 = mgr2.get_log("t", 0)
    assert t0 is not None and t0.log_start_offset == 5 and t0.recovery_point == ends[TP("t", 0)]
    assert mgr2.high_watermark_checkpoint("u", 3) == 20
    mgr2.shutdown()


def test_high_watermark_checkpoint_rewrites_only_dirs_whose_values_changed(tmp_path: Path) -> None:
    d1, d2 = (tmp_path / "a").absolute(), (tmp_path / "b").absolute()
    mgr = manager([d1, d2])
    for p in range(4):
        mgr.get_or_create_log("t", p)
    in_d1 = [TP("t", p) for p in range(4) if mgr.log_dir_of("t", p) == d1]
    in_d2 = [TP("t", p) for p in range(4) if mgr.log_dir_of("t", p) == d2]
    hws = {TP("t", p): 10 + p for p in range(4)}

    def files() -> dict[Path, tuple[int, dict[TP, int]]]:
        """Each dir's checkpoint: its inode (a rewrite replaces the file) and its entries."""
        out = {}
        for d in (d1, d2):
            path = d / "replication-offset-checkpoint"
            out[d] = (path.stat().st_ino, OffsetCheckpointFile(path).read())
        return out

    mgr.checkpoint_high_watermarks(hws)
    first = files()
    assert first[d1][1] == {tp: hws[tp] for tp in in_d1} and first[d2][1] == {tp: hws[tp] for tp in in_d2}
    mgr.checkpoint_high_watermarks(hws)  # nothing changed: neither file is written again
    assert files() == first
    mgr.checkpoint_high_watermarks({**hws, in_d1[0]: 99})  # only d1's file holds a changed value
    second = files()
    assert second[d2] == first[d2]
    assert second[d1][0] != first[d1][0] and second[d1][1] == {**first[d1][1], in_d1[0]: 99}
    # a deleted log leaves its dir's checkpoint at the next write, and is not read back
    mgr.delete_log("t", in_d2[0].partition)
    mgr.checkpoint_high_watermarks({**hws, in_d1[0]: 99})
    assert files()[d2][1] == {tp: hws[tp] for tp in in_d2[1:]}
    assert mgr.high_watermark_checkpoint("t", in_d2[0].partition) is None
    mgr.shutdown()


def test_restart_after_crash_recovers(tmp_path: Path) -> None:
    d = tmp_path / "a"
    mgr = manager([d])
    fill(mgr, "t", 0, n=20)
    log = mgr.get_log("t", 0)
    assert log is not None
    log.flush(log.segment_bases()[1])
    mgr.checkpoint_recovery_points()
    rp = log.recovery_point
    good = read_all(log)
    active = log.active_segment.log_path
    for lg in mgr.all_logs().values():  # crash: no flush, no checkpoint, no marker
        lg.close_without_flush()
    for lock in mgr._locks:
        lock.release()
    with open(active, "ab") as f:
        f.write(b"\x00\x00\x00\x00\x00\x00\x00\x63\x00\x00\x01\x00torn")  # a torn batch
    mgr2 = manager([d])
    assert mgr2.had_clean_shutdown[d.absolute()] is False
    log2 = mgr2.get_log("t", 0)
    assert log2 is not None and read_all(log2) == good
    assert log2.recovery_point == rp  # min(checkpoint, LEO) after an unclean shutdown
    mgr2.shutdown()


def test_malformed_checkpoint_falls_back(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    d = tmp_path / "a"
    mgr = manager([d])
    fill(mgr, "t", 0)
    good = read_all(mgr.get_log("t", 0))  # type: ignore[arg-type]
    mgr.shutdown()
    (d / "recovery-point-offset-checkpoint").write_text("0\n7\nnonsense\n")
    (d / "log-start-offset-checkpoint").write_bytes(b"")
    mgr2 = manager([d])
    assert "ignoring unreadable checkpoint" in caplog.text
    assert read_all(mgr2.get_log("t", 0)) == good  # type: ignore[arg-type]
    mgr2.shutdown()


def test_delete_log(tmp_path: Path) -> None:
    d = tmp_path / "a"
    clock = Clock()
    mgr = LogManager([d], small_config(file_delete_delay_ms=1000), broker_id=1, clock=clock)
    fill(mgr, "t", 0)
    target = mgr.delete_log("t", 0)
    assert target is not None and target.name.startswith("t-0.") and target.name.endswith("-delete")
    assert target.is_dir() and not (d / "t-0").exists() and mgr.get_log("t", 0) is None
    assert mgr.delete_log("t", 0) is None
    assert mgr.delete_pending(clock.ms + 999) == 0
    assert mgr.delete_pending(clock.ms + 1000) == 1 and not target.exists()
    fill(mgr, "t", 1)
    target = mgr.delete_log("t", 1)
    mgr.shutdown()
    mgr2 = manager([d])  # a -delete dir left by a previous run is removed
    assert mgr2.all_logs() == {}
    mgr2.delete_pending()
    assert target is not None and not target.exists()
    mgr2.shutdown()


def test_periodic_retention_flush_and_truncation(tmp_path: Path) -> None:
    d = tmp_path / "a"
    clock = Clock()
    mgr = LogManager(
        [d],
        LogConfig(segment_bytes=400, retention_ms=DAY, file_delete_delay_ms=0, flush_ms=1000),
        broker_id=1,
        clock=clock,
    )
    fill(mgr, "t", 0, n=20)
    log = mgr.get_log("t", 0)
    assert log is not None and log.num_segments > 3
    assert mgr.flush_dirty_logs(clock.ms) == 1  # the rolled segments are fsynced
    assert log.recovery_point == log.segment_bases()[-1]
    assert mgr.check_retention(BASE_TS + DAY + 100, lambda tp: None) == 0  # unknown HW: skipped
    hw = log.segment_bases()[2]
    assert mgr.check_retention(BASE_TS + DAY + 100, lambda tp: hw) == 2
    assert log.log_start_offset == hw
    mgr.checkpoint_log_start_offsets()
    assert OffsetCheckpointFile(d / "log-start-offset-checkpoint").read() == {}  # start == first base
    assert mgr.truncate_to("t", 0, hw + 1)
    assert log.log_end_offset == hw + 1
    assert OffsetCheckpointFile(d / "recovery-point-offset-checkpoint").read() == {
        TP("t", 0): log.recovery_point
    }
    mgr.shutdown()


def test_topic_configs_and_cleaner(tmp_path: Path) -> None:
    d = tmp_path / "a"
    compact = small_config(cleanup_policy=frozenset({"compact"}), segment_bytes=300)
    mgr = LogManager([d], small_config(), broker_id=1, topic_configs={"__consumer_offsets": compact})
    log = mgr.get_or_create_log("__consumer_offsets", 0)
    assert log.config.compact
    for i in range(30):
        append(log, keyed_batch([(b"k%d" % (i % 3), b"v%d" % i)]))
    log.roll()
    other = mgr.get_or_create_log("plain", 0)
    append(other, batch(3))
    cleaned = mgr.run_cleaner(BASE_TS)
    assert cleaned is not None and cleaned[0] == TP("__consumer_offsets", 0)
    assert [(r.key, r.value) for r in all_records(log)] == [(b"k0", b"v27"), (b"k1", b"v28"), (b"k2", b"v29")]
    assert mgr.cleaner_offset("__consumer_offsets", 0) == cleaned[1].end_offset
    assert OffsetCheckpointFile(d / "cleaner-offset-checkpoint").read() == {
        TP("__consumer_offsets", 0): cleaned[1].end_offset
    }
    assert mgr.run_cleaner(BASE_TS) is None  # nothing dirty any more
    mgr.update_topic_config("plain", small_config(retention_ms=1))
    assert other.config.retention_ms == 1
    mgr.shutdown()
    mgr2 = LogManager([d], small_config(), broker_id=1, topic_configs={"__consumer_offsets": compact})
    assert mgr2.cleaner_offset("__consumer_offsets", 0) == cleaned[1].end_offset
    mgr2.shutdown()


def test_duplicate_partition_across_dirs_is_refused(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    mgr = manager([a])
    fill(mgr, "t", 0, n=1)
    mgr.shutdown()
    mgr = manager([b])
    fill(mgr, "t", 0, n=1)
    mgr.shutdown()
    with pytest.raises(StorageError, match="duplicate"):
        manager([a, b])
    manager([a]).shutdown()  # locks were released by the failed startup


def test_shutdown_is_idempotent_and_final(tmp_path: Path) -> None:
    with manager([tmp_path / "a"]) as mgr:
        fill(mgr, "t", 0, n=2)
    mgr.shutdown()
    with pytest.raises(StorageError):
        mgr.get_or_create_log("t", 9)
    assert sorted(os.listdir(tmp_path / "a"))[:2] == [".kafka_cleanshutdown", ".lock"]


def test_delete_pending_visits_only_logs_with_deleted_segments(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Retention's `.deleted` segment files go once their delay has passed, and the one-second
    pass asks only the logs that have some: of 50 logs, the one retention cut."""
    d = tmp_path / "a"
    clock = Clock()
    mgr = LogManager(
        [d],
        LogConfig(segment_bytes=400, retention_ms=DAY, file_delete_delay_ms=1000),
        broker_id=1,
        clock=clock,
    )
    for p in range(50):
        mgr.get_or_create_log("t", p)
    fill(mgr, "t", 0, n=20)
    fill(mgr, "t", 1, n=20)
    cut = mgr.get_log("t", 0)
    assert cut is not None
    hw = cut.segment_bases()[2]
    asked: list[object] = []
    original = Log.delete_expired_files

    def asking(lg: Log, now: int) -> int:
        asked.append(lg)
        return original(lg, now)

    monkeypatch.setattr(Log, "delete_expired_files", asking)  # a Log has slots: patched on its class
    now = BASE_TS + DAY + 100
    assert mgr.check_retention(now, lambda tp: hw if tp == TP("t", 0) else 0) == 2
    deleted = [f for f in os.listdir(d / "t-0") if f.endswith(".deleted")]
    assert len(deleted) == 2 * 3  # two segments: .log, .index, .timeindex each
    asked.clear()
    assert mgr.delete_pending(now + 999) == 0 and asked == [cut]  # not due: kept, asked again later
    assert mgr.delete_pending(now + 1000) == 2 and asked == [cut, cut]
    assert not [f for f in os.listdir(d / "t-0") if f.endswith(".deleted")]
    asked.clear()
    assert mgr.delete_pending(now + 4_000) == 0 and asked == []  # nothing left to ask about
    mgr.shutdown()


def test_delete_logs_of_a_topic_at_once_checkpoints_each_dir_once(tmp_path: Path) -> None:
    """A topic's deletion stops all its replicas in one StopReplica: `delete_logs` renames every
    written log's directory, forgets the never-written ones, writes each data dir's checkpoints
    once (they then list only the logs left), and answers per partition."""
    dirs = [tmp_path / "a", tmp_path / "b"]
    clock = Clock()
    mgr = LogManager(dirs, small_config(file_delete_delay_ms=1000), broker_id=1, clock=clock)
    for p in range(4):  # placed by the fewest logs: alternately in a and b
        fill(mgr, "doomed", p)
    mgr.get_or_create_log("doomed", 4)  # never written: no directory
    for p in range(4):
        fill(mgr, "kept", p)
    assert {mgr.log_dir_of("doomed", p) for p in range(4)} == set(dirs)
    writes: list[Path] = []
    original = mgr._checkpoint_dir
    mgr._checkpoint_dir = lambda d, **kw: writes.append(d) or original(d, **kw)  # type: ignore[method-assign]
    out = mgr.delete_logs([TP("doomed", p) for p in range(6)])
    assert out[TP("doomed", 5)] is None  # no such log
    assert all(isinstance(out[TP("doomed", p)], Path) for p in range(5))
    assert sorted(map(str, writes)) == sorted(map(str, dirs))  # once per dir, not per log
    assert {tp.topic for tp in mgr.all_logs()} == {"kept"}
    for d in dirs:
        recorded = OffsetCheckpointFile(d / "recovery-point-offset-checkpoint").read()
        assert {tp.topic for tp in recorded} <= {"kept"}
        assert not [n for n in os.listdir(d) if n.startswith("doomed-") and not n.endswith("-delete")]
    assert mgr.delete_pending(clock.ms + 1000) == 4
    assert not [n for d in dirs for n in os.listdir(d) if n.startswith("doomed-")]
    mgr.shutdown()


def test_new_logs_avoid_an_offline_dir(tmp_path: Path) -> None:
    """A dir a write failed in takes no new log (the others do, by the fewest-logs rule); with
    every dir offline a new log cannot be made, while the existing ones stay readable."""
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    mgr = LogManager([a, b, c], small_config(), broker_id=1)
    fill(mgr, "t", 0)  # in a
    mgr.mark_dir_offline(str(a / ".." / "a"))  # any spelling of the path
    mgr.mark_dir_offline(tmp_path / "elsewhere")  # not ours: ignored
    for p in range(1, 5):
        mgr.get_or_create_log("t", p)
    assert [mgr.log_dir_of("t", p) for p in range(5)] == [a, b, c, b, c]
    mgr.mark_dir_offline(b)
    mgr.mark_dir_offline(c)
    with pytest.raises(StorageError, match="every log dir"):
        mgr.get_or_create_log("t", 5)
    assert mgr.get_log("t", 0) is not None and read_all(mgr.get_log("t", 0))  # type: ignore[arg-type]
    mgr.shutdown()


def test_a_checkpoint_that_cannot_be_written_reports_its_dir_and_the_other_dirs_are_written(
    tmp_path: Path,
) -> None:
    """Kafka's LogDirFailureChannel: a failed checkpoint write takes its dir offline (the broker
    moves its replicas away) instead of failing the whole periodic task every time; the other dirs'
    checkpoints are still written, and an offline dir is not written again."""
    d1, d2 = tmp_path / "d1", tmp_path / "d2"
    mgr = manager([d1, d2])
    failures: list[LogDirIOError] = []
    mgr.on_dir_failure = failures.append
    fill(mgr, "t", 0)
    fill(mgr, "t", 1)
    assert {mgr.log_dir_of("t", 0), mgr.log_dir_of("t", 1)} == {d1, d2}
    broken = mgr.log_dir_of("t", 0)
    assert broken is not None
    target = broken / REPLICATION_OFFSET_CHECKPOINT
    target.unlink(missing_ok=True)
    target.mkdir()  # the checkpoint's rename onto it fails
    (target / "keep").touch()
    mgr.checkpoint_high_watermarks({TP("t", 0): 3, TP("t", 1): 4})
    assert [f.path for f in failures] == [str(target)]
    healthy = d2 if broken == d1 else d1
    assert OffsetCheckpointFile(healthy / REPLICATION_OFFSET_CHECKPOINT).read() == {TP("t", 1): 4}
    mgr.mark_dir_offline(broken)  # what the broker does when told
    mgr.checkpoint_high_watermarks({TP("t", 0): 5, TP("t", 1): 6})
    mgr.checkpoint_recovery_points()
    assert len(failures) == 1
    mgr.shutdown()
