"""The spec language for Kafka messages: one declarative `ApiSpec` per API drives every codec.

Rules of this module:

1. A spec says only what is on the wire: field order, type, the versions a field is present in,
   the versions it may be null in, its tag in flexible versions, its default. Everything else
   (message classes, encoders, decoders) is derived from it by `generate.py` and `codegen/`.
2. Field names are written in snake_case exactly as zkafka's objects expose them: the snake_case
   of Kafka's field names (Kafka 4.x spelling; the last spelling for fields and APIs that 4.x
   dropped). Struct names keep Kafka's CamelCase because they become classes.
3. Version ranges use Kafka's notation: ``"0+"``, ``"3-7"``, ``"5"``, ``"none"``.

Types: the primitives in `PRIMITIVES`, ``"[]<primitive>"`` for arrays of primitives, a `Struct`
for one nested struct, and `Array(...)` for an array of structs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Final

from zkafka.protocol.message import ZERO_UUID

MAX_VERSION: Final = 32767

PRIMITIVES: Final = frozenset(
    {
        "int8",
        "int16",
        "int32",
        "int64",
        "uint16",
        "uint32",
        "float64",
        "bool",
        "string",
        "bytes",
        "records",
        "uuid",
    }
)
# Types whose null is encoded in-band (length -1, or compact length 0).
NULLABLE_CAPABLE: Final = frozenset({"string", "bytes", "records"})

_VERSIONS_RE = re.compile(r"^(?:(\d+)\+|(\d+)-(\d+)|(\d+)|none)$")


@dataclass(frozen=True, slots=True)
class Versions:
    """An inclusive version range; ``low > high`` is the empty range."""

    low: int
    high: int

    @classmethod
    def parse(cls, text: str | None) -> Versions:
        if text is None:
            return NO_VERSIONS
        m = _VERSIONS_RE.match(text.strip())
        if m is None:
            raise ValueError(f"bad version range {text!r}")
        plus, lo, hi, single = m.groups()
        if plus is not None:
            return cls(int(plus), MAX_VERSION)
        if lo is not None:
            return cls(int(lo), int(hi))
        if single is not None:
            return cls(int(single), int(single))
        return NO_VERSIONS

    def __contains__(self, version: object) -> bool:
        return isinstance(version, int) and self.low <= version <= self.high

    @property
    def empty(self) -> bool:
        return self.low > self.high

    def intersect(self, other: Versions) -> Versions:
        return Versions(max(self.low, other.low), min(self.high, other.high))

    def __str__(self) -> str:
        if self.empty:
            return "none"
        if self.high == MAX_VERSION:
            return f"{self.low}+"
        if self.low == self.high:
            return str(self.low)
        return f"{self.low}-{self.high}"


NO_VERSIONS: Final = Versions(0, -1)


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Final[Any] = _Missing()


@dataclass(frozen=True, slots=True)
class Struct:
    """A nested struct; becomes a class named `name` inside its message class."""

    name: str
    fields: tuple[Field, ...]

    def __init__(self, name: str, fields: list[Field] | tuple[Field, ...]) -> None:
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "fields", tuple(fields))


@dataclass(frozen=True, slots=True)
class ArrayOf:
    element: str | Struct


FieldType = str | Struct | ArrayOf


def Array(element: str | Struct, fields: list[Field] | None = None) -> ArrayOf:
    """``Array(Struct(...))``, or the shorthand ``Array("StructName", [fields...])``."""
    if fields is not None:
        if not isinstance(element, str):
            raise TypeError("Array(name, fields) takes a struct name")
        return ArrayOf(Struct(element, fields))
    if isinstance(element, str) and element not in PRIMITIVES:
        raise ValueError(f"unknown array element type {element!r}")
    return ArrayOf(element)


@dataclass(frozen=True, slots=True)
class Field:
    name: str
    type: FieldType
    versions: Versions
    nullable: Versions = NO_VERSIONS
    default: Any = MISSING
    tag: int | None = None
    tagged: Versions = NO_VERSIONS
    about: str = ""

    # -- type predicates used by the code generators --------------------------------------------
    @property
    def is_array(self) -> bool:
        return isinstance(self.type, ArrayOf)

    @property
    def is_struct(self) -> bool:
        return isinstance(self.type, Struct)

    @property
    def struct(self) -> Struct | None:
        if isinstance(self.type, Struct):
            return self.type
        if isinstance(self.type, ArrayOf) and isinstance(self.type.element, Struct):
            return self.type.element
        return None

    @property
    def primitive(self) -> str | None:
        """The primitive type name, or the element's for an array of primitives."""
        if isinstance(self.type, str):
            return self.type
        if isinstance(self.type, ArrayOf) and isinstance(self.type.element, str):
            return self.type.element
        return None

    def present_in(self, version: int) -> bool:
        return version in self.versions

    def tagged_in(self, version: int) -> bool:
        return self.tag is not None and version in self.tagged

    def nullable_in(self, version: int) -> bool:
        return version in self.nullable

    @property
    def default_is_null(self) -> bool:
        return self.default is None


