"""DescribeLogDirs (key 35): every log dir of this broker and the partitions it holds.

Each configured dir is one result: its partitions (all, or those the request names) with their
size on disk and offset lag (Kafka's max(high watermark - log end offset, 0), so 0 for the current
replica; zkafka has no future replicas: is_future_key is always false). A dir that is missing or
not writable is offline: KAFKA_STORAGE_ERROR and no partitions, as Kafka answers for an offline dir.
From v4 each online dir also reports its file system's total and usable bytes (KIP-827), which
`zkafka doctor` uses to find disks nearly full.
"""

from __future__ import annotations

import os
import shutil
from collections import defaultdict
from pathlib import Path

from zkafka.protocol import ErrorCode
from zkafka.protocol.messages import DescribeLogDirsRequest, DescribeLogDirsResponse
from zkafka.server.dispatcher import RequestContext
from zkafka.storage.naming import TopicPartition

R = DescribeLogDirsResponse


def _online(log_dir: Path) -> bool:
    return log_dir.is_dir() and os.access(log_dir, os.R_OK | os.W_OK | os.X_OK)


def handle(ctx: RequestContext, request: DescribeLogDirsRequest) -> DescribeLogDirsResponse:
    logs = ctx.services.logs
    wanted: set[TopicPartition] | None = None
    if request.topics is not None:
        wanted = {TopicPartition(t.topic, p) for t in request.topics for p in t.partitions}
    by_dir: dict[Path, dict[str, list[R.DescribeLogDirsPartition]]] = defaultdict(lambda: defaultdict(list))
    for tp, lg in sorted(logs.all_logs().items()):
        if wanted is not None and tp not in wanted:
            continue
        log_dir = logs.log_dir_of(tp.topic, tp.partition)
        if log_dir is None:
            continue
        try:
            size = lg.size
        except Exception:  # closed under us (deleted meanwhile): leave it out
            continue
        by_dir[log_dir][tp.topic].append(
            R.DescribeLogDirsPartition(
                partition_index=tp.partition, partition_size=size, offset_lag=0, is_future_key=False
            )
        )
    results = []
    for log_dir in logs.log_dirs:
        if not _online(log_dir):
            results.append(
                R.DescribeLogDirsResult(error_code=ErrorCode.KAFKA_STORAGE_ERROR, log_dir=str(log_dir))
            )
            continue
        topics = [
            R.DescribeLogDirsTopic(name=topic, partitions=parts)
            for topic, parts in sorted(by_dir[log_dir].items())
        ]
        total = usable = -1
        try:
            usage = shutil.disk_usage(log_dir)
            total, usable = usage.total, usage.free
        except OSError:  # vanished since the check: report no figures rather than fail the request
            pass
        results.append(
            R.DescribeLogDirsResult(
                log_dir=str(log_dir), topics=topics, total_bytes=total, usable_bytes=usable
            )
        )
    return DescribeLogDirsResponse(results=results)
