"""kafka-python 3.0.12 as an independent oracle for every (api, kind, version) it implements.

kafka-python's codec is driven by Kafka's own JSON message definitions, ours by zkafka's specs,
so agreement on bytes is agreement on the protocol. For random messages this checks:

1. the same message built in both libraries encodes to identical bytes;
2. kafka-python decodes our bytes to the same field values;
3. we decode kafka-python's bytes back to the original message.

APIs kafka-python does not implement (the controller-to-broker ones, removed from Kafka 4's
JSON) are covered by the round-trip and golden-bytes tests only.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from protocol_strategies import message_strategy

from zkafka.protocol import decode_body, encode_body
from zkafka.protocol.message import Message
from zkafka.protocol.schema import ArrayOf, Field, Struct, scalar_default
from zkafka.protocol.schemas import SPECS

kafka_protocol = pytest.importorskip("kafka.protocol")

from kafka.protocol import admin, consumer, metadata, producer, sasl  # noqa: E402
from kafka.protocol.api_message import ApiMessage  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:(read|open)_text is deprecated:DeprecationWarning")

INT32_MIN = -(2**31)

# kafka-python re-types these int32 fields as bit sets and, for Metadata, renames them.
BITFIELDS: dict[tuple[int, str, str], str] = {
    (3, "response", "cluster_authorized_operations"): "authorized_operations",
    (3, "response", "topic_authorized_operations"): "authorized_operations",
    (15, "response", "authorized_operations"): "authorized_operations",
    (60, "response", "cluster_authorized_operations"): "authorized_operations",
}


def _kafka_python_classes() -> dict[tuple[int, str], type]:
    found: dict[tuple[int, str], type] = {}
    for module in (admin, consumer, metadata, producer, sasl):
        for name in dir(module):
            obj = getattr(module, name)
            if isinstance(obj, type) and issubclass(obj, ApiMessage) and obj is not ApiMessage:
                found[(obj.API_KEY, obj.type)] = obj
    return found


KP = _kafka_python_classes()
CASES = sorted((key, kind) for key in SPECS for kind in ("request", "response") if (key, kind) in KP)


def _kp_max(key: int, kind: str) -> int:
    return min(KP[(key, kind)].max_version, SPECS[key].versions.high)


def _bits(value: int) -> set[int]:
    return {i for i in range(32) if (value & 0xFFFFFFFF) >> i & 1}


def _from_bits(bits: set[int] | None) -> int:
    if bits is None:
        return INT32_MIN
    value = sum(1 << b for b in bits)
    return value - (1 << 32) if value & 0x80000000 else value


def _kp_name(key: int, kind: str, name: str) -> str:
    return BITFIELDS.get((key, kind, name), name)


def _is_default(f: Field, value: Any) -> bool:
    if f.is_array:
        return value is None if f.default_is_null else value == []
    if isinstance(f.type, Struct):
        return all(_is_default(sub, getattr(value, sub.name)) for sub in f.type.fields)
    return value == scalar_default(f)


def to_kafka_python(
    key: int, kind: str, fields: tuple[Field, ...], ours: Message, kp_cls: type, version: int, top: bool
) -> Any:
    kwargs: dict[str, Any] = {}
    kp_fields = kp_cls._struct.fields
    for f in fields:
        if not f.present_in(version):
            continue
        value = getattr(ours, f.name)
        if f.tagged_in(version) and _is_default(f, value):
            continue  # neither side writes a tagged field that holds its default
        name = _kp_name(key, kind, f.name)
        kp_field = kp_fields[name]
        if (key, kind, f.name) in BITFIELDS:
            value = _bits(value)
        elif isinstance(f.type, Struct):
            value = to_kafka_python(key, kind, f.type.fields, value, kp_field.data_class, version, False)
        elif isinstance(f.type, ArrayOf) and isinstance(f.type.element, Struct) and value is not None:
            elem = f.type.element
            kp_elem = kp_field.data_class
            value = [to_kafka_python(key, kind, elem.fields, item, kp_elem, version, False) for item in value]
        elif isinstance(value, memoryview):
            value = value.tobytes()
        kwargs[name] = value
    return kp_cls(version=version, **kwargs) if top else kp_cls(**kwargs)


def assert_same_values(
    key: int, kind: str, fields: tuple[Field, ...], ours: Message, theirs: Any, version: int
) -> None:
    for f in fields:
        if not f.present_in(version):
            continue
        value = getattr(ours, f.name)
        if f.tagged_in(version) and _is_default(f, value):
            continue
        other = getattr(theirs, _kp_name(key, kind, f.name))
        where = f"{type(ours).__qualname__}.{f.name} v{version}"
        if (key, kind, f.name) in BITFIELDS:
            assert _from_bits(other) == value, where
        elif isinstance(f.type, Struct):
            assert_same_values(key, kind, f.type.fields, value, other, version)
        elif isinstance(f.type, ArrayOf) and isinstance(f.type.element, Struct) and value is not None:
            assert other is not None and len(other) == len(value), where
            for mine, kp_item in zip(value, other, strict=True):
                assert_same_values(key, kind, f.type.element.fields, mine, kp_item, version)
        elif f.primitive == "uuid":
            assert (other or uuid.UUID(int=0)) == value, where
        elif f.primitive in ("bytes", "records") and value is not None:
            assert bytes(other) == bytes(value), where
        else:
            assert other == value, where


@pytest.mark.parametrize(("api_key", "kind"), CASES, ids=[f"{SPECS[k].name}-{kind}" for k, kind in CASES])
@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_same_bytes_as_kafka_python(api_key: int, kind: str, data: st.DataObject) -> None:
    spec = SPECS[api_key]
    fields = spec.fields(kind)
    kp_cls = KP[(api_key, kind)]
    for version in range(spec.versions.low, _kp_max(api_key, kind) + 1):  # every version, every example
        ours = data.draw(message_strategy(spec, kind, version), label=f"v{version}")
        if (api_key, kind) == (18, "response") and version > 0:
            ours.error_code = 0  # kafka-python decodes any errored ApiVersions response as v0

        our_bytes = bytes(encode_body(ours, version))
        theirs = to_kafka_python(api_key, kind, fields, ours, kp_cls, version, True)
        their_bytes = bytes(theirs.encode(version=version))
        assert our_bytes == their_bytes, f"v{version}"

        decoded_by_them = kp_cls.decode(our_bytes, version=version)
        assert_same_values(api_key, kind, fields, ours, decoded_by_them, version)
        assert decode_body(api_key, kind, version, their_bytes) == ours, f"v{version}"


def test_kafka_python_covers_most_apis() -> None:
    """Guard against the oracle silently vanishing (e.g. a kafka-python upgrade renaming things)."""
    assert len(CASES) >= 2 * 25
    missing = {SPECS[k].name for k in SPECS if (k, "request") not in KP}
    assert missing == {"LeaderAndIsr", "StopReplica", "UpdateMetadata", "ControlledShutdown"}


@pytest.mark.parametrize(("api_key", "kind"), CASES, ids=[f"{SPECS[k].name}-{kind}" for k, kind in CASES])
def test_field_names_match_kafka_json(api_key: int, kind: str) -> None:
    """Our snake_case names are kafka-python's (both are Kafka's JSON names, snake_cased)."""
    kp_cls = KP[(api_key, kind)]

    def walk(fields: tuple[Field, ...], kp_struct: Any, path: str) -> None:
        kp_fields = kp_struct.fields
        for f in fields:
            if f.versions.low > _kp_max(api_key, kind):
                continue
            name = _kp_name(api_key, kind, f.name)
            assert name in kp_fields, f"{path}.{f.name} not in kafka-python's {list(kp_fields)}"
            if f.struct is not None:
                walk(f.struct.fields, kp_fields[name], f"{path}.{f.name}")

    walk(SPECS[api_key].fields(kind), kp_cls._struct, kp_cls.__name__)


# -- second oracle: kafka-python's older hand-written per-version structs -------------------------
# `kafka.protocol.old` predates kafka-python's JSON codec: classes like ListOffsetsRequest_v0 were
# written by hand from Kafka's protocol docs, so they check the versions Kafka 4 dropped from its
# JSON (Produce v0-2, Fetch v0-3, ListOffsets v0, OffsetCommit v0-1, ...) independently.


def _old_classes() -> list[type]:
    import importlib
    import pkgutil

    import kafka.protocol.old as old_pkg
    from kafka.protocol.old.struct import Struct as OldStruct

    found = []
    for info in pkgutil.iter_modules(old_pkg.__path__):
        module = importlib.import_module(f"kafka.protocol.old.{info.name}")
        for name in dir(module):
            obj = getattr(module, name)
            if not (isinstance(obj, type) and issubclass(obj, OldStruct)):
                continue
            key, version = getattr(obj, "API_KEY", None), getattr(obj, "API_VERSION", None)
            if not isinstance(key, int) or not isinstance(version, int) or key not in SPECS:
                continue
            spec = SPECS[key]
            # CreatePartitions' old classes nest (count, assignment) in a struct of their own
            # that has no wire representation; the JSON oracle covers that API.
            if key == 37:
                continue
            # DescribeLogDirsRequest_v0/v1's hand-written partitions field is one int32 where
            # Kafka's schema has an array; the JSON oracle covers that API.
            if key == 35:
                continue
            own = obj.__module__ == module.__name__
            if own and version in spec.versions and not spec.is_flexible(version):
                found.append(obj)
    return sorted(found, key=lambda c: (c.API_KEY, c.__name__))


OLD = _old_classes()


def _positional(fields: tuple[Field, ...], obj: Message, version: int, schema: Any) -> tuple[Any, ...]:
    """Our message as the nested tuples an old Schema takes, walking both layouts in step."""
    from kafka.protocol.old.types import Array as OldArray
    from kafka.protocol.old.types import BitField as OldBitField
    from kafka.protocol.old.types import Schema as OldSchema

    present = [f for f in fields if f.present_in(version)]
    assert len(present) == len(schema.fields), f"{schema.names} vs {[f.name for f in present]}"
    values: list[Any] = []
    for f, old_type in zip(present, schema.fields, strict=True):
        value = getattr(obj, f.name)
        if old_type is OldBitField:
            value = _bits(value)
        elif isinstance(f.type, Struct):
            value = _positional(f.type.fields, value, version, old_type)
        elif isinstance(f.type, ArrayOf) and isinstance(f.type.element, Struct) and value is not None:
            assert isinstance(old_type, OldArray)
            elem_fields = f.type.element.fields
            if isinstance(old_type.array_of, OldSchema):
                value = [_positional(elem_fields, item, version, old_type.array_of) for item in value]
            else:  # e.g. Array(String): our one-field struct per element, flattened
                wrapper = OldSchema(("value", old_type.array_of))
                value = [_positional(elem_fields, item, version, wrapper)[0] for item in value]
        elif isinstance(value, memoryview):
            value = value.tobytes()
        values.append(value)
    return tuple(values)


OLD_KEYS = sorted({c.API_KEY for c in OLD})


@pytest.mark.parametrize("api_key", OLD_KEYS, ids=[SPECS[k].name for k in OLD_KEYS])
@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_same_bytes_as_hand_written_structs(api_key: int, data: st.DataObject) -> None:
    # One example walks every old class of the API: per-test overhead would dominate ~200 cases.
    for old_cls in (c for c in OLD if api_key == c.API_KEY):
        key, version = old_cls.API_KEY, old_cls.API_VERSION
        kind = "request" if old_cls.__name__.split("_v")[0].endswith("Request") else "response"
        spec = SPECS[key]
        ours = data.draw(message_strategy(spec, kind, version), label=old_cls.__name__)
        if (key, kind) == (18, "response"):
            ours.error_code = 0  # the old classes decode any errored ApiVersions response as v0
        our_bytes = bytes(encode_body(ours, version))
        theirs = old_cls(*_positional(spec.fields(kind), ours, version, old_cls.SCHEMA))
        assert bytes(theirs.encode()) == our_bytes, old_cls.__name__
        assert bytes(old_cls.decode(our_bytes).encode()) == our_bytes, old_cls.__name__


def test_hand_written_structs_cover_removed_versions() -> None:
    names = {c.__name__ for c in OLD}
    for expected in (
        "ProduceRequest_v0",
        "FetchRequest_v0",
        "FetchResponse_v0",
        "ListOffsetsRequest_v0",
        "ListOffsetsResponse_v0",
        "MetadataRequest_v0",
        "OffsetCommitRequest_v0",
        "OffsetFetchRequest_v0",
    ):
        assert expected in names
