"""`zkafka reassign-partitions` and `zkafka leader-election` without brokers: JSON parsing and
validation, the --generate placement, the election report, and argument errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zkafka.admin.reassignment import (
    PlanError,
    format_plan,
    parse_broker_list,
    parse_reassignment_plan,
    parse_topics_to_move,
    propose_assignment,
)
from zkafka.cli.errors import CliError
from zkafka.cli.leader_election import classify, parse_partitions_json
from zkafka.cli.main import main
from zkafka.local.zookeeper import ZooKeeperServer
from zkafka.testing.zookeeper import chrooted
from zkafka.zk.model import LeaderAndIsr, LeaderIsrAndControllerEpoch, TopicPartition


def test_plan_round_trips_through_kafkas_json() -> None:
    plan = {TopicPartition("b", 1): (3, 1), TopicPartition("a", 0): (1, 2, 3)}
    text = format_plan(plan)
    assert json.loads(text) == {
        "version": 1,
        "partitions": [
            {"topic": "a", "partition": 0, "replicas": [1, 2, 3], "log_dirs": ["any", "any", "any"]},
            {"topic": "b", "partition": 1, "replicas": [3, 1], "log_dirs": ["any", "any"]},
        ],
    }
    assert parse_reassignment_plan(text) == plan
    # log_dirs is optional (as the legacy tool's files)
    assert parse_reassignment_plan('{"partitions":[{"topic":"a","partition":0,"replicas":[2]}]}') == {
        TopicPartition("a", 0): (2,)
    }


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("not json", "not valid JSON"),
        ("[]", "must be a JSON object"),
        ('{"version":2,"partitions":[]}', "unsupported version"),
        ('{"version":1,"partitions":[]}', "cannot be empty"),
        ('{"partitions":{}}', "must be a JSON list"),
        ('{"partitions":[{"partition":0,"replicas":[1]}]}', 'no "topic"'),
        ('{"partitions":[{"topic":"a","partition":"0","replicas":[1]}]}', "must be an integer"),
        ('{"partitions":[{"topic":"a","partition":-1,"replicas":[1]}]}', "cannot be negative"),
        ('{"partitions":[{"topic":"a","partition":0,"replicas":[]}]}', "cannot be empty"),
        ('{"partitions":[{"topic":"a","partition":0,"replicas":[1,1]}]}', "duplicate entries"),
        ('{"partitions":[{"topic":"a","partition":0,"replicas":[1,-2]}]}', "cannot be negative"),
        ('{"partitions":[{"topic":"a","partition":0,"replicas":[1],"log_dirs":["any","any"]}]}', "differs"),
        ('{"partitions":[{"topic":"a","partition":0,"replicas":[1],"log_dirs":["/d"]}]}', '"any"'),
        (
            '{"partitions":[{"topic":"a","partition":0,"replicas":[1]},{"topic":"a","partition":0,"replicas":[2]}]}',
            "duplicate topic partitions: a-0",
        ),
    ],
)
def test_bad_plans_are_refused_with_a_reason(text: str, message: str) -> None:
    with pytest.raises(PlanError, match=message):
        parse_reassignment_plan(text)


def test_topics_and_broker_lists() -> None:
    assert parse_topics_to_move('{"version":1,"topics":[{"topic":"x"},{"topic":"y"}]}') == ["x", "y"]
    for bad, message in (
        ('{"topics":[]}', "no topics"),
        ('{"topics":[{"topic":"x"},{"topic":"x"}]}', "duplicate entries: x"),
        ('{"topics":[{"name":"x"}]}', '"topic" name'),
    ):
        with pytest.raises(PlanError, match=message):
            parse_topics_to_move(bad)
    assert parse_broker_list("3,1,2") == [3, 1, 2]
    for bad in ("", "1,x", "1,1", "-1"):
        with pytest.raises(PlanError):
            parse_broker_list(bad)


@settings(max_examples=100, deadline=None)
@given(
    brokers=st.sets(st.integers(0, 20), min_size=1, max_size=6),
    partitions=st.integers(1, 12),
    data=st.data(),
)
def test_generate_keeps_partition_counts_and_replication_factors(
    brokers: set[int], partitions: int, data: st.DataObject
) -> None:
    rf = data.draw(st.integers(1, len(brokers)))
    current = {TopicPartition("t", p): tuple(range(100, 100 + rf)) for p in range(partitions)}
    proposal = propose_assignment(current, dict.fromkeys(brokers))
    assert set(proposal) == set(current)
    for replicas in proposal.values():
        assert len(replicas) == rf and len(set(replicas)) == rf and set(replicas) <= brokers
    leaders = [r[0] for r in proposal.values()]
    assert max(leaders.count(b) for b in brokers) - min(leaders.count(b) for b in brokers) <= 1 or (
        partitions < len(brokers)
    )


def test_generate_needs_racks_on_all_brokers_or_none() -> None:
    current = {TopicPartition("t", 0): (1, 2)}
    with pytest.raises(PlanError, match="--disable-rack-aware"):
        propose_assignment(current, {1: "r1", 2: None})
    assert set(propose_assignment(current, {1: "r1", 2: None}, rack_aware=False)[TopicPartition("t", 0)]) == {
        1,
        2,
    }
    with pytest.raises(PlanError, match="cannot place topic t"):
        propose_assignment({TopicPartition("t", 0): (1, 2, 3)}, {1: None, 2: None})


def _state(leader: int, isr: tuple[int, ...]) -> LeaderIsrAndControllerEpoch:
    return LeaderIsrAndControllerEpoch(LeaderAndIsr(leader, 3, isr), 1)


def test_election_report_classifies_partitions() -> None:
    a, b, c, d, e = (TopicPartition("t", p) for p in range(5))
    replicas = {a: (1, 2), b: (2, 1), c: (3, 1), d: (1, 3)}
    before = {a: _state(2, (1, 2)), b: _state(2, (2, 1)), c: _state(1, (1,)), d: _state(3, (3,))}
    after = {a: _state(1, (1, 2)), b: _state(2, (2, 1)), c: _state(1, (1,)), d: _state(3, (3,))}
    outcome = classify([a, b, c, d, e], replicas, before, after, live_brokers={1, 2})
    assert outcome.elected == [a] and outcome.already == [b]
    assert "not alive" in outcome.failed[c] and "not in the ISR" in outcome.failed[d]
    assert outcome.failed[e].startswith("UNKNOWN_TOPIC_OR_PARTITION")


def test_partitions_json() -> None:
    assert parse_partitions_json('{"partitions":[{"topic":"t","partition":1}]}') == [TopicPartition("t", 1)]
    for bad in ("{", "{}", '{"partitions":[]}', '{"partitions":[{"topic":"t"}]}', '{"partitions":[1]}'):
        with pytest.raises(CliError):
            parse_partitions_json(bad)
    with pytest.raises(CliError, match="duplicate partitions: t-1"):
        parse_partitions_json('{"partitions":[{"topic":"t","partition":1},{"topic":"t","partition":1}]}')


def test_argument_errors(
    tmp_path: Path, zookeeper_server: ZooKeeperServer, capsys: pytest.CaptureFixture[str]
) -> None:
    plan = tmp_path / "plan.json"
    plan.write_text('{"partitions":[{"topic":"t","partition":0,"replicas":[1]}]}')
    with chrooted(zookeeper_server) as empty:  # a ZooKeeper without a cluster in it
        reassign = ["reassign-partitions", "--zookeeper", empty]
        elect = ["leader-election", "--zookeeper", empty, "--election-type"]
        with_plan = ["--reassignment-json-file", str(plan)]
        cases = [
            ([*reassign, "--generate", "--broker-list", "1"], "needs"),
            ([*reassign, "--verify", *with_plan, "--wait"], "--wait is only valid with --execute"),
            ([*reassign, "--execute", *with_plan, "--broker-list", "1"], "only valid with --generate"),
            ([*reassign, "--verify", "--reassignment-json-file", str(tmp_path / "nope.json")], "cannot read"),
            (
                ["reassign-partitions", "--zookeeper", empty + "/void", "--verify", *with_plan],
                "no Kafka cluster",
            ),
            ([*elect, "preferred", "--topic", "t"], "together"),
            ([*elect, "unclean", "--all-topic-partitions"], "ElectLeaders"),
        ]
        for args, message in cases:
            assert main(args) == 1, args
            assert message in capsys.readouterr().err, args
