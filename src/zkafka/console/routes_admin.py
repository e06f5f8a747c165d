"""`/reassignments` with its actions (start or cancel a reassignment, elect preferred leaders),
`/acls` and `/quotas`. Every action goes through the brokers' admin APIs (AlterPartitionReassignments,
ElectLeaders), so their authorizer decides; each shows its plan first and acts on confirm=yes."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from zkafka.client.types import TopicPartition
from zkafka.console.access_data import acls, quotas
from zkafka.console.forms import form_fields, require_writable
from zkafka.console.reassign_data import (
    election_preview,
    parse_partitions,
    parse_plan,
    plan_rows,
    reassignments,
)
from zkafka.console.render import page
from zkafka.console.sessions import source_of
from zkafka.protocol import ErrorCode, KafkaError


async def reassignments_page(request: Request) -> HTMLResponse:
    source = source_of(request)
    view, _, zk_note = await source.view_or_note()
    found = await reassignments(source, view, zk_note)
    return page(
        request,
        "reassignments.html",
        found=found,
        has_view=view is not None,
        refresh=source.settings.refresh_s,
        plan=request.query_params.get("plan", ""),
    )


def _name(tp: TopicPartition) -> str:
    return f"{tp.topic}-{tp.partition}"


def _ids(ids: tuple[int, ...] | None) -> str:
    return "—" if not ids else ",".join(map(str, ids))


def _results(
    request: Request, title: str, outcomes: dict[TopicPartition, KafkaError | None], fine: set[ErrorCode]
) -> Response:
    """A per-partition outcome page; 400 when any partition was refused (errors in `fine`, such as
    ELECTION_NOT_NEEDED, are outcomes, not refusals)."""
    rows = [
        (_name(tp), "done" if e is None else str(e), e is None or e.code in fine)
        for tp, e in sorted(outcomes.items())
    ]
    refused = sum(not ok for _, _, ok in rows)
    return page(
        request,
        "results.html",
        http_status=400 if refused else 200,
        title=title,
        summary=f"{len(rows) - refused} of {len(rows)} partition(s) accepted"
        + (f", {refused} refused (the brokers' reasons below)" if refused else ""),
        rows=rows,
        back="/reassignments",
        back_label="back to the reassignments",
    )


async def start(request: Request) -> Response:
    """First POST: each partition's current replicas beside its target, and the current assignment
    to keep for a rollback (as kafka-reassign-partitions --execute prints it); confirm=yes starts it."""
    source = source_of(request)
    require_writable(source.settings.read_only, "reassignments cannot be started here")
    fields = await form_fields(request)
    plan = parse_plan(fields.get("plan", ""))
    rows, rollback = await plan_rows(source, dict(plan))
    if fields.get("confirm") != "yes":
        return page(
            request,
            "confirm.html",
            title="Start a reassignment",
            summary=f"Move the replicas of {len(rows)} partition(s) as planned? The controller adds "
            "the new replicas, waits for them to join the ISR, then drops the old ones.",
            headers=["Partition", "Current replicas", "Target replicas"],
            rows=[(_name(r.partition), [_name(r.partition), _ids(r.current), _ids(r.target)]) for r in rows],
            extra=("Current assignment (save it to roll back)", rollback),
            action="/reassignments/start",
            fields={"plan": fields.get("plan", "")},
            button="Start reassignment",
            can_confirm=True,
            cancel="/reassignments",
        )
    outcomes = await source.admin.alter_partition_reassignments(dict(plan))
    if all(e is None for e in outcomes.values()):
        return RedirectResponse("/reassignments", status_code=303)
    return _results(request, "Reassignment", outcomes, set())


async def cancel(request: Request) -> Response:
    """First POST: what is cancelled (the partitions go back to their original replicas);
    confirm=yes cancels it."""
    source = source_of(request)
    require_writable(source.settings.read_only, "reassignments cannot be cancelled here")
    fields = await form_fields(request)
    partitions = parse_partitions(fields.get("partitions", ""))
    if fields.get("confirm") != "yes":
        listed = await source.admin.list_partition_reassignments(partitions)
        return page(
            request,
            "confirm.html",
            title="Cancel a reassignment",
            summary=f"Cancel the reassignment of {len(partitions)} partition(s)? Each goes back to its "
            "original replicas; the replicas being added are dropped.",
            headers=["Partition", "Replicas now", "Adding", "Removing", "Back to"],
            rows=[
                (
                    _name(tp),
                    [_name(tp), "not moving"]
                    if tp not in listed
                    else [
                        _name(tp),
                        _ids(listed[tp].replicas),
                        _ids(listed[tp].adding_replicas),
                        _ids(listed[tp].removing_replicas),
                        _ids(tuple(r for r in listed[tp].replicas if r not in listed[tp].adding_replicas)),
                    ],
                )
                for tp in partitions
            ],
            extra=None,
            action="/reassignments/cancel",
            fields={"partitions": fields.get("partitions", "")},
            button="Cancel reassignment",
            can_confirm=bool(listed),
            cancel="/reassignments",
        )
    outcomes = await source.admin.alter_partition_reassignments(dict.fromkeys(partitions))
    if all(e is None for e in outcomes.values()):
        return RedirectResponse("/reassignments", status_code=303)
    return _results(request, "Cancelling the reassignment", outcomes, set())


async def elect(request: Request) -> Response:
    """First POST: the partitions whose leader is not their preferred replica (the dry run);
    confirm=yes asks the controller for a preferred-leader election (ElectLeaders)."""
    source = source_of(request)
    require_writable(source.settings.read_only, "leader elections cannot be triggered here")
    fields = await form_fields(request)
    topic = fields.get("topic", "").strip()
    preview = await election_preview(source, topic)
    if fields.get("confirm") != "yes":
        scope = f"topic {topic}" if topic else "every topic"
        return page(
            request,
            "confirm.html",
            title="Elect preferred leaders",
            summary=f"Elect the preferred replica as leader of the {len(preview)} partition(s) of {scope} "
            "led by another replica?"
            if preview
            else f"Every partition of {scope} is led by its preferred replica: no election is needed.",
            headers=["Partition", "Leader now", "Preferred leader"],
            rows=[
                (
                    _name(r.partition),
                    [_name(r.partition), "none" if r.leader is None else str(r.leader), str(r.preferred)],
                )
                for r in preview
            ],
            extra=None,
            action="/elections",
            fields={"topic": topic},
            button="Elect",
            can_confirm=bool(preview),
            cancel="/reassignments",
        )
    outcomes = await source.admin.elect_leaders([r.partition for r in preview])
    return _results(request, "Preferred-leader election", outcomes, {ErrorCode.ELECTION_NOT_NEEDED})


async def acls_page(request: Request) -> HTMLResponse:
    return page(request, "acls.html", found=await acls(source_of(request)))


async def quotas_page(request: Request) -> HTMLResponse:
    return page(request, "quotas.html", rows=await quotas(source_of(request)))


ROUTES = [
    Route("/reassignments", reassignments_page, name="reassignments"),
    Route("/reassignments/start", start, methods=["POST"], name="reassign_start"),
    Route("/reassignments/cancel", cancel, methods=["POST"], name="reassign_cancel"),
    Route("/elections", elect, methods=["POST"], name="elect"),
    Route("/acls", acls_page, name="acls"),
    Route("/quotas", quotas_page, name="quotas"),
]
