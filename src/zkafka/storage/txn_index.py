"""The aborted-transaction index of a segment: `<base offset>.txnindex`, Kafka's format.

One 34-byte entry per transaction aborted by a marker in the segment, in marker order::

    version int16 (0) | producerId int64 | firstOffset int64 | lastOffset int64 | lastStableOffset int64

`firstOffset` is the transaction's first data offset, `lastOffset` its ABORT marker's offset,
`lastStableOffset` the partition's LSO once the marker was written. A read_committed fetch lists
the entries overlapping the fetched range (`aborted_transactions`), and the client drops those
producers' records from `firstOffset` up to the marker.

Entries are appended with plain writes (the page cache survives a process crash, as for the
`.log`) and fsynced with the segment; a torn trailing entry is ignored on read and cut on the next
truncation. After an unclean shutdown the entries of the re-validated segments are re-added from
the markers as the partition replays them (`Partition._rebuild_producer_state`): a power loss may
have lost the tail of the file, or all of it.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path
from typing import NamedTuple

from zkafka.storage.file_cache import open_or_relieve

_ENTRY = struct.Struct(">hqqqq")
ENTRY_SIZE = _ENTRY.size  # 34
VERSION = 0


class AbortedTxn(NamedTuple):
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int


class TransactionIndex:
    """One segment's `.txnindex`; the file exists only once a transaction was aborted in it."""

    __slots__ = (
        "_entries",
        "_path",
    )

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self._path = os.fspath(path)  # a str: ~0.5 KiB less than a Path, per file of every replica
        self._entries: list[AbortedTxn] | None = None  # read on first use

    @property
    def path(self) -> Path:
        return Path(self._path)

    @path.setter
    def path(self, path: Path) -> None:
        self._path = os.fspath(path)

    def entries(self) -> list[AbortedTxn]:
        if self._entries is None:
            self._entries = self._read()
        return self._entries

    def _read(self) -> list[AbortedTxn]:
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return []
        out = []
        for pos in range(0, len(data) - ENTRY_SIZE + 1, ENTRY_SIZE):
            version, pid, first, last, lso = _ENTRY.unpack_from(data, pos)
            if version != VERSION:
                break  # not an entry Kafka writes: the rest cannot be trusted
            out.append(AbortedTxn(pid, first, last, lso))
        return out

    def append(self, txn: AbortedTxn) -> None:
        entries = self.entries()
        if entries and txn.last_offset <= entries[-1].last_offset:
            return  # already recorded (markers only ever move forward)
        fd = open_or_relieve(self._path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        try:
            os.write(fd, _ENTRY.pack(VERSION, *txn))
        finally:
            os.close(fd)
        entries.append(txn)

    def collect(self, fetch_offset: int, upper_bound: int) -> list[AbortedTxn]:
        """Entries of transactions that may have records in [fetch_offset, upper_bound)."""
        return [t for t in self.entries() if t.last_offset >= fetch_offset and t.first_offset < upper_bound]

    def truncate_to(self, offset: int) -> None:
        """Forget transactions whose marker is at or after `offset` (log truncation)."""
        entries = self.entries()
        kept = [t for t in entries if t.last_offset < offset]
        on_disk = self.path.stat().st_size if self.path.exists() else 0
        if len(kept) == len(entries) and on_disk == len(kept) * ENTRY_SIZE:
            return
        self._entries = kept
        if not kept:
            self.path.unlink(missing_ok=True)
            return
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_bytes(b"".join(_ENTRY.pack(VERSION, *t) for t in kept))
        os.replace(tmp, self.path)

    def flush(self) -> None:
        if not self.path.exists():
            return
        fd = open_or_relieve(self._path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def rename(self, target: Path) -> None:
        if self.path.exists():
            os.replace(self.path, target)
        self.path = target

    def delete(self) -> None:
        self.path.unlink(missing_ok=True)
        self._entries = []
