"""A listener's security from the broker config (`zkafka.server.security`), and the SASL session
state machine, without a broker: what a start-up refuses, and KIP-368 expiry."""

from __future__ import annotations

import time

import pytest

from zkafka.config import BrokerConfig
from zkafka.protocol import ApiKey
from zkafka.server.authorization import authorizer_enabled
from zkafka.server.security import (
    SaslSession,
    SecurityConfigError,
    build_listener_security,
    inter_broker_client_security,
)

PLAIN_JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="pw";'


def config(**props: str) -> BrokerConfig:
    return BrokerConfig.from_properties(
        {
            "zookeeper.connect": "zk:2181",
            "listeners": "PLAINTEXT://127.0.0.1:9092,SASL_PLAINTEXT://127.0.0.1:9093",
            **props,
        }
    )


def test_a_sasl_listener_needs_a_supported_mechanism() -> None:
    with pytest.raises(SecurityConfigError, match=r"no supported SASL mechanism.*GSSAPI"):
        build_listener_security(config(), None)  # Kafka's default sasl.enabled.mechanisms=GSSAPI


def test_plain_needs_its_jaas_users_and_never_shows_them() -> None:
    with pytest.raises(SecurityConfigError, match=r"plain\.sasl\.jaas\.config") as info:
        build_listener_security(config(**{"sasl.enabled.mechanisms": "PLAIN"}), None)
    bad = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="secret-pw"'  # no ;
    with pytest.raises(SecurityConfigError) as info:
        build_listener_security(config(**{"sasl.enabled.mechanisms": "PLAIN", "sasl.jaas.config": bad}), None)
    assert "secret-pw" not in str(info.value)
    sec = build_listener_security(
        config(
            **{
                "sasl.enabled.mechanisms": "PLAIN,GSSAPI",
                "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS,
            }
        ),
        None,
    )["SASL_PLAINTEXT"]
    assert sec.mechanisms == ("PLAIN",) and sec.is_sasl


def test_inter_broker_sasl_logs_in_with_the_listener_jaas_user() -> None:
    jaas = (
        "org.apache.kafka.common.security.plain.PlainLoginModule required "
        'username="broker" password="broker-pw" user_broker="broker-pw";'
    )
    cfg = config(
        **{
            "inter.broker.listener.name": "SASL_PLAINTEXT",
            "sasl.enabled.mechanisms": "PLAIN",
            "sasl.mechanism.inter.broker.protocol": "PLAIN",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": jaas,
        }
    )
    build_listener_security(cfg, None)
    sec = inter_broker_client_security(cfg)
    assert sec is not None and sec.protocol == "SASL_PLAINTEXT" and sec.mechanism == "PLAIN"
    assert (sec.username, sec.password) == ("broker", "broker-pw") and sec.ssl_context is None
    assert "broker-pw" not in repr(sec)
    assert inter_broker_client_security(config()) is None  # PLAINTEXT


def test_inter_broker_sasl_refusals_name_no_secret() -> None:
    base = {"inter.broker.listener.name": "SASL_PLAINTEXT", "sasl.enabled.mechanisms": "PLAIN"}
    # Kafka's default inter-broker mechanism is GSSAPI, which this listener does not serve.
    with pytest.raises(SecurityConfigError, match=r"sasl\.mechanism\.inter\.broker\.protocol GSSAPI"):
        build_listener_security(config(**base, **{"sasl.jaas.config": PLAIN_JAAS}), None)
    # A server-only JAAS config (user_ entries, no username/password) cannot log the broker in.
    with pytest.raises(SecurityConfigError, match="inter-broker listener SASL_PLAINTEXT") as info:
        inter_broker_client_security(
            config(
                **base, **{"sasl.mechanism.inter.broker.protocol": "PLAIN", "sasl.jaas.config": PLAIN_JAAS}
            )
        )
    assert '"pw"' not in str(info.value)
    with pytest.raises(SecurityConfigError, match=r"listener\.name\.sasl_plaintext\.scram-sha-512"):
        inter_broker_client_security(
            config(**base, **{"sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512"})
        )


def test_authorizer_class_names() -> None:
    assert not authorizer_enabled(config())
    for name in ("kafka.security.authorizer.AclAuthorizer", "kafka.security.auth.SimpleAclAuthorizer"):
        assert authorizer_enabled(config(**{"authorizer.class.name": name}))
    with pytest.raises(SecurityConfigError, match="not supported"):
        authorizer_enabled(config(**{"authorizer.class.name": "com.example.MyAuthorizer"}))


def test_sasl_session_states_and_expiry() -> None:
    sec = build_listener_security(
        config(
            **{
                "sasl.enabled.mechanisms": "PLAIN",
                "sasl.jaas.config": PLAIN_JAAS,
                "connections.max.reauth.ms": "50",
            }
        ),
        None,
    )["SASL_PLAINTEXT"]
    session = SaslSession(sec)
    assert session.allows(ApiKey.METADATA) is not None
    assert session.allows(ApiKey.API_VERSIONS) is None
    assert not session.handshake("SCRAM-SHA-256", 1)
    assert session.handshake("PLAIN", 1)
    assert session.authenticate(b"\0alice\0pw", 1).complete
    assert session.principal == "User:alice" and session.session_lifetime_ms() == 50
    assert session.allows(ApiKey.METADATA) is None
    time.sleep(0.08)
    assert "expired" in (session.allows(ApiKey.METADATA) or "")
    assert session.allows(ApiKey.SASL_HANDSHAKE) is None
    assert session.handshake("PLAIN", 1) and session.authenticate(b"\0alice\0pw", 1).complete
    assert session.allows(ApiKey.METADATA) is None
