"""SaslAuthenticate (key 36): one SASL token each way (KIP-152), after SaslHandshake v1.

Version notes: v1 adds session_lifetime_ms (KIP-368 re-authentication); v2 is the first flexible
version.
"""

from zkafka.protocol.schema import F, api

SPEC = api(
    36,
    "SaslAuthenticate",
    versions="0-2",
    flexible="2+",
    request=[F("auth_bytes", "bytes")],
    response=[
        F("error_code", "int16"),
        F("error_message", "string", nullable="0+", default=None),
        F("auth_bytes", "bytes"),
        F("session_lifetime_ms", "int64", "1+"),
    ],
)
