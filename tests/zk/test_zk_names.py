"""Connect strings, topic-name rules and Kafka's entity-name sanitizer (no ZooKeeper needed)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zkafka.zk.connect import ConnectString, parse_connect_string
from zkafka.zk.errors import InvalidReplicaAssignmentError, InvalidTopicError, TopicExistsError
from zkafka.zk.model import validate_replica_assignment
from zkafka.zk.sanitizer import desanitize, sanitize
from zkafka.zk.topic_names import (
    MAX_TOPIC_NAME_LENGTH,
    check_topic_creatable,
    colliding_topics,
    has_collision_chars,
    is_internal_topic,
    is_valid_topic_name,
    unify_collision_chars,
    validate_topic_name,
)

# -- connect strings -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "hosts", "chroot"),
    [
        ("127.0.0.1:2181", "127.0.0.1:2181", None),
        ("zk1:2181,zk2:2182,zk3:2183/kafka", "zk1:2181,zk2:2182,zk3:2183", "/kafka"),
        ("zk1:2181/kafka/prod", "zk1:2181", "/kafka/prod"),
        ("zk1:2181/", "zk1:2181", None),
        ("zk1", "zk1", None),
        ("[::1]:2181/k", "[::1]:2181", "/k"),
    ],
)
def test_parse_connect_string(text: str, hosts: str, chroot: str | None) -> None:
    parsed = parse_connect_string(text)
    assert parsed == ConnectString(hosts, chroot)
    assert str(parsed) == hosts + (chroot or "")


def test_host_ports() -> None:
    assert parse_connect_string("a:1,b,[::1]:3/x").host_ports == [("a", 1), ("b", 2181), ("::1", 3)]


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "empty"),
        ("/kafka", "no hosts before the chroot"),
        ("zk1:2181/kafka,zk2:2181", "only once, after the whole host list"),
        ("zk1:2181/kafka,zk2:2181/kafka", "only once, after the whole host list"),
        ("zk1:2181,,zk2:2181", "empty host entry"),
        ("zk1:abc", "bad host entry"),
        ("zk1:70000", "out of range"),
        ("zk1:2181/kafka/", "must not end with '/'"),
        ("zk1:2181//kafka", "empty segment"),
        ("zk1:2181/kafka/../x", "relative segment"),
        ("zk1:2181 /kafka", "whitespace"),
        ("zk1:2181/ka\x01fka", "invalid character"),
    ],
)
def test_bad_connect_strings(text: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem.replace("(", r"\(")):
        parse_connect_string(text)


# -- topic names -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "valid"),
    [
        ("orders", True),
        ("a.b_c-D9", True),
        ("_", True),
        ("...", True),
        ("x" * 249, True),
        ("x" * 250, False),
        ("", False),
        (".", False),
        ("..", False),
        ("a b", False),
        ("a/b", False),
        ("a:b", False),
        ("ü", False),
        ("a\nb", False),
    ],
)
def test_topic_name_validity(name: str, valid: bool) -> None:
    assert is_valid_topic_name(name) is valid
    if not valid:
        with pytest.raises(InvalidTopicError):
            validate_topic_name(name)


def test_topic_name_messages() -> None:
    with pytest.raises(InvalidTopicError, match="can't be empty"):
        validate_topic_name("")
    with pytest.raises(InvalidTopicError, match=f"longer than {MAX_TOPIC_NAME_LENGTH} characters"):
        validate_topic_name("y" * 250)
    with pytest.raises(InvalidTopicError, match=r"found ' ', '/'"):
        validate_topic_name("a b/c")


def test_collisions() -> None:
    assert has_collision_chars("a.b") and has_collision_chars("a_b") and not has_collision_chars("ab")
    assert unify_collision_chars("a.b_c") == "a_b_c"
    assert colliding_topics("a.b", ["a_b", "a.b", "c"]) == ["a_b"]
    assert colliding_topics("ab", ["ab"]) == []


@pytest.mark.parametrize(
    ("name", "existing", "deleting", "error", "message"),
    [
        ("a.b", ["a_b"], [], InvalidTopicError, "collides with existing topics: a_b"),
        ("a_b", ["x", "a.b"], [], InvalidTopicError, "collides with existing topics: a.b"),
        ("a.b", ["a.b", "a_b"], [], TopicExistsError, "already exists"),
        ("t", ["t"], [], TopicExistsError, "already exists"),
        ("t", [], ["t"], TopicExistsError, "marked for deletion"),
        ("__consumer_offsets", [], [], InvalidTopicError, "internal topic"),
        ("__cluster_metadata", [], [], InvalidTopicError, "reserved"),
        ("bad name", [], [], InvalidTopicError, "illegal"),
    ],
)
def test_check_topic_creatable(
    name: str, existing: list[str], deleting: list[str], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        check_topic_creatable(name, existing, marked_for_deletion=deleting)


def test_internal_topics() -> None:
    assert is_internal_topic("__consumer_offsets") and is_internal_topic("__transaction_state")
    assert not is_internal_topic("__cluster_metadata") and not is_internal_topic("orders")
    check_topic_creatable("__transaction_state", [], allow_internal=True)
    check_topic_creatable("ok.name", ["ok-name", "other"])


@pytest.mark.parametrize(
    ("assignment", "message"),
    [
        ({}, "at least one partition"),
        ({1: [1]}, "numbered consecutively from 0"),
        ({0: [1, 2], 1: [1]}, "same replication factor"),
        ({0: [1, 1]}, "lists a broker twice"),
        ({0: []}, "has no replicas"),
        ({0: [-1]}, "invalid broker id"),
    ],
)
def test_replica_assignment_rules(assignment: dict[int, list[int]], message: str) -> None:
    with pytest.raises(InvalidReplicaAssignmentError, match=message):
        validate_replica_assignment(assignment)


# -- sanitizer ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "sanitized"),
    [
        ("alice", "alice"),
        ("User:alice", "User%3Aalice"),
        ("user 1", "user%201"),
        ("a*b", "a%2Ab"),
        ("a+b", "a%2Bb"),
        ("a~b", "a%7Eb"),
        ("a.b-c_d", "a.b-c_d"),
        ("ü", "%C3%BC"),
        ("CN=x,OU=y", "CN%3Dx%2COU%3Dy"),
    ],
)
def test_sanitize_like_kafka(raw: str, sanitized: str) -> None:
    assert sanitize(raw) == sanitized
    assert desanitize(sanitized) == raw


def test_desanitize_accepts_plus_as_space_and_refuses_garbage() -> None:
    assert desanitize("a+b") == "a b"
    with pytest.raises(ValueError):
        desanitize("a%zz")
    with pytest.raises(ValueError):
        desanitize("a/b")
    with pytest.raises(ValueError):
        desanitize("%ff")


@settings(max_examples=200, deadline=None)
@given(st.text(st.characters(exclude_categories=("Cs",))))
def test_sanitize_round_trip(name: str) -> None:
    encoded = sanitize(name)
    assert all(c.isascii() and (c.isalnum() or c in "._-%") for c in encoded)
    assert desanitize(encoded) == name
