"""SaslHandshake (17) and SaslAuthenticate (36) bodies: zkafka's codec against kafka-python's (which
is generated from Kafka's own JSON message definitions), byte for byte, every version."""

from __future__ import annotations

import pytest

from zkafka.protocol.codec import decode_body, encode_body
from zkafka.protocol.messages import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)

kp = pytest.importorskip("kafka.protocol.sasl")


@pytest.mark.parametrize("version", [0, 1])
def test_sasl_handshake_matches_kafka_python(version: int) -> None:
    ours = encode_body(SaslHandshakeRequest(mechanism="SCRAM-SHA-512"), version)
    theirs = kp.SaslHandshakeRequest(mechanism="SCRAM-SHA-512", version=version).encode(version=version)
    assert bytes(ours) == bytes(theirs)
    response = kp.SaslHandshakeResponse(error_code=33, mechanisms=["PLAIN", "SCRAM-SHA-256"], version=version)
    ours = encode_body(SaslHandshakeResponse(error_code=33, mechanisms=["PLAIN", "SCRAM-SHA-256"]), version)
    assert bytes(ours) == bytes(response.encode(version=version))


@pytest.mark.parametrize("version", [0, 1, 2])
@pytest.mark.parametrize("message", [None, "Authentication failed: Invalid user credentials"])
def test_sasl_authenticate_matches_kafka_python(version: int, message: str | None) -> None:
    token = b"n,,n=alice,r=abc\x00\xff"
    ours = encode_body(SaslAuthenticateRequest(auth_bytes=token), version)
    theirs = kp.SaslAuthenticateRequest(auth_bytes=token, version=version).encode(version=version)
    assert bytes(ours) == bytes(theirs)
    decoded = decode_body(36, "request", version, theirs)
    assert bytes(decoded.auth_bytes) == token

    fields = dict(error_code=58, error_message=message, auth_bytes=b"v=xyz")
    if version >= 1:
        fields["session_lifetime_ms"] = 3_600_000
    ours = encode_body(SaslAuthenticateResponse(**fields), version)
    theirs = kp.SaslAuthenticateResponse(**fields, version=version).encode(version=version)
    assert bytes(ours) == bytes(theirs)
    back = kp.SaslAuthenticateResponse.decode(bytes(ours), version=version)
    assert back.error_code == 58 and back.error_message == message
