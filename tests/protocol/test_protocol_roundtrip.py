"""Property: for every API, kind and version, a random valid message survives encode -> decode."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from protocol_strategies import message_strategy

from zkafka.protocol import decode_body, encode_body
from zkafka.protocol.schemas import SPECS

CASES = [(key, kind) for key in sorted(SPECS) for kind in ("request", "response")]


@pytest.mark.parametrize(("api_key", "kind"), CASES, ids=[f"{SPECS[k].name}-{kind}" for k, kind in CASES])
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_encode_decode_round_trip(api_key: int, kind: str, data: st.DataObject) -> None:
    spec = SPECS[api_key]
    for version in range(spec.versions.low, spec.versions.high + 1):  # every version, every example
        message = data.draw(message_strategy(spec, kind, version), label=f"v{version}")
        body = encode_body(message, version)
        decoded = decode_body(api_key, kind, version, body)
        assert decoded == message, f"v{version}"
        # Encoding is deterministic and decoding loses nothing the version carries.
        assert encode_body(decoded, version) == body, f"v{version}"
