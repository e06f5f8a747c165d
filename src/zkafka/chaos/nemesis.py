"""Faults applied to a local cluster (`zkafka cluster up`'s processes, found through its
`cluster.json`), each injected and then healed before the next one:

* `kill`: SIGKILL a random broker, restart it after `down_s`;
* `pause`: SIGSTOP a random broker for longer than its ZooKeeper session timeout (a long GC pause:
  its session expires and the controller moves its leaderships), then SIGCONT;
* `controller`: SIGKILL the active controller, restart it after `down_s`;
* `zk-kill`: SIGKILL a random ZooKeeper ensemble member (`cluster up --zookeepers 3|5` only),
  restart it after `down_s`;
* `partition`: isolate the broker leading most of the topic's partitions by cutting its network
  link (`cluster up --netns` only: each broker in its own namespace, `zkafka.local.netns`) for
  longer than its ZooKeeper session timeout -- ZooKeeper, the other brokers and the clients all
  lose it, its session expires and the controller moves its leaderships -- then heal the link;
* `disk-full`: fill the log dir of the broker leading most of the topic's partitions (`cluster up
  --log-dir-size` only: each log dir a small tmpfs, `zkafka.local.mounts`) for as long as a pause,
  then free it, and restart the broker if it stopped (as Kafka's does when its last log dir fails);
* `unclean`: the ISR of one partition dies and an out-of-sync replica comes back first: SIGKILL
  the followers of the busiest leader's partition, let the leader alone take writes for `down_s`,
  SIGKILL the leader too, restart the followers, then the old leader. With
  `unclean.leader.election.enable=false` the partition stays offline until the old leader is back
  (nothing is lost); with `true` a follower leads without the records only the old leader had,
  and what acks=1 producers had written then is lost (acks=all with min.insync.replicas=2 never
  had such records acknowledged).
* `power-loss`: the last replica standing loses its unflushed tail (issue 19 item 4): SIGKILL the
  followers of the busiest leader's partition, wait until its ISR is the leader alone, let it take
  writes for `down_s`, SIGKILL it and cut its replica back to its last checkpointed recovery point
  (`storage.power_loss`: what a power loss leaves on the disk), start it again, then the followers. With
  `unclean.leader.election.enable=false` it leads again with the shorter log and the followers
  truncate to it: what it had acknowledged alone (min.insync.replicas=1) and had not flushed is
  lost; with min.insync.replicas=2 it acknowledged nothing alone.

The cluster is a `LocalCluster` (`--dir`) or a `targets.ProcessCluster` (a cluster found through
ZooKeeper whose broker processes run on this machine); both offer the calls of `ChaosCluster`.

Blocking (process signals and waits): the runner calls `apply` on a worker thread.
"""

from __future__ import annotations

import random
import signal
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from zkafka.chaos.targets import ProcessCluster
from zkafka.local import mounts, netns
from zkafka.local.launcher import LocalCluster
from zkafka.storage.power_loss import Cut, lose_unflushed

FAULTS = ("kill", "pause", "controller", "zk-kill", "partition", "disk-full", "unclean", "power-loss")
NOT_YET: tuple[str, ...] = ()
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


class ChaosCluster(Protocol):
    """What the nemesis does to a cluster's processes (`LocalCluster`, `targets.ProcessCluster`)."""

    @property
    def brokers(self) -> dict[int, Any]: ...
    @property
    def zookeepers(self) -> dict[int, Any]: ...
    @property
    def zookeeper_connect(self) -> str: ...
    @property
    def bootstrap_servers(self) -> str: ...
    @property
    def network(self) -> Any: ...
    @property
    def log_dir_size(self) -> Any: ...
    def broker_alive(self, broker_id: int) -> bool: ...
    def signal_broker(self, broker_id: int, sig: int) -> None: ...
    def kill_broker(self, broker_id: int) -> None: ...
    def start_broker(self, broker_id: int) -> Any: ...
    def save(self) -> None: ...
    def controller_id(self) -> int | None: ...
    def wait_ready(self, timeout: float = 60.0) -> None: ...
    def zookeeper_member_alive(self, server_id: int) -> bool: ...
    def kill_zookeeper_member(self, server_id: int) -> None: ...
    def start_zookeeper_member(self, server_id: int) -> None: ...
    def wait_zookeeper_quorum(self, timeout: float = 60.0) -> Any: ...


