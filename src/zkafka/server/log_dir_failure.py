"""What a broker does when a write to one of its log dirs fails at the OS (disk full, I/O error):
Kafka's LogDirFailureChannel and, in ZooKeeper mode, ReplicaManager.handleLogDirFailure.

The failed dir is offline from then on, until the broker restarts. When every log dir of the broker
is offline, Kafka halts it at once ("Shutdown broker because all log dirs in ... have failed"):
its ZooKeeper session then ends, the controller moves its leaderships to the in-sync replicas, and
nothing acknowledged with acks=all is lost (the failed write was cut off and never acknowledged).
That is what happens here too, with one log dir (the common case) the whole of it.

With several log dirs and only some failed, the failed dir takes no new replica from then on
(`on_offline`: the log manager places new logs in the dirs still online, as Kafka does), and its
replicas are moved away (`on_partial`, then `stop_replicas_in`): they stop (fetchers removed,
logs closed without writing more), so everything asked of them answers KAFKA_STORAGE_ERROR; the
broker writes a `/log_dir_event_notification/log_dir_event_N` znode; the controller sends this
broker a LeaderAndIsr for all its replicas, the stopped ones answer KAFKA_STORAGE_ERROR, and the
controller takes them as offline: new leaders elsewhere, out of the ISRs. Until the broker
restarts, as in Kafka.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path

from zkafka.storage.errors import LogDirIOError
from zkafka.storage.naming import TopicPartition

log = logging.getLogger(__name__)


def _halt(status: int) -> None:
    logging.shutdown()  # the reason must reach server.log before the process is gone
    os._exit(status)


class LogDirFailures:
    def __init__(
        self,
        log_dirs: Iterable[str],
        *,
        halt: Callable[[int], None] = _halt,
        on_offline: Callable[[str], None] | None = None,
        on_partial: Callable[[str], None] | None = None,
    ) -> None:
        self.log_dirs = [os.path.realpath(d) for d in log_dirs]
        self.offline: set[str] = set()
        self._lock = threading.Lock()
        self._halt = halt
        self._on_offline = on_offline
        """Told each dir (its real path) as it goes offline, before any halt."""
        self._on_partial = on_partial
        """Told each dir that goes offline while others stay online (from whichever thread the
        failed write ran on): its replicas are then moved away."""

    def log_dir_of(self, path: str) -> str | None:
        real = Path(os.path.realpath(path))
        return next((d for d in self.log_dirs if real.is_relative_to(d)), None)

    def failed(self, error: LogDirIOError) -> None:
        """Any thread: writes fail on the event loop and in the maintenance threads alike."""
        log_dir = self.log_dir_of(error.path)
        with self._lock:
            if log_dir is None or log_dir in self.offline:
                return
            self.offline.add(log_dir)
        log.error("Stopped serving replicas in dir %s: %s", log_dir, error)
        if self._on_offline is not None:
            self._on_offline(log_dir)
        if len(self.offline) == len(self.log_dirs):
            log.critical("Shutdown broker because all log dirs in %s have failed", ", ".join(self.log_dirs))
            self._halt(1)
        elif self._on_partial is not None:
            self._on_partial(log_dir)


async def stop_replicas_in(
    log_dir: str,
    stop: Callable[[str], list[TopicPartition]],
    announce: Callable[[], Awaitable[object]],
) -> None:
    """Kafka's handleLogDirFailure, on the event loop: `stop` the replicas in `log_dir` (the
    replica manager's `stop_replicas_in_dir`), then `announce` the failure to the controller (the
    `/log_dir_event_notification` znode), which moves their leaderships and ISR places away."""
    stopped = stop(log_dir)
    log.error(
        "log dir %s is offline: stopped its %d replica(s); asking the controller to move them",
        log_dir,
        len(stopped),
    )
    try:
        await announce()
    except Exception as e:  # the replicas stay stopped; a restart is the way back, as in Kafka
        log.error("cannot write the log dir event notification for %s: %s", log_dir, e)
