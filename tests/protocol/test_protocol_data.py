"""Data schemas that are not APIs (Kafka's "type": "data" specs: the `__consumer_offsets` keys
and values, the ConsumerProtocol blobs): every version of each survives encode -> decode through
the same codegen as the APIs, bad bytes end in DecodeError only, and the ConsumerProtocol bodies
match kafka-python's own schema-driven codec (built from Kafka's JSON) byte for byte."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from protocol_strategies import struct_strategy

from zkafka.protocol import DecodeError, EncodeError
from zkafka.protocol.codec import decode_data, encode_data
from zkafka.protocol.groups.consumer_protocol import (
    Assignment,
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from zkafka.protocol.messages.data import DATA_CLASSES
from zkafka.protocol.schema import SpecError, Versions, data
from zkafka.protocol.schemas.data import DATA_SPECS

CASES = [
    (name, v) for name, spec in DATA_SPECS.items() for v in range(spec.versions.low, spec.versions.high + 1)
]
IDS = [f"{name}-v{v}" for name, v in CASES]


def test_the_data_schemas_are_kafkas() -> None:
    versions = {name: str(spec.versions) for name, spec in DATA_SPECS.items()}
    assert versions == {
        "OffsetCommitKey": "0-1",
        "GroupMetadataKey": "2",
        "OffsetCommitValue": "0-4",
        "GroupMetadataValue": "0-4",
        "ConsumerProtocolSubscription": "0-3",
        "ConsumerProtocolAssignment": "0-3",
        "TransactionLogKey": "0",
        "TransactionLogValue": "0-1",
    }
    flexible = {name: spec.flexible.low for name, spec in DATA_SPECS.items() if not spec.flexible.empty}
    assert flexible == {"OffsetCommitValue": 4, "GroupMetadataValue": 4, "TransactionLogValue": 1}
    assert set(DATA_CLASSES) == set(DATA_SPECS)
    assert all(DATA_CLASSES[n].KIND == "data" and n == DATA_CLASSES[n].API_NAME for n in DATA_CLASSES)


@pytest.mark.parametrize(("name", "version"), CASES, ids=IDS)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_round_trip_every_version(name: str, version: int, data: st.DataObject) -> None:
    cls = DATA_CLASSES[name]
    message = data.draw(struct_strategy(DATA_SPECS[name].body, cls, version, cls))
    body = encode_data(message, version)
    decoded, end = decode_data(name, version, body)
    assert decoded == message
    assert end == len(body)
    assert encode_data(decoded, version) == body
    # a body may be followed by other bytes: the decoder says where it ended
    again, end = decode_data(name, version, b"\x07" + body + b"tail", 1)
    assert again == message and end == len(body) + 1


@pytest.mark.parametrize(("name", "version"), CASES, ids=IDS)
@settings(max_examples=60, deadline=None)
@given(blob=st.binary(max_size=48))
def test_garbage_raises_only_decode_error(name: str, version: int, blob: bytes) -> None:
    try:
        decode_data(name, version, blob)
    except DecodeError:
        pass


def test_encode_errors_and_unknown_versions() -> None:
    cls = DATA_CLASSES["OffsetCommitKey"]
    with pytest.raises(EncodeError, match="group"):
        encode_data(cls(group=None), 1)  # type: ignore[arg-type]
    with pytest.raises(EncodeError):
        encode_data(cls(), 2)
    with pytest.raises(DecodeError):
        decode_data("OffsetCommitKey", 2, b"")


def test_data_specs_are_validated() -> None:
    from zkafka.protocol.schema import F

    with pytest.raises(SpecError):
        data("Bad", versions="0", flexible="none", fields=[F("a", "int32"), F("a", "int32")])
    spec = data("Ok", versions="0-1", flexible="1+", fields=[F("a", "int32")])
    assert spec.kinds == ("data",) and spec.is_flexible(1) and not spec.is_flexible(0)
    assert spec.versions == Versions(0, 1) and spec.message_name() == "Ok"


# -- kafka-python's ConsumerProtocol data classes as an independent oracle ----------------------------

topics = st.lists(st.text(max_size=6), max_size=3)
parts = st.dictionaries(
    st.text(max_size=6), st.lists(st.integers(0, 2**31 - 1), max_size=3).map(tuple), max_size=3
)
user_data = st.one_of(st.none(), st.binary(max_size=8))


@settings(max_examples=80, deadline=None)
@given(
    st.integers(0, 3),
    topics,
    user_data,
    parts,
    st.integers(-(2**31), 2**31 - 1),
    st.one_of(st.none(), st.text(max_size=5)),
)
def test_subscription_matches_kafka_python(version, ts, ud, owned, generation, rack) -> None:  # type: ignore[no-untyped-def]
    from kafka.protocol.consumer.metadata import ConsumerProtocolSubscription as Theirs

    sub = Subscription(
        tuple(ts),
        ud,
        owned if version >= 1 else {},
        generation if version >= 2 else -1,
        version,
        rack if version >= 3 else None,
    )
    ours = encode_subscription(sub)
    theirs = Theirs(
        version=version,
        topics=list(ts),
        user_data=ud,
        owned_partitions=[
            Theirs.TopicPartition(topic=t, partitions=list(p)) for t, p in sub.owned_partitions.items()
        ],
        generation_id=sub.generation,
        rack_id=sub.rack_id,
    ).encode()
    assert ours == theirs
    back = Theirs.decode(ours)
    assert (back.topics, back.user_data, back.generation_id, back.rack_id) == (
        list(ts),
        ud,
        sub.generation,
        sub.rack_id,
    )
    assert decode_subscription(theirs) == sub


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 3), parts, user_data)
def test_assignment_matches_kafka_python(version, assigned, ud) -> None:  # type: ignore[no-untyped-def]
    from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment as Theirs

    ours = encode_assignment(Assignment(assigned, ud, version))
    theirs = Theirs(
        version=version,
        assigned_partitions=[Theirs.TopicPartition(topic=t, partitions=list(p)) for t, p in assigned.items()],
        user_data=ud,
    ).encode()
    assert ours == theirs
    back = Theirs.decode(ours)
    assert {tp.topic: tuple(tp.partitions) for tp in back.assigned_partitions} == assigned
    assert decode_assignment(theirs) == Assignment(assigned, ud, version)
