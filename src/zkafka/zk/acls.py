"""ACL values as stored by Kafka's ZooKeeper-backed authorizer.

Znode names and ACL JSON use PascalCase (`Topic`, `ClusterAction`, `Allow`); the extended change
notifications and the literal change text of Kafka 2.4+ use the Java enum names (`TOPIC`,
`PREFIXED`). Parsing is case-insensitive and ignores underscores, so `ClusterAction`,
`CLUSTER_ACTION` and `clusteraction` are the same operation.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

__all__ = [
    "CLUSTER_RESOURCE_NAME",
    "WILDCARD",
    "WILDCARD_PRINCIPAL",
    "AclEntry",
    "AclOperation",
    "AclPermissionType",
    "PatternType",
    "ResourcePattern",
    "ResourceType",
]

WILDCARD = "*"
WILDCARD_PRINCIPAL = "User:*"
CLUSTER_RESOURCE_NAME = "kafka-cluster"


def _key(text: str) -> str:
    return text.replace("_", "").lower()


class _PascalEnum(enum.Enum):
    """Enum whose value is the PascalCase form; `.enum_name` is the Java enum constant form."""

    @property
    def pascal(self) -> str:
        return str(self.value)

    @property
    def enum_name(self) -> str:
        return self.name

    @classmethod
    def parse(cls, text: str) -> _PascalEnum:
        if isinstance(text, str):
            wanted = _key(text)
            for member in cls:
                if _key(member.pascal) == wanted:
                    return member
        known = ", ".join(m.pascal for m in cls)
        raise ValueError(f"unknown {cls.__name__} {text!r} (known: {known})")


class ResourceType(_PascalEnum):
    TOPIC = "Topic"
    GROUP = "Group"
    CLUSTER = "Cluster"
    TRANSACTIONAL_ID = "TransactionalId"
    DELEGATION_TOKEN = "DelegationToken"
    USER = "User"


class PatternType(enum.Enum):
    LITERAL = "LITERAL"
    PREFIXED = "PREFIXED"

    @classmethod
    def parse(cls, text: str) -> PatternType:
        if isinstance(text, str):
            try:
                return cls[text.upper()]
            except KeyError:
                pass
        raise ValueError(f"unknown pattern type {text!r} (known: LITERAL, PREFIXED)")


class AclOperation(_PascalEnum):
    ALL = "All"
    READ = "Read"
    WRITE = "Write"
    CREATE = "Create"
    DELETE = "Delete"
    ALTER = "Alter"
    DESCRIBE = "Describe"
    CLUSTER_ACTION = "ClusterAction"
    DESCRIBE_CONFIGS = "DescribeConfigs"
    ALTER_CONFIGS = "AlterConfigs"
    IDEMPOTENT_WRITE = "IdempotentWrite"
    CREATE_TOKENS = "CreateTokens"
    DESCRIBE_TOKENS = "DescribeTokens"


class AclPermissionType(_PascalEnum):
    ALLOW = "Allow"
    DENY = "Deny"


@dataclass(frozen=True)
class AclEntry:
    principal: str
    """`<type>:<name>`, e.g. `User:alice`, or `User:*`."""
    permission_type: AclPermissionType
    operation: AclOperation
    host: str = WILDCARD


@dataclass(frozen=True)
class ResourcePattern:
    resource_type: ResourceType
    name: str
    pattern_type: PatternType = PatternType.LITERAL
