# ruff: noqa: E501  (the CASES table keeps one case per line)
"""`zkafka.doctor` against a real ZooKeeper holding a cluster's tree written as Kafka writes it
(hand-written JSON, not our encoders), damaged one way per case. Each case checks the finding, its
severity and subject, and -- where the finding offers one -- that the repair clears it."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest
from kazoo.client import KazooClient

from zkafka.doctor import DoctorSettings, Finding, Severity, diagnose, exit_status
from zkafka.doctor.repair import apply_repairs
from zkafka.zk.client import KafkaZkClient

CRITICAL, WARNING = Severity.CRITICAL, Severity.WARNING


def _j(obj: object) -> bytes:
    return json.dumps(obj).encode()


def _broker(bid: int, extra_listener: bool = False) -> bytes:
    endpoints = [f"PLAINTEXT://127.0.0.1:{9090 + bid}"]
    protocols = {"PLAINTEXT": "PLAINTEXT"}
    if extra_listener:
        endpoints.append(f"INTERNAL://127.0.0.1:{9190 + bid}")
        protocols["INTERNAL"] = "PLAINTEXT"
    return _j(
        {
            "listener_security_protocol_map": protocols,
            "endpoints": endpoints,
            "jmx_port": -1,
            "features": {},
            "host": "127.0.0.1",
            "timestamp": "1700000000000",
            "port": 9090 + bid,
            "version": 5,
        }
    )


def _state(leader: int, isr: list[int], controller_epoch: int = 1) -> bytes:
    return _j(
        {"controller_epoch": controller_epoch, "leader": leader, "version": 1, "leader_epoch": 0, "isr": isr}
    )


ASSIGNMENT = {"0": [1, 2, 3], "1": [2, 3, 1], "2": [3, 1, 2]}


class Tree:
    """A healthy 3-broker cluster's tree in a fresh chroot; registrations are ephemeral of `zk`'s
    session, as a live broker's are of its own."""

    def __init__(self, zk: KazooClient) -> None:
        self.zk = zk
        for bid in (1, 2, 3):
            zk.create(f"/brokers/ids/{bid}", _broker(bid), ephemeral=True, makepath=True)
        zk.create(
            "/controller", _j({"version": 1, "brokerid": 1, "timestamp": "1700000000000"}), ephemeral=True
        )
        zk.create("/controller_epoch", b"1")
        self.topic("t", ASSIGNMENT)
        for path in ("/admin/delete_topics", "/config/topics", "/config/brokers", "/consumers"):
            zk.ensure_path(path)

    def topic(
        self, name: str, assignment: dict[str, list[int]], states: dict[str, bytes] | None = None
    ) -> None:
        self.zk.create(
            f"/brokers/topics/{name}",
            _j({"version": 3, "partitions": assignment, "adding_replicas": {}, "removing_replicas": {}}),
            makepath=True,
        )
        for p, replicas in assignment.items():
            data = (states or {}).get(p, _state(replicas[0], replicas))
            self.zk.create(f"/brokers/topics/{name}/partitions/{p}/state", data, makepath=True)

    def set_state(self, partition: int, data: bytes, topic: str = "t") -> None:
        self.zk.set(f"/brokers/topics/{topic}/partitions/{partition}/state", data)


@pytest.fixture
def tree(zk_connect: str) -> Iterator[tuple[Tree, str]]:
    zk = KazooClient(hosts=zk_connect, timeout=10)
    zk.start(15)
    try:
        yield Tree(zk), zk_connect
    finally:
        zk.stop()
        zk.close()


def _diagnose(connect: str, settings: DoctorSettings | None = None) -> list[Finding]:
    with KafkaZkClient(connect, connection_timeout_ms=10_000) as zk:
        return diagnose(zk, settings)[1]


def test_a_healthy_tree_has_no_findings(tree: tuple[Tree, str]) -> None:
    _, connect = tree
    findings = _diagnose(connect)
    assert findings == []
    assert exit_status(findings) == 0


@dataclass(frozen=True)
class Case:
    damage: Callable[[Tree], None]
    check: str
    severity: Severity
    subject: str
    repairable: bool = False


def _persistent_broker(t: Tree) -> None:
    t.zk.create("/brokers/ids/4", _broker(4))


def _dead_controller(t: Tree) -> None:
    t.zk.delete("/controller")
    t.zk.create("/controller", _j({"version": 1, "brokerid": 7, "timestamp": "1"}), ephemeral=True)


def _stale_reassignment(t: Tree) -> None:
    t.zk.create(
        "/admin/reassign_partitions",
        _j(
            {
                "version": 1,
                "partitions": [
                    {"topic": "gone", "partition": 0, "replicas": [1]},
                    {"topic": "t", "partition": 0, "replicas": [1, 2, 3]},
                ],
            }
        ),
    )


