"""All partition logs of one broker over its `log.dirs` (Kafka's LogManager).

Startup, per log dir: take the `.lock` (an fcntl lock, as Kafka's FileChannel.tryLock; a second
process -- or a second manager in this process -- fails with LogDirLockedError), check or write
`meta.properties` (v0: version, broker.id, cluster.id), note and delete `.kafka_cleanshutdown`
*before* loading (a crash while loading counts as unclean), read the checkpoints (a malformed one
is logged and ignored: recovery then starts from 0, which is slow but safe) and open every
`<topic>-<partition>` dir. `-delete` dirs left by an earlier run are queued for deletion.

Periodic work is exposed as plain synchronous methods for the broker to schedule
(`check_retention`, `flush_dirty_logs`, `checkpoint_*`, `run_cleaner`, `delete_pending`). They
can fsync or rewrite segments, so the broker should run them off its event loop.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import shutil
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

from zkafka.storage.checkpoint import (
    CLEAN_SHUTDOWN_FILE,
    CLEANER_OFFSET_CHECKPOINT,
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    OffsetCheckpointFile,
    check_meta_properties,
    fsync_dir,
    read_meta_properties,
    sync_filesystem,
    write_meta_properties,
)
from zkafka.storage.cleaner import DEFAULT_DEDUPE_BUFFER_BYTES, CleanResult, clean_log, cleanable_range
from zkafka.storage.config import LogConfig
from zkafka.storage.errors import (
    CheckpointError,
    LogDirIOError,
    LogDirLockedError,
    LogNotFoundError,
    StorageError,
)
from zkafka.storage.file_cache import FileCache
from zkafka.storage.log import Log
from zkafka.storage.log_loader import prefetch_listings
from zkafka.storage.naming import (
    TopicPartition,
    delete_dir_name,
    is_special_dir_name,
    parse_delete_dir_name,
    parse_partition_dir_name,
    partition_dir_name,
)

log = logging.getLogger(__name__)

LOCK_FILE = ".lock"

# Dirs locked by this process: fcntl locks are per process, so they cannot see a second
# LogManager of the same process on the same dir.
_locked_in_process: set[str] = set()
_locked_guard = threading.Lock()


class _DirLock:
    def __init__(self, log_dir: Path) -> None:
        self.key = os.path.realpath(log_dir)
        with _locked_guard:
            if self.key in _locked_in_process:
                raise LogDirLockedError(f"{log_dir} is already in use by this process")
            fd = os.open(log_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                raise LogDirLockedError(
                    f"{log_dir} is locked by another process (is another broker using it?)"
                ) from None
            _locked_in_process.add(self.key)
        self.fd: int | None = fd

    def release(self) -> None:
        with _locked_guard:
            if self.fd is not None:
                os.close(self.fd)  # closing the descriptor drops the fcntl lock
                self.fd = None
                _locked_in_process.discard(self.key)


def _read_checkpoint(path: Path) -> dict[TopicPartition, int]:
    try:
        return OffsetCheckpointFile(path).read()
    except (CheckpointError, OSError) as e:
        log.warning("ignoring unreadable checkpoint %s: %s", path, e)
        return {}


class LogManager:
    """Owns every `Log` of this broker. Methods are thread-safe."""

    def __init__(
        self,
        log_dirs: Sequence[Path],
        default_config: LogConfig,
        *,
        broker_id: int,
        cluster_id: str | None = None,
        clock: Callable[[], float] = time.time,
        topic_configs: Mapping[str, LogConfig] | None = None,
        dedupe_buffer_bytes: int = DEFAULT_DEDUPE_BUFFER_BYTES,
        max_open_files: int | None = None,
        recovery_threads: int = 1,
    ) -> None:
        """`recovery_threads`: Kafka's `num.recovery.threads.per.data.dir`, here the threads that
        list each data dir's partition directories ahead of the loading (`prefetch_listings`);
        the loading itself, Python work, stays on the calling thread."""
        if not log_dirs:
            raise ValueError("at least one log dir is required")
        self.log_dirs = [Path(d).absolute() for d in log_dirs]
        if len({os.path.realpath(d) for d in self.log_dirs}) != len(self.log_dirs):
            raise ValueError(f"duplicate log dirs in {self.log_dirs}")
        self.default_config = default_config
        self.broker_id = broker_id
        self.cluster_id = cluster_id
        self._clock = clock
        self._topic_configs: dict[str, LogConfig] = dict(topic_configs or {})
        self.dedupe_buffer_bytes = dedupe_buffer_bytes
        self.recovery_threads = recovery_threads
        self.file_cache = FileCache(max_open_files)
        self._epoch_writes: deque[Log] = deque()
        """Logs whose leader-epoch checkpoint changed and is not written yet (`LeaderEpochCache.
        defer_writes`): a LeaderAndIsr for thousands of partitions writes none on the event loop."""
        """The `.log` descriptors of every log here (`zkafka.log.max.open.files`; None or <= 0:
        half the open files limit)."""
        self._lock = threading.RLock()
        self._logs: dict[TopicPartition, Log] = {}
        self._left_behind: set[str] = set()  # directories of deleted logs whose rename failed
        # logs held per topic: a config change for a topic with none (every new topic's, at each
        # LeaderAndIsr that creates one) need not walk all the broker's logs
        self._logs_of_topic: Counter[str] = Counter()
        self._dir_of: dict[TopicPartition, Path] = {}
        """Each log's data dir: always one of the `log_dirs` objects themselves (grouped by identity)."""
        self._count_in_dir: Counter[Path] = Counter()
        """Logs per dir, kept with `_dir_of` (choosing a dir for a new log must not scan every log)."""
        self._offline_dirs: set[Path] = set()
        """Dirs a write failed in (`mark_dir_offline`): no new log is placed there."""
        self.on_dir_failure: Callable[[LogDirIOError], None] | None = None
        """Told when a write of this manager's own (a checkpoint file, a log's flush or its
        leader-epoch checkpoint) failed at the OS: the dir goes offline, as Kafka's
        LogDirFailureChannel takes it (`zkafka.server.log_dir_failure`)."""
        self._unsynced_dirs: set[Path] = set()
        """Dirs with a log dir created by `get_or_create_log(sync_dir=False)`, not yet fsynced."""
        self._locks: list[_DirLock] = []
        self._cleaner_offsets: dict[TopicPartition, int] = {}
        self._high_watermarks: dict[TopicPartition, int] = {}
        self._high_watermarks_written: dict[Path, dict[TopicPartition, int]] = {}
        """What each dir's `replication-offset-checkpoint` holds, as this manager last wrote it."""
        self._log_set_changed = True
        """A log was added or removed since the last high-watermark checkpoint (its file names
        exactly the dir's logs), so the next one compares every dir even when no watermark moved."""
        self._pending_dir_deletes: list[tuple[int, Path]] = []
        self._with_pending_deletes: set[Log] = set()
        """Logs with `.deleted` segment files waiting (`Log.on_delete_scheduled`): the one-second
        `delete_pending` visits these, not the tens of thousands of logs a broker can hold."""
        self.had_clean_shutdown: dict[Path, bool] = {}
        self._closed = False
        try:
            for d in self.log_dirs:
                self._open_dir(d)
        except BaseException:
            self._abort_startup()
            raise

    def _now_ms(self) -> int:
        return int(self._clock() * 1000)

    # ---- startup --------------------------------------------------------------------------------

    def _open_dir(self, log_dir: Path) -> None:
        log_dir.mkdir(parents=True, exist_ok=True)
        self._locks.append(_DirLock(log_dir))
        props = read_meta_properties(log_dir)
        if props is None:
            write_meta_properties(log_dir, self.broker_id, self.cluster_id)
        else:
            stored = check_meta_properties(props, log_dir, self.broker_id, self.cluster_id)
            if self.cluster_id is None:
                self.cluster_id = stored
            elif stored is None:
                write_meta_properties(log_dir, self.broker_id, self.cluster_id)
        marker = log_dir / CLEAN_SHUTDOWN_FILE
        clean = marker.exists()
        if clean:
            marker.unlink()
            fsync_dir(log_dir)
        self.had_clean_shutdown[log_dir] = clean
        recovery = _read_checkpoint(log_dir / RECOVERY_POINT_CHECKPOINT)
        starts = _read_checkpoint(log_dir / LOG_START_OFFSET_CHECKPOINT)
        self._high_watermarks.update(_read_checkpoint(log_dir / REPLICATION_OFFSET_CHECKPOINT))
        self._cleaner_offsets.update(_read_checkpoint(log_dir / CLEANER_OFFSET_CHECKPOINT))
        found: list[tuple[TopicPartition, str]] = []
        for entry in sorted(os.scandir(log_dir), key=lambda e: e.name):
            if not entry.is_dir():
                continue
            tp = parse_partition_dir_name(entry.name)
            if tp is None or is_special_dir_name(entry.name):
                if parse_delete_dir_name(entry.name) is not None:
                    self._pending_dir_deletes.append((0, Path(entry.path)))
                elif is_special_dir_name(entry.name):
                    log.warning("leaving %s alone (future/stray dirs are not supported)", entry.path)
                continue
            found.append((tp, entry.name))
        prefix = os.fspath(log_dir)
        paths = [f"{prefix}/{name}" for _, name in found]
        # closed (its threads stopped) also when a load fails
        with contextlib.closing(prefetch_listings(paths, self.recovery_threads)) as listings:
            for (tp, name), listing in zip(found, listings, strict=True):
                if tp in self._logs:
                    raise StorageError(f"duplicate log dirs for {tp}: {self._dir_of[tp]} and {log_dir}")
                self._logs[tp] = Log(
                    f"{prefix}/{name}",  # a str: no Path per replica
                    self.config_for(tp.topic),
                    recovery_point=recovery.get(tp, 0),
                    log_start_offset=starts.get(tp, 0),
                    had_clean_shutdown=clean,
                    clock=self._clock,
                    topic_partition=tp,
                    file_cache=self.file_cache,
                    listing=listing,
                )
                self._adopt(self._logs[tp])
                self._dir_of[tp] = log_dir
                self._log_set_changed = True
                self._count_in_dir[log_dir] += 1
                self._logs_of_topic[tp.topic] += 1
        count = self.logs_in_dir_count(log_dir)
        if count == 0:
            log.info("no logs in %s yet", log_dir)  # a fresh dir: no shutdown, clean or not, to report
        else:
            log.info(
                "loaded %d logs from %s (clean shutdown: %s, %d recovery threads)",
                count,
                log_dir,
                clean,
                self.recovery_threads,
            )

    def _adopt(self, lg: Log) -> None:
        """Hook a log this manager now holds into its deferred work."""
        lg.epochs.defer_writes(self._epoch_writes, lg)
        lg.on_delete_scheduled = self._with_pending_deletes.add  # set.add: atomic, takes no lock
        if lg.has_pending_deletes:
            self._with_pending_deletes.add(lg)

    def _abort_startup(self) -> None:
        for lg in self._logs.values():
            lg.close_without_flush()
        for lock in self._locks:
            lock.release()

    # ---- configs --------------------------------------------------------------------------------

    def config_for(self, topic: str) -> LogConfig:
        return self._topic_configs.get(topic, self.default_config)

    def update_topic_config(self, topic: str, config: LogConfig | None) -> None:
        """A dynamic topic config change (None: back to the broker defaults)."""
        with self._lock:
            if config is None:
                self._topic_configs.pop(topic, None)
            else:
                self._topic_configs[topic] = config
            if not self._logs_of_topic[topic]:
                return
            for tp, lg in self._logs.items():
                if tp.topic == topic:
                    lg.update_config(self.config_for(topic))

    def update_default_config(self, config: LogConfig) -> None:
        with self._lock:
            self.default_config = config
            for tp, lg in self._logs.items():
                if tp.topic not in self._topic_configs:
                    lg.update_config(config)

    # ---- logs -----------------------------------------------------------------------------------

    def get_log(self, topic: str, partition: int) -> Log | None:
        return self._logs.get(TopicPartition(topic, partition))

    def log_or_raise(self, topic: str, partition: int) -> Log:
        lg = self.get_log(topic, partition)
        if lg is None:
            raise LogNotFoundError(f"no log for {topic}-{partition} on broker {self.broker_id}")
        return lg

    def all_logs(self) -> dict[TopicPartition, Log]:
        with self._lock:
            return dict(self._logs)

    def log_dir_of(self, topic: str, partition: int) -> Path | None:
        return self._dir_of.get(TopicPartition(topic, partition))

    def logs_in_dir(self, log_dir: str | os.PathLike[str]) -> list[TopicPartition]:
        """The partitions whose logs are in `log_dir` (any path naming one of the log dirs; one
        real-path lookup, not one per log)."""
        wanted = self._log_dir_named(log_dir)
        if wanted is None:
            return []
        with self._lock:
            return [tp for tp, d in self._dir_of.items() if d == wanted]

    def logs_in_dir_count(self, log_dir: Path) -> int:
        return self._count_in_dir[log_dir]

    def mark_dir_offline(self, log_dir: str | os.PathLike[str]) -> None:
        """A write under `log_dir` failed at the OS: no new log goes there from now on (its
        logs stay, failing their writes, until the broker restarts). Unknown dirs are ignored."""
        d = self._log_dir_named(log_dir)
        if d is not None:
            self._offline_dirs.add(d)
            log.warning("log dir %s is offline: new replicas go to the other log dirs", d)

    def _log_dir_named(self, path: str | os.PathLike[str]) -> Path | None:
        """The log dir `path` names (any spelling of it: compared as real paths), None if none."""
        real = os.path.realpath(path)
        return next((d for d in self.log_dirs if os.path.realpath(d) == real), None)

    def _next_log_dir(self) -> Path:
        """Of the dirs still online, the one holding the fewest partitions (ties: the first
        listed), Kafka's rule. LogDirIOError when every dir is offline."""
        online = [d for d in self.log_dirs if d not in self._offline_dirs]
        if not online:
            raise LogDirIOError("every log dir of this broker is offline", path=os.fspath(self.log_dirs[0]))
        return min(online, key=self.logs_in_dir_count)

    def get_or_create_log(
        self, topic: str, partition: int, config: LogConfig | None = None, *, sync_dir: bool = True
    ) -> Log:
        """The partition's log, created in the dir with the fewest logs if it has none.

        A new log's directory is made by its first file, not here (`Log(make_dir=False)`): until
        then the log holds nothing, so a crash or a restart has nothing of it to load, and the
        controller's next LeaderAndIsr makes it again, empty as it was. A topic's creation then
        costs no `mkdir` per replica (~70 us of CPU each on ext4, a third of a broker's CPU over
        the creation). The log still counts for its dir at once (JBOD placement is unchanged),
        its first flush fsyncs the parent before the recovery point moves (`Log._ensure_dir`),
        and a deletion before then has no directory to rename.

        A directory that does exist is loaded (and with `sync_dir` made durable now, else by the
        next `sync_created_dirs()`: a LeaderAndIsr pays one fsync per data dir, not per log)."""
        tp = TopicPartition(topic, partition)
        with self._lock:
            self._check_open()
            existing = self._logs.get(tp)
            if existing is not None:
                return existing
            if partition < 0 or not topic or "/" in topic or topic in (".", ".."):
                raise ValueError(f"invalid topic-partition {topic!r}-{partition}")
            if config is not None:
                self._topic_configs[topic] = config
            log_dir = self._next_log_dir()
            path = f"{os.fspath(log_dir)}/{partition_dir_name(tp)}"  # a str: no Path per replica
            lg = Log(
                path,
                self.config_for(topic),
                clock=self._clock,
                had_clean_shutdown=True,
                topic_partition=tp,
                file_cache=self.file_cache,
                make_dir=False,
                # every log directory of the data dirs was loaded at start-up, and made or renamed
                # by this manager since: one that is not held is not there, unless a deletion could
                # not rename it (then it is loaded, as Kafka loads whatever directory it finds)
                absent=path not in self._left_behind,
            )
            self._left_behind.discard(path)
            self._adopt(lg)
            if lg.has_dir:  # a directory there already, loaded (a new one waits for a write)
                if sync_dir:
                    fsync_dir(log_dir)
                else:
                    self._unsynced_dirs.add(log_dir)
            self._logs[tp] = lg
            self._dir_of[tp] = log_dir
            self._log_set_changed = True
            self._count_in_dir[log_dir] += 1
            self._logs_of_topic[tp.topic] += 1
            return lg

    def sync_created_dirs(self) -> None:
        """fsync the data dirs where `get_or_create_log(sync_dir=False)` created logs."""
        with self._lock:
            dirs, self._unsynced_dirs = self._unsynced_dirs, set()
        for d in sorted(dirs):
            fsync_dir(d)

    def delete_log(self, topic: str, partition: int) -> Path | None:
        """Close the log and rename its dir `<t>-<p>.<uuid>-delete`; the files go after
        file.delete.delay.ms (`delete_pending`). Returns the renamed dir, None if no such log;
        raises OSError if the rename failed."""
        outcome = self.delete_logs([TopicPartition(topic, partition)])[TopicPartition(topic, partition)]
        if isinstance(outcome, OSError):
            raise outcome
        return outcome

    def delete_logs(
        self, partitions: Iterable[TopicPartition]
    ) -> dict[TopicPartition, Path | OSError | None]:
        """`delete_log` of many, each data dir they were in fsynced and checkpointed once. Per
        partition: the renamed dir, None if there was no such log, or the OSError of a rename
        that failed (that log is closed and forgotten all the same; its directory is loaded
        again if a later LeaderAndIsr brings the partition back). A topic's deletion stops
        hundreds of replicas in one StopReplica: a checkpoint per log walked every log of its dir
        each time (at 66,000 logs, ~0.2 s per deleted replica on the broker's event loop)."""
        out: dict[TopicPartition, Path | OSError | None] = {}
        touched: dict[int, Path] = {}
        renamed: set[int] = set()
        with self._lock:
            now = self._now_ms()
            for tp in partitions:
                lg = self._logs.pop(tp, None)
                if lg is None:
                    out[tp] = None
                    continue
                log_dir = self._dir_of.pop(tp)
                self._count_in_dir[log_dir] -= 1
                self._logs_of_topic[tp.topic] -= 1
                self._cleaner_offsets.pop(tp, None)
                self._high_watermarks.pop(tp, None)
                self._log_set_changed = True
                lg.close()
                touched[id(log_dir)] = log_dir
                target = log_dir / delete_dir_name(tp)
                out[tp] = target
                if not lg.has_dir:  # never written: nothing on disk to rename or delete later
                    continue
                try:
                    os.replace(lg.directory, target)
                except OSError as e:
                    self._left_behind.add(lg.directory)
                    out[tp] = e
                    continue
                renamed.add(id(log_dir))
                self._pending_dir_deletes.append((now + lg.config.file_delete_delay_ms, target))
            for key, log_dir in touched.items():
                if key in renamed:
                    fsync_dir(log_dir)
                self._checkpoint_dir(log_dir)
        if any(due <= now for due, _ in self._pending_dir_deletes):
            self.delete_pending(now)
        return out

    def delete_pending(self, now_ms: int | None = None) -> int:
        """Remove `-delete` dirs and `.deleted` segment files whose delay has passed."""
        now = self._now_ms() if now_ms is None else now_ms
        done = 0
        with self._lock:
            keep = []
            for due, path in self._pending_dir_deletes:
                if due <= now:
                    shutil.rmtree(path, ignore_errors=True)
                    done += 1
                else:
                    keep.append((due, path))
            self._pending_dir_deletes = keep
            logs = self._with_pending_deletes.copy()
            held = self._logs
        for lg in logs:
            # out of the set first: a delete scheduled from here on puts the log back
            self._with_pending_deletes.discard(lg)
            if held.get(lg.topic_partition) is not lg:
                continue  # deleted since: its directory (and these files) goes as a whole
            done += lg.delete_expired_files(now)
            if lg.has_pending_deletes:
                self._with_pending_deletes.add(lg)
        return done

    # ---- truncation (replication) -----------------------------------------------------------------

    def truncate_to(self, topic: str, partition: int, offset: int) -> bool:
        """Follower truncation: truncate, lower the cleaner checkpoint, rewrite the recovery points."""
        tp = TopicPartition(topic, partition)
        lg = self.log_or_raise(topic, partition)
        truncated = lg.truncate_to(offset)
        if truncated:
            self._after_truncation(tp, lg)
        return truncated

    def truncate_fully_and_start_at(self, topic: str, partition: int, offset: int) -> None:
        tp = TopicPartition(topic, partition)
        lg = self.log_or_raise(topic, partition)
        lg.truncate_fully_and_start_at(offset)
        self._after_truncation(tp, lg)

    def _after_truncation(self, tp: TopicPartition, lg: Log) -> None:
        with self._lock:
            active_base = lg.active_segment.base_offset
            if self._cleaner_offsets.get(tp, -1) > active_base:
                self._cleaner_offsets[tp] = active_base
            log_dir = self._dir_of.get(tp)
        if log_dir is not None:
            self._checkpoint_dir(log_dir, recovery=True, starts=False, cleaner=True)

    # ---- periodic tasks -------------------------------------------------------------------------

    def check_retention(
        self, now_ms: int | None = None, high_watermarks: Callable[[TopicPartition], int | None] | None = None
    ) -> int:
        """Retention over every log (`Log.delete_old_segments`). `high_watermarks(tp)` bounds what
        may go; when it returns None the log is skipped this round. Without the callable the log
        end offset is the bound (a single replica). Returns the segments deleted."""
        now = self._now_ms() if now_ms is None else now_ms
        deleted = 0
        for tp, lg in self.all_logs().items():
            if lg.closed:  # offline (its log dir failed): nothing of it changes until a restart
                continue
            hw = None
            if high_watermarks is not None:
                hw = high_watermarks(tp)
                if hw is None:
                    continue
            try:
                deleted += lg.delete_old_segments(now, hw)
            except StorageError as e:
                log.warning("retention of %s failed: %s", tp, e)
        self.delete_pending(now)
        return deleted

    def _write_failed(self, path: str | os.PathLike[str], error: OSError) -> None:
        log.error("writing %s failed: %s", path, error)
        if self.on_dir_failure is not None:
            self.on_dir_failure(LogDirIOError(str(error), path=os.fspath(path)))

    def write_leader_epoch_checkpoints(self) -> int:
        """Write every deferred leader-epoch checkpoint (no fsync: the log's next flush does it).
        Returns how many were written. Run it off the event loop. A log that has never held a
        batch is left out: its first batch queues it again (`Log.write_epoch_checkpoint`), so a
        new replica costs no checkpoint file at its creation."""
        queue, done = self._epoch_writes, 0
        while queue:
            try:
                lg = queue.popleft()
            except IndexError:
                break
            try:
                done += lg.write_epoch_checkpoint()
            except OSError as e:
                self._write_failed(lg.directory, e)
        return done

    def flush_dirty_logs(self, now_ms: int | None = None) -> int:
        """fsync logs whose flush.ms passed or that rolled a segment since their last flush."""
        now = self._now_ms() if now_ms is None else now_ms
        flushed = 0
        for tp, lg in self.all_logs().items():
            try:
                flushed += lg.flush_if_due(now)
            except LogDirIOError as e:
                self._write_failed(e.path, e)
            except OSError as e:
                self._write_failed(lg.directory, e)
            except StorageError as e:
                log.warning("flushing %s failed: %s", tp, e)
        return flushed

    def run_cleaner(self, now_ms: int | None = None) -> tuple[TopicPartition, CleanResult] | None:
        """Compact the filthiest eligible log (one per call); None when none is eligible."""
        now = self._now_ms() if now_ms is None else now_ms
        best: tuple[float, TopicPartition, Log] | None = None
        for tp, lg in self.all_logs().items():
            if not lg.config.compact or lg.closed:
                continue
            try:
                rng = cleanable_range(lg, self._cleaner_offsets.get(tp), now)
            except (OSError, StorageError) as e:
                log.warning("cannot assess %s for cleaning: %s", tp, e)
                continue
            if rng.eligible(lg.config.min_cleanable_dirty_ratio) and (
                best is None or rng.dirty_ratio > best[0]
            ):
                best = (rng.dirty_ratio, tp, lg)
        if best is None:
            return None
        _, tp, lg = best
        result = clean_log(
            lg, self._cleaner_offsets.get(tp), now, dedupe_buffer_bytes=self.dedupe_buffer_bytes, force=True
        )
        if result is None:
            return None
        with self._lock:
            if tp in self._logs:
                self._cleaner_offsets[tp] = result.end_offset
                self._checkpoint_dir(self._dir_of[tp], recovery=False, starts=False, cleaner=True)
        return tp, result

    def cleaner_offset(self, topic: str, partition: int) -> int | None:
        return self._cleaner_offsets.get(TopicPartition(topic, partition))

    # ---- checkpoints ----------------------------------------------------------------------------

    def _checkpoint_dir(
        self, log_dir: Path, *, recovery: bool = True, starts: bool = True, cleaner: bool = True
    ) -> None:
        with self._lock:
            # by identity: `_dir_of` holds the `log_dirs` objects themselves, and Path equality
            # is Python code (this walks every log of the broker)
            dir_of = self._dir_of
            logs = {tp: lg for tp, lg in self._logs.items() if dir_of[tp] is log_dir}
            if recovery:
                OffsetCheckpointFile(log_dir / RECOVERY_POINT_CHECKPOINT).write(
                    {tp: lg.recovery_point for tp, lg in logs.items()}
                )
            if starts:
                OffsetCheckpointFile(log_dir / LOG_START_OFFSET_CHECKPOINT).write(
                    {
                        tp: lg.log_start_offset
                        for tp, lg in logs.items()
                        if lg.log_start_offset > lg.segment_bases()[0]
                    }
                )
            if cleaner:
                OffsetCheckpointFile(log_dir / CLEANER_OFFSET_CHECKPOINT).write(
                    {tp: off for tp, off in self._cleaner_offsets.items() if tp in logs}
                )

    def _checkpoint_online_dirs(self, *, recovery: bool, starts: bool, cleaner: bool) -> None:
        """Each dir still online; a dir whose write fails goes offline and the others go on."""
        for d in self.log_dirs:
            if d in self._offline_dirs:
                continue
            try:
                self._checkpoint_dir(d, recovery=recovery, starts=starts, cleaner=cleaner)
            except OSError as e:
                self._write_failed(d, e)

    def checkpoint_recovery_points(self) -> None:
        self._checkpoint_online_dirs(recovery=True, starts=False, cleaner=False)

    def checkpoint_log_start_offsets(self) -> None:
        self._checkpoint_online_dirs(recovery=False, starts=True, cleaner=False)

    def checkpoint_cleaner_offsets(self) -> None:
        self._checkpoint_online_dirs(recovery=False, starts=False, cleaner=True)

    def checkpoint_high_watermarks(self, high_watermarks: Mapping[TopicPartition, int]) -> None:
        """Take in `high_watermarks` (those that may have changed, or all of them) and write
        `replication-offset-checkpoint` of every dir with the HWs of its partitions; a dir whose
        file already holds exactly those (this manager wrote them last) is left alone. When none
        of them moved and no log came or went since the last call, nothing is even compared: the
        broker's periodic checkpoint of tens of thousands of idle replicas costs nothing. The
        partitions are grouped by the identity of their dir (one of `log_dirs`) in one pass:
        `Path` equality and hashing are Python code, and cost more per partition than the rest."""
        with self._lock:
            logs = self._logs
            saved = self._high_watermarks
            moved = False
            for tp, hw in high_watermarks.items():
                if tp in logs and saved.get(tp) != hw:
                    saved[tp] = hw
                    moved = True
            if not moved and not self._log_set_changed:
                return
            self._log_set_changed = False
            dir_of = self._dir_of
            by_dir: dict[Path, dict[TopicPartition, int]]
            if len(self.log_dirs) == 1:
                by_dir = {self.log_dirs[0]: {tp: hw for tp, hw in saved.items() if tp in dir_of}}
            else:
                by_id: dict[int, dict[TopicPartition, int]] = {id(d): {} for d in self.log_dirs}
                for tp, hw in saved.items():
                    d = dir_of.get(tp)
                    if d is not None:
                        by_id[id(d)][tp] = hw
                by_dir = {d: by_id[id(d)] for d in self.log_dirs}
            for d, offsets in by_dir.items():
                if d in self._offline_dirs or self._high_watermarks_written.get(d) == offsets:
                    continue
                try:
                    OffsetCheckpointFile(d / REPLICATION_OFFSET_CHECKPOINT).write(offsets)
                except OSError as e:  # that dir goes offline; the others are still written
                    self._write_failed(d / REPLICATION_OFFSET_CHECKPOINT, e)
                    continue
                self._high_watermarks_written[d] = offsets

    def high_watermark_checkpoint(self, topic: str, partition: int) -> int | None:
        """The HW read from (or last written to) `replication-offset-checkpoint`."""
        return self._high_watermarks.get(TopicPartition(topic, partition))

    # ---- shutdown -------------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise StorageError("the log manager is shut down")

    def shutdown(self) -> None:
        """Flush and close every log, write all checkpoints and, for each dir where all of that
        worked, the `.kafka_cleanshutdown` marker; release the dir locks.

        The logs are written out without an fsync each and then made durable with one
        filesystem sync per data dir, before any recovery point is checkpointed: a broker with
        thousands of replicas would otherwise spend minutes in per-file fsyncs (~5 ms each here)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            failed: set[Path] = set()
            for tp, lg in self._logs.items():
                try:
                    lg.flush(fsync=False)
                    lg.close()
                except (OSError, StorageError) as e:
                    log.error("closing %s failed: %s", tp, e)
                    failed.add(self._dir_of[tp])
                    lg.close_without_flush()
            unsynced: set[Path] = set()
            for d in self.log_dirs:
                try:
                    sync_filesystem(d)
                except OSError as e:
                    log.error("syncing %s failed: %s", d, e)
                    unsynced.add(d)
            for d in self.log_dirs:
                if d in unsynced:
                    continue  # its recovery points were not made durable: keep the old checkpoints
                try:
                    self._checkpoint_dir(d)
                    if d not in failed:
                        (d / CLEAN_SHUTDOWN_FILE).touch()
                        fsync_dir(d)
                except OSError as e:
                    log.error("writing the checkpoints of %s failed: %s", d, e)
            for lock in self._locks:
                lock.release()

    def __enter__(self) -> LogManager:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()
