"""Kafka error codes: numbers are protocol facts (Kafka's Errors.java) and must be exact."""

from __future__ import annotations

import pytest

from zkafka.protocol import ErrorCode, KafkaError

pytestmark = pytest.mark.filterwarnings("ignore:(read|open)_text is deprecated:DeprecationWarning")

KNOWN = {
    "UNKNOWN_SERVER_ERROR": -1, "NONE": 0, "OFFSET_OUT_OF_RANGE": 1, "CORRUPT_MESSAGE": 2,
    "UNKNOWN_TOPIC_OR_PARTITION": 3, "LEADER_NOT_AVAILABLE": 5, "NOT_LEADER_OR_FOLLOWER": 6,
    "REQUEST_TIMED_OUT": 7, "MESSAGE_TOO_LARGE": 10, "STALE_CONTROLLER_EPOCH": 11, "NOT_COORDINATOR": 16,
    "INVALID_TOPIC_EXCEPTION": 17, "NOT_ENOUGH_REPLICAS": 19, "NOT_ENOUGH_REPLICAS_AFTER_APPEND": 20,
    "ILLEGAL_GENERATION": 22, "UNKNOWN_MEMBER_ID": 25, "REBALANCE_IN_PROGRESS": 27,
    "UNSUPPORTED_VERSION": 35, "TOPIC_ALREADY_EXISTS": 36, "INVALID_PARTITIONS": 37,
    "INVALID_REPLICATION_FACTOR": 38, "NOT_CONTROLLER": 41, "INVALID_REQUEST": 42,
    "OUT_OF_ORDER_SEQUENCE_NUMBER": 45, "DUPLICATE_SEQUENCE_NUMBER": 46, "INVALID_PRODUCER_EPOCH": 47,
    "UNKNOWN_PRODUCER_ID": 59, "GROUP_ID_NOT_FOUND": 69, "FENCED_LEADER_EPOCH": 74,
    "UNKNOWN_LEADER_EPOCH": 75, "UNSUPPORTED_COMPRESSION_TYPE": 76, "STALE_BROKER_EPOCH": 77,
    "OFFSET_NOT_AVAILABLE": 78, "MEMBER_ID_REQUIRED": 79, "FENCED_INSTANCE_ID": 82,
    "GROUP_SUBSCRIBED_TO_TOPIC": 86, "INVALID_RECORD": 87, "UNKNOWN_TOPIC_ID": 100,
    "UNKNOWN_CONTROLLER_ID": 116,
}  # fmt: skip


@pytest.mark.parametrize(("name", "code"), sorted(KNOWN.items(), key=lambda kv: kv[1]))
def test_known_codes(name: str, code: int) -> None:
    assert ErrorCode[name] == code


def test_codes_are_contiguous_from_minus_one() -> None:
    assert [int(c) for c in ErrorCode] == list(range(-1, 128))


def test_names_agree_with_kafka_python() -> None:
    """An independent list of the same protocol facts (kafka-python names a few differently)."""
    import inspect

    import kafka.errors

    renamed = {10: "MESSAGE_SIZE_TOO_LARGE", 6: "NOT_LEADER_FOR_PARTITION", 17: "INVALID_TOPIC",
               -1: "UNKNOWN", 0: "NO_ERROR", 39: "INVALID_REPLICATION_ASSIGNMENT"}  # fmt: skip
    theirs = {
        cls.errno: cls.message
        for _, cls in inspect.getmembers(kafka.errors, inspect.isclass)
        if isinstance(getattr(cls, "errno", None), int)
    }
    for code in ErrorCode:
        assert theirs[int(code)] == renamed.get(int(code), code.name), code


def test_retriable_flags() -> None:
    retriable = {c for c in ErrorCode if c.retriable}
    assert {
        ErrorCode.CORRUPT_MESSAGE,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.LEADER_NOT_AVAILABLE,
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.REQUEST_TIMED_OUT,
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ErrorCode.NOT_COORDINATOR,
        ErrorCode.NOT_ENOUGH_REPLICAS,
        ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
        ErrorCode.NOT_CONTROLLER,
        ErrorCode.FENCED_LEADER_EPOCH,
        ErrorCode.UNKNOWN_LEADER_EPOCH,
        ErrorCode.OFFSET_NOT_AVAILABLE,
    } <= retriable
    for fatal in (ErrorCode.NONE, ErrorCode.UNSUPPORTED_VERSION, ErrorCode.TOPIC_ALREADY_EXISTS,
                  ErrorCode.INVALID_PRODUCER_EPOCH, ErrorCode.REBALANCE_IN_PROGRESS):  # fmt: skip
        assert not fatal.retriable


def test_every_error_has_a_message() -> None:
    assert all(code.message for code in ErrorCode if code != ErrorCode.NONE)


def test_kafka_error() -> None:
    err = KafkaError(ErrorCode.NOT_LEADER_OR_FOLLOWER)
    assert err.code is ErrorCode.NOT_LEADER_OR_FOLLOWER and err.retriable
    assert "NOT_LEADER_OR_FOLLOWER (6)" in str(err)
    custom = KafkaError(36, "topic t exists")
    assert custom.code is ErrorCode.TOPIC_ALREADY_EXISTS and custom.message == "topic t exists"
    unknown = KafkaError(4242)
    assert unknown.code is ErrorCode.UNKNOWN_SERVER_ERROR and unknown.raw_code == 4242
    assert ErrorCode.lookup(-5) is ErrorCode.UNKNOWN_SERVER_ERROR
