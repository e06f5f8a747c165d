"""docs/operations.md's metrics list, generated from the catalogue.

    python -m zkafka.metrics.docs docs/operations.md   # rewrites the list between its markers

tests/metrics/test_metrics_docs.py fails when the file and the catalogue differ.
"""

from __future__ import annotations

import sys
from pathlib import Path

from zkafka.metrics.catalogue import CATALOGUE, MetricDef

__all__ = ["BEGIN", "END", "markdown", "replace_in"]

BEGIN = "<!-- metrics list: generated from zkafka.metrics.catalogue by `python -m zkafka.metrics.docs` -->"
END = "<!-- end of metrics list -->"


def _row(d: MetricDef) -> str:
    labels = ", ".join(f"`{label}`" for label in d.labels) or "-"
    cells = (f"`{d.name}`", d.kind.value, labels, d.help, d.alert or "")
    return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"


def markdown() -> str:
    """The list: one table per group, in catalogue order, between the markers."""
    out = [BEGIN]
    group = None
    for d in CATALOGUE:
        if d.group != group:
            group = d.group
            out += [
                "",
                f"### {group}",
                "",
                "| metric | type | labels | meaning | suggested alert |",
                "|---|---|---|---|---|",
            ]
        out.append(_row(d))
    out += ["", END]
    return "\n".join(out)


def replace_in(text: str) -> str:
    """`text` with the part between the markers replaced by the current list."""
    head, found, rest = text.partition(BEGIN)
    if not found or END not in rest:
        raise ValueError("the markers of the metrics list are missing")
    return head + markdown() + rest.split(END, 1)[1]


if __name__ == "__main__":
    path = Path(sys.argv[1] if len(sys.argv) > 1 else "docs/operations.md")
    path.write_text(replace_in(path.read_text()))
