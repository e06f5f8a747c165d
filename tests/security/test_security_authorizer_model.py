"""Property test: the authorizer against a small independent model of Kafka's AclAuthorizer rules.

The model below is written from the rules as documented (Kafka's docs and AclAuthorizer's comments),
over plain strings, without the production index (no snapshot buckets, no prefix loop): a flat list
of (resource, ACL) pairs filtered one by one.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from zkafka.security.authorizer import AclAuthorizer, AclSnapshot, Action, AuthorizationResult, RequestInfo
from zkafka.security.principal import parse_principal
from zkafka.zk.acls import (
    AclEntry,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)

OPS = [
    "All",
    "Read",
    "Write",
    "Create",
    "Delete",
    "Alter",
    "Describe",
    "ClusterAction",
    "DescribeConfigs",
    "AlterConfigs",
    "IdempotentWrite",
]
TYPES = ["Topic", "Group", "Cluster", "TransactionalId", "DelegationToken"]
NAMES = ["a", "ab", "abc", "b", "ba", "*", "kafka-cluster"]
PRINCIPALS = ["User:alice", "User:bob", "User:*", "Group:alice"]
HOSTS = ["*", "10.0.0.1", "10.0.0.2"]

acl_strategy = st.tuples(
    st.sampled_from(TYPES),
    st.sampled_from(NAMES),
    st.sampled_from(["LITERAL", "PREFIXED"]),
    st.sampled_from(PRINCIPALS),
    st.sampled_from(["Allow", "Deny"]),
    st.sampled_from(OPS),
    st.sampled_from(HOSTS),
)


def model(acls, super_users, allow_everyone, principal, host, op, rtype, name) -> bool:  # type: ignore[no-untyped-def]
    if principal in super_users:
        return True

    def on_resource(a) -> bool:  # type: ignore[no-untyped-def]
        a_type, a_name, a_pattern = a[0], a[1], a[2]
        if a_type != rtype:
            return False
        if a_pattern == "LITERAL":
            return a_name == name or a_name == "*"
        return name.startswith(a_name)

    relevant = [a for a in acls if on_resource(a)]
    if not relevant:
        return allow_everyone

    def grants(a, permission, ops) -> bool:  # type: ignore[no-untyped-def]
        _, _, _, a_principal, a_permission, a_op, a_host = a
        return (
            a_permission == permission
            and a_principal in (principal, "User:*")
            and a_host in (host, "*")
            and (a_op == "All" or a_op in ops)
        )

    if any(grants(a, "Deny", {op}) for a in relevant):
        return False
    implied = {op}
    if op == "Describe":
        implied |= {"Read", "Write", "Delete", "Alter"}
    if op == "DescribeConfigs":
        implied |= {"AlterConfigs"}
    return any(grants(a, "Allow", implied) for a in relevant)


def to_snapshot(acls) -> AclSnapshot:  # type: ignore[no-untyped-def]
    grouped: dict[ResourcePattern, set[AclEntry]] = {}
    for rtype, name, pattern, principal, permission, op, host in acls:
        key = ResourcePattern(ResourceType.parse(rtype), name, PatternType.parse(pattern))  # type: ignore[arg-type]
        entry = AclEntry(principal, AclPermissionType.parse(permission), AclOperation.parse(op), host)  # type: ignore[arg-type]
        grouped.setdefault(key, set()).add(entry)
    return AclSnapshot(grouped)


@settings(max_examples=600, deadline=None)
@given(
    acls=st.lists(acl_strategy, max_size=12),
    super_users=st.sets(st.sampled_from([*PRINCIPALS[:2], "Group:alice"]), max_size=1),
    allow_everyone=st.booleans(),
    principal=st.sampled_from(["User:alice", "User:bob", "Group:alice", "User:carol"]),
    host=st.sampled_from(["10.0.0.1", "10.0.0.2", "10.0.0.3"]),
    op=st.sampled_from(OPS[1:]),
    rtype=st.sampled_from(TYPES),
    name=st.sampled_from(["a", "ab", "abc", "abd", "b", "ba", "c", "kafka-cluster", "*"]),
)
def test_authorizer_agrees_with_the_model(
    acls, super_users, allow_everyone, principal, host, op, rtype, name
) -> None:  # type: ignore[no-untyped-def]
    authorizer = AclAuthorizer(
        to_snapshot(acls),
        super_users={parse_principal(p) for p in super_users},
        allow_everyone_if_no_acl_found=allow_everyone,
    )
    action = Action(AclOperation.parse(op), ResourcePattern(ResourceType.parse(rtype), name))  # type: ignore[arg-type]
    got = authorizer.authorize(RequestInfo(parse_principal(principal), host), [action])[0]
    expected = model(acls, super_users, allow_everyone, principal, host, op, rtype, name)
    assert (got is AuthorizationResult.ALLOWED) == expected, (acls, principal, host, op, rtype, name)
