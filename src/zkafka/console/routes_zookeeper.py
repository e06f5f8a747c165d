"""`/zookeeper?path=/...`: the raw tree, read-only."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import Route

from zkafka.console.render import page
from zkafka.console.sessions import source_of
from zkafka.console.zk_data import child_path, read_znode


async def zookeeper(request: Request) -> HTMLResponse:
    node = await read_znode(source_of(request), request.query_params.get("path", "/"))
    return page(request, "zookeeper.html", node=node, child_path=child_path)


ROUTES = [Route("/zookeeper", zookeeper, name="zookeeper")]
