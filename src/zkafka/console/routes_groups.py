"""`/groups` and `/groups/<id>`: both kinds of consumer group with members, assignments and lag."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import Route

from zkafka.console.errors import ConsoleError
from zkafka.console.group_data import describe_group, list_groups
from zkafka.console.render import page
from zkafka.console.source import ClusterSource


async def groups(request: Request) -> HTMLResponse:
    source: ClusterSource = request.app.state.source
    view, _, zk_note = await source.view_or_note()
    return page(request, "groups.html", groups=await list_groups(source, view), zk_note=zk_note)


async def group(request: Request) -> HTMLResponse:
    source: ClusterSource = request.app.state.source
    view, _, zk_note = await source.view_or_note()
    group_id = request.path_params["group_id"]
    if not group_id:
        raise ConsoleError(404, "no group named: the URL is /groups/<group id>")
    details = await describe_group(source, view, group_id)
    return page(
        request,
        "group.html",
        group_id=group_id,
        details=details,
        zk_note=zk_note,
        refresh=source.settings.refresh_s,
    )


ROUTES = [
    Route("/groups", groups, name="groups"),
    Route("/groups/{group_id:path}", group, name="group"),
]
