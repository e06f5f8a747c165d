"""The overview (`/`, reloading itself) and `/brokers`."""

from __future__ import annotations

from collections import Counter

from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import Route

from zkafka.console.cluster_data import cluster_state, state_from_zookeeper
from zkafka.console.errors import EXPECTED_FAILURES, status_and_message
from zkafka.console.render import page
from zkafka.console.sessions import source_of
from zkafka.doctor import Finding


def finding_summary(findings: list[Finding]) -> list[tuple[str, str, int]]:
    """(severity, check, count), worst first: a dead broker's hundred offline partitions are one line."""
    counts = Counter((f.severity, f.check) for f in findings)
    return [
        (sev.label, check, n) for (sev, check), n in sorted(counts.items(), key=lambda x: (-x[0][0], x[0][1]))
    ]


async def overview(request: Request) -> HTMLResponse:
    source = source_of(request)
    view, findings, zk_note = await source.view_or_note()
    brokers_note = None
    try:
        state = await cluster_state(source, view)
    except EXPECTED_FAILURES as e:
        if view is None:
            raise
        # no broker answers: what ZooKeeper says is still worth a page (and keeps reloading)
        state = state_from_zookeeper(source, view)
        brokers_note = f"no broker answered ({status_and_message(e)[1]}): this page shows what ZooKeeper says"
    return page(
        request,
        "overview.html",
        brokers_note=brokers_note,
        state=state,
        findings=findings,
        summary=finding_summary(findings or []),
        zk_note=zk_note,
        refresh=source.settings.refresh_s,
        partitions=sum(len(t.partitions) for t in state.topics),
        offline=sum(t.offline for t in state.topics),
        under_replicated=sum(t.under_replicated for t in state.topics),
    )


async def brokers(request: Request) -> HTMLResponse:
    source = source_of(request)
    view, _, zk_note = await source.view_or_note()
    state = await cluster_state(source, view)
    return page(request, "brokers.html", state=state, zk_note=zk_note)


ROUTES = [Route("/", overview, name="overview"), Route("/brokers", brokers, name="brokers")]
