"""Controller failover with real processes: a SIGKILLed controller is replaced (epoch + 1) and the
cluster keeps working; a controller frozen (SIGSTOP) past its ZooKeeper session is superseded, and
when it wakes up its writes are refused, it resigns and rejoins as an ordinary broker."""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Iterator

import pytest
from cluster_helpers import (
    BackgroundProducer,
    Cluster,
    check_exactly_once,
    create_topic,
    metadata_controller,
    read_partitions,
    running,
    topic_name,
    wait_for,
)

from zkafka.local.zookeeper import ZooKeeperServer
from zkafka.protocol import ApiKey, ErrorCode
from zkafka.protocol.codec import decode_response, encode_request
from zkafka.protocol.headers import RequestHeader
from zkafka.protocol.messages import ControlledShutdownRequest, LeaderAndIsrRequest


@pytest.fixture(scope="module")
def module_cluster(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Cluster]:
    with running(zookeeper_server, tmp_path_factory.mktemp("controller"), brokers=3) as c:
        yield c


@pytest.fixture
def cluster(module_cluster: Cluster) -> Cluster:
    module_cluster.ensure_all_running()
    return module_cluster


def test_sigkill_of_the_controller_elects_another_with_the_next_epoch(cluster: Cluster) -> None:
    old = cluster.controller()
    assert old is not None
    epoch = cluster.controller_epoch()
    cluster.kill(old)
    new = cluster.wait_new_controller(old)
    assert cluster.controller_epoch() == epoch + 1
    # every survivor names the new controller at once (it watches /controller), not the dead one its
    # cache holds until the new controller's first UpdateMetadata: an admin client created now must
    # not be sent to broker `old` (librdkafka would wait there until its request timed out)
    for b in cluster.broker_ids:
        if b != old:
            wait_for(lambda b=b: metadata_controller(cluster, b) == new, 10, f"broker {b} to name {new}")
    # the new controller serves admin requests: a topic created now gets its state from epoch + 1
    topic = topic_name("after-failover")
    others = [b for b in cluster.broker_ids if b != old]
    create_topic(cluster, topic, {0: others, 1: list(reversed(others))})
    assert {cluster.state(topic, p)["controller_epoch"] for p in (0, 1)} == {epoch + 1}
    with BackgroundProducer(cluster.bootstrap, topic, rate=2000) as producer:
        producer.wait_acked(500)
    assert not producer.errors
    check_exactly_once(producer.acked, read_partitions(cluster.bootstrap, topic, [0, 1]))
    # the old controller comes back as an ordinary broker
    cluster.start(old)
    assert cluster.controller() == new and cluster.controller_epoch() == epoch + 1


def _frame(request: object, api_key: int, version: int) -> bytes:
    return bytes(encode_request(RequestHeader(api_key, version, 7, "fencing-test"), request))  # type: ignore[arg-type]


def _read_response(sock: socket.socket, api_key: int, version: int) -> object:
    def exactly(n: int) -> bytes:
        buf = b""
        while len(buf) < n:
            chunk = sock.recv(n - len(buf))
            assert chunk, "connection closed"
            buf += chunk
        return buf

    (size,) = struct.unpack(">i", exactly(4))
    _, response = decode_response(api_key, version, exactly(size))
    return response


def test_a_paused_controller_is_fenced_when_it_wakes_up(cluster: Cluster) -> None:
    old = cluster.controller()
    assert old is not None
    epoch = cluster.controller_epoch()
    x, y = (b for b in cluster.broker_ids if b != old)
    topic = topic_name("fenced")
    # partition 1 is led by x: a controlled shutdown of x would move it to `old`
    create_topic(cluster, topic, {0: [old, x], 1: [x, old], 2: [y, x]})
    before = {p: cluster.state(topic, p) for p in range(3)}

    # A request for the old controller, written into its socket while it is frozen: when it wakes up
    # it still believes it is the controller and acts on it (a ControlledShutdown of x).
    sock = socket.create_connection(("127.0.0.1", cluster.local.brokers[old].port), timeout=60)
    try:
        cluster.pause(old)
        frozen_at = time.monotonic()
        sock.sendall(
            _frame(
                ControlledShutdownRequest(broker_id=x, broker_epoch=cluster.broker_epoch(x)),
                ApiKey.CONTROLLED_SHUTDOWN,
                2,
            )
        )
        new = cluster.wait_new_controller(old)
        assert cluster.controller_epoch() == epoch + 1
        takeover_zxid = cluster.zk.exists("/controller").czxid
        # the new controller handled the frozen broker's departure: partition 0 left it
        wait_for(lambda: cluster.state(topic, 0)["leader"] == x, 20, "partition 0 to move to x")
        assert cluster.state(topic, 0)["controller_epoch"] == epoch + 1
        assert time.monotonic() - frozen_at > 3  # past the 4 s session timeout, give or take the check
        cluster.resume(old)
        response = _read_response(sock, ApiKey.CONTROLLED_SHUTDOWN, 2)
    finally:
        sock.close()
        cluster.resume(old)

    # its election is over: ZooKeeper refused its fenced write, it says so, resigns and re-registers
    assert response.error_code == ErrorCode.NOT_CONTROLLER  # type: ignore[attr-defined]
    wait_for(lambda: f"broker {old} resigned as controller" in cluster.server_log(old), 20, "resignation")
    log = cluster.server_log(old)
    assert f"controlled shutdown of broker {x}" in log  # it did try to act ...
    assert "is stale: another controller was elected" in log  # ... and its multi was refused
    wait_for(lambda: old in cluster.registered(), 20, "the old controller to re-register")
    assert cluster.controller() == new and cluster.controller_epoch() == epoch + 1

    # nothing it attempted reached ZooKeeper: x still leads partition 1 with the epoch it had, and
    # every leadership decision made since the takeover carries the new controller epoch
    after = {p: cluster.state_with_stat(topic, p) for p in range(3)}
    assert after[1][0]["leader"] == x and after[1][0]["leader_epoch"] == before[1]["leader_epoch"]
    for p, (state, stat) in after.items():
        assert state["controller_epoch"] <= epoch + 1
        if stat.mzxid > takeover_zxid and state["leader_epoch"] != before[p]["leader_epoch"]:
            assert state["controller_epoch"] == epoch + 1, (p, state)

    # brokers refuse controller requests carrying the old epoch (what its channels would send)
    stale = LeaderAndIsrRequest(controller_id=old, controller_epoch=epoch, broker_epoch=-1)
    with socket.create_connection(("127.0.0.1", cluster.local.brokers[x].port), timeout=10) as s:
        s.sendall(_frame(stale, ApiKey.LEADER_AND_ISR, 1))
        assert _read_response(s, ApiKey.LEADER_AND_ISR, 1).error_code == ErrorCode.STALE_CONTROLLER_EPOCH  # type: ignore[attr-defined]
