"""Errors of the broker configuration: any of them stops broker startup."""

from __future__ import annotations


class ConfigError(ValueError):
    """A broker configuration Kafka would refuse at startup.

    `key` names the offending setting (None for file-level problems), `value` is the raw text given
    (None when the key was missing).
    """

    def __init__(self, message: str, *, key: str | None = None, value: str | None = None) -> None:
        super().__init__(message)
        self.key = key
        self.value = value

    @classmethod
    def bad_value(cls, key: str, value: str | None, expected: str, detail: str | None = None) -> ConfigError:
        """`<key>: expected <expected>, got '<value>'[: <detail>]` — the one shape every value error takes."""
        got = "nothing" if value is None else repr(value)
        message = f"{key}: expected {expected}, got {got}"
        if detail:
            message += f": {detail}"
        return cls(message, key=key, value=value)


class PropertiesSyntaxError(ConfigError):
    """A `.properties` text that cannot be read; names the source and the (first physical) line."""

    def __init__(self, source: str, line: int, problem: str) -> None:
        super().__init__(f"{source}:{line}: {problem}")
        self.source = source
        self.line = line
