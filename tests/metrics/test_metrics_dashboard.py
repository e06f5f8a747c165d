"""docs/grafana/zkafka.json stays true to the catalogue: every metric its queries name exists (a
histogram through its _bucket/_sum/_count series), and every metric with a suggested alert is shown."""

from __future__ import annotations

import json
import re
from pathlib import Path

from zkafka.metrics import BY_NAME, CATALOGUE, Kind

DASHBOARD = Path(__file__).parents[2] / "docs" / "grafana" / "zkafka.json"
NAME = re.compile(r"\b((?:kafka|process|zkafka)_[a-z_]+)\b")


def _queried() -> set[str]:
    dashboard = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
    assert exprs
    return {m for e in exprs for m in NAME.findall(e)}


def _base(name: str) -> str | None:
    if name in BY_NAME:
        return name
    for suffix in ("_bucket", "_sum", "_count"):
        found = BY_NAME.get(name.removesuffix(suffix)) if name.endswith(suffix) else None
        if found is not None and found.kind is Kind.HISTOGRAM:
            return found.name
    return None


def test_every_queried_metric_is_in_the_catalogue() -> None:
    unknown = sorted(n for n in _queried() if _base(n) is None)
    assert unknown == []


def test_every_metric_with_an_alert_is_on_the_dashboard() -> None:
    shown = {_base(n) for n in _queried()}
    missing = sorted(d.name for d in CATALOGUE if d.alert and d.name not in shown)
    assert missing == []