def check_faults(faults: list[str], cluster: ChaosCluster) -> None:
    """Refuse, up front and all at once (one line per fault), the faults `cluster` cannot take."""
    unknown = [f for f in faults if f not in FAULTS]
    if unknown:
        raise NemesisError(f"unknown fault(s) {', '.join(unknown)} (available: {', '.join(FAULTS)}, or none)")
    if isinstance(cluster, ProcessCluster):
        refused = cluster.refusals(faults)
        if refused:
            raise NemesisError("cannot apply to this cluster:\n" + "\n".join(refused))
        return
    assert isinstance(cluster, LocalCluster)
    for fault in faults:
        if fault in NOT_YET:
            raise NemesisError(f"fault {fault!r} is not implemented yet (available: {', '.join(FAULTS)})")
        if fault not in FAULTS:
            raise NemesisError(f"unknown fault {fault!r} (available: {', '.join(FAULTS)})")
        if fault == "zk-kill" and len(cluster.zookeepers) < 3:
            raise NemesisError("zk-kill needs a ZooKeeper ensemble (`zkafka cluster up --zookeepers 3`)")
        if fault == "partition" and cluster.network is None:
            why = netns.available()
            raise NemesisError(
                "partition needs brokers in network namespaces (`zkafka cluster up --netns`"
                + (f"; not here: {why})" if why else ")")
            )
        if fault == "disk-full" and not cluster.log_dir_size:
            why = mounts.available()
            raise NemesisError(
                "disk-full needs small log dir filesystems (`zkafka cluster up --log-dir-size 64m`"
                + (f"; not here: {why})" if why else ")")
            )
    if len(cluster.brokers) < 2 and any(f != "zk-kill" for f in faults):
        raise NemesisError("broker faults need at least 2 brokers")