def _owner(t: Tree) -> None:
    t.zk.create(
        "/consumers/g/ids/alive-1",
        _j({"version": 1, "subscription": {"t": 1}, "pattern": "static", "timestamp": "1"}),
        makepath=True,
        ephemeral=True,
    )
    t.zk.create("/consumers/g/owners/t/0", b"ghost-1-0", makepath=True)


def _min_isr(t: Tree) -> None:
    t.zk.create("/config/topics/t", _j({"version": 1, "config": {"min.insync.replicas": "2"}}))
    t.set_state(0, _state(1, [1]))


def _imbalance(t: Tree) -> None:
    t.set_state(0, _state(2, [1, 2, 3]))  # broker 1 is preferred for t-0 only


CASES = {
    "bad-state-json": Case(lambda t: t.set_state(1, b"{not json"), "znode-schema", CRITICAL, "/brokers/topics/t/partitions/1/state"),
    "bad-state-offline": Case(lambda t: t.set_state(1, b"{not json"), "partition-offline", CRITICAL, "t-1"),
    "persistent-broker": Case(_persistent_broker, "znode-not-ephemeral", CRITICAL, "/brokers/ids/4", True),
    "no-leader": Case(lambda t: t.set_state(0, _state(-1, [1])), "partition-offline", CRITICAL, "t-0"),
    "leader-dead": Case(lambda t: t.set_state(0, _state(9, [9])), "partition-offline", CRITICAL, "t-0"),
    "leader-not-in-isr": Case(lambda t: t.set_state(0, _state(1, [2, 3])), "leader-not-in-isr", CRITICAL, "t-0"),
    "under-replicated": Case(lambda t: t.set_state(0, _state(1, [1, 2])), "partition-under-replicated", WARNING, "t-0"),
    "under-min-isr": Case(_min_isr, "partition-under-min-isr", CRITICAL, "t-0"),
    "isr-outside": Case(lambda t: t.set_state(0, _state(1, [1, 2, 3, 5])), "isr-not-in-replicas", WARNING, "t-0"),
    "unknown-replica": Case(lambda t: t.topic("u", {"0": [1, 9]}, {"0": _state(1, [1])}), "replica-on-unknown-broker", WARNING, "broker 9"),
    "no-state": Case(lambda t: t.zk.create("/brokers/topics/n", _j({"version": 3, "partitions": {"0": [1]}})), "partition-no-state", CRITICAL, "n-0"),
    "imbalance": Case(_imbalance, "preferred-leader-imbalance", WARNING, "broker 1"),
    "controller-not-live": Case(_dead_controller, "controller-not-live", CRITICAL, "/controller", True),
    "no-controller": Case(lambda t: t.zk.delete("/controller"), "no-controller", CRITICAL, "/controller"),
    "epoch-behind": Case(lambda t: t.set_state(2, _state(3, [3, 1, 2], controller_epoch=5)), "controller-epoch-behind", CRITICAL, "/controller_epoch"),
    "bad-epoch": Case(lambda t: t.zk.set("/controller_epoch", b"one"), "znode-schema", CRITICAL, "/controller_epoch"),
    "stale-deletion": Case(lambda t: t.zk.create("/admin/delete_topics/gone"), "stale-topic-deletion", WARNING, "/admin/delete_topics/gone", True),
    "stale-reassignment": Case(_stale_reassignment, "stale-reassignment", WARNING, "/admin/reassign_partitions", True),
    "reassign-to-unknown": Case(lambda t: t.zk.create("/admin/reassign_partitions", _j({"version": 1, "partitions": [{"topic": "t", "partition": 0, "replicas": [1, 2, 8]}]})), "reassignment-to-unknown-broker", WARNING, "/admin/reassign_partitions"),
    "bad-preferred": Case(lambda t: t.zk.create("/admin/preferred_replica_election", b"[1,"), "admin-request-unreadable", WARNING, "/admin/preferred_replica_election", True),
    "stale-preferred": Case(lambda t: t.zk.create("/admin/preferred_replica_election", _j({"version": 1, "partitions": [{"topic": "gone", "partition": 0}]})), "stale-preferred-election", WARNING, "/admin/preferred_replica_election", True),
    "stale-owner": Case(_owner, "stale-partition-owner", WARNING, "/consumers/g/owners/t/0", True),
    "offset-unknown": Case(lambda t: t.zk.create("/consumers/g/offsets/nope/0", b"5", makepath=True), "offset-for-unknown-partition", WARNING, "/consumers/g/offsets/nope/0"),
    "offset-garbage": Case(lambda t: t.zk.create("/consumers/g/offsets/t/0", b"five", makepath=True), "znode-schema", WARNING, "/consumers/g/offsets/t/0"),
    "config-gone-topic": Case(lambda t: t.zk.create("/config/topics/gone", _j({"version": 1, "config": {}})), "config-for-unknown-topic", WARNING, "/config/topics/gone", True),
    "config-invalid": Case(lambda t: t.zk.create("/config/topics/t", _j({"version": 1, "config": {"retention.ms": "soon", "no.such.key": "1"}})), "topic-config-invalid", WARNING, "/config/topics/t"),
    "listeners-disagree": Case(lambda t: t.zk.set("/brokers/ids/3", _broker(3, extra_listener=True)), "broker-listeners-disagree", WARNING, "/brokers/ids/3"),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_damage_is_found_with_its_severity_and_fix(tree: tuple[Tree, str], name: str) -> None:
    t, connect = tree
    case = CASES[name]
    case.damage(t)
    findings = _diagnose(connect)
    found = [f for f in findings if f.check == case.check and f.subject == case.subject]
    assert found, f"no {case.check} on {case.subject} among {[(f.check, f.subject) for f in findings]}"
    finding = found[0]
    assert finding.severity is case.severity
    assert finding.fix and finding.message
    assert exit_status(findings) == max(int(f.severity) for f in findings) >= int(case.severity)
    assert (finding.repair is not None) == case.repairable
    if case.repairable:
        with KafkaZkClient(connect, connection_timeout_ms=10_000) as zk:
            outcomes = dict((f.subject + f.check, o) for f, o in apply_repairs(zk, [finding]))
        assert outcomes == {finding.subject + finding.check: "done"}
        after = _diagnose(connect)
        assert not [f for f in after if f.check == case.check and f.subject == case.subject]


def test_a_cluster_above_the_partition_guidance_is_told_how_much_heap_zookeeper_needs(
    tree: tuple[Tree, str],
) -> None:
    _, connect = tree
    assert not [f for f in _diagnose(connect) if f.check == "cluster-size"]  # 3 partitions: fine
    found = [
        f
        for f in _diagnose(connect, DoctorSettings(cluster_partitions_warning=2))
        if f.check == "cluster-size"
    ]
    assert len(found) == 1
    finding = found[0]
    assert finding.severity is WARNING and finding.subject == "cluster" and finding.repair is None
    assert finding.message.startswith("3 partitions (")
    assert 'KAFKA_HEAP_OPTS="-Xmx1g -Xms1g"' in finding.fix


def test_a_stale_reassignment_repair_keeps_the_live_entries(tree: tuple[Tree, str]) -> None:
    t, connect = tree
    _stale_reassignment(t)
    finding = next(f for f in _diagnose(connect) if f.check == "stale-reassignment")
    with KafkaZkClient(connect, connection_timeout_ms=10_000) as zk:
        list(apply_repairs(zk, [finding]))
    kept = json.loads(t.zk.get("/admin/reassign_partitions")[0])
    assert [(e["topic"], e["partition"]) for e in kept["partitions"]] == [("t", 0)]


def test_a_repair_never_overwrites_a_change_made_since_the_read(tree: tuple[Tree, str]) -> None:
    t, connect = tree
    t.zk.create("/admin/delete_topics/gone")
    finding = next(f for f in _diagnose(connect) if f.check == "stale-topic-deletion")
    t.zk.set("/admin/delete_topics/gone", b"")  # someone touched it meanwhile: version 1
    with KafkaZkClient(connect, connection_timeout_ms=10_000) as zk:
        [(_, outcome)] = list(apply_repairs(zk, [finding]))
    assert outcome.startswith("skipped")
    assert t.zk.exists("/admin/delete_topics/gone") is not None


def test_old_requests_are_stuck_by_the_clock_given(tree: tuple[Tree, str]) -> None:
    t, connect = tree
    t.zk.create(
        "/admin/reassign_partitions",
        _j({"version": 1, "partitions": [{"topic": "t", "partition": 0, "replicas": [1, 2, 3]}]}),
    )
    ctime = t.zk.exists("/admin/reassign_partitions").ctime
    fresh = _diagnose(connect, DoctorSettings(now_ms=ctime + 60_000))
    assert not [f for f in fresh if f.check == "reassignment-stuck"]
    late = _diagnose(connect, DoctorSettings(now_ms=ctime + 3_600_000, stale_request_minutes=30))
    assert [f.subject for f in late if f.check == "reassignment-stuck"] == ["/admin/reassign_partitions"]


def test_garbage_everywhere_is_findings_not_a_crash(tree: tuple[Tree, str]) -> None:
    """Every znode the doctor reads holds bytes that decode as nothing: every one is reported and
    the run completes."""
    t, connect = tree
    hostile = [b"", b"\xff\xfe", b"null", b"[]", b'{"version": 99}', b"9" * 5000]
    paths = [
        "/brokers/ids/1",
        "/brokers/topics/t",
        "/brokers/topics/t/partitions/0/state",
        "/controller_epoch",
    ]
    for i, path in enumerate(paths):
        t.zk.set(path, hostile[i % len(hostile)])
    findings = _diagnose(connect)
    schema = {f.subject for f in findings if f.check == "znode-schema"}
    assert set(paths) <= schema
    assert exit_status(findings) == 2
