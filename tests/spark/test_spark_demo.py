"""`zkafka demo` (what `make run` runs) as CI runs it: output piped into a log, `COLUMNS` unset.

Nothing in it is wrapped at 80 columns or coloured, the progress of `cluster up` goes to stderr
with no library chatter, and the ZooKeeper tree is summarised (`__consumer_offsets`' 50 partitions
on one line) instead of listing hundreds of znodes. In the Spark tier: the demo ends with the
clickstream pipeline on Spark.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def test_demo_output_reads_well_in_a_log(tmp_path: Path) -> None:
    env = {
        k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "FORCE_COLOR", "TTY_COMPATIBLE")
    }
    demo = subprocess.run(
        [
            sys.executable,
            "-m",
            "zkafka.cli.main",
            "demo",
            "--brokers",
            "1",
            "--records",
            "300",
            "--dir",
            str(tmp_path / "cluster"),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=600,
        check=False,
    )
    assert demo.returncode == 0, demo.stderr
    out, err = demo.stdout, demo.stderr
    assert "\x1b" not in out + err
    # stderr: the cluster's start-up progress and nothing else (no kazoo warnings, no tracebacks)
    assert err.splitlines() and all(line.startswith("✓ ") for line in err.splitlines()), err
    lines = out.splitlines()
    # every table row is whole: a row line starts and ends with a border, and the titles and the
    # partition directory's path are single lines
    rows = [line for line in lines if line.startswith(("│", "┃")) and "── " not in line]  # not the tree
    assert rows and all(line.rstrip().endswith(("│", "┃")) for line in rows), "\n".join(rows)
    assert any(line.endswith("/broker-1/logs/demo-events-0") for line in lines), out
    assert "demo-events: records per partition (a key always lands in one partition)" in lines
    assert any(len(line) > 80 for line in lines)  # long lines stayed long
    tree = lines[lines.index(next(ln for ln in lines if "6. the cluster's metadata" in ln)) :]
    tree = tree[: tree.index(next(ln for ln in tree if "7. zkafka cluster status" in ln))]
    assert any(ln.endswith("── … 50 children (0 … 49), not shown") for ln in tree), "\n".join(tree)
    assert len(tree) < 80, "\n".join(tree)
    assert "every acknowledged record was read back" in out
    assert "OK   every window of the streaming job matches the produced events" in out
    doctor = lines[lines.index(next(ln for ln in lines if "9. zkafka doctor" in ln)) + 1 :]
    assert doctor and doctor[0].startswith("healthy: 1 broker(s)"), "\n".join(doctor[:20])
