"""KafkaZkClient against a real ZooKeeper: chroot handling, broker registration, controller election
and fencing, partition state, topics, admin znodes, notifications, config, producer ids, old consumer,
ACLs."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import replace

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, NoAuthError, NodeExistsError, NoNodeError
from kazoo.protocol.paths import _prefix_root
from kazoo.security import make_acl
from zk_test_helpers import expire_session, wait_until

from zkafka.local.zookeeper import ZooKeeperServer
from zkafka.testing.zookeeper import new_chroot
from zkafka.zk.acls import (
    AclEntry,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from zkafka.zk.client import KafkaZkClient
from zkafka.zk.errors import (
    AdminOperationInProgressError,
    BrokerIdInUseError,
    ControllerMovedError,
    InvalidReplicaAssignmentError,
    InvalidTopicError,
    NodeOwnedElsewhereError,
    TopicAlreadyMarkedForDeletionError,
    TopicExistsError,
    UnknownTopicError,
    ZkConnectionError,
)
from zkafka.zk.model import (
    BrokerInfo,
    ConsumerRegistration,
    EndPoint,
    FeatureZNodeData,
    FeatureZNodeStatus,
    FinalizedFeatureLevel,
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    SecurityProtocol,
    SubscriptionPattern,
    TopicPartition,
)
from zkafka.zk.ops import CheckOp, CreateOp, DeleteOp, SetDataOp, chrooted
from zkafka.zk.store import MULTI_OP_OVERHEAD, multi_chunks
from zkafka.zk.topic_store import NewTopicZNodes
from zkafka.zk.znodes import (
    CONFIG_CHANGES,
    ISR_CHANGES,
    LITERAL_ACL_CHANGES,
    PERSISTENT_TOP_LEVEL_PATHS,
    BrokerIdZNode,
    ConfigEntityChangeNotificationZNode,
    TopicPartitionStateZNode,
    TopicZNode,
    config_entity_name,
)

ClientFactory = Callable[..., KafkaZkClient]


@pytest.fixture
def new_client(zk_connect: str) -> Iterator[ClientFactory]:
    """Makes clients on the test's chroot; all closed at the end."""
    made: list[KafkaZkClient] = []

    def make(connect: str | None = None, **kwargs: object) -> KafkaZkClient:
        client = KafkaZkClient(connect or zk_connect, session_timeout_ms=10000, **kwargs)  # type: ignore[arg-type]
        made.append(client)
        return client

    yield make
    for client in made:
        client.close()


@pytest.fixture
def zk(new_client: ClientFactory) -> KafkaZkClient:
    client = new_client()
    client.create_top_level_paths()
    return client


def broker(broker_id: int, port: int = 9092) -> BrokerInfo:
    return BrokerInfo(broker_id, (EndPoint("PLAINTEXT", "127.0.0.1", port, SecurityProtocol.PLAINTEXT),))


# -- connection and chroot -----------------------------------------------------------------------------


def test_missing_chroot_is_created_and_everything_lands_under_it(zookeeper_server: ZooKeeperServer) -> None:
    chroot = new_chroot() + "/kafka"
    raw = KazooClient(hosts=zookeeper_server.connect_string)
    raw.start(timeout=10)
    try:
        assert raw.exists(chroot) is None
        with KafkaZkClient(zookeeper_server.connect_string + chroot) as client:
            client.create_top_level_paths()
            client.create_topic_assignment("t", {0: [1]})
            assert raw.exists(chroot + "/brokers/topics/t") is not None
            assert raw.exists("/brokers/topics/t") is None
            assert client.get_all_topics() == ["t"]
    finally:
        raw.delete(chroot.rsplit("/", 1)[0], recursive=True)
        raw.stop()
        raw.close()


def test_two_chroots_do_not_see_each_other(zookeeper_server: ZooKeeperServer) -> None:
    a_root, b_root = new_chroot(), new_chroot()
    with (
        KafkaZkClient(zookeeper_server.connect_string + a_root) as a,
        KafkaZkClient(zookeeper_server.connect_string + b_root) as b,
    ):
        try:
            a.create_top_level_paths()
            b.create_top_level_paths()
            a.create_topic_assignment("only-in-a", {0: [1]})
            a.register_broker(broker(1))
            assert b.get_all_topics() == [] and b.get_all_broker_ids() == []
            b.register_broker(broker(1))  # same id, other cluster: no conflict
        finally:
            a.delete("/", recursive=True)
            b.delete("/", recursive=True)


@pytest.mark.filterwarnings("ignore:No chroot path exists")
def test_without_create_chroot_a_missing_chroot_stays_missing(zookeeper_server: ZooKeeperServer) -> None:
    with KafkaZkClient(zookeeper_server.connect_string + new_chroot(), create_chroot=False) as client:
        assert client.exists("/") is None
        assert client.get_children("/") is None


def test_unreachable_server_gives_a_clear_error() -> None:
    with pytest.raises(
        ZkConnectionError, match=r"could not connect to ZooKeeper at 127.0.0.1:1 within 0.5 s"
    ):
        KafkaZkClient("127.0.0.1:1", connection_timeout_ms=500)


def test_bad_connect_string() -> None:
    with pytest.raises(ValueError, match="only once"):
        KafkaZkClient("a:1/x,b:2")


# -- bootstrap -----------------------------------------------------------------------------------------


def test_top_level_paths_and_cluster_id(zk: KafkaZkClient, new_client: ClientFactory) -> None:
    for path in PERSISTENT_TOP_LEVEL_PATHS:
        found = zk.get_data(path)
        assert found is not None and found[0] == b"", path
    zk.create_top_level_paths()  # idempotent
    assert zk.get_cluster_id() is None
    cluster_id = zk.get_or_create_cluster_id()
    assert len(cluster_id) == 22
    other = new_client()
    assert other.get_or_create_cluster_id(lambda: "never-used") == cluster_id
    assert zk.get_data("/cluster/id")[0] == f'{{"version":"1","id":"{cluster_id}"}}'.encode()  # type: ignore[index]


