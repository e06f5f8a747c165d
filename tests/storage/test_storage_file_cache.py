"""The bounded cache of open `.log` descriptors, lazy indexes, and deferred leader-epoch writes.

A broker must hold more replicas than it has descriptors (issue 17: 67,000 replicas per broker
under a hard limit of 20,000). These tests use real files and real descriptors (`/proc/self/fd`).
"""

from __future__ import annotations

import gc
import os
import socket
import threading
from pathlib import Path

import pytest
from storage_helpers import all_records, append, batch, small_config

from zkafka.storage.checkpoint import LeaderEpochCheckpointFile
from zkafka.storage.config import LogConfig
from zkafka.storage.file_cache import FileCache, default_capacity
from zkafka.storage.log import Log
from zkafka.storage.manager import LogManager

pytestmark = pytest.mark.timeout(120)


def open_fds() -> set[int]:
    return {int(n) for n in os.listdir("/proc/self/fd")}


def target_of(fd: int) -> str | None:
    """What `fd` names now (None when closed)."""
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except FileNotFoundError:
        return None


def make_logs(tmp_path: Path, n: int, cache: FileCache, config: LogConfig | None = None) -> list[Log]:
    return [Log(tmp_path / f"t-{i}", config or LogConfig(), file_cache=cache) for i in range(n)]


def test_default_capacity_leaves_half_the_limit_to_connections() -> None:
    assert default_capacity(20_000) == 10_000
    assert default_capacity(64) == 32
    assert default_capacity(10) == 16  # a floor, however low the limit


def test_more_logs_than_the_cache_holds_all_append_and_read_correctly(tmp_path: Path) -> None:
    gc.collect()
    cache = FileCache(8)
    before = open_fds()
    logs = make_logs(tmp_path, 40, cache)
    for round_ in range(3):
        for i, lg in enumerate(logs):
            append(lg, batch(2, key=f"r{round_}-l{i}-"))
            assert cache.open_count <= 8
    assert len(open_fds() - before) <= 8
    for i, lg in enumerate(logs):
        keys = [r.key for r in all_records(lg)]
        assert keys == [f"r{r}-l{i}-{j}".encode() for r in range(3) for j in range(2)]
    assert cache.evictions > 0
    for lg in logs:
        lg.close()
    assert cache.open_count == 0
    assert open_fds() - before == set()


def test_a_leased_descriptor_survives_eviction_and_is_closed_when_let_go(tmp_path: Path) -> None:
    gc.collect()
    cache = FileCache(2)
    first, *others = make_logs(tmp_path, 6, cache)
    append(first, batch(3, key="first"))
    chunk = first.read(0, 1 << 20)
    fd, path = chunk.fd, chunk.path
    assert path is not None
    for lg in others:  # four other files opened: the cache holds two, but not this one
        append(lg, batch(1))
    assert cache.open_count <= 3
    assert target_of(fd) == str(path)
    assert os.fstat(fd).st_ino == os.stat(path).st_ino
    assert len(chunk.read_bytes()) == chunk.size
    del chunk
    gc.collect()
    append(others[0], batch(1))  # the next cache call settles the released lease
    assert cache.open_count <= 2
    assert target_of(fd) != str(path)
    for lg in [first, *others]:
        lg.close()


def test_the_sendfile_path_reads_a_pinned_descriptor_while_others_are_evicted(tmp_path: Path) -> None:
    """The fetch path hands the slice's descriptor to the response and reads it later (pread or
    sendfile): evictions in between must not close it or let its number be reused."""
    cache = FileCache(1)
    lg, other = make_logs(tmp_path, 2, cache)
    append(lg, batch(5, value_size=100))
    chunk = lg.read(0, 1 << 20)
    expected = chunk.read_bytes()
    for _ in range(5):
        append(other, batch(1))  # evicts whatever it can; the lease is pinned
    a, b = socket.socketpair()
    try:
        assert os.sendfile(a.fileno(), chunk.fd, chunk.position, chunk.size) == chunk.size
        received = bytearray()
        while len(received) < chunk.size:
            received += b.recv(chunk.size - len(received))
        assert bytes(received) == expected
    finally:
        a.close()
        b.close()
    lg.close()
    other.close()


