"""SASL server mechanisms as I/O-free state machines: `evaluate(token) -> SaslStep`.

The network layer (not wired yet) feeds each SaslAuthenticate token (or v0 raw frame) in and sends
`step.response` back; `step.complete` means authenticated as `server.principal`, `step.error` means
fail the authentication with SASL_AUTHENTICATION_FAILED and that message. Nothing a client sends can
make `evaluate` raise: malformed, oversized or out-of-order input is a failure step, and a mechanism
that failed or completed refuses any further token.

* PLAIN (RFC 4616), users from a PlainLoginModule's `user_<name>="<password>"` options, as Kafka's
  PlainServerCallbackHandler;
* SCRAM-SHA-256 / SCRAM-SHA-512 (RFC 5802 / 7677) through scramp's ScramServer, credentials from the
  ScramCredentialCache; no channel binding (Kafka has none) and no extensions (delegation tokens).
"""

from __future__ import annotations

import hmac
import logging
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from scramp import ScramException, ScramMechanism
from scramp.utils import ServerError

from zkafka.security.jaas import PLAIN_LOGIN_MODULE, plain_users, single_login_module
from zkafka.security.principal import KafkaPrincipal, sasl_principal
from zkafka.security.scram import MECHANISMS, ScramCredential

__all__ = [
    "MAX_TOKEN_BYTES",
    "PlainServer",
    "SaslServer",
    "SaslStep",
    "ScramServer",
    "create_sasl_server",
]

log = logging.getLogger(__name__)

MAX_TOKEN_BYTES = 524288
"""Kafka's `sasl.server.max.receive.size` default: no legitimate PLAIN or SCRAM message comes close."""

INVALID_CREDENTIALS = "Authentication failed: Invalid username or password"
SCRAM_INVALID_CREDENTIALS = "Authentication failed: Invalid user credentials"


@dataclass(frozen=True, slots=True)
class SaslStep:
    response: bytes = b""
    """Bytes for the client (a challenge, or the final server message); empty for PLAIN."""
    complete: bool = False
    error: str | None = None
    """Set on failure: the message for SaslAuthenticate's error_message (never a secret)."""

    @property
    def failed(self) -> bool:
        return self.error is not None


class SaslServer(ABC):
    """One authentication exchange of one connection."""

    mechanism: str

    def __init__(self) -> None:
        self.principal: KafkaPrincipal | None = None
        self._finished = False

    @property
    def complete(self) -> bool:
        return self.principal is not None

    def evaluate(self, token: bytes) -> SaslStep:
        if self._finished:
            return SaslStep(error=f"{self.mechanism} authentication has already finished")
        if not isinstance(token, bytes | bytearray | memoryview):
            return self._fail(f"a SASL token must be bytes, got {type(token).__name__}")
        if len(token) > MAX_TOKEN_BYTES:
            return self._fail(f"SASL token of {len(token)} bytes is larger than {MAX_TOKEN_BYTES}")
        try:
            step = self._evaluate(bytes(token))
        except Exception as e:  # a bug or a library surprise must still be a clean failure
            log.debug("%s authentication step failed unexpectedly", self.mechanism, exc_info=True)
            return self._fail(f"{self.mechanism} authentication failed: {type(e).__name__}")
        if step.failed or step.complete:
            self._finished = True
        return step

    def _fail(self, message: str) -> SaslStep:
        self._finished = True
        self.principal = None
        return SaslStep(error=message)

    @abstractmethod
    def _evaluate(self, token: bytes) -> SaslStep: ...


class PlainServer(SaslServer):
    """RFC 4616: one message `[authzid] NUL authcid NUL passwd`, Kafka's PlainSaslServer checks."""

    mechanism = "PLAIN"

    def __init__(self, users: Mapping[str, str]) -> None:
        super().__init__()
        self._users = users

    @classmethod
    def from_jaas(cls, jaas_config: str) -> PlainServer:
        """From a listener's `sasl.jaas.config`: a PlainLoginModule and its `user_<name>` options."""
        return cls(plain_users(single_login_module(jaas_config, PLAIN_LOGIN_MODULE)))

    def _evaluate(self, token: bytes) -> SaslStep:
        try:
            text = token.decode("utf-8")
        except UnicodeDecodeError:
            return self._fail("Invalid SASL/PLAIN response: not UTF-8")
        parts = text.split("\0")
        if len(parts) != 3:
            return self._fail(f"Invalid SASL/PLAIN response: expected 3 tokens, got {len(parts)}")
        authzid, username, password = parts
        if not username:
            return self._fail("Authentication failed: username not specified")
        if not password:
            return self._fail("Authentication failed: password not specified")
        expected = self._users.get(username)
        # Compare even for an unknown user, so the answer takes as long either way.
        ok = hmac.compare_digest(password.encode(), (expected if expected is not None else "\0").encode())
        if expected is None or not ok:
            return self._fail(INVALID_CREDENTIALS)
        if authzid and authzid != username:
            return self._fail(
                "Authentication failed: Client requested an authorization id that is different from username"
            )
        self.principal = sasl_principal(username)
        return SaslStep(complete=True)


