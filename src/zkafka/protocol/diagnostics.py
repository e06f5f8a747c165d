"""Why an encode failed: the slow path that names the offending field.

The compiled encoders stay free of per-field checks; when one fails (struct.error, TypeError,
...), this walk over the spec finds the first value that cannot be written and says where,
e.g. ``JoinGroupRequest.session_timeout_ms=2147483648 is out of range for int32``.
"""

from __future__ import annotations

import uuid
from typing import Any, Final

from zkafka.protocol import primitives as prim
from zkafka.protocol.schema import ArrayOf, Field, Struct

_INT_RANGES: Final = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint16": (0, 2**16 - 1),
    "uint32": (0, 2**32 - 1),
}


def find_bad_field(fields: tuple[Field, ...], obj: Any, version: int, path: str) -> str | None:
    """Slow path after an encode failed: name the first field whose value cannot be written."""
    for f in fields:
        if not f.present_in(version):
            continue
        where = f"{path}.{f.name}"
        try:
            value = getattr(obj, f.name)
        except AttributeError:
            return f"{where} is missing ({type(obj).__name__} is not the expected message class)"
        problem = _value_problem(f, value, version, where)
        if problem:
            return problem
    return None


def _value_problem(f: Field, value: Any, version: int, where: str) -> str | None:
    if value is None:
        if f.nullable_in(version):
            return None
        return f"{where} is None but not nullable in v{version}"
    if isinstance(f.type, Struct):
        return find_bad_field(f.type.fields, value, version, where)
    if isinstance(f.type, ArrayOf):
        if not isinstance(value, list | tuple):
            return f"{where} must be a list, not {type(value).__name__}"
        elem = f.type.element
        for i, item in enumerate(value):
            item_where = f"{where}[{i}]"
            if isinstance(elem, Struct):
                problem = find_bad_field(elem.fields, item, version, item_where)
            else:
                problem = _scalar_problem(elem, item, item_where)
            if problem:
                return problem
        return None
    return _scalar_problem(f.type, value, where)


def _scalar_problem(primitive: str, value: Any, where: str) -> str | None:
    if primitive in _INT_RANGES:
        lo, hi = _INT_RANGES[primitive]
        if not isinstance(value, int):
            return f"{where} must be an int, not {type(value).__name__}"
        if not lo <= value <= hi:
            return f"{where}={value} is out of range for {primitive}"
    elif primitive == "string":
        if not isinstance(value, str):
            return f"{where} must be a str, not {type(value).__name__}"
        if len(value.encode("utf-8", "surrogatepass")) > 32767:
            return f"{where} is longer than 32767 bytes"
    elif primitive == "uuid" and not isinstance(value, uuid.UUID):
        return f"{where} must be a uuid.UUID, not {type(value).__name__}"
    elif primitive in ("bytes", "records"):
        try:
            prim.records_size(value)
        except (TypeError, ValueError) as exc:
            return f"{where}: {exc}"
    elif primitive == "float64" and not isinstance(value, int | float):
        return f"{where} must be a float, not {type(value).__name__}"
    return None
