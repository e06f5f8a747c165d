"""Strict JSON for znode payloads.

Kafka writes its znodes with Jackson: UTF-8, compact (`{"a":1,"b":[1,2]}`), keys in no particular
order. We read with the same tolerance Kafka has where it matters for interoperability (key order,
unknown keys) and refuse everything else with a `ZNodeDataError` that names the znode:

* malformed JSON (trailing commas, `"host","localhost"`, missing commas, extra braces), NaN/Infinity,
  duplicate keys (ambiguous: which value would Kafka have used?), non-UTF-8 bytes, empty data;
* a field of the wrong JSON type, including `true` where an int is expected (Python's bool is an
  int, Jackson's is not) and `1.0` where an int is expected (Jackson's `isInt` is false for it);
* integers outside the Java type's range (`int` 32-bit, `long` 64-bit);
* missing required keys and versions we do not know.

`JsonObject` is the typed accessor the znode codecs use: every getter knows the znode path and the
field's position (`partitions[2].topic`) so the error text points at the exact problem.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any, NoReturn

from zkafka.zk.errors import ZNodeDataError

__all__ = ["JsonObject", "ZNodeDataError", "encode_json", "parse_json", "parse_json_object"]

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


class _DuplicateKey(ValueError):
    pass


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(f"duplicate key {key!r}")
        out[key] = value
    return out


def _refuse_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not valid JSON")


_DECODER = json.JSONDecoder(object_pairs_hook=_no_duplicates, parse_constant=_refuse_constant)


def parse_json(data: bytes | None, path: str) -> Any:
    """Parse a znode payload as strict JSON, or raise ZNodeDataError naming `path`."""
    if not data:
        raise ZNodeDataError(path, "no data (expected JSON)")
    try:
        text = bytes(data).decode("utf-8")
    except UnicodeDecodeError as e:
        raise ZNodeDataError(path, f"data is not valid UTF-8 ({e.reason} at byte {e.start})") from None
    try:
        return _DECODER.decode(text)
    except json.JSONDecodeError as e:
        raise ZNodeDataError(path, f"malformed JSON: {e.msg} at line {e.lineno} column {e.colno}") from None
    except _DuplicateKey as e:
        raise ZNodeDataError(path, f"malformed JSON: {e}") from None
    except ValueError as e:
        raise ZNodeDataError(path, f"malformed JSON: {e}") from None
    except RecursionError:
        raise ZNodeDataError(path, "malformed JSON: nested too deeply") from None


def parse_json_object(data: bytes | None, path: str) -> JsonObject:
    value = parse_json(data, path)
    if not isinstance(value, dict):
        raise ZNodeDataError(path, f"expected a JSON object, got {_type_name(value)}")
    return JsonObject(value, path)


def encode_json(value: Any) -> bytes:
    """Compact UTF-8 JSON, the way Jackson writes it (no spaces, non-ASCII left unescaped)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode("utf-8")


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean {json.dumps(value)}"
    if isinstance(value, int):
        return f"integer {value}"
    if isinstance(value, float):
        return f"number {value!r}"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:37] + "..."
        return f"string {json.dumps(shown, ensure_ascii=False)}"
    if isinstance(value, list):
        return "array"
    return "object"


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class JsonObject:
    """A decoded JSON object with typed, path-aware getters.

    `where` is the position of this object inside the document ("" for the root) and prefixes every
    field name in error messages.
    """

    __slots__ = ("path", "raw", "where")

    def __init__(self, raw: dict[str, Any], path: str, where: str = "") -> None:
        self.raw = raw
        self.path = path
        self.where = where

    # -- error helpers -------------------------------------------------------------------------------
    def field_name(self, key: str) -> str:
        return f"{self.where}.{key}" if self.where else key

    def fail(self, key: str, problem: str) -> NoReturn:
        raise ZNodeDataError(self.path, f'field "{self.field_name(key)}": {problem}')

    def _expect(self, key: str, what: str, value: Any) -> NoReturn:
        self.fail(key, f"expected {what}, got {_type_name(value)}")

    # -- presence ------------------------------------------------------------------------------------
    def __contains__(self, key: str) -> bool:
        return key in self.raw

    def __iter__(self) -> Iterator[str]:
        return iter(self.raw)

    def require(self, key: str) -> Any:
        if key not in self.raw:
            raise ZNodeDataError(self.path, f'missing required field "{self.field_name(key)}"')
        return self.raw[key]

    def unknown(self, known: Iterable[str]) -> dict[str, Any]:
        """The keys we do not interpret, kept so a rewrite can preserve them."""
        known_set = set(known)
        return {k: v for k, v in self.raw.items() if k not in known_set}

    # -- scalars -------------------------------------------------------------------------------------
    def req_int(self, key: str, *, long: bool = False) -> int:
        return self._check_int(key, self.require(key), long)

    def opt_int(self, key: str, default: int | None = None, *, long: bool = False) -> int | None:
        value = self.raw.get(key)
        if value is None:
            return default
        return self._check_int(key, value, long)

    def _check_int(self, key: str, value: Any, long: bool) -> int:
        if not _is_int(value):
            self._expect(key, "an integer", value)
        lo, hi = (INT64_MIN, INT64_MAX) if long else (INT32_MIN, INT32_MAX)
        if not lo <= value <= hi:
            self.fail(key, f"{value} is out of range for a {'64' if long else '32'}-bit integer")
        return int(value)

    def req_str(self, key: str) -> str:
        value = self.require(key)
        if not isinstance(value, str):
            self._expect(key, "a string", value)
        return value

    def opt_str(self, key: str) -> str | None:
        """Absent or null -> None."""
        value = self.raw.get(key)
        if value is None:
            return None
        if not isinstance(value, str):
            self._expect(key, "a string or null", value)
        return value

    def decimal_str(self, key: str, *, required: bool = True, accept_int: bool = False) -> int | None:
        """A number Kafka writes as a JSON string ("timestamp", "block_start"), parsed as a long."""
        value = self.require(key) if required else self.raw.get(key)
        if value is None and not required:
            return None
        if accept_int and _is_int(value):
            return self._check_int(key, value, True)
        if not isinstance(value, str):
            self._expect(key, "a decimal number in a string", value)
        return self.parse_decimal(key, value)

    def parse_decimal(self, key: str, text: str) -> int:
        digits = text[1:] if text.startswith("-") else text
        if not digits or not digits.isascii() or not digits.isdigit():
            self.fail(key, f"expected a decimal number in a string, got {_type_name(text)}")
        return self._check_int(key, int(text), True)

    def version(self, allowed: Iterable[int], *, required: bool = True) -> int | None:
        """The `version` field; refuses versions outside `allowed`."""
        allowed = tuple(allowed)
        if not required and "version" not in self.raw:
            return None
        version = self.req_int("version")
        if version not in allowed:
            known = ", ".join(str(v) for v in allowed)
            raise ZNodeDataError(self.path, f"unsupported version {version} (this reader knows {known})")
        return version

    # -- containers ----------------------------------------------------------------------------------
    def req_obj(self, key: str) -> JsonObject:
        value = self.require(key)
        if not isinstance(value, dict):
            self._expect(key, "an object", value)
        return JsonObject(value, self.path, self.field_name(key))

    def opt_obj(self, key: str) -> JsonObject | None:
        value = self.raw.get(key)
        if value is None:
            return None
        if not isinstance(value, dict):
            self._expect(key, "an object", value)
        return JsonObject(value, self.path, self.field_name(key))

    def req_list(self, key: str) -> list[Any]:
        value = self.require(key)
        if not isinstance(value, list):
            self._expect(key, "an array", value)
        return value

    def int_list(self, key: str) -> tuple[int, ...]:
        return tuple(self._check_int(f"{key}[{i}]", v, False) for i, v in enumerate(self.req_list(key)))

    def str_list(self, key: str) -> tuple[str, ...]:
        out = []
        for i, value in enumerate(self.req_list(key)):
            if not isinstance(value, str):
                self._expect(f"{key}[{i}]", "a string", value)
            out.append(value)
        return tuple(out)

    def objects(self, key: str) -> Iterator[JsonObject]:
        """The elements of an array of objects."""
        for i, value in enumerate(self.req_list(key)):
            if not isinstance(value, dict):
                self._expect(f"{key}[{i}]", "an object", value)
            yield JsonObject(value, self.path, f"{self.field_name(key)}[{i}]")

    def str_map(self, key: str) -> dict[str, str]:
        """An object whose values are all strings (config maps, listener maps)."""
        sub = self.req_obj(key)
        for k, v in sub.raw.items():
            if not isinstance(v, str):
                sub._expect(k, "a string", v)
        return dict(sub.raw)

    def int_map(self, key: str) -> dict[str, int]:
        sub = self.req_obj(key)
        return {k: sub._check_int(k, v, False) for k, v in sub.raw.items()}

    def int_list_map(self, key: str) -> dict[str, tuple[int, ...]]:
        """An object mapping keys to arrays of ints (partition -> replicas)."""
        sub = self.req_obj(key)
        return {k: sub.int_list(k) for k in sub.raw}
