"""The authorizer's decisions on Kafka's documented cases, and its audit log."""

from __future__ import annotations

import logging

import pytest

from zkafka.security.authorizer import (
    AUDIT_LOGGER_NAME,
    AclAuthorizer,
    AclSnapshot,
    Action,
    AuthorizationResult,
    RequestInfo,
    parse_super_users,
)
from zkafka.security.principal import ANONYMOUS, KafkaPrincipal, parse_principal
from zkafka.zk.acls import (
    AclEntry,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)

ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY
Op = AclOperation
ALICE = KafkaPrincipal("User", "alice")
BOB = KafkaPrincipal("User", "bob")


def topic(name: str, pattern: PatternType = PatternType.LITERAL) -> ResourcePattern:
    return ResourcePattern(ResourceType.TOPIC, name, pattern)


def decide(
    snapshot: AclSnapshot,
    principal: KafkaPrincipal,
    op: AclOperation,
    resource: ResourcePattern,
    host: str = "10.0.0.1",
    **kwargs: object,
) -> bool:
    authorizer = AclAuthorizer(snapshot, **kwargs)  # type: ignore[arg-type]
    return (
        authorizer.authorize_one(RequestInfo(principal, host), Action(op, resource))
        is AuthorizationResult.ALLOWED
    )


def acl(principal: str, permission: AclPermissionType, op: AclOperation, host: str = "*") -> AclEntry:
    return AclEntry(principal, permission, op, host)


def test_no_acls_and_allow_everyone() -> None:
    empty = AclSnapshot()
    assert not decide(empty, ALICE, Op.READ, topic("t"))
    assert decide(empty, ALICE, Op.READ, topic("t"), allow_everyone_if_no_acl_found=True)
    # ACLs for someone else on the resource: allow.everyone no longer applies.
    other = AclSnapshot({topic("t"): {acl("User:bob", ALLOW, Op.READ)}})
    assert not decide(other, ALICE, Op.READ, topic("t"), allow_everyone_if_no_acl_found=True)
    assert decide(other, ALICE, Op.READ, topic("u"), allow_everyone_if_no_acl_found=True)


def test_super_users_skip_acls() -> None:
    denied = AclSnapshot({topic("t"): {acl("User:*", DENY, Op.ALL)}})
    assert decide(denied, ALICE, Op.WRITE, topic("t"), super_users={ALICE})
    assert not decide(denied, BOB, Op.WRITE, topic("t"), super_users={ALICE})
    assert parse_super_users(" User:admin ; User:broker;") == {
        parse_principal("User:admin"),
        parse_principal("User:broker"),
    }
    assert parse_super_users("") == frozenset()


def test_deny_wins_and_wildcards() -> None:
    snapshot = AclSnapshot(
        {
            topic("*"): {acl("User:*", ALLOW, Op.READ)},
            topic("secret"): {acl("User:alice", DENY, Op.READ)},
        }
    )
    assert decide(snapshot, ALICE, Op.READ, topic("anything"))
    assert decide(snapshot, BOB, Op.READ, topic("secret"))
    assert not decide(snapshot, ALICE, Op.READ, topic("secret"))
    assert not decide(snapshot, ALICE, Op.WRITE, topic("anything"))
    # A DENY on All denies every operation.
    all_denied = AclSnapshot(
        {topic("t"): {acl("User:alice", ALLOW, Op.ALL), acl("User:alice", DENY, Op.ALL, "10.0.0.9")}}
    )
    assert decide(all_denied, ALICE, Op.ALTER, topic("t"))
    assert not decide(all_denied, ALICE, Op.ALTER, topic("t"), host="10.0.0.9")


def test_host_match_is_exact_or_wildcard() -> None:
    snapshot = AclSnapshot({topic("t"): {acl("User:alice", ALLOW, Op.READ, "10.0.0.1")}})
    assert decide(snapshot, ALICE, Op.READ, topic("t"), host="10.0.0.1")
    assert not decide(snapshot, ALICE, Op.READ, topic("t"), host="10.0.0.2")