class LocalNemesis:
    def __init__(
        self,
        cluster: ChaosCluster,
        *,
        topic: str = "",
        seed: int | None = None,
        down_s: float = 3.0,
        session_timeout_s: float = 6.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.cluster = cluster
        self.topic = topic
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
        elif fault == "partition":
            network = self.cluster.network
            if network is None:
                raise NemesisError("partition needs brokers in network namespaces")
            target = self._busiest_leader()
            network.cut(target)
            try:
                time.sleep(self.pause_s)
            finally:
                network.heal(target)
            self.cluster.wait_ready(120)
        elif fault == "disk-full":
            target = self._busiest_leader()
            logs = Path(self.cluster.brokers[target].directory) / "logs"
            mounts.fill(logs)
            try:
                time.sleep(self.pause_s)
            finally:
                mounts.unfill(logs)
            if not self.cluster.broker_alive(target):
                self.cluster.start_broker(target)
                self.cluster.save()
            self.cluster.wait_ready(120)
        elif fault == "unclean":
            target = self._unclean()
        elif fault == "power-loss":
            what = self._power_loss()
            return FaultEvent(begin, self.clock() - self.started, fault, what)
        else:
            raise NemesisError(f"unknown fault {fault!r}")
        name = f"zookeeper {target}" if fault == "zk-kill" else f"broker {target}"
        return FaultEvent(begin, self.clock() - self.started, fault, name)

    def _random_broker(self) -> int:
        return self.rng.choice(sorted(b for b in self.cluster.brokers if self.cluster.broker_alive(b)))

    def _unclean(self) -> int:
        """The `unclean` fault; returns the old leader."""
        states = self.partition_states()
        leader = self._busiest_leader()
        partition = next((p for p, (lead, _isr) in sorted(states.items()) if lead == leader), None)
        if partition is None:
            raise NemesisError(f"no partition of {self.topic!r} has a live leader")
        followers = [b for b in self.cluster.brokers if b != leader]
        for broker_id in followers:
            self.cluster.kill_broker(broker_id)
        # the controller takes dead brokers out of the ISR once their sessions end
        deadline = time.monotonic() + 60
        while self.partition_states().get(partition, (leader, []))[1] != [leader]:
            if time.monotonic() > deadline:
                break
            time.sleep(0.2)
        time.sleep(self.down_s)  # the old leader alone takes (acks=1) writes
        self.cluster.kill_broker(leader)
        for broker_id in followers:
            self.cluster.start_broker(broker_id)
        self.cluster.save()
        # the old leader's session must end first: the controller then elects a follower (unclean
        # election) or leaves the partition offline; back sooner, it would just lead again
        self._wait_leader_not(partition, leader, self.pause_s + 30)
        self.cluster.start_broker(leader)
        self.cluster.save()
        self.cluster.wait_ready(120)
        return leader

    def _power_loss(self) -> str:
        """The `power-loss` fault; returns what was done (the broker, the partition, what was cut)."""
        if not isinstance(self.cluster, LocalCluster):
            raise NemesisError("power-loss needs a local cluster (--dir)")
        leader = self._busiest_leader()
        partition = next(
            (p for p, (lead, _isr) in sorted(self.partition_states().items()) if lead == leader), None
        )
        if partition is None:
            raise NemesisError(f"no partition of {self.topic!r} has a live leader")
        followers = [b for b in self.cluster.brokers if b != leader and self.cluster.broker_alive(b)]
        for broker_id in followers:
            self.cluster.kill_broker(broker_id)
        # the last replica standing: the ISR shrinks to the leader once the followers' sessions
        # end (or they fall behind replica.lag.time.max.ms)
        deadline = time.monotonic() + 60
        while self.partition_states().get(partition, (leader, []))[1] != [leader]:
            if time.monotonic() > deadline:
                raise NemesisError(f"the ISR of partition {partition} did not shrink to broker {leader}")
            time.sleep(0.2)
        time.sleep(self.down_s)  # it alone takes writes (acknowledged only with min.insync.replicas=1)
        self.cluster.kill_broker(leader)
        logs = Path(self.cluster.brokers[leader].directory) / "logs"
        try:
            cut = lose_unflushed([logs], self.topic, partition)
        except FileNotFoundError:  # never written: a replica has no directory before its first write
            cut = Cut(0, 0)
        self.cluster.start_broker(leader)
        self.cluster.save()
        # back before the followers: with unclean election off it is the only broker that may lead
        self._wait_leader_is(partition, leader, self.pause_s + 60)
        for broker_id in followers:
            self.cluster.start_broker(broker_id)
        self.cluster.save()
        self.cluster.wait_ready(120)
        return (
            f"broker {leader}, partition {partition}: cut {cut.records} unflushed record(s), "
            f"offsets {cut.recovery_point}..{cut.log_end - 1}"
            if cut.records
            else f"broker {leader}, partition {partition}: nothing unflushed "
            f"(recovery point {cut.recovery_point})"
        )

    def _wait_leader_is(self, partition: int, broker_id: int, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if self.partition_states().get(partition, (-1, []))[0] == broker_id:
                    return
            except Exception:  # ZooKeeper busy with the restarts: ask again
                pass
            time.sleep(0.2)

    def _wait_leader_not(self, partition: int, broker_id: int, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if self.partition_states().get(partition, (broker_id, []))[0] != broker_id:
                    return
            except Exception:  # ZooKeeper busy with the restarts: ask again
                pass
            time.sleep(0.2)

    def _busiest_leader(self) -> int:
        """The live broker leading most partitions of the topic (a random live one if none)."""
        leads: Counter[int] = Counter()
        for leader, _isr in self.partition_states().values():
            if leader in self.cluster.brokers and self.cluster.broker_alive(leader):
                leads[leader] += 1
        return leads.most_common(1)[0][0] if leads else self._random_broker()

    def partition_states(self) -> dict[int, tuple[int, list[int]]]:
        """The topic's partitions: {partition: (leader, isr)} as ZooKeeper has them now."""
        if not self.topic:
            return {}
        from zkafka.zk.client import KafkaZkClient
        from zkafka.zk.model import TopicPartition

        zk = KafkaZkClient(self.cluster.zookeeper_connect, connection_timeout_ms=10_000, create_chroot=False)
        try:
            tps = [TopicPartition(self.topic, p) for p in zk.get_partitions_for_topic(self.topic)]
            return {
                tp.partition: (s.leader_and_isr.leader, list(s.leader_and_isr.isr))
                for tp, s in zk.get_partition_states(tps).items()
            }
        finally:
            zk.close()

    def _kill_and_restart(self, broker_id: int) -> None:
        self.cluster.kill_broker(broker_id)
        time.sleep(self.down_s)
        self.cluster.start_broker(broker_id)
        self.cluster.save()  # the new pid, for `cluster status` and `cluster down`
        self.cluster.wait_ready(120)

    def heal(self) -> None:
        """Resume any paused broker, reconnect any cut one and start any that is not running (after
        an interrupted run)."""
        network = self.cluster.network
        if network is not None:
            for broker_id in network.brokers:
                if network.is_cut(broker_id):
                    network.heal(broker_id)
        if self.cluster.log_dir_size:
            for broker in self.cluster.brokers.values():
                mounts.unfill(Path(broker.directory) / "logs")
        for broker_id in self.cluster.brokers:
            if self.cluster.broker_alive(broker_id):
                self.cluster.signal_broker(broker_id, signal.SIGCONT)
            else:
                self.cluster.start_broker(broker_id)
        for server_id in self.cluster.zookeepers:
            if not self.cluster.zookeeper_member_alive(server_id):
                self.cluster.start_zookeeper_member(server_id)
        self.cluster.save()