def test_a_segment_deleted_under_a_lease_stays_readable_until_it_is_released(tmp_path: Path) -> None:
    cache = FileCache(4)
    lg = Log(tmp_path / "t-0", small_config(file_delete_delay_ms=0), file_cache=cache)
    append(lg, batch(3))
    chunk = lg.read(0, 1 << 20)
    expected = chunk.read_bytes()
    lg.truncate_fully_and_start_at(10)  # the segment's files are deleted at once
    assert chunk.read_bytes() == expected  # unlinked, but the pinned descriptor still reads it
    fd = chunk.fd
    lease = chunk.lease
    assert lease is not None
    lease.release()
    assert "(deleted)" not in (target_of(fd) or "")
    lg.close()


def test_concurrent_reads_and_appends_never_see_a_closed_descriptor(tmp_path: Path) -> None:
    """Readers in threads, appends in another, a cache of 3 for 12 logs: constant eviction."""
    cache = FileCache(3)
    logs = make_logs(tmp_path, 12, cache)
    for i, lg in enumerate(logs):
        append(lg, batch(4, key=f"l{i}-"))
    errors: list[BaseException] = []
    stop = threading.Event()

    def reader(k: int) -> None:
        try:
            while not stop.is_set():
                for lg in logs[k::2]:
                    chunk = lg.read(0, 1 << 20)
                    data = chunk.read_bytes()
                    assert len(data) == chunk.size and data[:8] == (0).to_bytes(8, "big")
                    if chunk.lease is not None:  # else over the lease budget: bytes read at once
                        assert target_of(chunk.fd) == str(chunk.path)
        except BaseException as e:  # reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=reader, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    try:
        for round_ in range(30):
            for lg in logs:
                append(lg, batch(1, key=f"x{round_}-"))
    finally:
        stop.set()
        for t in threads:
            t.join(30)
    assert not errors, errors[0]
    for i, lg in enumerate(logs):
        assert [r.key for r in all_records(lg)][:4] == [f"l{i}-{j}".encode() for j in range(4)]
        assert lg.log_end_offset == 4 + 30
        lg.close()
    assert cache.open_count == 0


def test_flush_fsyncs_a_write_whose_descriptor_was_evicted(tmp_path: Path) -> None:
    cache = FileCache(1)
    lg, other = make_logs(tmp_path, 2, cache)
    append(lg, batch(2))
    append(other, batch(1))  # evicts lg's descriptor before anything was fsynced
    seg = lg.active_segment
    assert not seg.has_open_file
    opens = cache.opens
    lg.flush()
    assert cache.opens == opens + 1  # reopened to fsync the unsynced write
    assert lg.recovery_point == 2
    lg.flush()
    assert cache.opens == opens + 1  # nothing unsynced: no reopen
    lg.close()
    other.close()


def test_indexes_and_log_file_untouched_until_read(tmp_path: Path) -> None:
    """Kafka's LazyIndex: a reopened log opens no index, and no `.log`, until a read needs one."""
    config = small_config(segment_bytes=600, index_interval_bytes=1)
    cache = FileCache(16)
    lg = Log(tmp_path / "t-0", config, file_cache=cache)
    for _ in range(12):
        append(lg, batch(2, value_size=60))
    assert lg.num_segments > 3
    lg.flush()
    lg.close()
    reopened = Log(tmp_path / "t-0", config, had_clean_shutdown=True, recovery_point=24, file_cache=cache)
    segments = reopened.segments()
    assert segments[-1].size > 0  # the active segment is read at load for the log end (as Kafka's)
    older = segments[:-1]
    assert not any(s.index.loaded or s.time_index.loaded or s.has_open_file for s in older)
    target = older[1]
    chunk = reopened.read(target.base_offset, 1 << 20)
    assert chunk.size > 0
    assert target.index.loaded and target.has_open_file
    untouched = [s for s in older if s is not target]
    assert not any(s.index.loaded or s.time_index.loaded or s.has_open_file for s in untouched)
    del chunk
    reopened.close()