CredentialLookup = Callable[[str, str], "ScramCredential | None"]
"""(mechanism, username) -> credential; ScramCredentialCache.get fits."""


class ScramServer(SaslServer):
    """RFC 5802 server: client-first -> server-first, client-final -> server-final (done)."""

    def __init__(self, mechanism: str, credentials: CredentialLookup) -> None:
        super().__init__()
        if mechanism not in MECHANISMS:
            raise ValueError(f"unknown SCRAM mechanism {mechanism!r}")
        self.mechanism = mechanism
        self._credentials = credentials
        self._username: str | None = None
        self._unknown_user = False
        self._server = ScramMechanism(mechanism).make_server(self._lookup)
        self._stage = 0

    def _lookup(self, username: str) -> tuple[bytes, bytes, bytes, int]:
        credential = self._credentials(self.mechanism, username)
        if credential is None:
            self._unknown_user = True  # scramp wraps what this raises; the flag says why it failed
            raise ScramException(SCRAM_INVALID_CREDENTIALS)
        self._username = username
        return credential.salt, credential.stored_key, credential.server_key, credential.iterations

    def _evaluate(self, token: bytes) -> SaslStep:
        try:
            text = token.decode("utf-8")
        except UnicodeDecodeError:
            return self._fail(f"Invalid {self.mechanism} message: not UTF-8")
        if self._stage == 0:
            return self._client_first(text)
        return self._client_final(text)

    def _client_first(self, text: str) -> SaslStep:
        self._stage = 1
        text, error = _strip_matching_authzid(text)
        if error:
            return self._fail(error)
        bare = text.split(",", 2)[2] if text.count(",") >= 2 else ""
        if any(not a.startswith(("n=", "r=")) for a in bare.split(",") if a):
            # Kafka's clients put extensions here only for delegation tokens (tokenauth=true).
            return self._fail(f"Invalid {self.mechanism} client-first message: extensions are not supported")
        try:
            self._server.set_client_first(text)
            return SaslStep(response=self._server.get_server_first().encode())
        except ScramException as e:
            message = str(e.args[0]) if e.args else "malformed message"
            if self._unknown_user:
                return self._fail(SCRAM_INVALID_CREDENTIALS)
            return self._fail(f"Invalid {self.mechanism} client-first message: {message}")

    def _client_final(self, text: str) -> SaslStep:
        nonce = next((a[2:] for a in text.split(",") if a.startswith("r=")), "")
        expected = self._server.nonce  # scramp's Nonce (str() is its text)
        try:
            if expected is not None and nonce != str(expected) and nonce.endswith(str(expected)):
                # Kafka's server accepts a client-final nonce that merely ends with the server's
                # nonce, and librdkafka up to 2.0 (kcat) sends its own nonce in front of it: accept
                # what Kafka accepts. The proof is still checked over the message the client signed.
                self._server.nonce = type(expected)(nonce)
            self._server.set_client_final(text)
            final = self._server.get_server_final()
        except ScramException as e:
            if e.server_error is ServerError.INVALID_PROOF:  # a wrong password, as Kafka words it
                return self._fail(SCRAM_INVALID_CREDENTIALS)
            message = str(e.args[0]) if e.args else "malformed"
            return self._fail(f"Invalid {self.mechanism} client-final message: {message}")
        if self._server.error is not None or self._username is None:
            return self._fail(SCRAM_INVALID_CREDENTIALS)
        self.principal = sasl_principal(self._username)
        return SaslStep(response=final.encode(), complete=True)


def _strip_matching_authzid(text: str) -> tuple[str, str | None]:
    """Kafka accepts an authzid equal to the user name (and refuses any other); scramp accepts none, so
    an equal one is dropped before scramp sees the message."""
    parts = text.split(",", 2)
    if len(parts) < 3 or not parts[1]:
        return text, None
    if not parts[1].startswith("a="):
        return text, f"Invalid SCRAM client-first message: bad gs2 header attribute {parts[1][:2]!r}"
    authzid = _unescape(parts[1][2:])
    user = next((_unescape(a[2:]) for a in parts[2].split(",") if a.startswith("n=")), None)
    if authzid != user:
        return (
            text,
            "Authentication failed: Client requested an authorization id that is different from username",
        )
    return f"{parts[0]},,{parts[2]}", None


def _unescape(name: str) -> str:
    return name.replace("=2C", ",").replace("=3D", "=")


def create_sasl_server(
    mechanism: str,
    *,
    plain_users: Mapping[str, str] | None = None,
    scram_credentials: CredentialLookup | None = None,
) -> SaslServer:
    """A server for one handshake's mechanism; ValueError if the mechanism is unknown or unconfigured
    (the network layer answers UNSUPPORTED_SASL_MECHANISM before getting here)."""
    if mechanism == "PLAIN":
        if plain_users is None:
            raise ValueError("PLAIN is not configured (no PlainLoginModule users)")
        return PlainServer(plain_users)
    if mechanism in MECHANISMS:
        if scram_credentials is None:
            raise ValueError(f"{mechanism} is not configured (no credential cache)")
        return ScramServer(mechanism, scram_credentials)
    raise ValueError(f"unsupported SASL mechanism {mechanism!r}")