def F(
    name: str,
    type_: FieldType,
    versions: str = "0+",
    *,
    nullable: str | None = None,
    default: Any = MISSING,
    tag: int | None = None,
    tagged: str | None = None,
    about: str = "",
) -> Field:
    """Declare one field. `default` is a Python value (``None`` for Kafka's ``"null"``)."""
    if isinstance(type_, str) and type_.startswith("[]"):
        type_ = Array(type_[2:])
    if isinstance(type_, str) and type_ not in PRIMITIVES:
        raise ValueError(f"field {name}: unknown type {type_!r}")
    vers = Versions.parse(versions)
    tagged_vers = Versions.parse(tagged) if tagged is not None else (vers if tag is not None else NO_VERSIONS)
    return Field(
        name=name,
        type=type_,
        versions=vers,
        nullable=Versions.parse(nullable),
        default=default,
        tag=tag,
        tagged=tagged_vers,
        about=about,
    )


@dataclass(frozen=True, slots=True)
class ApiSpec:
    """One API: its key, the versions zkafka's codec speaks, and both message bodies."""

    key: int
    name: str
    versions: Versions
    flexible: Versions
    request: tuple[Field, ...]
    response: tuple[Field, ...]
    notes: str = ""
    # Versions whose request header is v0 (no client_id): only ControlledShutdown v0.
    request_header_v0: Versions = NO_VERSIONS

    @property
    def kinds(self) -> tuple[str, ...]:
        return ("request", "response")

    def message_name(self, kind: str) -> str:
        return self.request_name if kind == "request" else self.response_name

    @property
    def request_name(self) -> str:
        return f"{self.name}Request"

    @property
    def response_name(self) -> str:
        return f"{self.name}Response"

    def is_flexible(self, version: int) -> bool:
        return version in self.flexible

    def fields(self, kind: str) -> tuple[Field, ...]:
        if kind == "request":
            return self.request
        if kind == "response":
            return self.response
        raise ValueError(f"kind must be 'request' or 'response', not {kind!r}")


def api(
    key: int,
    name: str,
    *,
    versions: str,
    flexible: str,
    request: list[Field],
    response: list[Field],
    notes: str = "",
    request_header_v0: str | None = None,
) -> ApiSpec:
    spec = ApiSpec(
        key=key,
        name=name,
        versions=Versions.parse(versions),
        flexible=Versions.parse(flexible),
        request=tuple(request),
        response=tuple(response),
        notes=notes,
        request_header_v0=Versions.parse(request_header_v0),
    )
    validate(spec)
    return spec