def test_an_empty_log_reopened_holds_no_descriptor_and_loads_no_index(tmp_path: Path) -> None:
    """Most replicas of a broker with tens of thousands of them are idle: loading one opens nothing."""
    cache = FileCache(16)
    Log(tmp_path / "t-0", LogConfig(), file_cache=cache).close()
    reopened = Log(tmp_path / "t-0", LogConfig(), had_clean_shutdown=True, file_cache=cache)
    seg = reopened.active_segment
    assert not (seg.index.loaded or seg.time_index.loaded or seg.has_open_file)
    assert cache.open_count == 0
    assert reopened.log_end_offset == 0
    append(reopened, batch(1))  # the first append opens the file and loads the (empty) indexes
    assert seg.has_open_file
    assert [r.offset for r in all_records(reopened)] == [0]
    reopened.close()


def test_leader_epoch_writes_are_deferred_then_written_flushed_and_closed(tmp_path: Path) -> None:
    with LogManager([tmp_path / "d"], LogConfig(), broker_id=1, cluster_id="c") as manager:
        lg = manager.get_or_create_log("t", 0)
        path = lg.dir_path / "leader-epoch-checkpoint"
        file = LeaderEpochCheckpointFile(path)
        before = file.read() if path.exists() else []
        assert lg.assign_leader_epoch(3)
        assert lg.epochs.dirty
        assert (file.read() if path.exists() else []) == before  # nothing written on the caller
        # not while the log has never held a batch (`test_storage_new_log_files`): its first does
        assert manager.write_leader_epoch_checkpoints() == 0
        assert (file.read() if path.exists() else []) == before
        append(lg, batch(2), leader_epoch=3)
        assert manager.write_leader_epoch_checkpoints() == 1
        assert file.read() == [(3, 0)]
        lg.assign_leader_epoch(4)
        lg.flush()  # the flush writes (and fsyncs) a pending change itself
        assert file.read() == [(3, 0), (4, 2)]
        assert manager.write_leader_epoch_checkpoints() == 1  # queued, already clean: no harm
        append(lg, batch(1), leader_epoch=4)
        lg.assign_leader_epoch(5)
    assert file.read() == [(3, 0), (4, 2), (5, 3)]  # shutdown wrote the last change


def test_a_failed_deferred_epoch_write_is_retried_and_keeps_the_recovery_point(tmp_path: Path) -> None:
    """A deferred leader-epoch change whose write fails (disk full, out of descriptors) stays
    pending: the log's next flush must write it -- or fail -- before the recovery point passes it.
    Otherwise a restart recovers only from that recovery point and never re-derives the epoch of
    the batches below it: the checkpoint lacks the epoch and OffsetsForLeaderEpoch answers wrong."""
    with LogManager([tmp_path / "d"], LogConfig(), broker_id=1, cluster_id="c") as manager:
        lg = manager.get_or_create_log("t", 0)
        path = lg.dir_path / "leader-epoch-checkpoint"
        file = LeaderEpochCheckpointFile(path)
        assert lg.assign_leader_epoch(3)
        blocker = path.with_name(path.name + ".tmp")
        # the checkpoint's temporary file cannot be created: every write fails (the log's
        # directory, made by its first write otherwise, is made here with the blocker)
        blocker.mkdir(parents=True)
        assert manager.write_leader_epoch_checkpoints() == 0  # logged, not lost
        append(lg, batch(2), leader_epoch=3)
        with pytest.raises(OSError):
            lg.flush()
        assert lg.recovery_point == 0
        assert (file.read() if path.exists() else []) == []
        blocker.rmdir()
        lg.flush()
        assert file.read() == [(3, 0)]
        assert lg.recovery_point == 2


