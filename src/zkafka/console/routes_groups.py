"""`/groups` and `/groups/<id>`: both kinds of consumer group with members, assignments, lag and
its chart over time (each look at the page, or its own refresh, is a sample), and the offset reset."""

from __future__ import annotations

import time

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from zkafka.console.errors import ConsoleError
from zkafka.console.forms import choice_param, form_fields, int_param, require_writable
from zkafka.console.group_data import BROKER, describe_group, list_groups
from zkafka.console.group_reset import TARGETS, execute, reset_plan
from zkafka.console.lag_history import chart
from zkafka.console.render import page
from zkafka.console.sessions import source_of


async def groups(request: Request) -> HTMLResponse:
    source = source_of(request)
    view, _, zk_note = await source.view_or_note()
    return page(request, "groups.html", groups=await list_groups(source, view), zk_note=zk_note)


async def group(request: Request) -> HTMLResponse:
    source = source_of(request)
    view, _, zk_note = await source.view_or_note()
    group_id = request.path_params["group_id"]
    if not group_id:
        raise ConsoleError(404, "no group named: the URL is /groups/<group id>")
    details = await describe_group(source, view, group_id)
    topics = sorted({r.topic for d in details if d.kind == BROKER for r in d.lags})
    now = time.time()
    for d in details:
        if d.note is None:  # a sample with offsets missing would draw a false drop
            source.lag_history.record((d.kind, group_id), now, d.total_lag)
    return page(
        request,
        "group.html",
        reset_topics=topics,
        group_id=group_id,
        details=details,
        charts={d.kind: chart(source.lag_history.samples((d.kind, group_id))) for d in details},
        zk_note=zk_note,
        # the lag part refreshes in place (console.js), leaving a reset form being filled in alone
        refresh=source.settings.refresh_s,
    )


async def reset(request: Request) -> Response:
    """First POST: the plan (dry run) to confirm; the POST with confirm=yes commits it."""
    source = source_of(request)
    require_writable(source.settings.read_only, "offsets cannot be reset here")
    group_id = request.path_params["group_id"]
    fields = await form_fields(request)
    to = choice_param(fields.get("to"), "reset to", TARGETS)
    value = int_param(fields.get("value"), "value", low=-(2**62), high=2**62)
    plan = await reset_plan(source, group_id, fields.get("topic", ""), to, value)
    if fields.get("confirm") != "yes":
        return page(request, "group_reset.html", group_id=group_id, fields=fields, plan=plan)
    await execute(source, group_id, plan)
    return RedirectResponse(request.url_for("group", group_id=group_id), status_code=303)


ROUTES = [
    Route("/groups", groups, name="groups"),
    # before /groups/<id>: a path parameter takes slashes (group ids may have them)
    Route("/groups/{group_id:path}/reset", reset, methods=["POST"], name="reset"),
    Route("/groups/{group_id:path}", group, name="group"),
]
