"""Plural reads decode znode by znode: one bad znode is reported once and read as absent (issue 11)."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from zkafka.zk.client import KafkaZkClient
from zkafka.zk.model import (
    BrokerInfo,
    ConfigType,
    EndPoint,
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    LeaderRecoveryState,
    SecurityProtocol,
    TopicPartition,
)
from zkafka.zk.znodes import BrokerIdZNode, ConfigEntityZNode, TopicPartitionStateZNode, TopicZNode

GARBAGE = b"{not json"


@pytest.fixture
def zk(zk_connect: str) -> Iterator[KafkaZkClient]:
    client = KafkaZkClient(zk_connect)
    client.create_top_level_paths()
    yield client
    client.close()


def _broker(broker_id: int) -> BrokerInfo:
    endpoint = EndPoint("PLAINTEXT", "127.0.0.1", 9092 + broker_id, SecurityProtocol.PLAINTEXT)
    return BrokerInfo(broker_id, (endpoint,))


def _bad_lines(caplog: pytest.LogCaptureFixture, path: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if f"znode {path} does not decode" in r.getMessage()]


def test_a_bad_registration_leaves_the_other_brokers_readable(
    zk: KafkaZkClient, caplog: pytest.LogCaptureFixture
) -> None:
    for b in (1, 2, 3):
        zk.register_broker(_broker(b))
    zk.set_data(BrokerIdZNode.path(2), GARBAGE)
    with caplog.at_level(logging.WARNING, logger="zkafka.zk.bad_znodes"):
        for _ in range(3):
            assert sorted(zk.get_all_brokers_and_epochs()) == [1, 3]
        assert zk.get_broker(2) is None
    lines = _bad_lines(caplog, BrokerIdZNode.path(2))
    assert len(lines) == 1, lines  # read four times, reported once
    assert "b'{not json'" in lines[0] and "not live" in lines[0]
    assert [b.path for b in zk.bad_znodes.current()] == [BrokerIdZNode.path(2)]
    assert zk.bad_znodes.decode_failures == 4

    # Other bad content at the same path is reported again; good content clears it.
    zk.set_data(BrokerIdZNode.path(2), b'{"version":5}')
    with caplog.at_level(logging.WARNING, logger="zkafka.zk.bad_znodes"):
        zk.get_all_brokers_and_epochs()
    assert len(_bad_lines(caplog, BrokerIdZNode.path(2))) == 2
    zk.set_data(BrokerIdZNode.path(2), BrokerIdZNode.encode(_broker(2)))
    assert sorted(zk.get_all_brokers_and_epochs()) == [1, 2, 3]
    assert zk.bad_znodes.current() == []


def test_bad_partition_states_topics_and_configs_are_left_out(zk: KafkaZkClient) -> None:
    zk.create_topic_assignment("good", {0: [1], 1: [1]})
    zk.create_topic_assignment("bad", {0: [1]})
    state = LeaderIsrAndControllerEpoch(LeaderAndIsr(1, 0, (1,)), 1)
    tps = [TopicPartition("good", 0), TopicPartition("good", 1)]
    _epoch, epoch_zk_version = zk.register_controller_and_increment_epoch(1)
    zk.create_topic_partition_states(dict.fromkeys(tps, state), epoch_zk_version)
    zk.set_data(TopicPartitionStateZNode.path(tps[1]), b"\xff\xfe")
    zk.set_data(TopicZNode.path("bad"), b"[]")
    zk.set_data(ConfigEntityZNode.path(ConfigType.TOPIC, "bad"), b'{"version":1,"config":7}')

    assert set(zk.get_partition_states(tps)) == {tps[0]}
    assert zk.get_partition_state(tps[1]) is None
    assert set(zk.get_topic_assignments(["good", "bad"])) == {"good"}
    assert zk.get_entity_configs(ConfigType.TOPIC, ["good", "bad"]) == {"good": {}, "bad": {}}
    assert len(zk.bad_znodes.current()) == 3


def test_an_unreadable_controller_znode_reads_as_an_unknown_controller(zk: KafkaZkClient) -> None:
    assert zk.get_controller_id() is None
    zk.create("/controller", GARBAGE, ephemeral=True)
    assert zk.get_controller_id() == -1


def test_state_znodes_read_in_bulk_decode_each_as_alone_and_bad_ones_are_left_out(
    zk: KafkaZkClient,
) -> None:
    """Enough partitions for multiRead, every one in the layout zkafka or Kafka writes except a
    few written otherwise: those still decode (through the strict decoder) or are left out, one
    by one, and the rest is read whatever they hold."""
    n = 1500
    tps = [TopicPartition("many", p) for p in range(n)]
    zk.create_topic_assignment("many", {p: [1, 2] for p in range(n)})
    _epoch, epoch_zk_version = zk.register_controller_and_increment_epoch(1)
    initial = LeaderIsrAndControllerEpoch(LeaderAndIsr.initial(1, [1, 2]), 1)
    zk.create_topic_partition_states(dict.fromkeys(tps, initial), epoch_zk_version)
    written = {
        tps[1]: b'{"controller_epoch":5,"leader":2,"version":1,"leader_epoch":3,"isr":[2]}',
        tps[2]: b'{"version": 1, "leader": 2, "leader_epoch": 3, "isr": [2, 1], "controller_epoch": 5}',
        tps[3]: b'{"version":1,"leader":2,"leader_epoch":3,"isr":[2],"controller_epoch":5,'
        b'"leader_recovery_state":1}',
        tps[700]: GARBAGE,
        tps[701]: b'{"version":1,"leader":2147483648,"leader_epoch":3,"isr":[2],"controller_epoch":5}',
        tps[702]: b'{"version":1,"leader":02,"leader_epoch":3,"isr":[2],"controller_epoch":5}',
        tps[1499]: b"",
    }
    for tp, data in written.items():
        zk.set_data(TopicPartitionStateZNode.path(tp), data)
    zk.delete(TopicPartitionStateZNode.path(tps[1200]))

    states = zk.get_partition_states(tps)

    bad = {tps[700], tps[701], tps[702], tps[1499], tps[1200]}
    assert set(states) == set(tps) - bad
    for tp in tps[:4] + tps[1000:1003]:
        found = zk.get_data(TopicPartitionStateZNode.path(tp))
        assert found is not None
        path = TopicPartitionStateZNode.path(tp)
        assert states[tp] == TopicPartitionStateZNode.decode_strict(found[0], path, found[1])
    assert states[tps[1]].leader_and_isr == LeaderAndIsr(2, 3, (2,), zk_version=1)
    assert states[tps[3]].leader_and_isr.leader_recovery_state is LeaderRecoveryState.RECOVERING
    assert states[tps[0]] == initial
    assert {b.path for b in zk.bad_znodes.current()} == {
        TopicPartitionStateZNode.path(tp) for tp in bad - {tps[1200]}
    }