def test_implied_operations() -> None:
    for granting in (Op.READ, Op.WRITE, Op.DELETE, Op.ALTER):
        assert decide(
            AclSnapshot({topic("t"): {acl("User:alice", ALLOW, granting)}}), ALICE, Op.DESCRIBE, topic("t")
        )
    assert not decide(
        AclSnapshot({topic("t"): {acl("User:alice", ALLOW, Op.CREATE)}}), ALICE, Op.DESCRIBE, topic("t")
    )
    alter_configs = AclSnapshot({topic("t"): {acl("User:alice", ALLOW, Op.ALTER_CONFIGS)}})
    assert decide(alter_configs, ALICE, Op.DESCRIBE_CONFIGS, topic("t"))
    assert not decide(alter_configs, ALICE, Op.ALTER, topic("t"))
    # Implication is for ALLOW only: a DENY on Read does not deny Describe.
    mixed = AclSnapshot(
        {topic("t"): {acl("User:alice", ALLOW, Op.DESCRIBE), acl("User:alice", DENY, Op.READ)}}
    )
    assert decide(mixed, ALICE, Op.DESCRIBE, topic("t"))
    assert not decide(mixed, ALICE, Op.READ, topic("t"))


def test_prefixed_patterns() -> None:
    snapshot = AclSnapshot(
        {
            topic("app-", PatternType.PREFIXED): {acl("User:alice", ALLOW, Op.WRITE)},
            topic("app-secret", PatternType.PREFIXED): {acl("User:alice", DENY, Op.WRITE)},
        }
    )
    assert decide(snapshot, ALICE, Op.WRITE, topic("app-orders"))
    assert decide(snapshot, ALICE, Op.WRITE, topic("app-"))
    assert not decide(snapshot, ALICE, Op.WRITE, topic("app-secret-1"))
    assert not decide(snapshot, ALICE, Op.WRITE, topic("ap"))
    # A prefixed `*` is a literal prefix, not a wildcard.
    star = AclSnapshot({topic("*", PatternType.PREFIXED): {acl("User:alice", ALLOW, Op.READ)}})
    assert not decide(star, ALICE, Op.READ, topic("orders"))


def test_resource_types_are_separate() -> None:
    group = ResourcePattern(ResourceType.GROUP, "g")
    snapshot = AclSnapshot({group: {acl("User:alice", ALLOW, Op.READ)}})
    assert decide(snapshot, ALICE, Op.READ, group)
    assert not decide(snapshot, ALICE, Op.READ, topic("g"))
    cluster = ResourcePattern(ResourceType.CLUSTER, "kafka-cluster")
    txn = ResourcePattern(ResourceType.TRANSACTIONAL_ID, "tx-1")
    token = ResourcePattern(ResourceType.DELEGATION_TOKEN, "tok")
    snapshot = AclSnapshot(
        {
            cluster: {acl("User:broker", ALLOW, Op.CLUSTER_ACTION)},
            ResourcePattern(ResourceType.TRANSACTIONAL_ID, "tx-", PatternType.PREFIXED): {
                acl("User:alice", ALLOW, Op.WRITE)
            },
            token: {acl("User:alice", ALLOW, Op.DESCRIBE)},
        }
    )
    assert decide(snapshot, parse_principal("User:broker"), Op.CLUSTER_ACTION, cluster)
    assert not decide(snapshot, ALICE, Op.CLUSTER_ACTION, cluster)
    assert decide(snapshot, ALICE, Op.WRITE, txn) and decide(snapshot, ALICE, Op.DESCRIBE, txn)
    assert decide(snapshot, ALICE, Op.DESCRIBE, token)


def test_principal_type_and_case_matter() -> None:
    snapshot = AclSnapshot({topic("t"): {acl("User:alice", ALLOW, Op.READ)}})
    assert not decide(snapshot, KafkaPrincipal("Group", "alice"), Op.READ, topic("t"))
    assert not decide(snapshot, KafkaPrincipal("User", "Alice"), Op.READ, topic("t"))
    assert not decide(snapshot, ANONYMOUS, Op.READ, topic("t"))


