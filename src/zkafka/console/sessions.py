"""Signing in (`zkafka ui --login`): each user of the console talks to the brokers as themselves.

The console checks no password itself: a sign-in opens that user's own connections to the brokers'
SASL listener (the mechanism, SCRAM or PLAIN, and TLS from `--command-config`) and is accepted when
the brokers authenticate them. Every page and action of the session then goes through those
connections, so the brokers' authorizer judges each user by their own principal. A session is a
random token in an HttpOnly, SameSite=Strict cookie; it ends on sign-out or after
`IDLE_S` unused, and its connections close with it. Sessions are bounded (`MAX_SESSIONS`): the one
unused longest is ended to make room. The password stays in memory only, for the session's
reconnections.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass, replace

from starlette.requests import Request

from zkafka.console.errors import ConsoleError
from zkafka.console.settings import ConsoleSettings
from zkafka.console.source import ClusterSource

COOKIE = "zkafka_console_session"
IDLE_S = 30 * 60
MAX_SESSIONS = 64
MAX_USERNAME = 256
MAX_PASSWORD = 1024


class SignInRequired(Exception):
    """A page asked for without a live session: the browser is sent to /login."""


@dataclass
class Session:
    username: str
    source: ClusterSource
    last_used: float


class Sessions:
    def __init__(self, settings: ConsoleSettings) -> None:
        assert settings.security is not None and settings.security.is_sasl, "--login needs a SASL listener"
        self._settings = settings
        self._sessions: dict[str, Session] = {}

    async def sign_in(self, username: str, password: str) -> str:
        """A new session's token once the brokers authenticated the user; 401 with the brokers'
        answer (never the password) when they did not."""
        if not username or not password:
            raise ConsoleError(400, "give a user name and a password")
        if len(username) > MAX_USERNAME or len(password) > MAX_PASSWORD:
            raise ConsoleError(400, "the user name or password is too long")
        assert self._settings.security is not None
        security = replace(self._settings.security, username=username, password=password)
        source = ClusterSource(replace(self._settings, security=security), None)
        await source.start()
        try:
            await source.admin.describe_cluster()  # the brokers authenticate the user on connecting
        except Exception as e:
            await source.close()
            raise ConsoleError(401, f"sign-in refused: {_without(str(e), password)}") from None
        await self._expire()
        while len(self._sessions) >= MAX_SESSIONS:
            oldest = min(self._sessions, key=lambda t: self._sessions[t].last_used)
            await self.sign_out(oldest)
        token = secrets.token_urlsafe(32)
        self._sessions[token] = Session(username, source, time.monotonic())
        return token

    def get(self, token: str | None) -> Session:
        session = self._sessions.get(token) if token else None
        now = time.monotonic()
        if session is None or now - session.last_used > IDLE_S:
            raise SignInRequired
        session.last_used = now
        return session

    def username(self, token: str | None) -> str | None:
        session = self._sessions.get(token) if token else None
        return None if session is None else session.username

    async def sign_out(self, token: str | None) -> None:
        session = self._sessions.pop(token, None) if token else None
        if session is not None:
            await session.source.close()

    async def close(self) -> None:
        for token in list(self._sessions):
            await self.sign_out(token)

    async def _expire(self) -> None:
        now = time.monotonic()
        for token in [t for t, s in self._sessions.items() if now - s.last_used > IDLE_S]:
            await self.sign_out(token)


def _without(message: str, secret: str) -> str:
    return message.replace(secret, "***") if secret else message


def source_of(request: Request) -> ClusterSource:
    """The connections a request's page uses: the console's own, or with `--login` the signed-in
    user's (SignInRequired without a live session)."""
    sessions: Sessions | None = request.app.state.sessions
    if sessions is None:
        source: ClusterSource = request.app.state.source
        return source
    return sessions.get(request.cookies.get(COOKIE)).source
