"""The sessions pipeline end to end against a running zkafka cluster, checked exactly against what
the generator knows (sessions_data.py). `run.py` runs it after the clickstream jobs, in the same
Spark session.

1. Creates a compacted users topic (cleanup.policy=compact) and a clicks topic, named with the
   run id, and writes phase 0 of the users topic (profiles, updates, tombstones).
2. Wave 0 of the clicks, then the sessions query (Trigger.AvailableNow) runs to the end.
3. Phase 1 of the users topic (a plan change, a tombstone, a deleted user back), wave 1 of the
   clicks (new sessions and late clicks), and the query runs again from its checkpoint.
4. Prints the sessions per user and the late clicks, and checks: every session with its clicks,
   start and end; its profile as the table stood when the session was emitted; the late clicks
   counted twice (clicks read minus clicks in sessions, and Spark's rows dropped by watermark);
   the users table read as a table equals the latest value per key.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pyspark.sql import functions as F
from rich.table import Table

from clickstream.events import produce
from clickstream.jobs import parse
from clickstream.sessions_data import SessionPlan, plan_sessions, produce_users
from clickstream.sessions_jobs import MARKER_USER, dropped_by_watermark, start_sessions_query, users_table
from zkafka.cli.output import print_table
from zkafka.client.sync import SyncAdminClient

if TYPE_CHECKING:
    from rich.console import Console

PARTITIONS = 4
SessionRow = tuple[int, int, str | None, str | None]
"""clicks, session end (ms), country, plan"""


@dataclass
class SessionsOutcome:
    plan: SessionPlan
    got: dict[tuple[str, int], SessionRow] = field(default_factory=dict)
    """(user, session start ms) -> what the pipeline wrote"""
    batch_of: dict[tuple[str, int], int] = field(default_factory=dict)
    rows: int = 0
    """rows in the output: one per session unless a session was emitted twice"""
    clicks_read: int = 0
    dropped_by_spark: int = 0
    table: dict[str, tuple[str, str]] = field(default_factory=dict)
    checks: dict[str, bool] = field(default_factory=dict)

    @property
    def late_counted(self) -> int:
        """Clicks read that are in no session: the ones the watermark dropped."""
        return self.clicks_read - sum(row[0] for row in self.got.values())


def run_sessions(
    spark: Any,
    client: dict[str, str],
    bootstrap: str,
    replication: int,
    run_id: str,
    workdir: Path,
    console: Console,
    *,
    users: int = 12,
    late: int = 7,
) -> SessionsOutcome:
    plan = plan_sessions(users, late)
    outcome = SessionsOutcome(plan)
    topic, users_topic = f"session-clicks-{run_id}", f"users-{run_id}"
    with SyncAdminClient(bootstrap_servers=bootstrap) as admin:
        admin.create_topic(topic, PARTITIONS, replication)
        admin.create_topic(users_topic, 2, replication, configs={"cleanup.policy": "compact"})

    started = time.perf_counter()
    for wave in (0, 1):
        produce_users(bootstrap, users_topic, plan.user_records[wave])
        produce(bootstrap, topic, plan.waves[wave])
        query = start_sessions_query(spark, client, topic, users_topic, workdir)
        query.awaitTermination()
        if query.exception() is not None:
            raise RuntimeError(f"sessions query failed: {query.exception()}")
        outcome.dropped_by_spark += dropped_by_watermark(query)
    console.print(
        f"sessions job: {len(plan.user_records[0]) + len(plan.user_records[1])} records into the "
        f"compacted [bold]{users_topic}[/bold], {plan.clicks} clicks in 2 waves into [bold]{topic}[/bold], "
        f"the query run once per wave (availableNow, one checkpoint) in {time.perf_counter() - started:.1f}s"
    )

    rows = spark.read.parquet(str(workdir / "sessions")).collect()
    outcome.rows = len(rows)
    for r in rows:
        start_ms = int(r.session_start.replace(tzinfo=UTC).timestamp() * 1000)
        end_ms = int(r.session_end.replace(tzinfo=UTC).timestamp() * 1000)
        outcome.got[(r.user, start_ms)] = (r.clicks, end_ms, r.country, r.plan)
        outcome.batch_of[(r.user, start_ms)] = r.batch
    clicks = parse(spark.read.format("zkafka").options(**client).option("subscribe", topic).load())
    outcome.clicks_read = clicks.where(F.col("user") != MARKER_USER).count()
    outcome.table = {r.user: (r.country, r.plan) for r in users_table(spark, client, users_topic).collect()}
    _check(outcome)
    _print(outcome, console)
    return outcome


def _check(o: SessionsOutcome) -> None:
    plan, expected = o.plan, o.plan.expected()
    shape = {k: v[:2] for k, v in o.got.items()}
    o.checks[
        f"sessions: all {len(expected)} sessions of {len({u for u, _ in expected})} users, "
        "each once, with its clicks, start and end"
    ] = o.rows == len(o.got) and shape == {k: v[:2] for k, v in expected.items()}
    o.checks[
        "enrichment: each session has its user's profile as the users table stood when it was emitted"
    ] = {k: v[2:] for k, v in o.got.items()} == {k: v[2:] for k, v in expected.items()}
    o.checks[f"late clicks: {len(plan.late)} generated = clicks read - clicks in sessions"] = (
        o.late_counted == len(plan.late)
    )
    o.checks[f"late clicks: {len(plan.late)} generated = Spark's rows dropped by watermark"] = (
        o.dropped_by_spark == len(plan.late)
    )
    o.checks["users topic read as a table: the latest value per key, tombstoned keys gone"] = o.table == {
        u: (p.country, p.plan) for u, p in plan.table(1).items()
    }


def _profile(rows: list[SessionRow]) -> str:
    """The profile a user's sessions of one wave carry (all of them the same one)."""
    if not rows:
        return ""
    return " | ".join(sorted({f"{r[2]}/{r[3]}" if r[2] else "(no profile)" for r in rows}))


def _print(o: SessionsOutcome, console: Console) -> None:
    expected = o.plan.expected()
    wave_of = {(s.user, s.start_ms): s.wave for s in o.plan.sessions}
    late_by_user = Counter(e.user for e in o.plan.late)
    table = Table(
        title="sessions job: event-time sessions per user (1-minute gap), "
        "enriched from the compacted users topic"
    )
    for column in (
        "user",
        "profile, wave 0",
        "profile, wave 1",
        "sessions",
        "clicks per session",
        "generated",
        "late",
    ):
        table.add_column(
            column, justify="left" if column == "user" or column.startswith("profile") else "right"
        )
    for user in sorted({u for u, _ in expected} | {u for u, _ in o.got}):
        got = sorted((start, row) for (u, start), row in o.got.items() if u == user)
        want = sorted((start, row) for (u, start), row in expected.items() if u == user)
        table.add_row(
            user,
            *(_profile([row for start, row in got if wave_of.get((user, start)) == w]) for w in (0, 1)),
            str(len(got)),
            ",".join(str(row[0]) for _, row in got),
            ",".join(str(row[0]) for _, row in want),
            str(late_by_user.get(user, "")),
        )
    print_table(console, table)
    console.print(
        f"late clicks: {len(o.plan.late)} generated behind the watermark; the pipeline read {o.clicks_read} "
        f"clicks, {o.clicks_read - o.late_counted} of them in sessions, so {o.late_counted} were dropped; "
        f"Spark's numRowsDroppedByWatermark: {o.dropped_by_spark}"
    )
