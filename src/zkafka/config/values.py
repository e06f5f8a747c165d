"""Value types and range checks for broker config keys, in Kafka's ConfigDef vocabulary.

A type turns the (trimmed) text of a property into a Python value and back; a check restricts the
parsed value. Both describe themselves so that an error reads
`<key>: expected <type noun + check>, got '<text>'`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass

INT32_MAX = (1 << 31) - 1
INT64_MAX = (1 << 63) - 1

_INTEGER = re.compile(r"[+-]?[0-9]+", re.ASCII)
# Java's Double.parseDouble minus NaN/Infinity/hex forms, none of which a config needs.
_DECIMAL = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?[dDfF]?", re.ASCII)


@dataclass(frozen=True, slots=True)
class ValueType:
    """How one kind of config value is read and written.

    `kafka_type` is the ConfigDef type name DescribeConfigs reports; `parse` raises ValueError
    (optionally with a detail) on bad text; `format(parse(t))` is the canonical text.
    """

    kafka_type: str
    noun: str
    parse: Callable[[str], object]
    format: Callable[[object], str]


@dataclass(frozen=True, slots=True)
class Check:
    """A restriction on a parsed value; `phrase(noun)` is the full expectation, e.g. 'an integer >= 1'."""

    accepts: Callable[[object], bool]
    phrase: Callable[[str], str]


def _integer(bits: int) -> Callable[[str], int]:
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1

    def parse(text: str) -> int:
        if not _INTEGER.fullmatch(text):
            raise ValueError
        n = int(text)
        if not lo <= n <= hi:
            raise ValueError(f"outside the {bits}-bit integer range [{lo}, {hi}]")
        return n

    return parse


def _parse_double(text: str) -> float:
    if not _DECIMAL.fullmatch(text):
        raise ValueError
    x = float(text.rstrip("dDfF"))
    if math.isinf(x):
        raise ValueError("too large")
    return x


def _parse_bool(text: str) -> bool:
    lowered = text.lower()
    if lowered not in ("true", "false"):
        raise ValueError
    return lowered == "true"


def _parse_list(text: str) -> tuple[str, ...]:
    # Kafka's LIST: comma separated, items trimmed, "" is the empty list.
    return tuple(item.strip() for item in text.split(",")) if text else ()


def _format_list(value: object) -> str:
    return ",".join(value)  # type: ignore[arg-type]


INT = ValueType("INT", "an integer", _integer(32), str)
LONG = ValueType("LONG", "an integer", _integer(64), str)
SHORT = ValueType("SHORT", "an integer", _integer(16), str)
DOUBLE = ValueType("DOUBLE", "a number", _parse_double, repr)
BOOLEAN = ValueType("BOOLEAN", "true or false", _parse_bool, lambda v: "true" if v else "false")
STRING = ValueType("STRING", "a string", str, str)
LIST = ValueType("LIST", "a comma-separated list", _parse_list, _format_list)
PASSWORD = ValueType("PASSWORD", "a secret", str, str)
"""Kafka's PASSWORD: never logged, never described (DescribeConfigs shows null, sensitive)."""


def choice(*options: str, ignore_case: bool = False) -> ValueType:
    """A STRING restricted to `options`; with `ignore_case` the value is stored as the option's spelling."""
    canonical = {(o.lower() if ignore_case else o): o for o in options}

    def parse(text: str) -> str:
        found = canonical.get(text.lower() if ignore_case else text)
        if found is None:
            raise ValueError
        return found

    return ValueType("STRING", f"one of {', '.join(options)}", parse, str)


def choice_list(*options: str) -> ValueType:
    """A non-empty LIST whose items come from `options` (lower-cased, duplicates dropped)."""

    def parse(text: str) -> tuple[str, ...]:
        items = [item.lower() for item in _parse_list(text)]
        if not items or any(item not in options for item in items):
            raise ValueError
        return tuple(dict.fromkeys(items))

    return ValueType("LIST", f"a comma-separated list of {', '.join(options)}", parse, _format_list)


def at_least(minimum: int) -> Check:
    return Check(lambda v: v >= minimum, lambda noun: f"{noun} >= {minimum}")  # type: ignore[operator]


def between(lo: float, hi: float) -> Check:
    return Check(lambda v: lo <= v <= hi, lambda noun: f"{noun} in [{lo}, {hi}]")  # type: ignore[operator]


NON_EMPTY = Check(bool, lambda noun: f"{noun}, not empty")
