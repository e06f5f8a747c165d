"""`/login` and `/logout` (`zkafka ui --login`): the sign-in form, the session cookie, and where a
page asked for without a session sends the browser."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from zkafka.console.errors import ConsoleError
from zkafka.console.forms import check_same_origin, form_fields
from zkafka.console.render import error_page, page
from zkafka.console.sessions import COOKIE, IDLE_S, Sessions, SignInRequired


def _sessions(request: Request) -> Sessions:
    sessions: Sessions | None = request.app.state.sessions
    if sessions is None:
        raise ConsoleError(404, "this console was started without --login: there is nothing to sign in to")
    return sessions


def _local(target: str | None) -> str:
    """Where to go after signing in: a path of this console only (never another site)."""
    if not target or not target.startswith("/") or target.startswith("//") or "\\" in target:
        return "/"
    return target


async def login_form(request: Request) -> HTMLResponse:
    _sessions(request)
    return page(request, "login.html", next=_local(request.query_params.get("next")), error=None)


async def login(request: Request) -> Response:
    sessions = _sessions(request)
    fields = await form_fields(request)
    target = _local(fields.get("next"))
    try:
        token = await sessions.sign_in(fields.get("username", ""), fields.get("password", ""))
    except ConsoleError as e:
        return page(request, "login.html", http_status=e.status, next=target, error=e.message)
    response = RedirectResponse(target, status_code=303)
    response.set_cookie(
        COOKIE,
        token,
        max_age=IDLE_S,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )
    return response


async def logout(request: Request) -> Response:
    sessions = _sessions(request)
    check_same_origin(request)  # another site may not sign a user out
    await sessions.sign_out(request.cookies.get(COOKIE))
    response = RedirectResponse("/login", status_code=303)
    response.delete_cookie(COOKIE)
    return response


async def sign_in_required(request: Request, exc: Exception) -> Response:
    """A page without a session: the browser goes to the sign-in form (and back afterwards);
    anything else (a form post) is a 401."""
    if request.method == "GET":
        target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        return RedirectResponse(request.url_for("login_form").include_query_params(next=target), 303)
    return error_page(request, ConsoleError(401, "sign in first (the session ended)"))


ROUTES = [
    Route("/login", login_form, name="login_form"),
    Route("/login", login, methods=["POST"], name="login"),
    Route("/logout", logout, methods=["POST"], name="logout"),
]
HANDLERS = {SignInRequired: sign_in_required}
