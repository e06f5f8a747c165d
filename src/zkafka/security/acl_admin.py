"""Creating, describing and deleting ACLs in ZooKeeper, as Kafka's AclAuthorizer does for CreateAcls,
DescribeAcls and DeleteAcls and for `kafka-acls --authorizer-properties zookeeper.connect=...`.

Every change goes through the store's versioned read-modify-write (`update_resource_acls`), which ends
with the change notification every broker's ACL cache follows.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from zkafka.security.acl_filters import AclBindingFilter
from zkafka.security.principal import parse_principal
from zkafka.zk.acls import AclEntry, PatternType, ResourcePattern
from zkafka.zk.client import KafkaZkClient
from zkafka.zk.znodes import AclZNodes

__all__ = ["create_acls", "delete_acls", "describe_acls", "validate_binding"]

Binding = tuple[ResourcePattern, AclEntry]


def validate_binding(pattern: ResourcePattern, entry: AclEntry) -> None:
    """Kafka's checks before a create: a concrete pattern with a usable znode name, a parseable principal,
    a host."""
    if pattern.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
        raise ValueError(f"ACLs are created on LITERAL or PREFIXED patterns, not {pattern.pattern_type}")
    if not pattern.name:
        raise ValueError("an ACL's resource name must not be empty")
    AclZNodes.path(pattern)  # rejects names with '/' and the like
    parse_principal(entry.principal)
    if not entry.host:
        raise ValueError("an ACL's host must not be empty (use * for any host)")


def create_acls(zk: KafkaZkClient, bindings: Iterable[Binding]) -> dict[ResourcePattern, frozenset[AclEntry]]:
    """Add the bindings (grouped per resource, one conditional write each); returns each touched
    resource's ACLs after the write."""
    grouped: dict[ResourcePattern, set[AclEntry]] = {}
    for pattern, entry in bindings:
        validate_binding(pattern, entry)
        grouped.setdefault(pattern, set()).add(entry)
    zk.create_acl_paths()
    return {
        pattern: zk.update_resource_acls(pattern, lambda current, new=frozenset(new): current | new)
        for pattern, new in grouped.items()
    }


def describe_acls(
    zk: KafkaZkClient, binding_filter: AclBindingFilter
) -> dict[ResourcePattern, frozenset[AclEntry]]:
    """Every stored ACL the filter matches, by resource (resources left with none are left out)."""
    if binding_filter.pattern.matches_at_most_one():
        pattern = binding_filter.pattern.as_pattern()
        candidates = {pattern: zk.get_acls_lenient(pattern).acls}
    else:
        candidates = {p: v.acls for p, v in zk.get_all_acls_lenient().items()}
    out = {}
    for pattern, acls in candidates.items():
        if binding_filter.pattern.matches(pattern):
            matching = frozenset(a for a in acls if binding_filter.entry.matches(a))
            if matching:
                out[pattern] = matching
    return out


def delete_acls(zk: KafkaZkClient, filters: Sequence[AclBindingFilter]) -> list[Binding]:
    """Remove every stored ACL any filter matches; returns the bindings removed."""
    resources = set(zk.get_all_acls_lenient())
    resources |= {f.pattern.as_pattern() for f in filters if f.pattern.matches_at_most_one()}
    removed: list[Binding] = []
    for pattern in sorted(resources, key=_order):
        matching = [f for f in filters if f.pattern.matches(pattern)]
        if not matching:
            continue
        gone: set[AclEntry] = set()

        def without(
            current: frozenset[AclEntry],
            matching: list[AclBindingFilter] = matching,
            gone: set[AclEntry] = gone,
        ) -> frozenset[AclEntry]:
            # Runs again on a version conflict: only the last run's removals count.
            drop = {a for a in current if any(f.entry.matches(a) for f in matching)}
            gone.clear()
            gone.update(drop)
            return current - drop

        zk.update_resource_acls(pattern, without)
        removed.extend((pattern, entry) for entry in gone)
    return removed


def _order(pattern: ResourcePattern) -> tuple[str, str, str]:
    return pattern.resource_type.pascal, pattern.pattern_type.value, pattern.name
