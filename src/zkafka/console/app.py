"""The Starlette application: the routes of every page family, the stylesheet and script, the error
pages, and the lifespan that opens and closes the cluster clients."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import Route

from zkafka.console import (
    routes_admin,
    routes_cluster,
    routes_groups,
    routes_login,
    routes_topics,
    routes_zookeeper,
)
from zkafka.console.errors import EXPECTED_FAILURES, ConsoleError
from zkafka.console.render import error_page, script, stylesheet
from zkafka.console.sessions import Sessions
from zkafka.console.settings import ConsoleSettings
from zkafka.console.source import ClusterSource, ZkBrowser


def build_app(settings: ConsoleSettings, zk: ZkBrowser | None = None) -> Starlette:
    """The console for the cluster at `settings.bootstrap_servers`; `zk` is an open session on its
    ZooKeeper (with the chroot), owned by the caller, or None."""
    source = ClusterSource(settings, zk)
    # --login: no shared connections, each signed-in user's own (and nothing read from ZooKeeper,
    # which no authorizer guards)
    sessions = Sessions(settings) if settings.login else None

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await source.start()
        try:
            yield
        finally:
            await source.close()
            if sessions is not None:
                await sessions.close()

    async def http_error(request: Request, exc: Exception) -> HTMLResponse:
        assert isinstance(exc, HTTPException)
        message = "no such page" if exc.status_code == 404 else str(exc.detail)
        return error_page(request, ConsoleError(exc.status_code, f"{message}: {request.url.path}"))

    async def any_error(request: Request, exc: Exception) -> HTMLResponse:
        return error_page(request, exc)

    app = Starlette(
        routes=[
            *routes_cluster.ROUTES,
            *routes_topics.ROUTES,
            *routes_groups.ROUTES,
            *routes_zookeeper.ROUTES,
            *routes_admin.ROUTES,
            *routes_login.ROUTES,
            Route("/static/console.css", stylesheet, name="stylesheet"),
            Route("/static/console.js", script, name="script"),
        ],
        # the expected failures are answered by ExceptionMiddleware; anything else still gets
        # the error page (from ServerErrorMiddleware, which also logs it for the operator)
        exception_handlers={
            HTTPException: http_error,
            **routes_login.HANDLERS,
            **dict.fromkeys(EXPECTED_FAILURES, any_error),
            Exception: any_error,
        },
        lifespan=lifespan,
    )
    app.state.source = source
    app.state.settings = settings
    app.state.sessions = sessions
    return app
