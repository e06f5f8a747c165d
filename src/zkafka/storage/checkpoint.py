"""Kafka's small text files in a log dir: offset checkpoints, the leader-epoch checkpoint,
`meta.properties` and the clean-shutdown marker.

Checkpoint format (all files version 0)::

    0\\n
    <entry count>\\n
    <entry>\\n ...        offset files: "<topic> <partition> <offset>"; leader epochs: "<epoch> <start>"

Writes go to `<name>.tmp`, are fsynced and renamed over the old file, then the dir is fsynced, so a
crash leaves either the old or the new content. Reads are tolerant where Kafka is: a 0-byte (or
missing) file holds no entries; anything else malformed raises `CheckpointError`, which callers turn
into a warning plus a safe fallback.
"""

from __future__ import annotations

import ctypes
import os
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TypeVar

from zkafka.storage.errors import CheckpointError, InconsistentMetadataError
from zkafka.storage.file_cache import open_or_relieve
from zkafka.storage.naming import TopicPartition
from zkafka.storage.scan import read_whole_file, write_all

CHECKPOINT_VERSION = 0
RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
REPLICATION_OFFSET_CHECKPOINT = "replication-offset-checkpoint"
CLEANER_OFFSET_CHECKPOINT = "cleaner-offset-checkpoint"
LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
META_PROPERTIES = "meta.properties"
CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"

T = TypeVar("T")


