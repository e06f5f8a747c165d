"""The cluster-wide settings check (`zkafka.doctor.checks_broker_configs`) on hand-made
DescribeConfigs answers: which disagreements are found, with what severity, values and fix."""

from __future__ import annotations

from zkafka.doctor import Severity
from zkafka.doctor.checks_broker_configs import CLUSTER_WIDE, CONFIG_KEYS, BrokerSetting, check_broker_configs
from zkafka.doctor.checks_brokers import BrokerFacts, check_brokers
from zkafka.doctor.findings import Finding, exit_status
from zkafka.doctor.settings import DoctorSettings
from zkafka.doctor.view import ClusterView

_DYNAMIC = {
    "unclean.leader.election.enable",
    "min.insync.replicas",
    "message.max.bytes",
    "log.cleanup.policy",
}

_AGREED = {
    "inter.broker.protocol.version": "2.8-IV1",
    "log.message.format.version": "2.8-IV1",
    "zookeeper.set.acl": "false",
    "authorizer.class.name": "",
    "allow.everyone.if.no.acl.found": "false",
    "super.users": None,
    "delete.topic.enable": "true",
    "auto.create.topics.enable": "true",
    "unclean.leader.election.enable": "false",
    "default.replication.factor": "3",
    "num.partitions": "1",
    "min.insync.replicas": "2",
    "message.max.bytes": "1048588",
    "log.cleanup.policy": "delete",
    "offsets.topic.replication.factor": "3",
    "offsets.topic.num.partitions": "50",
    "transaction.state.log.replication.factor": "3",
    "transaction.state.log.num.partitions": "50",
    "transaction.state.log.min.isr": "2",
    "inter.broker.listener.name": None,
    "security.inter.broker.protocol": "PLAINTEXT",
    "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT",
    "sasl.enabled.mechanisms": "GSSAPI",
    "sasl.mechanism.inter.broker.protocol": "GSSAPI",
}


def _broker(overrides: dict[str, str | None] | None = None, dynamic_overrides: frozenset[str] = frozenset()):
    values = {**_AGREED, **(overrides or {})}
    return {
        k: BrokerSetting(v, dynamic=k in _DYNAMIC, override=k in dynamic_overrides) for k, v in values.items()
    }


def _cluster(odd: dict[str, str | None], **kwargs: frozenset[str]) -> dict[int, dict[str, BrokerSetting]]:
    return {1: _broker(), 2: _broker(), 3: _broker(odd, **kwargs)}


def _only(findings: list[Finding]) -> Finding:
    assert len(findings) == 1, findings
    return findings[0]


def test_every_listed_key_is_asked_for() -> None:
    assert {r.key for r in CLUSTER_WIDE} <= set(CONFIG_KEYS)
    assert set(_AGREED) == set(CONFIG_KEYS)


def test_agreeing_brokers_have_no_findings() -> None:
    assert list(check_broker_configs({1: _broker(), 2: _broker(), 3: _broker()})) == []
    assert list(check_broker_configs({1: _broker({"message.max.bytes": "1"})})) == []  # one broker


def test_a_static_key_names_every_value_and_the_restart() -> None:
    f = _only(list(check_broker_configs(_cluster({"auto.create.topics.enable": "false"}))))
    assert (f.severity, f.check, f.subject) == (
        Severity.WARNING,
        "broker-config-disagrees",
        "auto.create.topics.enable",
    )
    assert "broker 1=true, broker 2=true, broker 3=false" in f.message
    assert "auto.create.topics.enable=true in the server.properties of broker(s) 3" in f.fix
    assert "restart" in f.fix


def test_a_dynamic_key_is_fixed_with_zkafka_configs() -> None:
    f = _only(list(check_broker_configs(_cluster({"message.max.bytes": "2000000"}))))
    assert "--entity-name 3 --alter --add-config message.max.bytes=1048588" in f.fix
    assert "--entity-default" in f.fix
    # the broker's own /config/brokers/3 makes it differ: remove that override
    f = _only(
        list(
            check_broker_configs(
                _cluster({"min.insync.replicas": "1"}, dynamic_overrides=frozenset({"min.insync.replicas"}))
            )
        )
    )
    assert f.fix.endswith("--entity-name 3 --alter --delete-config min.insync.replicas"), f.fix