def test_cluster_id_create_race(new_client: ClientFactory) -> None:
    clients = [new_client() for _ in range(4)]
    barrier = threading.Barrier(len(clients))
    results: list[str] = []

    def run(client: KafkaZkClient, i: int) -> None:
        barrier.wait()
        results.append(client.get_or_create_cluster_id(lambda: f"candidate-{i}"))

    threads = [threading.Thread(target=run, args=(c, i)) for i, c in enumerate(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert len(results) == 4 and len(set(results)) == 1


def test_broker_sequence_ids(zk: KafkaZkClient) -> None:
    assert zk.generate_broker_sequence_id() == 1001
    assert zk.generate_broker_sequence_id() == 1002
    assert zk.generate_broker_sequence_id(reserved_max_id=5000) == 5003


# -- broker registration -------------------------------------------------------------------------------


def test_register_broker_returns_czxid_and_is_ephemeral(zk: KafkaZkClient, new_client: ClientFactory) -> None:
    registrar = new_client()
    epoch = registrar.register_broker(broker(1))
    data, stat = zk.get_data(BrokerIdZNode.path(1))  # type: ignore[misc]
    assert epoch == stat.czxid
    assert stat.version == 1  # created empty, then setData(version 0) in the same multi
    assert stat.ephemeralOwner == registrar.session_id
    assert BrokerIdZNode.decode(data, BrokerIdZNode.path(1)).endpoints == broker(1).endpoints
    assert zk.get_all_brokers_and_epochs()[1][1] == epoch
    assert zk.get_broker(1).epoch == epoch  # type: ignore[union-attr]
    registrar.close()
    wait_until(lambda: zk.get_broker(1) is None, what="the ephemeral registration to vanish")


def test_reregistration_on_the_same_session_gets_a_new_epoch(zk: KafkaZkClient) -> None:
    first = zk.register_broker(broker(1))
    second = zk.register_broker(broker(1, port=9093))
    assert second > first
    info = zk.get_broker(1)
    assert info is not None and info.epoch == second and info.endpoints[0].port == 9093


def test_other_session_holding_the_id_is_refused(zk: KafkaZkClient, new_client: ClientFactory) -> None:
    zk.register_broker(broker(1))
    other = new_client()
    with pytest.raises(BrokerIdInUseError, match="already registered at /brokers/ids/1 by another"):
        other.register_broker(broker(1))
    zk.close()
    wait_until(lambda: other.get_broker(1) is None)
    assert other.register_broker(broker(1)) > 0


def test_persistent_node_in_the_way_is_refused(zk: KafkaZkClient) -> None:
    zk.create(BrokerIdZNode.path(5), b"{}")
    with pytest.raises(BrokerIdInUseError, match="persistent znode"):
        zk.register_broker(broker(5))


def test_reregistration_after_session_expiry(zk: KafkaZkClient) -> None:
    first = zk.register_broker(broker(1))
    expire_session(zk)
    wait_until(lambda: zk.get_broker(1) is None, what="the old registration to be gone")
    second = zk.register_broker(broker(1))
    assert second > first
    assert zk.get_all_brokers_and_epochs()[1][1] == second


def test_all_brokers_and_update(zk: KafkaZkClient, new_client: ClientFactory) -> None:
    epochs = {b: new_client().register_broker(broker(b, 9000 + b)) for b in (3, 1, 2)}
    found = zk.get_all_brokers_and_epochs()
    assert list(found) == [1, 2, 3]
    assert {b: e for b, (_, e) in found.items()} == epochs
    zk.create(BrokerIdZNode.path(1).replace("/1", "/not-a-broker"), b"")
    assert zk.get_all_broker_ids() == [1, 2, 3]
    mine = zk.register_broker(broker(9))
    assert zk.update_broker_info(broker(9, 1234)) == 2
    info = zk.get_broker(9)
    assert info is not None and info.endpoints[0].port == 1234 and info.epoch == mine


# -- controller election and fencing -------------------------------------------------------------------


def _race_for_controller(clients: list[KafkaZkClient]) -> dict[int, object]:
    barrier = threading.Barrier(len(clients))
    outcome: dict[int, object] = {}

    def run(broker_id: int, client: KafkaZkClient) -> None:
        barrier.wait()
        try:
            outcome[broker_id] = client.register_controller_and_increment_epoch(broker_id)
        except ControllerMovedError as e:
            outcome[broker_id] = e

    threads = [threading.Thread(target=run, args=(i, c)) for i, c in enumerate(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    return outcome


def test_election_race_has_exactly_one_winner_and_epochs_increment(
    zk: KafkaZkClient, new_client: ClientFactory
) -> None:
    assert zk.get_controller_epoch() is None and zk.get_controller_id() is None
    for expected_epoch in (1, 2, 3):
        clients = [new_client() for _ in range(3)]
        outcome = _race_for_controller(clients)
        winners = {b: r for b, r in outcome.items() if isinstance(r, tuple)}
        assert len(winners) == 1, outcome
        (winner, (epoch, epoch_zk_version)), *_ = winners.items()
        assert epoch == expected_epoch
        assert zk.get_controller_id() == winner
        assert zk.get_controller_epoch() == (expected_epoch, epoch_zk_version)
        assert all(isinstance(r, ControllerMovedError) for b, r in outcome.items() if b != winner)
        for client in clients:
            client.close()
        wait_until(lambda: zk.get_controller_id() is None, what="/controller to vanish")


def test_lost_response_rule_recognises_our_own_election(zk: KafkaZkClient) -> None:
    epoch, version = zk.register_controller_and_increment_epoch(7)
    assert zk._check_controller_and_epoch(7, epoch) == (epoch, version)
    with pytest.raises(ControllerMovedError):
        zk._check_controller_and_epoch(8, epoch)
    with pytest.raises(ControllerMovedError, match="controller is 7"):
        zk.register_controller_and_increment_epoch(8)


def test_fenced_write_with_stale_epoch_changes_nothing(zk: KafkaZkClient, new_client: ClientFactory) -> None:
    old = new_client()
    old_epoch, old_version = old.register_controller_and_increment_epoch(1)
    old.fenced_multi(old_version, [CreateOp("/fenced-ok", b"1")])
    assert zk.get_data("/fenced-ok")[0] == b"1"  # type: ignore[index]
    old.close()  # loses /controller
    wait_until(lambda: zk.get_controller_id() is None)
    new_epoch, new_version = zk.register_controller_and_increment_epoch(2)
    assert new_epoch == old_epoch + 1 and new_version == old_version + 1

    zombie = new_client()  # the old controller, still believing in its epoch
    with pytest.raises(ControllerMovedError, match="stale"):
        zombie.fenced_multi(old_version, [CreateOp("/fenced-stale", b"x"), SetDataOp("/fenced-ok", b"2")])
    assert zk.exists("/fenced-stale") is None
    assert zk.get_data("/fenced-ok")[0] == b"1"  # type: ignore[index]
    with pytest.raises(ControllerMovedError):
        zombie.delete_controller(old_version)
    assert zk.get_controller_id() == 2

    results = zk.fenced_multi(new_version, [SetDataOp("/fenced-ok", b"3"), DeleteOp("/fenced-ok")])
    assert results[0].version == 1 and zk.exists("/fenced-ok") is None
    with pytest.raises(NoNodeError):
        zk.fenced_multi(new_version, [DeleteOp("/fenced-ok")])
    assert zk.delete_controller(new_version) and zk.get_controller_id() is None


# -- partition state -----------------------------------------------------------------------------------


def _controller(zk: KafkaZkClient) -> tuple[int, int]:
    return zk.register_controller_and_increment_epoch(0)


def test_partition_state_create_and_controller_updates(zk: KafkaZkClient) -> None:
    epoch, epoch_zk_version = _controller(zk)
    tp0, tp1, tp_missing = TopicPartition("t", 0), TopicPartition("t", 1), TopicPartition("t", 2)
    states = {
        tp0: LeaderIsrAndControllerEpoch(LeaderAndIsr.initial(1, [1, 2]), epoch),
        tp1: LeaderIsrAndControllerEpoch(LeaderAndIsr.initial(2, [2, 1]), epoch),
    }
    orphan = zk.create_topic_partition_states({TopicPartition("no-topic", 0): states[tp0]}, epoch_zk_version)
    assert orphan.created == {} and isinstance(orphan.failed[TopicPartition("no-topic", 0)], NoNodeError)
    zk.create_topic_assignment("t", {0: [1, 2], 1: [2, 1]})
    created = zk.create_topic_partition_states(states, epoch_zk_version)
    assert created.created == {tp0: 0, tp1: 0} and created.failed == {}
    assert zk.get_partitions_for_topic("t") == [0, 1]
    again = zk.create_topic_partition_states({tp0: states[tp0]}, epoch_zk_version)
    assert isinstance(again.failed[tp0], NodeExistsError)

    read = zk.get_partition_states([tp0, tp1, tp_missing])
    assert read == states and tp_missing not in read

    new0 = read[tp0].leader_and_isr.new_leader_and_isr(2, [2])
    stale1 = read[tp1].leader_and_isr.with_zk_version(5)
    missing = LeaderAndIsr.initial(1, [1])
    result = zk.update_leader_and_isr({tp0: new0, tp1: stale1, tp_missing: missing}, epoch, epoch_zk_version)
    assert result.successful == {tp0: 1}
    assert result.bad_version == [tp1]
    assert isinstance(result.failed[tp_missing], NoNodeError)
    state0 = zk.get_partition_state(tp0)
    assert state0 == LeaderIsrAndControllerEpoch(LeaderAndIsr(2, 1, (2,), zk_version=1), epoch)


def test_partition_state_updates_are_fenced(zk: KafkaZkClient, new_client: ClientFactory) -> None:
    zk.create_topic_assignment("t", {0: [1], 1: [1]})
    old = new_client()
    epoch, old_version = old.register_controller_and_increment_epoch(1)
    tp = TopicPartition("t", 0)
    old.create_topic_partition_states(
        {tp: LeaderIsrAndControllerEpoch(LeaderAndIsr.initial(1, [1]), epoch)}, old_version
    )
    old.close()
    wait_until(lambda: zk.get_controller_id() is None)
    zk.register_controller_and_increment_epoch(2)
    zombie = new_client()
    with pytest.raises(ControllerMovedError):
        zombie.update_leader_and_isr({tp: LeaderAndIsr(1, 1, (1,), zk_version=0)}, epoch, old_version)
    with pytest.raises(ControllerMovedError):
        zombie.create_topic_partition_states(
            {TopicPartition("t", 1): LeaderIsrAndControllerEpoch(LeaderAndIsr.initial(1, [1]), epoch)},
            old_version,
        )
    assert zk.get_partition_state(tp).leader_and_isr.leader_epoch == 0  # type: ignore[union-attr]
    assert zk.get_partition_state(TopicPartition("t", 1)) is None


def test_thousands_of_partition_states_batched_each_write_still_conditional(
    zk: KafkaZkClient, new_client: ClientFactory
) -> None:
    """A 3,000-partition topic: the state znodes are written many to a multi, yet one stale
    zkVersion (or one existing znode) fails only its own partition, and a stale controller epoch
    writes nothing at all."""
    epoch, epoch_zk_version = _controller(zk)
    n = 3000
    zk.create_topic_assignment("big", {p: [1, 2] for p in range(n)})
    tps = [TopicPartition("big", p) for p in range(n)]
    initial = {tp: LeaderIsrAndControllerEpoch(LeaderAndIsr.initial(1, [1, 2]), epoch) for tp in tps}
    first = zk.create_topic_partition_states(dict(list(initial.items())[:10]), epoch_zk_version)
    assert len(first.created) == 10
    created = zk.create_topic_partition_states(initial, epoch_zk_version)
    assert set(created.created) == set(tps[10:])
    assert set(created.failed) == set(tps[:10])
    assert all(isinstance(e, NodeExistsError) for e in created.failed.values())
    assert zk.get_partitions_for_topic("big") == list(range(n))

    stale = tps[1234]
    updates = {tp: initial[tp].leader_and_isr.new_leader_and_isr(2, [2]) for tp in tps}
    updates[stale] = updates[stale].with_zk_version(7)
    result = zk.update_leader_and_isr(updates, epoch, epoch_zk_version)
    assert result.bad_version == [stale] and result.failed == {}
    assert set(result.successful) == set(tps) - {stale} and set(result.successful.values()) == {1}
    states = zk.get_partition_states(tps)
    assert states[stale].leader_and_isr.leader == 1
    assert all(states[tp].leader_and_isr.leader == 2 for tp in tps if tp != stale)

    zombie = new_client()
    with pytest.raises(ControllerMovedError):
        zombie.update_leader_and_isr(
            {tp: LeaderAndIsr(1, 2, (1,), zk_version=1) for tp in tps}, epoch, epoch_zk_version - 1
        )
    assert zk.get_partition_states(tps) == states


def test_batched_writes_beyond_jute_maxbuffer_are_cut_into_several_multis(zk: KafkaZkClient) -> None:
    """6 MB of writes in one call: a single multi would exceed the server's `jute.maxbuffer` (4 MB
    on the local server, 1 MB by default) and be refused; the batches stay under it."""
    _, epoch_zk_version = _controller(zk)
    zk.ensure_path("/wide")
    payload = b"x" * 100_000
    items = [(i, CreateOp(f"/wide/n{i}", payload)) for i in range(60)]
    results = zk._batched_fenced(epoch_zk_version, items)
    assert results == {i: f"/wide/n{i}" for i in range(60)}
    assert len(zk.get_children("/wide") or []) == 60


def test_multi_chunks_respect_bytes_and_operations() -> None:
    items = [(i, SetDataOp(f"/p/{i:02d}", b"d" * 100)) for i in range(25)]
    size = MULTI_OP_OVERHEAD + len("/p/10") + 100
    chunks = multi_chunks(items, max_bytes=size * 4, max_ops=3)
    assert [len(c) for c in chunks] == [3] * 8 + [1]
    assert [k for c in chunks for k, _ in c] == list(range(25))
    assert [len(c) for c in multi_chunks(items, max_bytes=size * 4 - 1, max_ops=100)][:2] == [3, 3]
    huge = [(0, SetDataOp("/h", b"h" * 1000))]
    assert multi_chunks(huge, max_bytes=10, max_ops=10) == [huge]


@pytest.mark.parametrize("root", ["", "/r", "/r/s"])
def test_multi_paths_get_the_chroot_exactly_as_kazoo_prefixes_them(root: str) -> None:
    # apply_ops builds kazoo's requests itself (kazoo re-normalises every path: the controller's
    # CPU at topic creation); the path sent must stay what kazoo would send, odd paths included
    paths = [
        "/",
        "/x",
        "/brokers/topics/t/partitions/0/state",
        "x/y",
        "/x//y",
        "/x/",
        "//x",
        "/.x/y",
        "/x/.y",
    ]
    for path in paths:
        assert chrooted(root, path) == _prefix_root(root, path), path
    for bad in ("/x/./y", "/x/../y", "/x/.."):
        with pytest.raises(ValueError, match="relative paths not allowed"):
            chrooted(root, bad)


def test_a_fenced_multi_in_a_chroot_creates_sets_checks_and_deletes(
    zookeeper_server: ZooKeeperServer, zk: KafkaZkClient
) -> None:
    _, epoch_zk_version = _controller(zk)
    zk.fenced_multi(
        epoch_zk_version,
        [CreateOp("/m"), CreateOp("/m/a", b"1"), CreateOp("/m/b", b"2"), SetDataOp("/m/a", b"3", 0)],
    )
    zk.fenced_multi(epoch_zk_version, [CheckOp("/m/a", 1), DeleteOp("/m/b")])
    root = zk.connect_string.chroot
    assert root
    raw = KazooClient(hosts=zookeeper_server.connect_string)
    raw.start(timeout=10)
    try:
        # the writes landed below the chroot, with the data and versions the multi gave them
        data, stat = raw.get(root + "/m/a")
        assert (data, stat.version) == (b"3", 1)
        assert raw.exists(root + "/m/b") is None
        assert raw.exists("/m") is None
    finally:
        raw.stop()
        raw.close()


def test_leader_conditional_isr_update(zk: KafkaZkClient) -> None:
    epoch, epoch_zk_version = _controller(zk)
    zk.create_topic_assignment("t", {0: [1, 2, 3]})
    tp = TopicPartition("t", 0)
    zk.create_topic_partition_states(
        {tp: LeaderIsrAndControllerEpoch(LeaderAndIsr.initial(1, [1, 2, 3]), epoch)}, epoch_zk_version
    )
    cached = zk.get_partition_state(tp).leader_and_isr  # type: ignore[union-attr]
    shrunk = LeaderAndIsr(1, cached.leader_epoch, (1, 2), zk_version=cached.zk_version)
    ok, version = zk.conditional_update_partition_state(tp, shrunk, epoch)
    assert (ok, version) == (True, 1)
    # the same write again with the now stale version: recognised as ours (lost response)
    assert zk.conditional_update_partition_state(tp, shrunk, epoch) == (True, 1)
    # a different write with a stale version fails cleanly and changes nothing
    expanded = LeaderAndIsr(1, cached.leader_epoch, (1, 2, 3), zk_version=0)
    assert zk.conditional_update_partition_state(tp, expanded, epoch) == (False, -1)
    assert zk.get_partition_state(tp).leader_and_isr.isr == (1, 2)  # type: ignore[union-attr]
    assert zk.conditional_update_partition_state(TopicPartition("t", 9), expanded, epoch) == (False, -1)


def test_leader_conditional_isr_updates_pipelined(zk: KafkaZkClient) -> None:
    """Many partitions' ISR writes in one call: each keeps its own condition and outcome."""
    epoch, epoch_zk_version = _controller(zk)
    zk.create_topic_assignment("m", {p: [1, 2] for p in range(4)})
    tps = [TopicPartition("m", p) for p in range(4)]
    zk.create_topic_partition_states(
        {tp: LeaderIsrAndControllerEpoch(LeaderAndIsr.initial(1, [1, 2]), epoch) for tp in tps},
        epoch_zk_version,
    )
    shrunk = LeaderAndIsr(1, 0, (1,), zk_version=0)
    # m-1 was changed meanwhile (stale version), m-2 already holds exactly our write (an answer
    # lost), m-3 is written normally, m-0 as well; a partition without a state znode fails.
    assert zk.conditional_update_partition_state(tps[1], LeaderAndIsr(1, 0, (1, 2, 3)), epoch)[0]
    assert zk.conditional_update_partition_state(tps[2], shrunk, epoch) == (True, 1)
    gone = TopicPartition("m", 9)
    results = zk.conditional_update_partition_states({tp: (shrunk, epoch) for tp in [*tps, gone]})
    assert results == {
        tps[0]: (True, 1),
        tps[1]: (False, -1),
        tps[2]: (True, 1),
        tps[3]: (True, 1),
        gone: (False, -1),
    }
    assert zk.get_partition_state(tps[1]).leader_and_isr.isr == (1, 2, 3)  # type: ignore[union-attr]
    assert zk.conditional_update_partition_states({}) == {}


def test_leader_isr_updates_go_as_multis_and_a_failed_chunk_is_written_one_by_one(zk: KafkaZkClient) -> None:
    """Thousands of leader ISR writes go as a few multis; a stale zkVersion rolls its whole chunk
    back, and that chunk's partitions still each get their own outcome."""
    epoch, epoch_zk_version = _controller(zk)
    n = 2500  # more than one multi's worth (store.MULTI_MAX_OPS)
    zk.create_topic_assignment("big", {p: [1, 2] for p in range(n)}, validate=False)
    tps = [TopicPartition("big", p) for p in range(n)]
    zk.create_topic_partition_states(
        {tp: LeaderIsrAndControllerEpoch(LeaderAndIsr.initial(1, [1]), epoch) for tp in tps},
        epoch_zk_version,
    )
    stale = tps[2200]  # changed behind the leader's back: its write must fail, not roll back others
    assert zk.conditional_update_partition_state(stale, LeaderAndIsr(1, 0, (1, 3)), epoch)[0]
    expanded = LeaderAndIsr(1, 0, (1, 2), zk_version=0)
    results = zk.conditional_update_partition_states({tp: (expanded, epoch) for tp in tps})
    assert results == {tp: ((False, -1) if tp == stale else (True, 1)) for tp in tps}
    states = zk.get_partition_states(tps)
    assert {tp for tp, s in states.items() if s.leader_and_isr.isr == (1, 2)} == set(tps) - {stale}
    assert states[stale].leader_and_isr.isr == (1, 3)


def test_batched_multis_leave_the_keys_of_failed_chunks(zk: KafkaZkClient) -> None:
    """Chunks that apply report each operation's result; a chunk with a failing operation is
    rolled back whole (nothing of it written) and its keys are left to the caller."""
    for i in range(5):
        zk.create(f"/bm/{i}", b"0", makepath=True)
    items = [(i, SetDataOp(f"/bm/{i}", b"1", 0 if i != 2 else 7)) for i in range(5)]
    done, left = zk.batched_multis(items, max_ops=2)  # chunks [0, 1], [2, 3], [4]
    assert sorted(done) == [0, 1, 4] and all(stat.version == 1 for stat in done.values())
    assert left == [2, 3]
    assert [zk.get_data(f"/bm/{i}")[0] for i in range(5)] == [b"1", b"1", b"0", b"0", b"1"]  # type: ignore[index]
    assert zk.batched_multis([]) == ({}, [])


# -- topics --------------------------------------------------------------------------------------------


def test_create_topic_writes_config_first_and_refuses_duplicates(zk: KafkaZkClient) -> None:
    created = zk.create_topic_assignment("orders", {0: [1, 2], 1: [2, 1]}, config={"retention.ms": "1000"})
    assert created.zk_version == 0 and created.topic_id is not None
    assert zk.get_entity_config("topics", "orders") == {"retention.ms": "1000"}
    read = zk.get_topic_assignment("orders")
    assert (
        read is not None and read.partitions == {0: (1, 2), 1: (2, 1)} and read.topic_id == created.topic_id
    )
    with pytest.raises(TopicExistsError, match="already exists"):
        zk.create_topic_assignment("orders", {0: [1]})
    with pytest.raises(TopicExistsError):
        zk.create_topic_assignment("orders", {0: [1]}, validate=False)
    zk.create_topic_assignment("a_b", {0: [1]})
    with pytest.raises(InvalidTopicError, match="collides with existing topics: a_b"):
        zk.create_topic_assignment("a.b", {0: [1]})
    with pytest.raises(InvalidTopicError):
        zk.create_topic_assignment("bad name", {0: [1]})
    with pytest.raises(InvalidReplicaAssignmentError):
        zk.create_topic_assignment("gappy", {0: [1], 2: [1]})
    assert zk.get_all_topics() == ["a_b", "orders"]
    assert zk.get_topic_assignments(["orders", "nope"]).keys() == {"orders"}


def test_create_topic_assignments_writes_each_topic_and_reports_each_failure(zk: KafkaZkClient) -> None:
    """Many topics in pipelined rounds: an existing topic fails alone, and its config is left as
    it was (the config of a topic is written only while its topic znode is absent)."""
    zk.create_topic_assignment("taken", {0: [1]}, config={"retention.ms": "5"})
    batch = [
        NewTopicZNodes("fresh-a", {0: [1, 2], 1: [2, 1]}, {"cleanup.policy": "compact"}),
        NewTopicZNodes("taken", {0: [2]}, {"retention.ms": "999"}),
        NewTopicZNodes("fresh-b", {0: [2]}, {}, topic_id="AAAAAAAAAAAAAAAAAAAAAA"),
    ]
    # a config znode this session may read but not write: that topic fails alone, before its
    # topic znode is written (the controller must never see a topic without its config)
    zk.kazoo.create("/config/topics/locked", b"{}", acl=[make_acl("world", "anyone", read=True)])
    batch.insert(1, NewTopicZNodes("locked", {0: [1]}, {"retention.ms": "1"}))
    results = zk.create_topic_assignments(batch)
    assert isinstance(results["locked"], NoAuthError)
    assert zk.exists(TopicZNode.path("locked")) is None
    assert isinstance(results["taken"], TopicExistsError)
    assert zk.get_entity_config("topics", "taken") == {"retention.ms": "5"}
    assert zk.get_topic_assignment("taken").partitions == {0: (1,)}  # type: ignore[union-attr]
    a, b = results["fresh-a"], results["fresh-b"]
    assert not isinstance(a, Exception) and not isinstance(b, Exception)
    assert (a.zk_version, b.zk_version, b.topic_id) == (0, 0, "AAAAAAAAAAAAAAAAAAAAAA")
    assert zk.get_topic_assignment("fresh-a") == replace(a, zk_version=0)
    assert zk.get_entity_config("topics", "fresh-a") == {"cleanup.policy": "compact"}
    assert zk.get_entity_config("topics", "fresh-b") == {}
    # Kafka's JSON, byte for byte
    assert zk.get_data(TopicZNode.path("fresh-b"))[0] == (  # type: ignore[index]
        b'{"version":3,"partitions":{"0":[2]},"adding_replicas":{},"removing_replicas":{},'
        b'"topic_id":"AAAAAAAAAAAAAAAAAAAAAA"}'
    )
    assert zk.get_data("/config/topics/fresh-b")[0] == b'{"version":1,"config":{}}'  # type: ignore[index]
    # a config znode left over from an earlier topic of the name is overwritten, as setData would
    zk.create("/config/topics/leftover", b'{"version":1,"config":{"retention.ms":"1"}}')
    assert not isinstance(
        zk.create_topic_assignments([NewTopicZNodes("leftover", {0: [1]}, {})])["leftover"], Exception
    )
    assert zk.get_entity_config("topics", "leftover") == {}
    assert zk.create_topic_assignments([]) == {}
    twice = zk.create_topic_assignments(
        [NewTopicZNodes("twice", {0: [1]}, {}), NewTopicZNodes("twice", {0: [2]}, {})]
    )
    assert twice["twice"].partitions == {0: (1,)}  # type: ignore[union-attr]
    assert zk.get_topic_assignment("twice").partitions == {0: (1,)}  # type: ignore[union-attr]


def test_pipelined_creates_and_set_or_creates_give_each_path_its_outcome(zk: KafkaZkClient) -> None:
    zk.create("/many", b"")
    zk.create("/many/there", b"old")
    created = zk.create_many([("/many/new", b"1"), ("/many/there", b"2"), ("/many/deep/er/path", b"3")])
    assert created["/many/new"] == "/many/new" and created["/many/deep/er/path"] == "/many/deep/er/path"
    assert isinstance(created["/many/there"], NodeExistsError)
    assert zk.get_data("/many/there")[0] == b"old"  # type: ignore[index]
    assert zk.get_data("/many/deep/er/path")[0] == b"3"  # type: ignore[index]
    written = zk.set_or_create_many([("/many/there", b"set"), ("/many/absent", b"made"), ("/many/x/y", b"z")])
    assert written == {"/many/there": 1, "/many/absent": 0, "/many/x/y": 0}
    assert [zk.get_data(p)[0] for p in ("/many/there", "/many/absent", "/many/x/y")] == [
        b"set",
        b"made",
        b"z",
    ]  # type: ignore[index]
    assert zk.create_many([]) == {} and zk.set_or_create_many([]) == {}


def test_set_topic_assignment_preserves_topic_id_and_unknown_keys(zk: KafkaZkClient) -> None:
    raw = (
        b'{"version":3,"partitions":{"0":[1]},"adding_replicas":{},"removing_replicas":{},'
        b'"topic_id":"b8tRS7h4TJ2Vt43Dp85v2A","future_field":{"x":[1,2]}}'
    )
    zk.create(TopicZNode.path("t"), raw)
    updated = zk.set_topic_assignment("t", {0: [1], 1: [2]}, adding={1: [2]})
    assert updated.zk_version == 1
    read = zk.get_topic_assignment("t")
    assert read is not None
    assert read.topic_id == "b8tRS7h4TJ2Vt43Dp85v2A" and read.extra == {"future_field": {"x": [1, 2]}}
    assert read.partitions == {0: (1,), 1: (2,)} and read.adding_replicas == {1: (2,)}
    with pytest.raises(ValueError, match="refusing to change it"):
        zk.set_topic_assignment("t", {0: [1]}, topic_id="AAAAAAAAAAAAAAAAAAAAAA")
    with pytest.raises(BadVersionError):
        zk.set_topic_assignment("t", {0: [1]}, expected_version=0)
    with pytest.raises(UnknownTopicError):
        zk.set_topic_assignment("missing", {0: [1]})


def test_topic_id_backfill_of_an_old_topic(zk: KafkaZkClient) -> None:
    zk.create(TopicZNode.path("old"), b'{"version":1,"partitions":{"0":[1]}}')
    _, epoch_zk_version = _controller(zk)
    filled = zk.set_topic_assignment(
        "old", {0: [1]}, topic_id="b8tRS7h4TJ2Vt43Dp85v2A", epoch_zk_version=epoch_zk_version
    )
    assert filled.topic_id == "b8tRS7h4TJ2Vt43Dp85v2A"
    assert zk.get_data(TopicZNode.path("old"))[0] == (  # type: ignore[index]
        b'{"version":3,"partitions":{"0":[1]},"adding_replicas":{},"removing_replicas":{},'
        b'"topic_id":"b8tRS7h4TJ2Vt43Dp85v2A"}'
    )


def test_topic_deletion_flow(zk: KafkaZkClient) -> None:
    with pytest.raises(UnknownTopicError):
        zk.mark_topic_for_deletion("nope")
    zk.create_topic_assignment("doomed", {0: [1], 1: [1]})
    epoch, epoch_zk_version = _controller(zk)
    zk.create_topic_partition_states(
        {
            TopicPartition("doomed", p): LeaderIsrAndControllerEpoch(LeaderAndIsr.initial(1, [1]), epoch)
            for p in (0, 1)
        },
        epoch_zk_version,
    )
    zk.mark_topic_for_deletion("doomed")
    with pytest.raises(TopicAlreadyMarkedForDeletionError):
        zk.mark_topic_for_deletion("doomed")
    assert zk.get_topic_deletions() == ["doomed"] and zk.is_topic_marked_for_deletion("doomed")
    with pytest.raises(TopicExistsError, match=r"marked for deletion|already exists"):
        zk.create_topic_assignment("doomed", {0: [1]})
    zk.delete_topic("doomed", epoch_zk_version)
    assert zk.get_all_topics() == [] and zk.get_topic_deletions() == []
    assert zk.exists("/config/topics/doomed") is None
    zk.delete_topic_deletions(["never-there"], epoch_zk_version)


def test_fenced_recursive_delete_of_a_big_tree(zk: KafkaZkClient, new_client: ClientFactory) -> None:
    _, epoch_zk_version = _controller(zk)
    zk.ensure_path("/big")
    pending = [zk.kazoo.create_async(f"/big/n{i}") for i in range(700)]
    for p in pending:
        p.get()
    zk.ensure_path("/big/n0/deeper/still")
    stale = new_client()
    with pytest.raises(ControllerMovedError):
        stale.fenced_delete_recursive("/big", epoch_zk_version - 1)
    assert zk.exists("/big/n699") is not None
    assert zk.fenced_delete_recursive("/big", epoch_zk_version)
    assert zk.exists("/big") is None
    assert not zk.fenced_delete_recursive("/big", epoch_zk_version)


# -- legacy admin znodes -------------------------------------------------------------------------------


def test_reassignment_and_preferred_election_znodes(zk: KafkaZkClient) -> None:
    tp = TopicPartition("t", 0)
    assert zk.get_partition_reassignment() is None
    zk.create_partition_reassignment({tp: [4, 5, 6]})
    with pytest.raises(AdminOperationInProgressError):
        zk.create_partition_reassignment({tp: [1]})
    assert zk.get_partition_reassignment() == {tp: (4, 5, 6)}
    _, epoch_zk_version = _controller(zk)
    zk.set_or_create_partition_reassignment({tp: (4, 5)}, epoch_zk_version)
    assert zk.get_partition_reassignment() == {tp: (4, 5)}
    assert zk.delete_partition_reassignment(epoch_zk_version)
    zk.set_or_create_partition_reassignment({tp: (1,)}, epoch_zk_version)  # creates it again
    assert zk.delete_partition_reassignment() and not zk.delete_partition_reassignment()

    zk.create_preferred_replica_election([tp, TopicPartition("u", 1)])
    with pytest.raises(AdminOperationInProgressError):
        zk.create_preferred_replica_election([tp])
    assert zk.get_preferred_replica_election() == {tp, TopicPartition("u", 1)}
    assert zk.delete_preferred_replica_election(epoch_zk_version)
    assert zk.get_preferred_replica_election() is None


# -- notifications, config -----------------------------------------------------------------------------


def test_isr_change_and_log_dir_notifications(zk: KafkaZkClient) -> None:
    first = zk.create_isr_change_notification([TopicPartition("a", 0), TopicPartition("b", 1)])
    second = zk.create_isr_change_notification([TopicPartition("a", 0)])
    assert first == "/isr_change_notification/isr_change_0000000000"
    assert second.rsplit("_", 1)[1] == "0000000001"
    names = zk.get_isr_change_notifications()
    assert names == ["isr_change_0000000000", "isr_change_0000000001"]
    zk.create(ISR_CHANGES.root + "/isr_change_9999999999", b"not json")
    everything = zk.get_isr_change_notifications()
    assert zk.get_partitions_from_isr_change_notifications(everything) == {
        TopicPartition("a", 0),
        TopicPartition("b", 1),
    }
    _, epoch_zk_version = _controller(zk)
    zk.delete_isr_change_notifications(names, epoch_zk_version)
    assert zk.get_isr_change_notifications() == ["isr_change_9999999999"]
    zk.delete_isr_change_notifications()
    assert zk.get_isr_change_notifications() == []

    path = zk.create_log_dir_event_notification(3)
    assert path.endswith("log_dir_event_0000000000")
    zk.create_log_dir_event_notification(4)
    assert sorted(zk.get_brokers_from_log_dir_events(zk.get_log_dir_event_notifications())) == [3, 4]
    zk.delete_log_dir_event_notifications(epoch_zk_version=epoch_zk_version)
    assert zk.get_log_dir_event_notifications() == []


def test_entity_config_and_change_notifications(zk: KafkaZkClient) -> None:
    assert zk.get_entity_config("topics", "t") == {}
    path = zk.set_entity_config("topics", "t", {"cleanup.policy": "compact"})
    assert CONFIG_CHANGES.sequence_number(path) == 0
    data, _ = zk.get_data(path)  # type: ignore[misc]
    assert data == b'{"version":2,"entity_path":"topics/t"}'
    assert ConfigEntityChangeNotificationZNode.decode(data, path).entity_path == "topics/t"
    user = config_entity_name("users", "CN=alice smith")
    zk.set_entity_config("users", user, {"producer_byte_rate": "1024"})
    assert zk.get_all_entities("users") == ["CN%3Dalice%20smith"]
    assert zk.get_entity_configs("users", [user, "nobody"]) == {
        user: {"producer_byte_rate": "1024"},
        "nobody": {},
    }
    zk.set_entity_config("users", f"{user}/clients/<default>", {"consumer_byte_rate": "1"})
    assert zk.get_entity_config("users", f"{user}/clients/<default>") == {"consumer_byte_rate": "1"}
    zk.set_entity_config("brokers", "<default>", {"log.cleaner.threads": "2"})
    children = zk.get_notifications(CONFIG_CHANGES)
    assert len(children) == 4
    entity_paths = [
        ConfigEntityChangeNotificationZNode.decode(zk.get_data(CONFIG_CHANGES.path(c))[0], c).entity_path
        for c in children
    ]  # type: ignore[index]
    assert entity_paths == [
        "topics/t",
        f"users/{user}",
        f"users/{user}/clients/<default>",
        "brokers/<default>",
    ]


# -- producer ids, features ----------------------------------------------------------------------------


def test_producer_id_blocks_never_overlap(zk: KafkaZkClient, new_client: ClientFactory) -> None:
    assert zk.allocate_producer_id_block(1) == (0, 999)
    assert zk.allocate_producer_id_block(2) == (1000, 1999)
    clients = [new_client() for _ in range(3)]
    blocks: list[tuple[int, int]] = []
    lock = threading.Lock()

    def run(broker_id: int, client: KafkaZkClient) -> None:
        for _ in range(5):
            block = client.allocate_producer_id_block(broker_id)
            with lock:
                blocks.append(block)

    threads = [threading.Thread(target=run, args=(i, c)) for i, c in enumerate(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sorted(blocks) == [(s, s + 999) for s in range(2000, 17000, 1000)]


def test_feature_znode(zk: KafkaZkClient) -> None:
    assert zk.get_feature() is None
    data = FeatureZNodeData(FeatureZNodeStatus.ENABLED, {"metadata.version": FinalizedFeatureLevel(3)}, 2)
    assert zk.create_feature(data) == 0
    assert zk.get_feature() == FeatureZNodeData(FeatureZNodeStatus.ENABLED, data.features, 2, zk_version=0)
    assert zk.update_feature(FeatureZNodeData(FeatureZNodeStatus.DISABLED, {}, 2), expected_version=0) == 1
    with pytest.raises(BadVersionError):
        zk.update_feature(data, expected_version=0)


# -- old consumer --------------------------------------------------------------------------------------


def test_old_consumer_registration_ownership_and_offsets(
    zk: KafkaZkClient, new_client: ClientFactory
) -> None:
    tp = TopicPartition("t", 0)
    registration = ConsumerRegistration({"t": 2}, SubscriptionPattern.STATIC)
    zk.register_consumer("g", "g_host-1-abc", registration)
    zk.register_consumer("g", "g_host-1-abc", ConsumerRegistration({"t": 3}))  # same session: rewritten
    other = new_client()
    with pytest.raises(NodeOwnedElsewhereError):
        other.register_consumer("g", "g_host-1-abc", registration)
    other.register_consumer("g", "g_host-2-def", registration)
    assert zk.get_consumer_groups() == ["g"]
    assert zk.get_consumer_ids("g") == ["g_host-1-abc", "g_host-2-def"]
    assert zk.get_consumer_registration("g", "g_host-1-abc").subscription == {"t": 3}  # type: ignore[union-attr]
    assert set(zk.get_consumer_registrations("g")) == {"g_host-1-abc", "g_host-2-def"}

    assert zk.claim_partition_owner("g", tp, "g_host-1-abc-0")
    assert zk.claim_partition_owner("g", tp, "g_host-1-abc-0")  # our own claim again
    assert not other.claim_partition_owner("g", tp, "g_host-2-def-0")
    assert other.get_partition_owner("g", tp) == "g_host-1-abc-0"
    assert not zk.release_partition_owner("g", tp, "g_host-2-def-0")
    assert zk.release_partition_owner("g", tp, "g_host-1-abc-0")
    assert other.claim_partition_owner("g", tp, "g_host-2-def-0")
    other.close()
    wait_until(lambda: zk.get_partition_owner("g", tp) is None, what="ephemeral owner to vanish")
    assert zk.get_consumer_ids("g") == ["g_host-1-abc"]

    assert zk.get_consumer_offset("g", tp) is None
    zk.commit_consumer_offset("g", tp, 42)
    zk.commit_consumer_offset("g", tp, 43)
    assert zk.get_consumer_offset("g", tp) == 43
    assert zk.get_data("/consumers/g/offsets/t/0")[0] == b"43"  # type: ignore[index]
    with pytest.raises(ValueError):
        zk.commit_consumer_offset("g", tp, -1)


# -- ACLs ----------------------------------------------------------------------------------------------


def test_acl_updates_and_notifications(zk: KafkaZkClient) -> None:
    zk.create_acl_paths()
    read = AclEntry("User:alice", AclPermissionType.ALLOW, AclOperation.READ, "*")
    write = AclEntry("User:bob", AclPermissionType.DENY, AclOperation.WRITE, "10.0.0.1")
    topic = ResourcePattern(ResourceType.TOPIC, "t")
    assert zk.update_resource_acls(topic, lambda acls: acls | {read}) == {read}
    assert zk.update_resource_acls(topic, lambda acls: acls | {write}) == {read, write}
    versioned = zk.get_versioned_acls(topic)
    assert versioned.acls == {read, write} and versioned.zk_version == 1
    assert zk.conditional_set_acls(topic, {read}, expected_version=0) == (False, -2)
    assert zk.update_resource_acls(topic, lambda acls: frozenset()) == frozenset()
    assert zk.exists("/kafka-acl/Topic/t") is None
    assert len(zk.get_notifications(LITERAL_ACL_CHANGES)) == 3
    first = zk.get_notifications(LITERAL_ACL_CHANGES)[0]
    assert zk.get_data(LITERAL_ACL_CHANGES.path(first))[0] == b"TOPIC:t"  # type: ignore[index]

    prefixed = ResourcePattern(ResourceType.GROUP, "app-", PatternType.PREFIXED)
    zk.update_resource_acls(prefixed, lambda acls: {read})
    assert zk.get_acl_resource_names(PatternType.PREFIXED, ResourceType.GROUP) == ["app-"]
    assert zk.exists("/kafka-acl-extended/prefixed/Group/app-") is not None
    assert zk.get_children("/kafka-acl-extended-changes") == ["acl_changes_0000000000"]


def test_state_znode_written_by_controller_is_byte_exact(zk: KafkaZkClient) -> None:
    epoch, epoch_zk_version = _controller(zk)
    zk.create_topic_assignment("t", {0: [1, 2]})
    tp = TopicPartition("t", 0)
    zk.create_topic_partition_states(
        {tp: LeaderIsrAndControllerEpoch(LeaderAndIsr.initial(1, [1, 2]), epoch)}, epoch_zk_version
    )
    assert zk.get_data(TopicPartitionStateZNode.path(tp))[0] == (  # type: ignore[index]
        b'{"version":1,"leader":1,"leader_epoch":0,"isr":[1,2],"controller_epoch":1}'
    )
