"""Java `.properties` files: the format of Kafka's `server.properties`.

Reading follows `java.util.Properties.load`: `#`/`!` comment lines, blank lines, `key=value`,
`key:value` and `key value`, a trailing odd backslash continues the logical line (the next line's
leading whitespace is dropped), and the escapes `\\t \\n \\r \\f \\uXXXX` plus `\\<c>` = `<c>`.
Two deliberate differences, both matching what Kafka does after loading:
- unescaped trailing whitespace of a value is dropped (Kafka trims every value it parses);
- an empty key is an error rather than a silent `""` entry.
Text is read as UTF-8, a superset of the ASCII that `format_properties` writes.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from zkafka.config.errors import ConfigError, PropertiesSyntaxError

_WHITESPACE = " \t\f"
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
_HEX4 = re.compile(r"[0-9a-fA-F]{4}")


def parse_properties(text: str, *, source: str = "<properties>") -> dict[str, str]:
    """Parse `.properties` text into an ordered dict; a repeated key keeps its last value."""
    result: dict[str, str] = {}
    for line_no, logical in _logical_lines(text):
        key, value = _split_entry(logical, source, line_no)
        result[key] = value
    return result


def load_properties(path: str | Path) -> dict[str, str]:
    """Read and parse a `.properties` file; an unreadable file raises ConfigError naming the path."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as e:
        raise ConfigError(f"cannot read {path}: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise ConfigError(f"{path}: not UTF-8 text ({e.reason} at byte {e.start})") from None
    return parse_properties(text, source=str(path))


def format_properties(props: Mapping[str, object], *, header: str | None = None) -> str:
    """Render `props` as `.properties` text that Java and `parse_properties` read back unchanged.

    Output is pure ASCII (anything else becomes `\\uXXXX`), one `key=value` line per entry in the
    mapping's order; `header` lines become `# ` comments. bool values are written `true`/`false`.
    """
    lines = [f"# {h}".rstrip() for h in header.splitlines()] if header else []
    for key, value in props.items():
        if not key:
            raise ConfigError("cannot write a property with an empty key")
        text = ("true" if value else "false") if isinstance(value, bool) else str(value)
        lines.append(f"{_escape(key, is_key=True)}={_escape(text, is_key=False)}")
    return "\n".join(lines) + "\n"


# -- reading -------------------------------------------------------------------------------------


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """(first physical line number, logical line) for every non-blank, non-comment entry."""
    physical = _LINE_BREAK.split(text)
    out: list[tuple[int, str]] = []
    i = 0
    while i < len(physical):
        start = i
        line = physical[i].lstrip(_WHITESPACE)
        i += 1
        # Comments and blank lines are decided on the first physical line only: a continuation
        # line starting with '#' is value text, and a comment's trailing backslash continues nothing.
        if not line or line[0] in "#!":
            continue
        parts: list[str] = []
        while _ends_with_odd_backslashes(line):
            parts.append(line[:-1])
            if i >= len(physical):  # a continuation at end of input just ends the entry (as Java does)
                line = ""
                break
            line = physical[i].lstrip(_WHITESPACE)
            i += 1
        parts.append(line)
        out.append((start + 1, "".join(parts)))
    return out


def _ends_with_odd_backslashes(line: str) -> bool:
    return (len(line) - len(line.rstrip("\\"))) % 2 == 1


def _split_entry(line: str, source: str, line_no: int) -> tuple[str, str]:
    # The key ends at the first unescaped separator ('=', ':' or whitespace).
    i = 0
    while i < len(line) and line[i] not in "=:" + _WHITESPACE:
        i += 2 if line[i] == "\\" else 1
    key_end = min(i, len(line))
    # Whitespace, then at most one '=' or ':', then whitespace again.
    while i < len(line) and line[i] in _WHITESPACE:
        i += 1
    if i < len(line) and line[i] in "=:":
        i += 1
    while i < len(line) and line[i] in _WHITESPACE:
        i += 1
    key = _unescape(line[:key_end], source, line_no)
    if not key:
        raise PropertiesSyntaxError(source, line_no, "missing key before the value")
    value = _unescape(line[i:], source, line_no, trim_trailing=True)
    return key, value


def _unescape(raw: str, source: str, line_no: int, *, trim_trailing: bool = False) -> str:
    out: list[str] = []
    keep = 0  # length of `out` up to its last escaped or non-whitespace char (for trimming)
    i = 0
    while i < len(raw):
        c = raw[i]
        if c != "\\":
            out.append(c)
            i += 1
            if c not in _WHITESPACE:
                keep = len(out)
            continue
        if i + 1 >= len(raw):  # a lone trailing backslash (continuation at end of input): dropped
            break
        e = raw[i + 1]
        if e == "u":
            digits = raw[i + 2 : i + 6]
            if not _HEX4.fullmatch(digits):
                raise PropertiesSyntaxError(source, line_no, f"malformed \\uXXXX escape {raw[i : i + 6]!r}")
            out.append(chr(int(digits, 16)))
            i += 6
        else:
            out.append(_ESCAPES.get(e, e))
            i += 2
        keep = len(out)
    text = "".join(out[:keep] if trim_trailing else out)
    return _join_surrogates(text, source, line_no)


def _join_surrogates(text: str, source: str, line_no: int) -> str:
    # Java writes characters outside the BMP as two \\uXXXX escapes (a UTF-16 surrogate pair).
    if not any("\ud800" <= c <= "\udfff" for c in text):
        return text
    try:
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le")
    except UnicodeDecodeError:
        problem = "unpaired UTF-16 surrogate in a \\uXXXX escape"
        raise PropertiesSyntaxError(source, line_no, problem) from None


# -- writing -------------------------------------------------------------------------------------

_WRITE_ESCAPES = {"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r", "\f": "\\f"}


def _escape(text: str, *, is_key: bool) -> str:
    out: list[str] = []
    last = len(text) - 1
    for pos, c in enumerate(text):
        if c in _WRITE_ESCAPES:
            out.append(_WRITE_ESCAPES[c])
        elif c == " " and (is_key or pos == 0 or pos == last):
            # Spaces end a key; in a value only leading (skipped) and trailing (trimmed) ones need it.
            out.append("\\ ")
        elif is_key and c in "=:#!":
            out.append("\\" + c)
        elif " " <= c <= "~":
            out.append(c)
        else:
            out.append("".join(f"\\u{unit:04x}" for unit in _utf16_units(c)))
    return "".join(out)


def _utf16_units(c: str) -> list[int]:
    data = c.encode("utf-16-be", "surrogatepass")
    return [int.from_bytes(data[k : k + 2], "big") for k in range(0, len(data), 2)]
