"""What a broker does when a write to one of its log dirs fails at the OS (disk full, I/O error):
Kafka's LogDirFailureChannel and, in ZooKeeper mode, ReplicaManager.handleLogDirFailure.

The failed dir is offline from then on, until the broker restarts. When every log dir of the broker
is offline, Kafka halts it at once ("Shutdown broker because all log dirs in ... have failed"):
its ZooKeeper session then ends, the controller moves its leaderships to the in-sync replicas, and
nothing acknowledged with acks=all is lost (the failed write was cut off and never acknowledged).
That is what happens here too, with one log dir (the common case) the whole of it.

With several log dirs and only some failed, the failed dir takes no new replica from then on
(`on_offline`: the log manager places new logs in the dirs still online, as Kafka does). Kafka
also moves the failed dir's partitions away (the `/log_dir_event_notification` znode to the
controller): not done here yet, those partitions keep failing their writes with
KAFKA_STORAGE_ERROR until the broker is restarted.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable
from pathlib import Path

from zkafka.storage.errors import LogDirIOError

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
    ) -> None:
        self.log_dirs = [os.path.realpath(d) for d in log_dirs]
        self.offline: set[str] = set()
        self._halt = halt
        self._on_offline = on_offline
        """Told each dir (its real path) as it goes offline, before any halt."""

    def log_dir_of(self, path: str) -> str | None:
        real = Path(os.path.realpath(path))
        return next((d for d in self.log_dirs if real.is_relative_to(d)), None)

    def failed(self, error: LogDirIOError) -> None:
        log_dir = self.log_dir_of(error.path)
        if log_dir is None or log_dir in self.offline:
            return
        self.offline.add(log_dir)
        log.error("Stopped serving replicas in dir %s: %s", log_dir, error)
        if self._on_offline is not None:
            self._on_offline(log_dir)
        if len(self.offline) == len(self.log_dirs):
            log.critical("Shutdown broker because all log dirs in %s have failed", ", ".join(self.log_dirs))
            self._halt(1)
        else:
            log.error(
                "log dir %s is offline; its partitions fail their writes until the broker restarts "
                "(moving them to other brokers is not implemented)",
                log_dir,
            )
