"""The broker's logs: opened at start-up with their topics' configs, then kept in shape by
periodic tasks (retention, flushes, the three checkpoints, deletion of removed logs' files, the
cleaner), each on Kafka's interval key.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Protocol

from zkafka.config import BrokerConfig
from zkafka.server.scheduler import Scheduler
from zkafka.server.services import BrokerIdentity
from zkafka.server.topic_configs import read_topic_configs
from zkafka.server.zookeeper import ZooKeeper
from zkafka.storage.manager import LogManager
from zkafka.storage.naming import TopicPartition

DELETE_FILES_INTERVAL_MS = 1000
LEADER_EPOCH_WRITE_INTERVAL_MS = 500


class HighWatermarks(Protocol):
    """The replica manager's high watermarks, as log maintenance needs them."""

    def high_watermark(self, tp: TopicPartition) -> int | None:
        """One log's (from any thread: retention runs on a worker)."""
        ...

    def high_watermark_changes(self) -> Mapping[TopicPartition, int]:
        """Those that may have moved since the last call (on the loop)."""
        ...


async def open_logs(config: BrokerConfig, identity: BrokerIdentity, zk: ZooKeeper) -> LogManager:
    """The log manager over `log.dirs`, every log loaded (and recovered after an unclean shutdown)."""
    defaults = config.log_config()
    topic_configs = await read_topic_configs(zk, defaults)
    return await asyncio.get_running_loop().run_in_executor(
        None,
        lambda: LogManager(
            [Path(d) for d in config.log_dirs],
            defaults,
            broker_id=identity.broker_id,
            cluster_id=identity.cluster_id,
            topic_configs=topic_configs,
            max_open_files=config.zkafka_log_max_open_files,
            recovery_threads=config.num_recovery_threads_per_data_dir,
        ),
    )


def schedule_log_maintenance(
    scheduler: Scheduler,
    config: BrokerConfig,
    logs: LogManager,
    high_watermarks: HighWatermarks,
    log_starts_moved: Callable[[], None] | None = None,
) -> None:
    """Register the periodic log work with `scheduler`; `high_watermarks` are the replica manager's
    (retention never deletes past them, and their changes are checkpointed). `log_starts_moved` is
    called (from the worker thread) after a retention pass that deleted segments: fetch sessions
    send and answer only what changed, and nothing else tells them of those log starts."""
    cfg = config

    def retention() -> None:
        if logs.check_retention(_now_ms(), high_watermarks.high_watermark) and log_starts_moved is not None:
            log_starts_moved()

    async def checkpoint_high_watermarks() -> None:
        changes = high_watermarks.high_watermark_changes()  # on the loop, where they change
        await asyncio.get_running_loop().run_in_executor(None, logs.checkpoint_high_watermarks, changes)

    def every(interval_ms: int, name: str, fn: Callable[[], object]) -> None:
        scheduler.every(interval_ms / 1000, name, fn, blocking=True)

    every(cfg.log_retention_check_interval_ms, "retention", retention)
    every(cfg.log_flush_scheduler_interval_ms, "flush", lambda: logs.flush_dirty_logs(_now_ms()))
    every(cfg.log_flush_offset_checkpoint_interval_ms, "recovery-checkpoint", logs.checkpoint_recovery_points)
    every(
        cfg.log_flush_start_offset_checkpoint_interval_ms,
        "start-offset-checkpoint",
        logs.checkpoint_log_start_offsets,
    )
    scheduler.every_async(
        cfg.replica_high_watermark_checkpoint_interval_ms / 1000, "hw-checkpoint", checkpoint_high_watermarks
    )
    every(DELETE_FILES_INTERVAL_MS, "delete-files", lambda: logs.delete_pending(_now_ms()))
    # leader-epoch checkpoints a LeaderAndIsr changed, written here instead of on the event loop
    every(LEADER_EPOCH_WRITE_INTERVAL_MS, "leader-epoch-checkpoint", logs.write_leader_epoch_checkpoints)
    if cfg.log_cleaner_enable:
        every(cfg.log_cleaner_backoff_ms, "cleaner", lambda: logs.run_cleaner(_now_ms()))


def _now_ms() -> int:
    return int(time.time() * 1000)
