"""`BadZNodes`: znodes whose data does not decode, reported once each and counted.

Anyone who can write to ZooKeeper can put `{not json` into any znode. Kafka's rule is that one such
znode must not stop the reader from handling everything else: the plural reads of `KafkaZkClient`
decode znode by znode, hand each failure here and go on without that item, so a broker registration
that does not decode reads as a broker that is not live, a partition state that does not decode as a
partition without a state (offline until its state is rewritten), and so on.

Each bad znode is logged once per version of its content (path + mzxid): one WARNING line with the
path, the reason, the first bytes and what the reader does instead. Reading it again (every controller
event may) logs nothing more; rewriting it with good data clears it, rewriting it with other bad data
reports it again.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass

from kazoo.protocol.states import ZnodeStat

from zkafka.zk.errors import ZNodeDataError

__all__ = ["BadZNode", "BadZNodes"]

log = logging.getLogger("zkafka.zk.bad_znodes")

SHOWN_BYTES = 32
MAX_TRACKED = 100_000
"""Bad znodes remembered at once; beyond that the oldest are forgotten (and may be reported again)."""


@dataclass(frozen=True, slots=True)
class BadZNode:
    path: str
    problem: str
    first_bytes: bytes
    mzxid: int


class BadZNodes:
    """Thread-safe: the plural reads run on ZooKeeper executor threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._current: dict[str, BadZNode] = {}
        self.decode_failures = 0
        """Every failed decode, repeats included (a counter for metrics)."""

    def report(
        self, error: Exception, path: str, data: bytes | None, stat: ZnodeStat | None, instead: str
    ) -> None:
        """One decode of `path` failed with `error`; the caller does `instead` (said in the log line)."""
        problem = error.problem if isinstance(error, ZNodeDataError) else f"{type(error).__name__}: {error}"
        mzxid = stat.mzxid if stat is not None else -1
        bad = BadZNode(path, problem, bytes(data or b"")[:SHOWN_BYTES], mzxid)
        with self._lock:
            self.decode_failures += 1
            known = self._current.get(path)
            if known is not None and known.mzxid == mzxid and mzxid != -1:
                return
            self._current.pop(path, None)
            if len(self._current) >= MAX_TRACKED:
                self._current.pop(next(iter(self._current)))
            self._current[path] = bad
        log.warning(
            "znode %s does not decode: %s; first bytes %r; %s", path, problem, bad.first_bytes, instead
        )

    def cleared(self, path: str) -> None:
        """`path` decoded: forget it (called on every good decode, so keep it cheap)."""
        if self._current and path in self._current:
            with self._lock:
                gone = self._current.pop(path, None)
            if gone is not None:
                log.info("znode %s decodes again", path)

    def current(self) -> list[BadZNode]:
        """The znodes known to be bad right now, oldest report first."""
        with self._lock:
            return list(self._current.values())
