"""`zkafka perf storage` runs end to end (tiny sizes: a smoke test, not a measurement)."""

from __future__ import annotations

from pathlib import Path

import pytest

from zkafka.cli.main import main
from zkafka.cli.perf import build_bench_batch, run_storage_bench
from zkafka.records.batch import validate_batches


def test_bench_batch_is_realistic() -> None:
    batch, records = build_bench_batch(16384)
    assert 16384 - 300 < len(batch) <= 16384 and records > 100
    assert validate_batches(batch)[0].records_count == records


def test_run_storage_bench(tmp_path: Path) -> None:
    result = run_storage_bench(4096, 2, tmp_path)
    assert result.batches >= 8 and result.raw_seconds > 0 and result.log_seconds > 0
    assert list(tmp_path.iterdir()) == []  # cleaned up


def test_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["perf", "storage", "--total-mb", "1", "--batch-bytes", "2048", "--dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "raw os.write" in out and "Log.append" in out and "MB/s" in out
    assert main(["perf", "storage", "--batch-bytes", "10"]) == 1
    assert main(["perf", "storage", "--dir", str(tmp_path / "missing")]) == 1
