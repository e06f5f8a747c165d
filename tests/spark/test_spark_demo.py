"""`zkafka demo` (what `make run` runs) as CI runs it: output piped into a log, `COLUMNS` unset.

Nothing in it is wrapped at 80 columns or coloured, the progress of `cluster up` goes to stderr
with no library chatter, and the ZooKeeper tree is summarised (`__consumer_offsets`' 50 partitions
on one line) instead of listing hundreds of znodes. In the Spark tier: the demo runs the
clickstream pipeline on Spark. The cluster runs with `cluster up --security`: `cluster status` lists
each broker's SASL_SSL listener, and the security step shows the SCRAM user's and the ACLs' znodes
(no password anywhere) and a table where alice is allowed and bob refused.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.timeout(600)
def test_demo_output_reads_well_in_a_log(tmp_path: Path) -> None:
    env = {
        k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "FORCE_COLOR", "TTY_COMPATIBLE")
    }
    try:
        demo = _run_demo(tmp_path, env)
    finally:
        # a demo killed by a timeout has no chance to stop its cluster: stop it here
        if (tmp_path / "cluster" / "cluster.json").exists():
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "zkafka.cli.main",
                    "cluster",
                    "down",
                    "--dir",
                    str(tmp_path / "cluster"),
                ],
                capture_output=True,
                timeout=120,
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
    assert any(ln.startswith("the web console served this cluster at http://127.0.0.1:") for ln in lines), out
    assert any(len(line) > 80 for line in lines)  # long lines stayed long
    tree = lines[lines.index(next(ln for ln in lines if "6. the cluster's metadata" in ln)) :]
    tree = tree[: tree.index(next(ln for ln in tree if "7. zkafka cluster status" in ln))]
    assert any(ln.endswith("── … 50 children (0 … 49), not shown") for ln in tree), "\n".join(tree)
    assert len(tree) < 80, "\n".join(tree)
    assert "every acknowledged record was read back" in out
    # the controller's ControllerStats timers: the demo's topics were each a topic change
    first = lines.index(next(ln for ln in lines if ln.startswith("the controller's events (broker ")))
    events = lines[first : lines.index(next(ln for ln in lines[first:] if ln.startswith("consumer lag, as")))]
    assert any(re.match(r"│ topicchange\s+│\s+[1-9]", ln) for ln in events), "\n".join(events)
    assert "OK   every window of the streaming job matches the produced events" in out
    status = _section(lines, "7. zkafka cluster status", "8. ")
    assert any("PLAINTEXT://127.0.0.1:" in ln and "SASL_SSL://127.0.0.1:" in ln for ln in status), status
    security = _section(lines, "9. security: SCRAM users, ACLs", "10. zkafka doctor")
    text = "\n".join(security)
    assert any(
        ln.startswith("  /config/users/alice  ") and '"SCRAM-SHA-512":"salt=' in ln for ln in security
    ), text
    assert any(
        ln.startswith("  /kafka-acl/Topic/secured-events  ") and "User:alice" in ln for ln in security
    ), text
    # the passwords are shown as … only, and never reach the znodes' lines
    assert re.findall(r"password=([^\]\s]*)", out) == ["…", "…"], text
    rows = [[c.strip() for c in ln.strip("│").split("│")] for ln in security if ln.startswith("│")]
    assert [
        "producer",
        "User:alice",
        "SASL_SSL",
        "produce to secured-events",
        "allowed: 10 acknowledged",
    ] in rows
    assert any(
        r[:3] == ["consumer", "User:alice", "SASL_SSL"] and r[4] == "allowed: 10 records back" for r in rows
    )
    assert [
        "producer",
        "User:bob",
        "SASL_SSL",
        "produce to secured-events",
        "refused: TOPIC_AUTHORIZATION_FAILED",
    ] in rows
    doctor = lines[lines.index(next(ln for ln in lines if "10. zkafka doctor" in ln)) + 1 :]
    assert doctor and doctor[0].startswith("healthy: 1 broker(s)"), "\n".join(doctor[:20])


def _run_demo(tmp_path: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "zkafka.cli.main", "demo", "--brokers", "1", "--records", "300",
         "--dir", str(tmp_path / "cluster")],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=540,
        check=False,
    )  # fmt: skip


def _section(lines: list[str], start: str, end: str) -> list[str]:
    """The lines after the heading containing `start` up to the next heading containing `end`."""
    first = lines.index(next(ln for ln in lines if start in ln)) + 1
    rest = lines[first:]
    return rest[: rest.index(next(ln for ln in rest if end in ln and "─" in ln))]
