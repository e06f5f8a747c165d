"""ACL filters with Kafka's matching rules (ResourcePatternFilter, AccessControlEntryFilter), and the
text forms kafka-acls prints. Shared by `zkafka acls` and, later, DescribeAcls/DeleteAcls.

Pattern-type filters: LITERAL and PREFIXED match that exact pattern; ANY matches any pattern with that
name; MATCH matches every pattern that would apply to a resource of that name (the literal name, the
literal `*`, and every prefix of it).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from zkafka.security.authorizer import AclSnapshot
from zkafka.zk.acls import (
    WILDCARD,
    AclEntry,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)

__all__ = [
    "AclBindingFilter",
    "AclEntryFilter",
    "PatternTypeFilter",
    "ResourcePatternFilter",
    "format_entry",
    "format_pattern",
    "matching_bindings",
]


class PatternTypeFilter(enum.Enum):
    LITERAL = "LITERAL"
    PREFIXED = "PREFIXED"
    ANY = "ANY"
    MATCH = "MATCH"

    @classmethod
    def parse(cls, text: str) -> PatternTypeFilter:
        try:
            return cls[text.strip().upper()]
        except KeyError:
            raise ValueError(
                f"unknown resource pattern type {text!r} (literal, prefixed, any, match)"
            ) from None

    @property
    def pattern_type(self) -> PatternType | None:
        """The concrete pattern type, or None for ANY and MATCH."""
        return (
            PatternType(self.value)
            if self in (PatternTypeFilter.LITERAL, PatternTypeFilter.PREFIXED)
            else None
        )


@dataclass(frozen=True, slots=True)
class ResourcePatternFilter:
    resource_type: ResourceType | None = None
    """None: any type."""
    name: str | None = None
    """None: any name."""
    pattern_type: PatternTypeFilter = PatternTypeFilter.LITERAL

    def matches(self, pattern: ResourcePattern) -> bool:
        if self.resource_type is not None and self.resource_type is not pattern.resource_type:
            return False
        concrete = self.pattern_type.pattern_type
        if concrete is not None and concrete is not pattern.pattern_type:
            return False
        if self.name is None:
            return True
        if self.pattern_type is not PatternTypeFilter.MATCH:
            return self.name == pattern.name
        if pattern.pattern_type is PatternType.LITERAL:
            return self.name == pattern.name or pattern.name == WILDCARD
        return self.name.startswith(pattern.name)

    def matches_at_most_one(self) -> bool:
        """True when the filter names one concrete pattern (so it can be looked up directly)."""
        return (
            self.resource_type is not None
            and self.name is not None
            and self.pattern_type.pattern_type is not None
        )

    def as_pattern(self) -> ResourcePattern:
        concrete = self.pattern_type.pattern_type
        if self.resource_type is None or self.name is None or concrete is None:
            raise ValueError(f"{self} is not one concrete resource pattern")
        return ResourcePattern(self.resource_type, self.name, concrete)

    def __str__(self) -> str:
        resource_type = "ANY" if self.resource_type is None else self.resource_type.enum_name
        name = "<any>" if self.name is None else self.name
        pattern_type = self.pattern_type.value
        return f"ResourcePattern(resourceType={resource_type}, name={name}, patternType={pattern_type})"


@dataclass(frozen=True, slots=True)
class AclEntryFilter:
    principal: str | None = None
    host: str | None = None
    operation: AclOperation | None = None
    permission_type: AclPermissionType | None = None
    """None anywhere: any."""

    def matches(self, entry: AclEntry) -> bool:
        return (
            (self.principal is None or self.principal == entry.principal)
            and (self.host is None or self.host == entry.host)
            and (self.operation is None or self.operation is entry.operation)
            and (self.permission_type is None or self.permission_type is entry.permission_type)
        )

    @classmethod
    def exactly(cls, entry: AclEntry) -> AclEntryFilter:
        return cls(entry.principal, entry.host, entry.operation, entry.permission_type)


@dataclass(frozen=True, slots=True)
class AclBindingFilter:
    pattern: ResourcePatternFilter
    entry: AclEntryFilter = AclEntryFilter()


def format_pattern(pattern: ResourcePattern) -> str:
    """Java's ResourcePattern.toString, as kafka-acls prints it."""
    return (
        f"ResourcePattern(resourceType={pattern.resource_type.enum_name}, name={pattern.name}, "
        f"patternType={pattern.pattern_type.value})"
    )


def format_entry(entry: AclEntry) -> str:
    """Java's AccessControlEntry.toString."""
    return (
        f"(principal={entry.principal}, host={entry.host}, operation={entry.operation.enum_name}, "
        f"permissionType={entry.permission_type.enum_name})"
    )


def matching_bindings(
    snapshot: AclSnapshot, binding_filter: AclBindingFilter
) -> list[tuple[ResourcePattern, AclEntry]]:
    """The cached ACLs a filter matches (Kafka's `AclAuthorizer.acls(filter)`, what DescribeAcls answers
    from), in a stable order."""
    out = []
    for pattern, acls in snapshot.items():
        if binding_filter.pattern.matches(pattern):
            out.extend((pattern, a) for a in acls if binding_filter.entry.matches(a))
    return sorted(
        out,
        key=lambda b: (b[0].resource_type.pascal, b[0].pattern_type.value, b[0].name, format_entry(b[1])),
    )