def test_beyond_the_lease_budget_a_read_returns_the_bytes_instead_of_a_pin(tmp_path: Path) -> None:
    """One fetch over thousands of partitions must not pin thousands of descriptors."""
    cache = FileCache(4)
    assert cache.max_leases == 2
    logs = make_logs(tmp_path, 5, cache)
    for i, lg in enumerate(logs):
        append(lg, batch(2, key=f"l{i}-"))
    slices = [lg.read(0, 1 << 20) for lg in logs]
    assert [s.lease is not None for s in slices] == [True, True, False, False, False]
    assert cache.leases == 2
    for lg, chunk in zip(logs, slices, strict=True):
        assert chunk.data is None or len(chunk.data) == chunk.size
        assert chunk.read_bytes() == lg.read(0, 1 << 20).read_bytes()
    del slices, chunk
    gc.collect()
    assert cache.leases == 0
    for lg in logs:
        lg.close()


def test_running_out_of_descriptors_closes_cached_ones_instead_of_failing(tmp_path: Path) -> None:
    """A cache bound set above what the process can open (other files took the room): EMFILE when
    opening or creating a segment file evicts half of the unpinned ones and tries again."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    cache = FileCache(10_000)
    logs: list[Log] = []
    resource.setrlimit(resource.RLIMIT_NOFILE, (len(open_fds()) + 24, hard))
    try:
        for i in range(60):
            lg = Log(tmp_path / f"t-{i}", LogConfig(), file_cache=cache)
            append(lg, batch(1, key=f"l{i}-"))
            logs.append(lg)
        for i, lg in enumerate(logs):  # every file reopened once more, still within the limit
            assert [r.key for r in all_records(lg)] == [f"l{i}-0".encode()]
    finally:
        for lg in logs:
            lg.close()
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert cache.evictions > 0


def test_a_reopen_during_a_suffix_change_finds_the_renamed_file(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The cleaner reads without the log's lock; if the cache evicted a segment's descriptor, its
    next read reopens the file by path. A rename (`.cleaned` -> `.swap` -> "") must not leave a
    moment where the file is under its new name but the cache still opens the old one (ENOENT):
    a read is made exactly in that moment, right after the `.log` is renamed on disk."""
    from zkafka.storage.segment import LogSegment

    cache = FileCache(16)
    payload = os.urandom(512)
    (tmp_path / "00000000000000000000.log.cleaned").write_bytes(payload)
    seg = LogSegment(
        tmp_path,
        0,
        index_interval_bytes=4096,
        max_index_bytes=1 << 20,
        created_ms=0,
        suffix=".cleaned",
        file_cache=cache,
    )
    with seg.pinned():
        pass
    assert seg.has_open_file
    cache.relieve()  # evicted: the next read opens the file by its path
    assert not seg.has_open_file

    outcome: list[object] = []

    def read() -> None:
        try:
            with seg.pinned() as fd:
                outcome.append(os.pread(fd, len(payload), 0))
        except OSError as e:
            outcome.append(e)

    real_replace = os.replace
    reader: list[threading.Thread] = []

    def replace(src, dst):  # type: ignore[no-untyped-def]
        real_replace(src, dst)
        if str(dst).endswith(".log") and not reader:
            t = threading.Thread(target=read)
            reader.append(t)
            t.start()
            t.join(2)  # done by now if nothing holds it back; else it waits for the rename to finish

    monkeypatch.setattr(os, "replace", replace)
    seg.change_suffix("")
    monkeypatch.setattr(os, "replace", real_replace)
    reader[0].join(30)
    assert outcome == [payload]
    assert seg.log_path == tmp_path / "00000000000000000000.log"
    seg.close()
