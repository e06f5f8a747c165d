"""SaslHandshake (key 17): pick a SASL mechanism.

Version notes: v1 means the SASL tokens follow in SaslAuthenticate requests instead of raw
frames. Never flexible.
"""

from zkafka.protocol.schema import F, api

SPEC = api(
    17,
    "SaslHandshake",
    versions="0-1",
    flexible="none",
    request=[F("mechanism", "string")],
    response=[F("error_code", "int16"), F("mechanisms", "[]string")],
)
