"""The clickstream pipeline (pipelines/clickstream) end to end on the shared session and cluster:
its own checks (windows = produced events, topic = Parquet, batch range = acknowledged offsets).
Its sessions step has a test of its own (test_spark_sessions.py)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from rich.console import Console

from zkafka.cli.pipeline import PIPELINE

sys.path.insert(0, str(PIPELINE.parent.parent))

from clickstream.run import run


def test_clickstream_pipeline_checks_out(spark: Any, bootstrap: str, tmp_path: Path) -> None:
    console = Console(file=(tmp_path / "report.txt").open("w"), width=120)
    result = run(
        {"kafka.bootstrap.servers": bootstrap},
        events=2000,
        users=20,
        minutes=3,
        workdir=tmp_path,
        spark=spark,
        sessions=False,
    )
    console.file.close()
    assert result.checks and result.ok, result.checks
