"""Reading a broker's /metrics back: for zkafka's own tools (the demo's live figures), which should not
need prometheus_client at run time. Reads the text format 0.0.4 as `exposition` writes it (one sample
per line, label values escaped with \\\\, \\" and \\n); comments and malformed lines are skipped.
Tests use prometheus_client's parser instead, as an independent reader."""

from __future__ import annotations

import urllib.request
from dataclasses import dataclass

__all__ = ["Sample", "parse_text", "scrape"]

_UNESCAPE = {"\\": "\\", '"': '"', "n": "\n"}


@dataclass(frozen=True, slots=True)
class Sample:
    name: str
    labels: dict[str, str]
    value: float


def scrape(url: str, timeout: float = 5.0) -> list[Sample]:
    """GET `url` (a broker's `.../metrics`) and parse it; OSError when it cannot be read."""
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return parse_text(response.read().decode("utf-8", "replace"))


def parse_text(text: str) -> list[Sample]:
    out = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        sample = _parse_line(line)
        if sample is not None:
            out.append(sample)
    return out


def _parse_line(line: str) -> Sample | None:
    brace = line.find("{")
    labels: dict[str, str] = {}
    if brace < 0:
        name, _, rest = line.partition(" ")
    else:
        name = line[:brace]
        pos = brace + 1
        while pos < len(line) and line[pos] != "}":
            eq = line.find('="', pos)
            if eq < 0:
                return None
            key = line[pos:eq]
            pos = eq + 2
            chars = []
            while pos < len(line) and line[pos] != '"':
                if line[pos] == "\\" and pos + 1 < len(line):
                    chars.append(_UNESCAPE.get(line[pos + 1], line[pos + 1]))
                    pos += 2
                else:
                    chars.append(line[pos])
                    pos += 1
            labels[key] = "".join(chars)
            pos += 1  # the closing quote
            if pos < len(line) and line[pos] == ",":
                pos += 1
        rest = line[pos + 1 :]
    try:
        value = float(rest.split()[0])
    except (IndexError, ValueError):
        return None
    return Sample(name, labels, value)