def fsync_dir(path: str | Path) -> None:
    """Make a rename or create inside `path` durable (a no-op where dirs cannot be opened)."""
    try:
        fd = open_or_relieve(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def sync_filesystem(path: Path) -> None:
    """Make everything written to the filesystem holding `path` durable: Linux's syncfs(2), one
    call however many files changed; os.sync() where syncfs is missing or fails."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        syncfs = libc.syncfs
    except (OSError, AttributeError):
        os.sync()
        return
    fd = open_or_relieve(path, os.O_RDONLY)
    try:
        if syncfs(fd) != 0:
            os.sync()
    finally:
        os.close(fd)


def write_atomically(path: Path, data: bytes, *, sync: bool = True) -> None:
    """Replace `path` with `data`: write `<path>.tmp`, fsync, rename, fsync the dir. Without
    `sync` only the rename keeps readers from a half-written file; `fsync_file` later makes it
    durable."""
    tmp = path.with_name(path.name + ".tmp")
    fd = open_or_relieve(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    try:
        write_all(fd, data)
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    if sync:
        fsync_dir(path.parent)


def fsync_file(path: Path) -> None:
    """Make a file written by `write_atomically(sync=False)` durable: fsync it and its dir."""
    try:
        fd = open_or_relieve(path, os.O_RDONLY)
    except FileNotFoundError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    fsync_dir(path.parent)


def format_checkpoint(lines: Iterable[str]) -> bytes:
    body = list(lines)
    return "".join(f"{line}\n" for line in [str(CHECKPOINT_VERSION), str(len(body)), *body]).encode()


def parse_checkpoint(
    text: str, parse_entry: Callable[[list[str]], T], *, name: str = "checkpoint"
) -> list[T]:
    """Entries of a checkpoint's text; '' (a 0-byte file) has none. Raises CheckpointError."""
    if text == "":
        return []
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    if len(lines) < 2:
        raise CheckpointError(f"{name}: truncated header")
    if lines[0].strip() != str(CHECKPOINT_VERSION):
        raise CheckpointError(f"{name}: unrecognized version {lines[0]!r}")
    try:
        count = int(lines[1].strip())
    except ValueError:
        raise CheckpointError(f"{name}: bad entry count {lines[1]!r}") from None
    entries = lines[2:]
    if count != len(entries):
        raise CheckpointError(f"{name}: expected {count} entries, found {len(entries)}")
    out: list[T] = []
    for line in entries:
        try:
            out.append(parse_entry(line.split()))
        except (ValueError, IndexError):
            raise CheckpointError(f"{name}: malformed line {line!r}") from None
    return out


def _read_text(path: str | Path) -> str:
    try:
        data = read_whole_file(path)
    except FileNotFoundError:
        return ""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise CheckpointError(f"{path}: not UTF-8 text") from None


def _parse_offset_entry(fields: list[str]) -> tuple[TopicPartition, int]:
    if len(fields) != 3:
        raise ValueError("expected 3 fields")
    return TopicPartition(fields[0], int(fields[1])), int(fields[2])


class OffsetCheckpointFile:
    """`<topic> <partition> <offset>` per line: recovery points, log start offsets, HWs, cleaner offsets."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def read(self) -> dict[TopicPartition, int]:
        return dict(parse_checkpoint(_read_text(self.path), _parse_offset_entry, name=str(self.path)))

    def write(self, offsets: Mapping[TopicPartition, int]) -> None:
        write_atomically(self.path, format_offsets(offsets))


def format_offsets(offsets: Mapping[TopicPartition, int]) -> bytes:
    return format_checkpoint(f"{tp.topic} {tp.partition} {offset}" for tp, offset in offsets.items())


def _parse_epoch_entry(fields: list[str]) -> tuple[int, int]:
    if len(fields) != 2:
        raise ValueError("expected 2 fields")
    return int(fields[0]), int(fields[1])


class LeaderEpochCheckpointFile:
    """`<epoch> <startOffset>` per line, ascending."""

    __slots__ = ("_path",)

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self._path = os.fspath(path)  # a str: one of these per replica, and a Path is ~0.5 KiB

    @property
    def path(self) -> Path:
        return Path(self._path)

    def read(self) -> list[tuple[int, int]]:
        return parse_checkpoint(_read_text(self._path), _parse_epoch_entry, name=self._path)

    def write(self, entries: Iterable[tuple[int, int]], *, sync: bool = True) -> None:
        data = format_checkpoint(f"{epoch} {start}" for epoch, start in entries)
        write_atomically(self.path, data, sync=sync)

    def sync(self) -> None:
        fsync_file(self.path)


# ---- meta.properties ---------------------------------------------------------------------------


def read_meta_properties(log_dir: Path) -> dict[str, str] | None:
    """The key=value pairs of `meta.properties`, or None when the dir has none yet.

    A stale `meta.properties.tmp` from an interrupted write is removed first, as Kafka does.
    """
    path = log_dir / META_PROPERTIES
    path.with_name(path.name + ".tmp").unlink(missing_ok=True)
    try:
        text = path.read_text("utf-8")
    except FileNotFoundError:
        return None
    except UnicodeDecodeError:
        raise InconsistentMetadataError(f"{path}: not UTF-8 text") from None
    props: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#!":
            continue
        cut = min((i for i in (line.find("="), line.find(":")) if i >= 0), default=-1)
        if cut < 0:
            raise InconsistentMetadataError(f"{path}: malformed line {raw!r}")
        props[line[:cut].strip()] = line[cut + 1 :].strip()
    return props


def write_meta_properties(log_dir: Path, broker_id: int, cluster_id: str | None) -> None:
    """Write v0 (ZooKeeper mode) properties in `java.util.Properties.store` layout."""
    props = {"version": "0", "broker.id": str(broker_id)}
    if cluster_id is not None:
        props["cluster.id"] = cluster_id
    stamp = time.strftime("%a %b %d %H:%M:%S UTC %Y", time.gmtime())
    text = "#\n#" + stamp + "\n" + "".join(f"{k}={v}\n" for k, v in props.items())
    write_atomically(log_dir / META_PROPERTIES, text.encode())


def check_meta_properties(
    props: Mapping[str, str], log_dir: Path, broker_id: int, cluster_id: str | None
) -> str | None:
    """Validate v0/v1 properties against this broker; returns the stored cluster id (if any)."""
    version = props.get("version")
    if version not in ("0", "1"):
        raise InconsistentMetadataError(f"{log_dir}/{META_PROPERTIES}: unsupported version {version!r}")
    stored_id = props.get("broker.id") if version == "0" else props.get("node.id")
    if stored_id is None or not stored_id.lstrip("-").isdigit():
        raise InconsistentMetadataError(f"{log_dir}/{META_PROPERTIES}: missing or bad broker id")
    if int(stored_id) != broker_id:
        raise InconsistentMetadataError(
            f"{log_dir} belongs to broker {stored_id}, not broker {broker_id} (see {META_PROPERTIES})"
        )
    stored_cluster = props.get("cluster.id")
    if cluster_id is not None and stored_cluster is not None and stored_cluster != cluster_id:
        raise InconsistentMetadataError(
            f"{log_dir} belongs to cluster {stored_cluster}, not {cluster_id} (see {META_PROPERTIES})"
        )
    return stored_cluster
