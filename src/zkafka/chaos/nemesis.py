"""Faults applied to a local cluster (`zkafka cluster up`'s processes, found through its
`cluster.json`), each injected and then healed before the next one:

* `kill`: SIGKILL a random broker, restart it after `down_s`;
* `pause`: SIGSTOP a random broker for longer than its ZooKeeper session timeout (a long GC pause:
  its session expires and the controller moves its leaderships), then SIGCONT;
* `controller`: SIGKILL the active controller, restart it after `down_s`;
* `zk-kill`: SIGKILL a random ZooKeeper ensemble member (`cluster up --zookeepers 3|5` only),
  restart it after `down_s`.

Blocking (process signals and waits): the runner calls `apply` on a worker thread.
"""

from __future__ import annotations

import random
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass

from zkafka.local.launcher import LocalCluster

FAULTS = ("kill", "pause", "controller", "zk-kill")
NOT_YET = ("partition", "disk-full")
"""Faults of issue 19 not implemented yet: asked for, they are refused with this explanation."""


class NemesisError(ValueError):
    """A fault that cannot be applied to this cluster (named in the message)."""


@dataclass(frozen=True)
class FaultEvent:
    started: float
    """Seconds since the run started."""
    ended: float
    fault: str
    target: str


def check_faults(faults: list[str], cluster: LocalCluster) -> None:
    for fault in faults:
        if fault in NOT_YET:
            raise NemesisError(f"fault {fault!r} is not implemented yet (available: {', '.join(FAULTS)})")
        if fault not in FAULTS:
            raise NemesisError(f"unknown fault {fault!r} (available: {', '.join(FAULTS)})")
        if fault == "zk-kill" and len(cluster.zookeepers) < 3:
            raise NemesisError("zk-kill needs a ZooKeeper ensemble (`zkafka cluster up --zookeepers 3`)")
    if len(cluster.brokers) < 2 and any(f != "zk-kill" for f in faults):
        raise NemesisError("broker faults need at least 2 brokers")


class LocalNemesis:
    def __init__(
        self,
        cluster: LocalCluster,
        *,
        seed: int | None = None,
        down_s: float = 3.0,
        session_timeout_s: float = 6.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.cluster = cluster
        self.rng = random.Random(seed)
        self.down_s = down_s
        self.pause_s = session_timeout_s + 2.0
        self.clock = clock
        self.started = clock()

    def apply(self, fault: str) -> FaultEvent:
        begin = self.clock() - self.started
        if fault == "kill":
            target = self._random_broker()
            self._kill_and_restart(target)
        elif fault == "controller":
            controller = self.cluster.controller_id()
            target = controller if controller in self.cluster.brokers else self._random_broker()
            self._kill_and_restart(target)
        elif fault == "pause":
            target = self._random_broker()
            self.cluster.signal_broker(target, signal.SIGSTOP)
            try:
                time.sleep(self.pause_s)
            finally:
                self.cluster.signal_broker(target, signal.SIGCONT)
            self.cluster.wait_ready(120)
        elif fault == "zk-kill":
            target = self.rng.choice(sorted(self.cluster.zookeepers))
            self.cluster.kill_zookeeper_member(target)
            time.sleep(self.down_s)
            self.cluster.start_zookeeper_member(target)
            self.cluster.save()
            self.cluster.wait_zookeeper_quorum(120)
        else:
            raise NemesisError(f"unknown fault {fault!r}")
        name = f"zookeeper {target}" if fault == "zk-kill" else f"broker {target}"
        return FaultEvent(begin, self.clock() - self.started, fault, name)

    def _random_broker(self) -> int:
        return self.rng.choice(sorted(b for b in self.cluster.brokers if self.cluster.broker_alive(b)))

    def _kill_and_restart(self, broker_id: int) -> None:
        self.cluster.kill_broker(broker_id)
        time.sleep(self.down_s)
        self.cluster.start_broker(broker_id)
        self.cluster.save()  # the new pid, for `cluster status` and `cluster down`
        self.cluster.wait_ready(120)

    def heal(self) -> None:
        """Resume any paused broker and start any that is not running (after an interrupted run)."""
        for broker_id in self.cluster.brokers:
            if self.cluster.broker_alive(broker_id):
                self.cluster.signal_broker(broker_id, signal.SIGCONT)
            else:
                self.cluster.start_broker(broker_id)
        for server_id in self.cluster.zookeepers:
            if not self.cluster.zookeeper_member_alive(server_id):
                self.cluster.start_zookeeper_member(server_id)
        self.cluster.save()