@dataclass(frozen=True, slots=True)
class DataSpec:
    """A versioned data schema that is not an API (Kafka's ``"type": "data"`` specs): the
    `__consumer_offsets` record keys and values, the ConsumerProtocol blobs.

    It has one body (kind ``"data"``) and no header; whoever stores it writes its version
    beside it (those formats: an int16 prefix). Compiled by the same `codegen/` as the APIs.
    """

    name: str
    versions: Versions
    flexible: Versions
    body: tuple[Field, ...]
    notes: str = ""

    @property
    def kinds(self) -> tuple[str, ...]:
        return ("data",)

    def message_name(self, kind: str = "data") -> str:
        return self.name

    def is_flexible(self, version: int) -> bool:
        return version in self.flexible

    def fields(self, kind: str = "data") -> tuple[Field, ...]:
        if kind != "data":
            raise ValueError(f"a data schema has only the kind 'data', not {kind!r}")
        return self.body


MessageSpec = ApiSpec | DataSpec


def data(name: str, *, versions: str, flexible: str, fields: list[Field], notes: str = "") -> DataSpec:
    spec = DataSpec(
        name=name,
        versions=Versions.parse(versions),
        flexible=Versions.parse(flexible),
        body=tuple(fields),
        notes=notes,
    )
    validate(spec)
    return spec


# -- validation ------------------------------------------------------------------------------------


class SpecError(ValueError):
    """A spec breaks one of the rules the code generators rely on."""


def validate(spec: MessageSpec) -> None:
    for kind in spec.kinds:
        structs: dict[str, Struct] = {}
        _validate_fields(spec, spec.fields(kind), spec.message_name(kind), structs)


def _validate_fields(
    spec: MessageSpec, fields: tuple[Field, ...], where: str, structs: dict[str, Struct]
) -> None:
    seen: set[str] = set()
    tags: set[int] = set()
    for f in fields:
        path = f"{where}.{f.name}"
        if f.name in seen:
            raise SpecError(f"{path}: duplicate field name")
        seen.add(f.name)
        if not re.fullmatch(r"[a-z][a-z0-9_]*", f.name):
            raise SpecError(f"{path}: field names are snake_case")
        if f.versions.empty:
            raise SpecError(f"{path}: field present in no version")
        if not f.nullable.empty:
            if f.is_struct:
                raise SpecError(f"{path}: nullable structs are not supported")
            if not f.is_array and f.primitive not in NULLABLE_CAPABLE:
                raise SpecError(f"{path}: type {f.primitive} cannot be null")
        if f.default is None and f.nullable.intersect(f.versions).empty:
            raise SpecError(f"{path}: default null on a field that is never nullable")
        if f.tag is not None:
            if f.tag in tags:
                raise SpecError(f"{path}: duplicate tag {f.tag}")
            tags.add(f.tag)
            flexible_part = f.tagged.intersect(spec.flexible)
            if flexible_part != f.tagged:
                raise SpecError(f"{path}: tagged versions {f.tagged} outside flexible versions")
            if f.primitive == "records":
                raise SpecError(f"{path}: records cannot be a tagged field")
        st = f.struct
        if st is not None:
            known = structs.get(st.name)
            if known is not None and known != st:
                raise SpecError(f"{path}: struct {st.name} defined twice differently")
            if not re.fullmatch(r"[A-Z][A-Za-z0-9]*", st.name):
                raise SpecError(f"{path}: struct names are CamelCase")
            structs[st.name] = st
            _validate_fields(spec, st.fields, f"{where}.{st.name}", structs)


_ZERO_BY_TYPE: Final[dict[str, Any]] = {
    "int8": 0,
    "int16": 0,
    "int32": 0,
    "int64": 0,
    "uint16": 0,
    "uint32": 0,
    "float64": 0.0,
    "bool": False,
    "string": "",
    "bytes": b"",
    "records": None,
    "uuid": ZERO_UUID,
}


def scalar_default(f: Field) -> Any:
    """The default of a primitive (non-array, non-struct) field, as a Python value."""
    if f.is_array or f.is_struct:
        raise TypeError(f"{f.name} is not a scalar field")
    if f.default is not MISSING:
        return f.default
    assert f.primitive is not None
    return _ZERO_BY_TYPE[f.primitive]
