"""Hypothesis strategies that build random valid messages for any (api, kind, version) from the
same specs the codec is compiled from. Shared by the protocol tests (imported by basename:
pytest puts this directory on sys.path because tests/ has no __init__.py)."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from zkafka.protocol.codec import message_class
from zkafka.protocol.message import Message
from zkafka.protocol.schema import ApiSpec, ArrayOf, Field, Struct
from zkafka.protocol.schemas import SPECS

INT_RANGES = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint16": (0, 2**16 - 1),
    "uint32": (0, 2**32 - 1),
}


def all_combinations() -> list[tuple[int, str, int]]:
    """Every (api_key, kind, version) the codec speaks."""
    return [
        (key, kind, v)
        for key, spec in sorted(SPECS.items())
        for kind in ("request", "response")
        for v in range(spec.versions.low, spec.versions.high + 1)
    ]


def _scalar(primitive: str) -> st.SearchStrategy[Any]:
    if primitive in INT_RANGES:
        lo, hi = INT_RANGES[primitive]
        # Mostly small numbers (they exercise the interesting lengths) plus the extremes.
        # Clamped rather than filtered: filtering int8 fields threw away half the examples, which
        # Hypothesis's health check rightly refuses for messages with many of them.
        return st.one_of(st.integers(max(lo, -3), min(hi, 300)), st.integers(lo, hi))
    if primitive == "bool":
        return st.booleans()
    if primitive == "float64":
        return st.floats(allow_nan=False)
    if primitive == "string":
        return st.text(max_size=8)
    if primitive in ("bytes", "records"):
        return st.binary(max_size=16)
    if primitive == "uuid":
        return st.uuids()
    raise AssertionError(primitive)


def field_strategy(f: Field, version: int, owner: type[Message], depth: int = 0) -> st.SearchStrategy[Any]:
    if isinstance(f.type, Struct):
        cls = getattr(owner, f.type.name)
        base: st.SearchStrategy[Any] = struct_strategy(f.type.fields, cls, version, owner, depth + 1)
    elif isinstance(f.type, ArrayOf):
        elem = f.type.element
        item = (
            struct_strategy(elem.fields, getattr(owner, elem.name), version, owner, depth + 1)
            if isinstance(elem, Struct)
            else _scalar(elem)
        )
        # Small lists, smaller when nested: enough to exercise counts without huge examples.
        base = st.lists(item, max_size=3 if depth == 0 else 2)
    else:
        base = _scalar(f.type)
    if f.nullable_in(version):
        return st.one_of(st.none(), base)
    return base


def struct_strategy(
    fields: tuple[Field, ...], cls: type[Message], version: int, owner: type[Message], depth: int = 0
) -> st.SearchStrategy[Message]:
    present = {f.name: field_strategy(f, version, owner, depth) for f in fields if f.present_in(version)}
    return st.builds(cls, **present)


def message_strategy(spec: ApiSpec, kind: str, version: int) -> st.SearchStrategy[Message]:
    cls = message_class(spec.key, kind)
    return struct_strategy(spec.fields(kind), cls, version, cls)