def test_critical_disagreements() -> None:
    for odd in (
        {"zookeeper.set.acl": "true"},
        {"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer"},
    ):
        f = _only(list(check_broker_configs(_cluster(odd))))
        assert f.severity is Severity.CRITICAL, f
    # with an authorizer everywhere, allow.everyone.if.no.acl.found must agree too (critical) ...
    acl = {"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer"}
    configs = {
        b: _broker({**acl, **({"allow.everyone.if.no.acl.found": "true"} if b == 2 else {})})
        for b in (1, 2, 3)
    }
    f = _only(list(check_broker_configs(configs)))
    assert (f.subject, f.severity) == ("allow.everyone.if.no.acl.found", Severity.CRITICAL)
    # ... and without one it does not matter
    assert list(check_broker_configs(_cluster({"allow.everyone.if.no.acl.found": "true"}))) == []


def test_a_rolling_upgrade_is_a_warning() -> None:
    f = _only(list(check_broker_configs(_cluster({"inter.broker.protocol.version": "2.7-IV2"}))))
    assert f.severity is Severity.WARNING and "rolling upgrade" in f.message


def test_values_compare_as_their_type() -> None:
    same = {"zookeeper.set.acl": "FALSE", "log.cleanup.policy": "delete", "authorizer.class.name": None}
    assert list(check_broker_configs(_cluster(same))) == []
    lists = {
        b: _broker({"log.cleanup.policy": p}) for b, p in ((1, "compact,delete"), (2, "delete, compact"))
    }
    assert list(check_broker_configs(lists)) == []


def test_no_majority_asks_the_operator_to_choose() -> None:
    configs = {1: _broker({"num.partitions": "3"}), 2: _broker({"num.partitions": "6"})}
    f = _only(list(check_broker_configs(configs)))
    assert f.fix == "choose one num.partitions and set it on every broker"


def test_a_sensitive_value_is_never_compared_or_printed() -> None:
    configs = _cluster({})
    configs[3]["super.users"] = BrokerSetting(None, sensitive=True)
    configs[1]["super.users"] = BrokerSetting("User:secret-admin", sensitive=True)
    assert list(check_broker_configs(configs)) == []


def test_inter_broker_listener_and_sasl_mechanism() -> None:
    listener = _only(list(check_broker_configs(_cluster({"security.inter.broker.protocol": "SSL"}))))
    assert (listener.subject, listener.severity) == ("inter.broker.listener.name", Severity.WARNING)
    assert "broker 3=SSL" in listener.message

    sasl = {
        "inter.broker.listener.name": "INTERNAL",
        "listener.security.protocol.map": "INTERNAL:SASL_PLAINTEXT,PLAINTEXT:PLAINTEXT",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512",
        "sasl.mechanism.inter.broker.protocol": "PLAIN",
    }
    configs = {
        1: _broker(sasl),
        2: _broker(sasl),
        3: _broker({**sasl, "sasl.enabled.mechanisms": "SCRAM-SHA-512"}),
    }
    findings = list(check_broker_configs(configs))
    # brokers 1 and 2 log in to broker 3 with PLAIN, which broker 3 does not enable
    found = {(f.check, f.subject): f for f in findings}
    assert set(found) == {
        ("broker-sasl-mechanism-not-enabled", "broker 1"),
        ("broker-sasl-mechanism-not-enabled", "broker 2"),
    }
    f = found[("broker-sasl-mechanism-not-enabled", "broker 1")]
    assert f.severity is Severity.CRITICAL and "broker(s) 3 do not enable" in f.message
    # over a plaintext inter-broker listener the mechanisms do not matter
    plain = {1: _broker(), 2: _broker({"sasl.enabled.mechanisms": "PLAIN"})}
    assert list(check_broker_configs(plain)) == []


def test_a_broker_without_configs_is_its_own_finding() -> None:
    facts = BrokerFacts(
        configs={1: _broker(), 2: _broker({"delete.topic.enable": "false"})},
        configs_unavailable={3: "CLUSTER_AUTHORIZATION_FAILED"},
    )
    findings = list(check_brokers(ClusterView(), facts, DoctorSettings()))
    checks = sorted((f.check, f.subject) for f in findings)
    assert checks == [
        ("broker-config-disagrees", "delete.topic.enable"),
        ("broker-configs-unavailable", "broker 3"),
    ]
    assert exit_status(findings) == 1
