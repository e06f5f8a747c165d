"""The code emitter shared by the encoder and decoder generators, and the helpers the generated
functions call at run time (bound into their globals as `NAMESPACE`)."""

from __future__ import annotations

import struct
import uuid
from typing import Any

from zkafka.protocol import primitives as prim
from zkafka.protocol.message import DEFAULT, Message
from zkafka.protocol.schema import ArrayOf, Field, MessageSpec, SpecError, Struct, scalar_default


def _pack_array(code: str, items: list[Any]) -> bytes:
    return struct.pack(f">{len(items)}{code}", *items)


def _unpack_array(code: str, size: int, buf: memoryview, p: int, n: int) -> tuple[list[Any], int]:
    return list(struct.unpack_from(f">{n}{code}", buf, p)), p + n * size


def _bad_length(what: str, n: int) -> prim.WireFormatError:
    return prim.WireFormatError(f"invalid length {n} for {what}")


def _null_error(path: str) -> prim.WireFormatError:
    return prim.WireFormatError(f"{path} is null but the field is not nullable in this version")


NAMESPACE: dict[str, Any] = {
    "DEFAULT": DEFAULT,
    "_new": object.__new__,
    "WireFormatError": prim.WireFormatError,
    "_null_error": _null_error,
    "_bad_length": _bad_length,
    "_truncated": prim.truncated,
    "_read_compact_len": prim.read_compact_len,
    "_pack_array": _pack_array,
    "_unpack_array": _unpack_array,
    **{name: getattr(prim, name) for name in prim.__dict__ if name.startswith(("read_", "write_"))},
    "skip_tagged_field": prim.skip_tagged_field,
}

STRING_WRITERS = {
    (False, False): "write_string",
    (False, True): "write_nullable_string",
    (True, False): "write_compact_string",
    (True, True): "write_compact_nullable_string",
}
STRING_READERS = {k: v.replace("write_", "read_") for k, v in STRING_WRITERS.items()}
BYTES_WRITERS = {k: v.replace("string", "bytes") for k, v in STRING_WRITERS.items()}
BYTES_READERS = {k: v.replace("write_", "read_") for k, v in BYTES_WRITERS.items()}


class Emitter:
    def __init__(self, spec: MessageSpec, kind: str, version: int, message_cls: type[Message]) -> None:
        self.spec = spec
        self.kind = kind
        self.version = version
        self.flex = spec.is_flexible(version)
        self.message_cls = message_cls
        self.lines: list[str] = []
        self.ns: dict[str, Any] = dict(NAMESPACE)
        self._n = 0

    def var(self, prefix: str) -> str:
        self._n += 1
        return f"{prefix}{self._n}"

    def const(self, value: Any, prefix: str = "K") -> str:
        name = self.var(f"_{prefix}")
        self.ns[name] = value
        return name

    def emit(self, indent: int, line: str) -> None:
        self.lines.append("    " * indent + line)

    def struct_class(self, st: Struct) -> type[Message]:
        cls = getattr(self.message_cls, st.name, None)
        if not (isinstance(cls, type) and issubclass(cls, Message)):
            raise SpecError(f"{self.message_cls.__name__} has no struct class {st.name}; regenerate messages")
        return cls

    # -- field selection ----------------------------------------------------------------------

    def wire_fields(self, fields: tuple[Field, ...]) -> list[Field]:
        """Fields written in sequence at this version (tagged ones go to the tag section)."""
        return [f for f in fields if f.present_in(self.version) and not f.tagged_in(self.version)]

    def tagged_fields(self, fields: tuple[Field, ...]) -> list[Field]:
        if not self.flex:
            return []
        return sorted((f for f in fields if f.tagged_in(self.version)), key=lambda f: f.tag or 0)

    def min_size(self, fields: tuple[Field, ...]) -> int:
        """The fewest bytes one struct can occupy: bounds array counts read from the wire."""
        total = 1 if self.flex else 0  # the tag section's count byte
        for f in self.wire_fields(fields):
            total += self.min_field_size(f)
        return total

    def min_field_size(self, f: Field) -> int:
        if f.is_array:
            return 1 if self.flex else 4
        if f.struct is not None:
            return self.min_size(f.struct.fields)
        return self.min_item_size(f.primitive or "")

    def min_item_size(self, primitive: str) -> int:
        if primitive in prim.FIXED:
            return prim.FIXED[primitive][1]
        if primitive == "uuid":
            return 16
        if self.flex:
            return 1
        return 2 if primitive == "string" else 4

    def element_min_size(self, f: Field) -> int:
        assert isinstance(f.type, ArrayOf)
        elem = f.type.element
        size = self.min_size(elem.fields) if isinstance(elem, Struct) else self.min_item_size(elem)
        if size < 1:
            raise SpecError(
                f"{self.spec.name}{self.kind}.{f.name}: array elements of zero size at v{self.version}"
            )
        return size


def default_expr(e: Emitter, f: Field) -> str:
    """An expression for a fresh default value of `f`."""
    if f.is_array:
        return "None" if f.default_is_null else "[]"
    if isinstance(f.type, Struct):
        return f"{e.const(e.struct_class(f.type), 'C')}()"
    value = scalar_default(f)
    if isinstance(value, uuid.UUID):
        return e.const(value, "D")
    return repr(value)  # None, bool, int, float, str, bytes: literals
