"""The sessions pipeline (pipelines/clickstream/sessions_*.py) on the shared local[2] session and
cluster: event-time sessions enriched from a compacted users topic read as a table, late clicks
counted, all checked exactly against the generator's plan."""

from __future__ import annotations

import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from zkafka.cli.pipeline import PIPELINE

sys.path.insert(0, str(PIPELINE.parent.parent))

from clickstream.sessions_run import run_sessions


@pytest.mark.timeout(600)
def test_sessions_enriched_and_late_clicks_counted(spark: Any, bootstrap: str, tmp_path: Path) -> None:
    with (tmp_path / "report.txt").open("w") as report:
        outcome = run_sessions(
            spark,
            {"kafka.bootstrap.servers": bootstrap},
            bootstrap,
            2,
            uuid.uuid4().hex[:6],
            tmp_path,
            Console(file=report, width=160),
        )
    assert outcome.checks and all(outcome.checks.values()), outcome.checks
    plan, got = outcome.plan, outcome.got
    assert len(got) == len(plan.sessions) and outcome.late_counted == len(plan.late) > 0
    # the cases the users topic was built for, seen in the output itself
    by_user = {(u, s.wave): got[(u, s.start_ms)][2:] for s in plan.sessions for u in [s.user]}
    assert by_user[("u01", 0)] == ("FR", "team")  # updated before wave 0: the latest value counts
    assert by_user[("u04", 0)] == (None, None)  # tombstoned: no profile
    if ("u05", 1) in by_user:
        assert by_user[("u05", 1)] == ("BR", "free")  # tombstoned, then written again
    assert by_user[("u06", 0)][0] is not None
    if ("u06", 1) in by_user:
        assert by_user[("u06", 1)] == (None, None)  # deleted between the waves
    assert outcome.table["u03"][1] == "pro"
