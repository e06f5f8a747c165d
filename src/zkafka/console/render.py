"""Pages from the Jinja templates in `templates/`, autoescaped, the one stylesheet, and the one
script (`console.js`: the live parts of a page refresh in place)."""

from __future__ import annotations

import html
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jinja2
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from zkafka.console.errors import status_and_message
from zkafka.console.sessions import COOKIE

HERE = Path(__file__).parent
STYLESHEET = (HERE / "static" / "console.css").read_text()
SCRIPT = (HERE / "static" / "console.js").read_text()

_env = jinja2.Environment(
    loader=jinja2.FileSystemLoader(HERE / "templates"),
    autoescape=True,  # every page shows data from the cluster: it is text, never markup
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)
_env.filters["when"] = lambda ms: (
    ""
    if ms is None or ms < 0
    else datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
)
_env.filters["ids"] = lambda ids: ", ".join(map(str, ids)) if ids else "—"


def page(request: Request, template: str, *, http_status: int = 200, **context: Any) -> HTMLResponse:
    settings = request.app.state.settings
    sessions = request.app.state.sessions
    text = _env.get_template(template).render(
        request=request,
        path=request.url.path,
        read_only=settings.read_only,
        has_zookeeper=settings.zookeeper_connect is not None,
        login=sessions is not None,
        user=None if sessions is None else sessions.username(request.cookies.get(COOKIE)),
        **{"refresh": 0, **context},
    )
    return HTMLResponse(text, status_code=http_status)


def error_page(request: Request, exc: BaseException) -> HTMLResponse:
    status, message = status_and_message(exc)
    try:
        return page(request, "error.html", http_status=status, status=status, message=message)
    except Exception as e:  # the page itself failed: still no traceback for the browser
        text = html.escape(f"{message} (and the error page failed: {type(e).__name__}: {e})")
        return HTMLResponse(f"<!doctype html><title>Error</title><p id=error-message>{text}</p>", status)


def stylesheet(_: Request) -> Response:
    return Response(STYLESHEET, media_type="text/css", headers={"Cache-Control": "max-age=300"})


def script(_: Request) -> Response:
    return Response(SCRIPT, media_type="text/javascript", headers={"Cache-Control": "max-age=300"})
