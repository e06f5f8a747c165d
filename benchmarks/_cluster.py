"""What the cluster benchmarks share: process figures from /proc, the descriptor limit, topic
creation through Kafka's admin API, pipelined reads of the partition state znodes, and the
controller's own timers from a broker's /metrics.

Benchmarks run as scripts (`python benchmarks/x.py`), so this module is imported by its bare name
(`from _cluster import ...`): the script's own folder is first on sys.path. Clusters themselves are
started with `zkafka.testing.cluster.running_cluster`.
"""

from __future__ import annotations

import bisect
import json
import os
import resource
import threading
import time
import urllib.parse
import urllib.request
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from zkafka.zk.client import KafkaZkClient

CLK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """user + system CPU seconds of a process so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK


class CpuSampler:
    """A process's CPU seconds sampled every `interval` s from a thread while in the `with`, so
    that the CPU spent between two moments known only afterwards (ZooKeeper mtimes, a watch's
    delivery) can be read back: `between(t0, t1)` (`time.time()` seconds), interpolated."""

    def __init__(self, pid: int, interval: float = 0.02) -> None:
        self.pid = pid
        self.interval = interval
        self.samples: list[tuple[float, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"cpu-{pid}", daemon=True)

    def __enter__(self) -> CpuSampler:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while True:
            try:
                self.samples.append((time.time(), cpu_seconds(self.pid)))
            except OSError:
                return  # the process is gone
            if self._stop.wait(self.interval):
                return

    def at(self, when: float) -> float:
        times = [t for t, _ in self.samples]
        i = bisect.bisect_left(times, when)
        if i == 0:
            return self.samples[0][1]
        if i == len(times):
            return self.samples[-1][1]
        (t0, c0), (t1, c1) = self.samples[i - 1], self.samples[i]
        return c0 + (c1 - c0) * (when - t0) / max(t1 - t0, 1e-9)

    def between(self, start: float, end: float) -> float:
        return self.at(end) - self.at(start)


def watch_deletion(zk: KafkaZkClient, path: str) -> Future[float]:
    """A future of the `time.time()` at which `path` is seen deleted (a ZooKeeper watch set now,
    re-armed on any other change): e.g. a broker's registration when ZooKeeper expires its
    session, which happens on the server's tick rather than exactly a session timeout after
    the broker died."""
    deleted: Future[float] = Future()

    def on_event(event: Any) -> None:
        now = time.time()
        if deleted.done():
            return
        if event.type == "DELETED":
            deleted.set_result(now)
        else:
            arm()

    def arm() -> None:
        if zk.kazoo.exists(path, watch=on_event) is None and not deleted.done():
            deleted.set_result(time.time())  # already gone (no watch was left)

    arm()
    return deleted


def rss_bytes(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def rss_mib(pid: int) -> float:
    return rss_bytes(pid) / (1024 * 1024)


def open_fds(pid: int) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return -1


def raise_nofile_limit() -> tuple[int, int]:
    """Raise the soft open-files limit to the hard one (brokers started later inherit it: every
    replica keeps its segment open). Returns (before, now)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return soft, resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def state_path(topic: str, partition: int) -> str:
    return f"/brokers/topics/{topic}/partitions/{partition}/state"


def read_states(zk: KafkaZkClient, paths: list[str], chunk: int = 2000) -> dict[str, dict]:
    """path -> {"leader", "isr", "mtime" (s since the epoch, ZooKeeper's clock)} of the state
    znodes that exist (pipelined reads)."""
    out: dict[str, dict] = {}
    for i in range(0, len(paths), chunk):
        for path, found in zk.get_data_many(paths[i : i + chunk]).items():
            if found is not None:
                state = json.loads(found[0])
                out[path] = {
                    "leader": int(state["leader"]),
                    "isr": state["isr"],
                    "mtime": found[1].mtime / 1000,
                }
    return out


def create_topics(bootstrap: str, names: list[str], partitions: int, rf: int, batch: int) -> None:
    """Create `names` with confluent-kafka's AdminClient, `batch` topics per CreateTopics request."""
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap, "socket.timeout.ms": 300_000})
    for i in range(0, len(names), batch):
        futures = admin.create_topics(
            [NewTopic(n, partitions, rf) for n in names[i : i + batch]],
            operation_timeout=300,
            request_timeout=300,
        )
        for f in futures.values():
            f.result(600)


def controller_timer(metrics_url: str, state: str, settle_s: float = 120.0) -> tuple[int, float] | None:
    """(events processed, seconds in them) so far of one of the broker's controller states, from
    Kafka's ControllerStats timers (`kafka_controller_controllerstats_<state>rateandtimems`, e.g.
    "topicchange", "leaderelection" for a broker change, "controlledshutdown"), read once the
    controller is idle (nothing in process, nothing queued; at most `settle_s` later): an event goes
    on after the moment a benchmark times (a dead broker's event takes it out of the ISRs it was a
    follower in after its leaders are elected). The scrape names its metrics (`name[]=`), so the
    broker does not render its per-partition gauges for it. None if the broker cannot be read."""
    from prometheus_client.parser import text_string_to_metric_families

    timer = f"kafka_controller_controllerstats_{state}rateandtimems"
    idle = (
        "kafka_controller_kafkacontroller_controllerstate",
        "kafka_controller_controllereventmanager_eventqueuesize",
    )
    query = urllib.parse.urlencode([("name[]", n) for n in (timer, *idle)])
    deadline = time.monotonic() + settle_s
    while True:
        try:
            with urllib.request.urlopen(f"{metrics_url}?{query}", timeout=30) as response:
                text = response.read().decode()
        except OSError:
            return None
        events, seconds, busy = 0, 0.0, 0.0
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if family.name in idle:
                    busy += sample.value
                elif family.name == timer and sample.name.endswith("_count"):
                    events = int(sample.value)
                elif family.name == timer and sample.name.endswith("_sum"):
                    seconds = sample.value / 1000
        if not busy or time.monotonic() > deadline:
            return events, seconds
        time.sleep(0.2)


class ControllerWork:
    """A controller's events of one state over a benchmark's phase: read at the start, `note()`
    after it for the figure ("controller: topicchange 10 event(s) 12.37 s")."""

    def __init__(self, metrics_url: str, state: str) -> None:
        self.metrics_url, self.state = metrics_url, state
        self.before = controller_timer(metrics_url, state) or (0, 0.0)

    def wait_done(self, timeout: float) -> bool:
        """Block until the controller has finished an event of this state since the start (and is
        idle), at most `timeout` seconds: a cheap named scrape every 0.2 s, where polling
        ZooKeeper's 33,000 states would take the CPU of the very work being timed. False if none
        ended in time or the broker cannot be read."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            now = controller_timer(
                self.metrics_url, self.state, settle_s=max(0.0, deadline - time.monotonic())
            )
            if now is None:
                return False
            if now[0] > self.before[0]:
                return True
            time.sleep(0.2)
        return False

    def note(self) -> str:
        after = controller_timer(self.metrics_url, self.state)
        if after is None or after[0] <= self.before[0]:
            return "controller: no events timed"
        (n0, seconds0), (n, seconds) = self.before, after
        return f"controller: {self.state} {n - n0} event(s) {seconds - seconds0:.2f} s"
