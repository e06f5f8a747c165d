"""A 3-member ZooKeeper ensemble under acks=all load (issue 19, item 1).

`LocalCluster.up(zookeepers=3)` starts a real ensemble (Debian's QuorumPeerMain, one
`zookeeper-start zoo.cfg` per member) and three brokers whose zookeeper.connect names every member
and a chroot. While an idempotent acks=all producer writes numbered keys, the ZooKeeper LEADER is
SIGKILLed (and restarted), then a follower (a minority) is. Nothing acknowledged may be lost, the
brokers' registrations and a controller must be there once the quorum is whole again, and
`cluster status` shows each member's role. The stall (longest gap between acknowledgements) is
measured and printed, never asserted.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from cluster_helpers import (
    BackgroundProducer,
    Cluster,
    check_exactly_once,
    create_topic,
    read_partitions,
    running_on_ensemble,
    topic_name,
    wait_for,
    zkafka_cli,
)


def _fault(cluster: Cluster, producer: BackgroundProducer, server_id: int, what: str) -> float:
    """SIGKILL member `server_id`, wait for a quorum of the others and for more acknowledgements,
    restart it and wait for the whole ensemble; returns the longest acknowledgement gap meanwhile."""
    local = cluster.local
    before = len(producer.acked)
    killed_at = time.monotonic()
    local.kill_zookeeper_member(server_id)
    others = set(local.zookeepers) - {server_id}
    new_leader = local.wait_zookeeper_quorum(60, members=others)
    producer.wait_acked(before + 500, timeout=90)
    local.start_zookeeper_member(server_id)
    local.wait_zookeeper_quorum(60)
    producer.wait_acked(len(producer.acked) + 300, timeout=90)
    stall = producer.longest_gap(since=killed_at - 1)
    print(f"\n{what} (member {server_id}) SIGKILLed: member {new_leader} leads; stall {stall * 1000:.0f} ms")
    return stall


@pytest.mark.slow
@pytest.mark.timeout(420)
def test_ensemble_survives_leader_and_follower_kill_under_acks_all(tmp_path: Path) -> None:
    overrides = {"min.insync.replicas": "2", "zookeeper.session.timeout.ms": "6000"}
    with running_on_ensemble(tmp_path / "cluster", zookeepers=3, brokers=3, overrides=overrides) as cluster:
        local = cluster.local
        assert local.zookeeper_connect.count(",") == 2 and local.zookeeper_connect.endswith("/kafka")
        roles = local.zookeeper_roles()
        assert sorted(roles.values()) == ["follower", "follower", "leader"], roles

        status = zkafka_cli("cluster", "status", "--dir", str(local.directory), "--json")
        assert status.returncode == 0, status.stderr
        members = json.loads(status.stdout)["zookeeper"]["members"]
        assert sorted(m["role"] for m in members) == ["follower", "follower", "leader"]
        assert all(m["alive"] for m in members)

        topic = topic_name("ensemble")
        assignment = {0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2]}
        create_topic(cluster, topic, assignment)
        epochs_before = {b: cluster.broker_epoch(b) for b in cluster.broker_ids}

        with BackgroundProducer(cluster.bootstrap, topic, rate=500) as producer:
            producer.wait_acked(300, timeout=60)
            leader = local.zookeeper_leader()
            assert leader is not None
            leader_stall = _fault(cluster, producer, leader, "ZooKeeper leader")
            follower = next(i for i, mode in local.zookeeper_roles().items() if mode == "follower")
            follower_stall = _fault(cluster, producer, follower, "ZooKeeper follower")

        assert not producer.errors, producer.errors[:5]
        wait_for(lambda: cluster.registered() == set(cluster.broker_ids), 60, "every broker registered")
        wait_for(cluster.controller, 60, "a controller")
        # the brokers kept their sessions: a leader change is not a session expiry
        assert {b: cluster.broker_epoch(b) for b in cluster.broker_ids} == epochs_before

        read = read_partitions(cluster.bootstrap, topic, list(assignment))
        check_exactly_once(producer.acked, read)
        stored = {v for records in read.values() for _, v in records}
        assert stored == {a.value for a in producer.acked}, "the log holds exactly the acknowledged records"
        print(
            f"\n{len(producer.acked)} records acknowledged, all read back; stall on leader kill "
            f"{leader_stall * 1000:.0f} ms, on follower kill {follower_stall * 1000:.0f} ms, "
            f"whole run {producer.longest_gap() * 1000:.0f} ms"
        )
        for b in cluster.broker_ids:
            assert "Traceback" not in cluster.server_log(b), f"broker {b} logged a traceback"

    # every member and broker is gone (the fixture stopped them)
    assert not local.running()


@pytest.mark.timeout(240)
def test_cluster_down_stops_every_ensemble_member_and_up_starts_it_again(tmp_path: Path) -> None:
    directory = tmp_path / "cli"
    up_args = ("cluster", "up", "--brokers", "1", "--zookeepers", "3", "--dir", str(directory))
    try:
        up = zkafka_cli(*up_args, timeout=100)
        assert up.returncode == 0, up.stderr
        state = json.loads((directory / "cluster.json").read_text())
        java = [int((Path(z["directory"]) / "zookeeper.pid").read_text()) for z in state["zookeepers"]]
        wrappers = [z["pid"] for z in state["zookeepers"]]
        assert len(java) == 3
        status = zkafka_cli("cluster", "status", "--dir", str(directory))
        assert status.returncode == 0 and "leader" in status.stdout and "follower" in status.stdout
    finally:
        down = zkafka_cli("cluster", "down", "--dir", str(directory), "--timeout", "20")
    assert down.returncode == 0, down.stderr
    for pid in [*java, *wrappers]:
        wait_for(lambda pid=pid: not Path(f"/proc/{pid}").exists() or _zombie(pid), 20, f"pid {pid} to exit")

    # a stopped ensemble cluster starts again only on the ZooKeeper it had
    single = zkafka_cli("cluster", "up", "--dir", str(directory))
    assert single.returncode != 0 and "--zookeepers 3" in single.stderr
    chroot = zkafka_cli(*up_args, "--chroot", "/other")
    assert chroot.returncode != 0 and "without --chroot" in chroot.stderr
    try:
        again = zkafka_cli(*up_args, timeout=100)
        assert again.returncode == 0, again.stderr
        report = json.loads(zkafka_cli("cluster", "status", "--dir", str(directory), "--json").stdout)
        assert sorted(m["role"] for m in report["zookeeper"]["members"]) == ["follower", "follower", "leader"]
        assert [int(b) for b in report["registered_brokers"]] == [1]
    finally:
        assert zkafka_cli("cluster", "down", "--dir", str(directory), "--timeout", "20").returncode == 0


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0] == "Z"
    except OSError:
        return True


def test_cluster_up_rejects_bad_ensemble_flags(tmp_path: Path) -> None:
    bad = zkafka_cli("cluster", "up", "--zookeepers", "2", "--dir", str(tmp_path))
    assert bad.returncode != 0 and "--zookeepers" in bad.stderr
    chroot = zkafka_cli("cluster", "up", "--chroot", "/kafka", "--dir", str(tmp_path))
    assert chroot.returncode != 0 and "--chroot" in chroot.stderr
