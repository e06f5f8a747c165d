"""File and directory names in a log dir, exactly as Kafka spells them.

- Segment files: `<20-digit base offset>.<ext>` (`00000000000000001234.log`), with temporary
  suffixes appended to the full name (`00000000000000001234.log.deleted`). The base offset is the
  text before the first `.`.
- Partition dirs: `<topic>-<partition>`; a dir being deleted is `<topic>-<partition>.<uuid32hex>-delete`;
  `-future` and `-stray` dirs belong to features zkafka does not have and are left alone.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable
from pathlib import Path

from zkafka.protocol.topic_partition import TopicPartition as TopicPartition

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
TXN_INDEX_SUFFIX = ".txnindex"
SNAPSHOT_SUFFIX = ".snapshot"
DELETED_SUFFIX = ".deleted"
CLEANED_SUFFIX = ".cleaned"
SWAP_SUFFIX = ".swap"
INDEX_SUFFIXES = (INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX)

DELETE_DIR_SUFFIX = "-delete"
FUTURE_DIR_SUFFIX = "-future"
STRAY_DIR_SUFFIX = "-stray"

# Kafka cuts the topic so a `-delete` dir name stays within common file-name limits
MAX_DIR_NAME_LENGTH = 255

_DELETE_DIR = re.compile(r"^(\S+)-(\S+)\.(\S+)-delete$")
_OFFSET_PREFIX = re.compile(r"^\d{20}$")


def filename_prefix(offset: int) -> str:
    """`00000000000000001234` for 1234: the stem every file of a segment shares."""
    if offset < 0:
        raise ValueError(f"negative segment base offset {offset}")
    return f"{offset:020d}"


def segment_file(dir_path: Path, base_offset: int, suffix: str, temp_suffix: str = "") -> Path:
    return dir_path / f"{filename_prefix(base_offset)}{suffix}{temp_suffix}"


def offset_from_filename(name: str) -> int | None:
    """The base offset of a segment file name (any suffixes), or None if the name is not one."""
    stem = name.split(".", 1)[0]
    return int(stem) if _OFFSET_PREFIX.match(stem) else None


def snapshot_offsets_in(names: Iterable[str]) -> list[int]:
    """The offsets of the producer-state snapshots (`<20 digits>.snapshot`) among a log
    directory's file names, ascending."""
    return sorted(
        offset
        for n in names
        if n.endswith(SNAPSHOT_SUFFIX) and (offset := offset_from_filename(n)) is not None
    )


def partition_dir_name(tp: TopicPartition) -> str:
    return f"{tp.topic}-{tp.partition}"


def parse_partition_dir_name(name: str) -> TopicPartition | None:
    """`<topic>-<partition>` → TopicPartition; None for anything else (including `-delete` dirs)."""
    topic, sep, part = name.rpartition("-")
    if not sep or not topic or not part.isdigit() or (len(part) > 1 and part[0] == "0"):
        return None
    return TopicPartition(topic, int(part))


def delete_dir_name(tp: TopicPartition) -> str:
    """`<topic>-<partition>.<uuid32hex>-delete`, the topic cut so the name fits in 255 chars."""
    tail = f"-{tp.partition}.{uuid.uuid4().hex}{DELETE_DIR_SUFFIX}"
    return tp.topic[: MAX_DIR_NAME_LENGTH - len(tail)] + tail


def parse_delete_dir_name(name: str) -> TopicPartition | None:
    m = _DELETE_DIR.match(name)
    if not m or not m.group(2).isdigit():
        return None
    return TopicPartition(m.group(1), int(m.group(2)))


def is_special_dir_name(name: str) -> bool:
    """Dirs zkafka must not treat as live partitions: `-delete`, `-future`, `-stray`."""
    return name.endswith((DELETE_DIR_SUFFIX, FUTURE_DIR_SUFFIX, STRAY_DIR_SUFFIX))
