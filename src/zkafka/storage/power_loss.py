"""What a power loss does to a stopped broker's replica of one partition (the `power-loss` fault of
`zkafka chaos`; here because this package is the only one that opens data files): everything written after
the last flush is gone from the disk. A SIGKILL alone keeps the page cache (the kernel writes it
out later), so the `power-loss` fault emulates the rest: while the broker is down, the partition's
segment files are cut to the recovery point the broker last checkpointed
(`recovery-point-offset-checkpoint`: every offset below it was fsynced). That is the worst case of
a real power loss: the checkpoint lags the flushes by up to `log.flush.offset.checkpoint.interval.ms`,
and data flushed in that window would have survived. Segments starting at or after the recovery
point are removed, the one holding it is cut at the first batch at or past it; the indexes are
left for the broker's own recovery (it re-validates every segment from the recovery point after an
unclean shutdown and rebuilds their indexes)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from zkafka.storage.checkpoint import RECOVERY_POINT_CHECKPOINT, OffsetCheckpointFile
from zkafka.storage.naming import LOG_SUFFIX, TopicPartition, offset_from_filename, partition_dir_name
from zkafka.storage.scan import iter_file_headers


@dataclass(frozen=True)
class Cut:
    recovery_point: int
    log_end: int
    """One past the last offset of the replica before the cut."""

    @property
    def records(self) -> int:
        """Offsets cut off (batches hold consecutive offsets, so this counts records)."""
        return max(0, self.log_end - self.recovery_point)


def lose_unflushed(log_dirs: list[Path], topic: str, partition: int) -> Cut:
    """Cut the replica of `topic`-`partition` in whichever of `log_dirs` holds it back to its
    checkpointed recovery point. The broker must not be running."""
    tp = TopicPartition(topic, partition)
    for log_dir in log_dirs:
        directory = log_dir / partition_dir_name(tp)
        if directory.is_dir():
            recovery_point = OffsetCheckpointFile(log_dir / RECOVERY_POINT_CHECKPOINT).read().get(tp, 0)
            return Cut(recovery_point, _cut(directory, recovery_point))
    raise FileNotFoundError(f"no replica of {topic}-{partition} under {[str(d) for d in log_dirs]}")


def _cut(directory: Path, recovery_point: int) -> int:
    """Cut the segments in `directory` at `recovery_point`; the log end offset before the cut."""
    segments = sorted(
        (base, path)
        for path in directory.glob(f"*{LOG_SUFFIX}")
        if (base := offset_from_filename(path.name)) is not None
    )
    log_end = recovery_point
    for i, (base, path) in enumerate(segments):
        fd = os.open(path, os.O_RDWR)
        try:
            cut_at = None
            for position, header in iter_file_headers(fd, 0, os.fstat(fd).st_size):
                log_end = max(log_end, header.last_offset + 1)
                if cut_at is None and header.base_offset >= recovery_point:
                    cut_at = position
            if cut_at is not None and (base < recovery_point or i == 0):
                os.ftruncate(fd, cut_at)  # the segment holding the recovery point (or the first)
        finally:
            os.close(fd)
        if base >= recovery_point and i > 0:
            for sibling in directory.glob(f"{path.name[: -len(LOG_SUFFIX)]}.*"):
                if sibling.suffix != ".snapshot":
                    sibling.unlink()
    return log_end
