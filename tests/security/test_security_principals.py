"""KafkaPrincipal, its parser, the principal builder, and the ACL filters' matching rules."""

from __future__ import annotations

import pytest

from zkafka.security.acl_filters import (
    AclEntryFilter,
    PatternTypeFilter,
    ResourcePatternFilter,
    format_entry,
    format_pattern,
)
from zkafka.security.principal import ANONYMOUS, KafkaPrincipal, parse_principal
from zkafka.security.principal_builder import build_principal
from zkafka.security.ssl_principal import SslPrincipalMapper
from zkafka.zk.acls import (
    AclEntry,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)


def test_parse_principal() -> None:
    assert parse_principal("User:alice") == KafkaPrincipal("User", "alice")
    assert str(parse_principal("User:CN=a,O=b:c")) == "User:CN=a,O=b:c"  # split at the first colon only
    assert parse_principal("User:*") == KafkaPrincipal("User", "*")
    for bad in ("alice", ":alice", "User:", ""):
        with pytest.raises(ValueError, match="principalType:principalName"):
            parse_principal(bad)
    assert str(ANONYMOUS) == "User:ANONYMOUS"


def test_build_principal() -> None:
    assert build_principal("PLAINTEXT") == ANONYMOUS
    assert build_principal("SSL") == ANONYMOUS
    assert build_principal("sasl_ssl", sasl_authorization_id="alice") == KafkaPrincipal("User", "alice")
    assert build_principal("SASL_PLAINTEXT", sasl_authorization_id="bob") == KafkaPrincipal("User", "bob")
    with pytest.raises(ValueError):
        build_principal("SASL_SSL")
    with pytest.raises(ValueError):
        build_principal("KERBEROS")
    assert isinstance(SslPrincipalMapper.from_rules("DEFAULT"), SslPrincipalMapper)


def test_resource_pattern_filters() -> None:
    literal = ResourcePattern(ResourceType.TOPIC, "orders")
    wildcard = ResourcePattern(ResourceType.TOPIC, "*")
    prefix = ResourcePattern(ResourceType.TOPIC, "ord", PatternType.PREFIXED)
    other_prefix = ResourcePattern(ResourceType.TOPIC, "x", PatternType.PREFIXED)
    group = ResourcePattern(ResourceType.GROUP, "orders")
    everything = [literal, wildcard, prefix, other_prefix, group]

    def matching(f: ResourcePatternFilter) -> list[ResourcePattern]:
        return [p for p in everything if f.matches(p)]

    assert matching(ResourcePatternFilter(ResourceType.TOPIC, "orders")) == [literal]
    assert matching(ResourcePatternFilter(ResourceType.TOPIC, "ord", PatternTypeFilter.PREFIXED)) == [prefix]
    assert matching(ResourcePatternFilter(None, "orders", PatternTypeFilter.ANY)) == [literal, group]
    assert matching(ResourcePatternFilter(ResourceType.TOPIC, "orders", PatternTypeFilter.MATCH)) == [
        literal,
        wildcard,
        prefix,
    ]
    assert matching(ResourcePatternFilter(None, None, PatternTypeFilter.ANY)) == everything
    assert ResourcePatternFilter(ResourceType.TOPIC, "t").matches_at_most_one()
    assert not ResourcePatternFilter(ResourceType.TOPIC, "t", PatternTypeFilter.MATCH).matches_at_most_one()
    assert str(ResourcePatternFilter(None, None, PatternTypeFilter.ANY)) == (
        "ResourcePattern(resourceType=ANY, name=<any>, patternType=ANY)"
    )
    assert format_pattern(prefix) == "ResourcePattern(resourceType=TOPIC, name=ord, patternType=PREFIXED)"
    with pytest.raises(ValueError):
        PatternTypeFilter.parse("regex")


def test_entry_filters() -> None:
    entry = AclEntry("User:a", AclPermissionType.DENY, AclOperation.CLUSTER_ACTION, "10.0.0.1")
    assert AclEntryFilter().matches(entry)
    assert AclEntryFilter.exactly(entry).matches(entry)
    assert not AclEntryFilter(principal="User:b").matches(entry)
    assert not AclEntryFilter(permission_type=AclPermissionType.ALLOW).matches(entry)
    assert (
        format_entry(entry)
        == "(principal=User:a, host=10.0.0.1, operation=CLUSTER_ACTION, permissionType=DENY)"
    )


def test_matching_bindings_from_a_snapshot() -> None:
    from zkafka.security.acl_filters import AclBindingFilter, matching_bindings
    from zkafka.security.authorizer import AclSnapshot

    read = AclEntry("User:a", AclPermissionType.ALLOW, AclOperation.READ, "*")
    write = AclEntry("User:b", AclPermissionType.ALLOW, AclOperation.WRITE, "*")
    snapshot = AclSnapshot(
        {
            ResourcePattern(ResourceType.TOPIC, "t"): {read, write},
            ResourcePattern(ResourceType.TOPIC, "t", PatternType.PREFIXED): {read},
        }
    )
    everything = AclBindingFilter(ResourcePatternFilter(None, None, PatternTypeFilter.ANY))
    assert len(matching_bindings(snapshot, everything)) == 3
    only_b = AclBindingFilter(
        ResourcePatternFilter(None, None, PatternTypeFilter.ANY), AclEntryFilter(principal="User:b")
    )
    assert matching_bindings(snapshot, only_b) == [(ResourcePattern(ResourceType.TOPIC, "t"), write)]
