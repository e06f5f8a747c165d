"""Kafka's wire codes of ACL enums (org.apache.kafka.common.resource and .acl), for the ACL APIs
(DescribeAcls, CreateAcls, DeleteAcls) on both sides: the broker's handlers and `zkafka acls
--bootstrap-server`. 0 is UNKNOWN and 1 ANY in every enum (ANY only in filters)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from zkafka.security.acl_filters import PatternTypeFilter
from zkafka.zk.acls import (
    AclEntry,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)

RESOURCE_TYPES = {
    2: ResourceType.TOPIC,
    3: ResourceType.GROUP,
    4: ResourceType.CLUSTER,
    5: ResourceType.TRANSACTIONAL_ID,
    6: ResourceType.DELEGATION_TOKEN,
    7: ResourceType.USER,
}
OPERATIONS = {
    2: AclOperation.ALL,
    3: AclOperation.READ,
    4: AclOperation.WRITE,
    5: AclOperation.CREATE,
    6: AclOperation.DELETE,
    7: AclOperation.ALTER,
    8: AclOperation.DESCRIBE,
    9: AclOperation.CLUSTER_ACTION,
    10: AclOperation.DESCRIBE_CONFIGS,
    11: AclOperation.ALTER_CONFIGS,
    12: AclOperation.IDEMPOTENT_WRITE,
    13: AclOperation.CREATE_TOKENS,
    14: AclOperation.DESCRIBE_TOKENS,
}
PERMISSIONS = {2: AclPermissionType.DENY, 3: AclPermissionType.ALLOW}
PATTERN_FILTERS = {
    1: PatternTypeFilter.ANY,
    2: PatternTypeFilter.MATCH,
    3: PatternTypeFilter.LITERAL,
    4: PatternTypeFilter.PREFIXED,
}
PATTERN_TYPES = {3: PatternType.LITERAL, 4: PatternType.PREFIXED}
ANY = 1

RESOURCE_CODES = {v: k for k, v in RESOURCE_TYPES.items()}
OPERATION_CODES = {v: k for k, v in OPERATIONS.items()}
PERMISSION_CODES = {v: k for k, v in PERMISSIONS.items()}
PATTERN_CODES = {v: k for k, v in PATTERN_TYPES.items()}

PATTERN_FILTER_CODES = {v: k for k, v in PATTERN_FILTERS.items()}


def described_bindings(resources: Iterable[Any]) -> dict[ResourcePattern, frozenset[AclEntry]]:
    """A DescribeAcls response's `resources` as the ACL store's bindings (shared by every client of
    the API: `zkafka acls --bootstrap-server` and the admin client)."""
    return {
        ResourcePattern(
            RESOURCE_TYPES[r.resource_type], r.resource_name, PATTERN_TYPES[r.pattern_type]
        ): frozenset(
            AclEntry(a.principal, PERMISSIONS[a.permission_type], OPERATIONS[a.operation], a.host)
            for a in r.acls
        )
        for r in resources
    }
