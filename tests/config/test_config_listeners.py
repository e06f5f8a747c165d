"""Listener endpoints and the security protocol map (zkafka.config.listeners)."""

from __future__ import annotations

import pytest

from zkafka.config import Endpoint, parse_listener, parse_listeners
from zkafka.config.listeners import (
    check_distinct_ports,
    is_meta_address,
    parse_protocol_map,
    resolve_protocols,
)


@pytest.mark.parametrize(
    ("text", "endpoint", "canonical"),
    [
        ("PLAINTEXT://:9092", Endpoint("PLAINTEXT", "", 9092, "PLAINTEXT"), "PLAINTEXT://:9092"),
        ("plaintext://localhost:0", Endpoint("PLAINTEXT", "localhost", 0, "PLAINTEXT"), None),
        ("SSL://10.1.2.3:9093", Endpoint("SSL", "10.1.2.3", 9093, "SSL"), None),
        ("SASL_SSL://[::1]:9092", Endpoint("SASL_SSL", "::1", 9092, "SASL_SSL"), None),
        ("PLAINTEXT://[fe80::1%eth0]:65535", Endpoint("PLAINTEXT", "fe80::1%eth0", 65535, "PLAINTEXT"), None),
        (
            "PLAINTEXT://::1:9092",
            Endpoint("PLAINTEXT", "::1", 9092, "PLAINTEXT"),  # Kafka accepts it bare
            "PLAINTEXT://[::1]:9092",
        ),
        (
            "  PLAINTEXT://broker-1.example.com:9092 ",
            Endpoint("PLAINTEXT", "broker-1.example.com", 9092, "PLAINTEXT"),
            "PLAINTEXT://broker-1.example.com:9092",
        ),
    ],
)
def test_parse_listener(text: str, endpoint: Endpoint, canonical: str | None) -> None:
    parsed = parse_listener(text)
    assert parsed == endpoint
    assert str(parsed) == (canonical or text.replace("plaintext", "PLAINTEXT"))
    assert parse_listener(str(parsed)) == parsed


@pytest.mark.parametrize(
    "text",
    [
        "localhost:9092",
        "PLAINTEXT://",
        "PLAINTEXT://host",
        "PLAINTEXT://host:port",
        "PLAINTEXT://:65536",
        "PLAINTEXT://[::1:9092",
        "PLAINTEXT://[::1]9092",
        "PLAIN TEXT://:9092",
        "://:9092",
        "PLAINTEXT://ho st:1",
        "CLIENT://:9092",
    ],
)
def test_bad_listener(text: str) -> None:
    with pytest.raises(ValueError):
        parse_listener(text)


def test_custom_protocol_map_and_unresolved_parsing() -> None:
    protocols = parse_protocol_map("client:sasl_ssl, INTERNAL:PLAINTEXT")
    assert protocols == {"CLIENT": "SASL_SSL", "INTERNAL": "PLAINTEXT"}
    endpoints = parse_listeners("CLIENT://:9092,INTERNAL://:9093", resolve=False)
    assert {e.security_protocol for e in endpoints} == {""}
    assert [e.security_protocol for e in resolve_protocols(endpoints, protocols)] == ["SASL_SSL", "PLAINTEXT"]


def test_duplicate_names_and_ports() -> None:
    with pytest.raises(ValueError, match="used twice"):
        parse_listeners("PLAINTEXT://a:1,plaintext://b:2")
    with pytest.raises(ValueError, match="same port"):
        check_distinct_ports(parse_listeners("PLAINTEXT://a:1,SSL://b:1"))
    check_distinct_ports(
        parse_listeners("PLAINTEXT://127.0.0.1:1,SSL://[::1]:1,SASL_SSL://:0,SASL_PLAINTEXT://:0")
    )


def test_meta_addresses() -> None:
    assert is_meta_address("0.0.0.0") and is_meta_address("::")
    assert not is_meta_address("127.0.0.1") and not is_meta_address("") and not is_meta_address("broker1")