def test_only_literal_resources_are_authorized() -> None:
    with pytest.raises(ValueError):
        decide(AclSnapshot(), ALICE, Op.READ, topic("t", PatternType.PREFIXED))


def test_snapshot_updates_are_copy_on_write() -> None:
    first = AclSnapshot({topic("t"): {acl("User:alice", ALLOW, Op.READ)}})
    second = first.with_resource(topic("u"), {acl("User:bob", ALLOW, Op.READ)})
    third = second.with_resource(topic("t"), ())
    assert len(first) == 1 and len(second) == 2 and len(third) == 1
    assert first.get(topic("t")) and not third.get(topic("t"))
    assert dict(third.items()) == {topic("u"): {acl("User:bob", ALLOW, Op.READ)}}


def test_authorize_by_resource_type() -> None:
    authorizer = AclAuthorizer(
        AclSnapshot(
            {
                topic("a-", PatternType.PREFIXED): {acl("User:alice", ALLOW, Op.WRITE)},
                topic("a-b", PatternType.PREFIXED): {acl("User:bob", DENY, Op.WRITE)},
                topic("x"): {acl("User:bob", ALLOW, Op.WRITE)},
            }
        )
    )

    def by_type(principal: KafkaPrincipal) -> bool:
        result = authorizer.authorize_by_resource_type(
            RequestInfo(principal, "1.2.3.4"), Op.WRITE, ResourceType.TOPIC
        )
        return result is AuthorizationResult.ALLOWED

    assert by_type(ALICE) and by_type(BOB)
    assert not by_type(KafkaPrincipal("User", "carol"))
    denied = AclAuthorizer(
        AclSnapshot(
            {topic("*"): {acl("User:*", DENY, Op.WRITE)}, topic("x"): {acl("User:bob", ALLOW, Op.WRITE)}}
        )
    )
    assert (
        denied.authorize_by_resource_type(RequestInfo(BOB, "h"), Op.WRITE, ResourceType.TOPIC)
        is AuthorizationResult.DENIED
    )


def test_audit_log(caplog: pytest.LogCaptureFixture) -> None:
    authorizer = AclAuthorizer(AclSnapshot({topic("t"): {acl("User:alice", ALLOW, Op.READ)}}))
    request = RequestInfo(ALICE, "10.0.0.1", "FETCH")
    with caplog.at_level(logging.DEBUG, logger=AUDIT_LOGGER_NAME):
        authorizer.authorize(request, [Action(Op.READ, topic("t")), Action(Op.WRITE, topic("t"))])
        authorizer.authorize(request, [Action(Op.WRITE, topic("quiet"), log_if_denied=False)])
    lines = [(r.levelno, r.getMessage()) for r in caplog.records if r.name == AUDIT_LOGGER_NAME]
    assert lines == [
        (
            logging.DEBUG,
            "Principal = User:alice is Allowed Operation = Read from host = 10.0.0.1 on resource = "
            "Topic:LITERAL:t for request = FETCH with resourceRefCount = 1",
        ),
        (
            logging.INFO,
            "Principal = User:alice is Denied Operation = Write from host = 10.0.0.1 on resource = "
            "Topic:LITERAL:t for request = FETCH with resourceRefCount = 1",
        ),
    ]


def test_from_config() -> None:
    snapshot = AclSnapshot()
    authorizer = AclAuthorizer.from_config(
        {"super.users": "User:admin", "allow.everyone.if.no.acl.found": "TRUE"}, snapshot
    )
    assert (
        authorizer.super_users == {parse_principal("User:admin")}
        and authorizer.allow_everyone_if_no_acl_found
    )
    with pytest.raises(ValueError):
        AclAuthorizer.from_config({"allow.everyone.if.no.acl.found": "yes"}, snapshot)
    with pytest.raises(ValueError):
        AclAuthorizer.from_config({"super.users": "admin"}, snapshot)
