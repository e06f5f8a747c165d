"""One unreadable znode must never take the cluster down (issue 11).

Each test writes garbage into one znode of a live 3-broker cluster with an independent ZooKeeper
client (kazoo, not our code), then makes the controller re-read everything: SIGKILL it. The next
controller must start its term at the first try (`/controller_epoch` rises by exactly one), lead
every other partition, report the bad znode once by path, log no traceback, and keep serving
controlled shutdown and produce.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest
from cluster_helpers import BackgroundProducer, Cluster, create_topic, running, topic_name, wait_for

from zkafka.local.zookeeper import ZooKeeperServer

GARBAGE = b"{not json"
SETTLE_S = 4.0
"""How long the epoch is watched after a failover: the old bug bumped it ~50 times a second."""


@pytest.fixture
def cluster(zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with running(zookeeper_server, tmp_path_factory.mktemp("bad-znodes"), brokers=3) as c:
        yield c


def _state_path(topic: str, partition: int) -> str:
    return f"/brokers/topics/{topic}/partitions/{partition}/state"


def _topics(cluster: Cluster) -> tuple[str, str]:
    """`unused` (one partition on every broker) and `busy` (one partition led by each broker)."""
    unused, busy = topic_name("unused"), topic_name("busy")
    create_topic(cluster, unused, {0: [1, 2, 3]})
    create_topic(cluster, busy, {0: [1, 2], 1: [2, 3], 2: [3, 1]})
    return unused, busy


def _kill_controller_and_settle(cluster: Cluster) -> tuple[int, int]:
    old = cluster.controller()
    assert old is not None
    epoch = cluster.controller_epoch()
    cluster.kill(old)
    new = cluster.wait_new_controller(old)
    time.sleep(SETTLE_S)
    assert cluster.controller_epoch() == epoch + 1, "the new controller resigned and others campaigned"
    assert cluster.controller() == new
    return old, new


def _led_by_live_brokers(cluster: Cluster, topic: str, partitions: int, dead: set[int]) -> bool:
    leaders = [cluster.leader(topic, p) for p in range(partitions)]
    return all(leader >= 0 and leader not in dead for leader in leaders)


def _assert_reported_once(cluster: Cluster, broker_id: int, path: str) -> None:
    text = cluster.server_log(broker_id)
    lines = [line for line in text.splitlines() if f"znode {path} does not decode" in line]
    assert len(lines) == 1, lines
    assert "Traceback" not in text


def test_a_bad_partition_state_survives_a_controller_sigkill(cluster: Cluster) -> None:
    unused, busy = _topics(cluster)
    bad = _state_path(unused, 0)
    good_state = cluster.zk.get(bad)[0]
    cluster.zk.set(bad, GARBAGE)

    old, new = _kill_controller_and_settle(cluster)
    epoch = cluster.controller_epoch()
    wait_for(lambda: _led_by_live_brokers(cluster, busy, 3, {old}), 30, "every busy partition led")
    _assert_reported_once(cluster, new, bad)
    with BackgroundProducer(cluster.bootstrap, busy, rate=1000) as producer:
        producer.wait_acked(300)
    assert not producer.errors

    # Controlled shutdown of a broker that holds a replica of the bad partition still succeeds (once
    # the killed broker is back, so every busy partition has somewhere to move).
    cluster.start(old)
    for p, replicas in enumerate(([1, 2], [2, 3], [3, 1])):
        cluster.wait_isr(busy, p, set(replicas))
    survivor = next(b for b in cluster.broker_ids if b != new)
    cluster.stop(survivor)
    assert "controlled shutdown succeeded" in cluster.server_log(survivor)
    assert cluster.controller() == new

    # Offline until the state is rewritten: once it is, the next election the controller runs for
    # it (here: the broker coming back) adopts the rewritten state and leads the partition again.
    state = json.loads(good_state)
    state["leader"] = new
    state["isr"] = [new]
    cluster.zk.set(bad, json.dumps(state).encode())
    cluster.start(survivor)
    wait_for(lambda: cluster.leader(unused, 0) >= 0, 30, f"a leader for {unused}-0")
    assert "decodes again" in cluster.server_log(new)
    assert cluster.controller() == new and cluster.controller_epoch() == epoch


def test_a_bad_broker_registration_survives_a_controller_sigkill(cluster: Cluster) -> None:
    _unused, busy = _topics(cluster)
    controller = cluster.controller()
    victim = next(b for b in cluster.broker_ids if b != controller)
    path = f"/brokers/ids/{victim}"
    cluster.zk.set(path, GARBAGE)

    old, new = _kill_controller_and_settle(cluster)
    # The broker whose registration does not decode is not live to the new controller (even when it
    # is that controller): each busy partition with a replica the controller can read moves there.
    assignment = {0: [1, 2], 1: [2, 3], 2: [3, 1]}

    def settled() -> bool:
        for p, replicas in assignment.items():
            readable = set(replicas) - {old, victim}
            if readable and cluster.leader(busy, p) not in readable:
                return False
        return True

    wait_for(settled, 30, "busy partitions led by the brokers the controller can read")
    _assert_reported_once(cluster, new, path)


def test_bad_admin_and_config_znodes_are_reported_not_fatal(cluster: Cluster) -> None:
    unused, busy = _topics(cluster)
    cluster.zk.set(f"/config/topics/{unused}", GARBAGE)
    cluster.zk.set(f"/brokers/topics/{unused}", GARBAGE)
    cluster.zk.create("/admin/preferred_replica_election", GARBAGE, makepath=True)

    old, new = _kill_controller_and_settle(cluster)
    wait_for(lambda: _led_by_live_brokers(cluster, busy, 3, {old}), 30, "every busy partition led")
    text = cluster.server_log(new)
    assert "Traceback" not in text
    assert f"znode /brokers/topics/{unused} does not decode" in text
    # A restarted broker reads every topic config at startup: the bad one is skipped, not fatal.
    cluster.start(old)
    assert "Traceback" not in cluster.server_log(old)


def test_an_unreadable_controller_epoch_backs_off_instead_of_spinning(cluster: Cluster) -> None:
    """Nobody can be elected while /controller_epoch does not decode (as in Kafka); the brokers must
    wait between attempts, say why once, and elect at once the epoch is readable again."""
    old = cluster.controller()
    assert old is not None
    epoch = cluster.controller_epoch()
    cluster.zk.set("/controller_epoch", GARBAGE)
    cluster.kill(old)
    # the dead broker's /controller lasts until its session expires; then nobody may win
    wait_for(lambda: cluster.controller() != old, 30, "the dead controller's session to expire")
    time.sleep(SETTLE_S)
    assert cluster.controller() is None
    others = [b for b in cluster.broker_ids if b != old]
    for b in others:
        text = cluster.server_log(b)
        first = [line for line in text.splitlines() if "controller election failed (" in line]
        again = [line for line in text.splitlines() if "controller election failed again" in line]
        assert len(first) == 1 and "/controller_epoch" in first[0], first
        assert len(again) <= 2, again  # attempts at ~0.5, 1.5, 3.5 s: one repeat line, then held back
        assert "Traceback" not in text
    cluster.zk.set("/controller_epoch", str(epoch).encode())
    wait_for(cluster.controller, 40, "a controller once /controller_epoch is readable")
    assert cluster.controller_epoch() == epoch + 1


def test_a_topic_with_a_bad_partition_state_can_still_be_deleted_and_others_reassigned(
    cluster: Cluster,
) -> None:
    from confluent_kafka.admin import AdminClient

    unused, busy = _topics(cluster)
    cluster.zk.set(_state_path(unused, 0), GARBAGE)
    old, _new = _kill_controller_and_settle(cluster)
    cluster.start(old)  # deletion waits for every replica's broker, as in Kafka
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.delete_topics([unused])[unused].result(30)
    wait_for(lambda: not cluster.exists(f"/brokers/topics/{unused}"), 30, f"{unused} deleted")
    wait_for(lambda: not cluster.exists(f"/admin/delete_topics/{unused}"), 30, "the deletion request done")
    # A reassignment elsewhere goes through while the controller has seen the bad znode.
    live = [b for b in cluster.broker_ids if cluster.local.broker_alive(b)]
    target = [live[1], live[0]]
    cluster.zk.create(
        "/admin/reassign_partitions",
        json.dumps(
            {"version": 1, "partitions": [{"topic": busy, "partition": 0, "replicas": target}]}
        ).encode(),
    )
    wait_for(lambda: not cluster.exists("/admin/reassign_partitions"), 60, "the reassignment to finish")
    assert cluster.topic(busy)["partitions"]["0"] == target
