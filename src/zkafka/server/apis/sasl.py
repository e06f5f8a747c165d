"""SaslHandshake (17) and SaslAuthenticate (36): the SASL exchange of a SASL_PLAINTEXT or SASL_SSL
connection (state in `zkafka.server.security.SaslSession`), answered as Kafka's
SaslServerAuthenticator answers:

* on a listener without SASL both get ILLEGAL_SASL_STATE;
* an unknown or disabled mechanism gets UNSUPPORTED_SASL_MECHANISM with the enabled ones, then the
  connection is closed;
* a SaslAuthenticate with no exchange in progress gets ILLEGAL_SASL_STATE, then the close;
* a failed exchange (wrong password, malformed token) gets SASL_AUTHENTICATION_FAILED with the
  mechanism's message (never a secret), then the close;
* success makes the connection its principal; v1+ carries `session_lifetime_ms` (KIP-368).
"""

from __future__ import annotations

from zkafka.protocol import ErrorCode
from zkafka.protocol.messages import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)
from zkafka.server.dispatcher import RequestContext, authenticated


def handle_handshake(ctx: RequestContext, request: SaslHandshakeRequest) -> SaslHandshakeResponse:
    conn = ctx.connection
    sasl = conn.sasl
    if sasl is None:
        return SaslHandshakeResponse(error_code=ErrorCode.ILLEGAL_SASL_STATE, mechanisms=[])
    enabled = list(sasl.security.mechanisms)
    if sasl.server is not None:
        conn.close_after_responses("SaslHandshake during a SASL exchange")
        return SaslHandshakeResponse(error_code=ErrorCode.ILLEGAL_SASL_STATE, mechanisms=enabled)
    if not sasl.handshake(request.mechanism, ctx.api_version):
        conn.close_after_responses("unsupported SASL mechanism")
        return SaslHandshakeResponse(error_code=ErrorCode.UNSUPPORTED_SASL_MECHANISM, mechanisms=enabled)
    return SaslHandshakeResponse(error_code=ErrorCode.NONE, mechanisms=enabled)


def handle_authenticate(ctx: RequestContext, request: SaslAuthenticateRequest) -> SaslAuthenticateResponse:
    conn = ctx.connection
    sasl = conn.sasl
    if sasl is None:
        return SaslAuthenticateResponse(
            error_code=ErrorCode.ILLEGAL_SASL_STATE,
            error_message="SaslAuthenticate on a listener without SASL",
            auth_bytes=b"",
        )
    if sasl.server is None or sasl.raw:
        conn.close_after_responses("SaslAuthenticate without a SaslHandshake v1 first")
        return SaslAuthenticateResponse(
            error_code=ErrorCode.ILLEGAL_SASL_STATE,
            error_message="Unexpected SaslAuthenticate request: send SaslHandshake v1 first",
            auth_bytes=b"",
        )
    step = sasl.authenticate(bytes(request.auth_bytes), ctx.api_version)
    if step.failed:
        conn.close_after_responses("SASL authentication failed")
        return SaslAuthenticateResponse(
            error_code=ErrorCode.SASL_AUTHENTICATION_FAILED, error_message=step.error, auth_bytes=b""
        )
    if step.complete:
        authenticated(conn)
    return SaslAuthenticateResponse(
        error_code=ErrorCode.NONE,
        error_message=None,
        auth_bytes=step.response,
        session_lifetime_ms=sasl.session_lifetime_ms() if step.complete else 0,
    )
