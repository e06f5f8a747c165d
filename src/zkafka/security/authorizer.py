"""Kafka's AclAuthorizer decision, pure: an immutable ACL snapshot in, ALLOWED/DENIED out.

The rules (kafka.security.authorizer.AclAuthorizer, Kafka 2.4-3.9), in the order Kafka applies them:

1. a principal in `super.users` is allowed everything;
2. the ACLs that apply to a resource are those on the literal name, on the literal wildcard `*` of
   its type, and on every PREFIXED pattern the name starts with;
3. if there are none at all (for any principal), `allow.everyone.if.no.acl.found` decides;
4. otherwise a matching DENY wins; else a matching ALLOW allows; else denied. An ACL matches when its
   principal is the request's or `User:*`, its host is the client's address or `*`, and its operation
   is the requested one or `All`. For ALLOW only, Describe is also granted by Read, Write, Delete or
   Alter, and DescribeConfigs by AlterConfigs (a DENY on Read does not deny Describe).

Every decision is written to the audit logger `kafka.authorizer.logger`, in Kafka's words: denials
of explicitly requested resources at INFO, grants at DEBUG, the rest (filtering) below DEBUG.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Protocol

from zkafka.security.principal import KafkaPrincipal, parse_principal
from zkafka.zk.acls import (
    WILDCARD,
    WILDCARD_PRINCIPAL,
    AclEntry,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)

__all__ = [
    "ALLOW_EVERYONE_IF_NO_ACL_FOUND",
    "AUDIT_LOGGER_NAME",
    "SUPER_USERS",
    "AclAuthorizer",
    "AclSnapshot",
    "AclSource",
    "Action",
    "AuthorizationResult",
    "RequestInfo",
    "parse_super_users",
]

AUDIT_LOGGER_NAME = "kafka.authorizer.logger"
audit_log = logging.getLogger(AUDIT_LOGGER_NAME)
TRACE = 5
"""Python has no TRACE; Kafka logs filtering decisions there, so they stay below DEBUG here too."""

SUPER_USERS = "super.users"
ALLOW_EVERYONE_IF_NO_ACL_FOUND = "allow.everyone.if.no.acl.found"

_IMPLIED_BY = {
    AclOperation.DESCRIBE: frozenset(
        {
            AclOperation.DESCRIBE,
            AclOperation.READ,
            AclOperation.WRITE,
            AclOperation.DELETE,
            AclOperation.ALTER,
        }
    ),
    AclOperation.DESCRIBE_CONFIGS: frozenset({AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS}),
}


class AuthorizationResult(enum.Enum):
    ALLOWED = "ALLOWED"
    DENIED = "DENIED"


@dataclass(frozen=True, slots=True)
class Action:
    """One operation on one literal resource. `log_if_allowed`/`log_if_denied` are False when the
    check only filters (Metadata for all topics, authorized-operations fields), as in Kafka."""

    operation: AclOperation
    resource: ResourcePattern
    log_if_allowed: bool = True
    log_if_denied: bool = True
    resource_reference_count: int = 1


@dataclass(frozen=True, slots=True)
class RequestInfo:
    """What the authorizer needs of a request: who, from which address, for which API (audit log)."""

    principal: KafkaPrincipal
    client_host: str
    """The client's IP address as text (Kafka compares `InetAddress.getHostAddress`)."""
    api_name: str = "UNKNOWN"


_Bucket = Mapping[str, frozenset[AclEntry]]
_EMPTY: _Bucket = MappingProxyType({})


class AclSnapshot:
    """An immutable view of every ACL, indexed by (resource type, pattern type) then name, so a decision
    reads one consistent state while the cache swaps in a new snapshot (Kafka's copy-on-write cache)."""

    __slots__ = ("_buckets", "_count")

    def __init__(self, acls: Mapping[ResourcePattern, Iterable[AclEntry]] | None = None) -> None:
        buckets: dict[tuple[ResourceType, PatternType], dict[str, frozenset[AclEntry]]] = {}
        for pattern, entries in (acls or {}).items():
            frozen = frozenset(entries)
            if frozen:
                buckets.setdefault((pattern.resource_type, pattern.pattern_type), {})[pattern.name] = frozen
        self._buckets: dict[tuple[ResourceType, PatternType], _Bucket] = {
            k: MappingProxyType(v) for k, v in buckets.items()
        }
        self._count = sum(len(b) for b in self._buckets.values())

    @classmethod
    def _from_buckets(cls, buckets: dict[tuple[ResourceType, PatternType], _Bucket]) -> AclSnapshot:
        snapshot = cls.__new__(cls)
        snapshot._buckets = buckets
        snapshot._count = sum(len(b) for b in buckets.values())
        return snapshot

    def with_resource(self, pattern: ResourcePattern, acls: Iterable[AclEntry]) -> AclSnapshot:
        """A new snapshot with `pattern`'s ACLs replaced (none: the resource is dropped). Copies only the
        one bucket it touches."""
        key = (pattern.resource_type, pattern.pattern_type)
        bucket = dict(self._buckets.get(key, _EMPTY))
        frozen = frozenset(acls)
        if frozen:
            bucket[pattern.name] = frozen
        else:
            bucket.pop(pattern.name, None)
        buckets = dict(self._buckets)
        if bucket:
            buckets[key] = MappingProxyType(bucket)
        else:
            buckets.pop(key, None)
        return AclSnapshot._from_buckets(buckets)

    def get(self, pattern: ResourcePattern) -> frozenset[AclEntry]:
        return self._buckets.get((pattern.resource_type, pattern.pattern_type), _EMPTY).get(
            pattern.name, frozenset()
        )

    def items(self) -> Iterator[tuple[ResourcePattern, frozenset[AclEntry]]]:
        for (resource_type, pattern_type), bucket in self._buckets.items():
            for name, acls in bucket.items():
                yield ResourcePattern(resource_type, name, pattern_type), acls

    def __len__(self) -> int:
        """The number of resource patterns that have ACLs."""
        return self._count

    def matching_acls(self, resource_type: ResourceType, name: str) -> list[AclEntry]:
        """ACLs on the literal name, the literal wildcard and every prefix of the name."""
        out: list[AclEntry] = []
        literal = self._buckets.get((resource_type, PatternType.LITERAL), _EMPTY)
        if literal:
            out.extend(literal.get(WILDCARD, ()))
            if name != WILDCARD:
                out.extend(literal.get(name, ()))
        prefixed = self._buckets.get((resource_type, PatternType.PREFIXED), _EMPTY)
        if prefixed:
            # Every prefix of the name, the whole name included: len(name)+1 lookups, not a scan.
            for end in range(1, len(name) + 1):
                out.extend(prefixed.get(name[:end], ()))
        return out


def parse_super_users(text: str | None) -> frozenset[KafkaPrincipal]:
    """`super.users`: principals separated by semicolons (`User:admin;User:broker`)."""
    if not text or not text.strip():
        return frozenset()
    return frozenset(parse_principal(p.strip()) for p in text.split(";") if p.strip())


class AclSource(Protocol):
    """Anything holding the current snapshot (AclCache)."""

    @property
    def snapshot(self) -> AclSnapshot: ...


class AclAuthorizer:
    """Decides from one snapshot per request: a fixed AclSnapshot, or the one an AclSource (the cache)
    holds when the request starts. Holds no lock and does no I/O."""

    def __init__(
        self,
        acls: AclSnapshot | AclSource,
        *,
        super_users: Iterable[KafkaPrincipal] = (),
        allow_everyone_if_no_acl_found: bool = False,
    ) -> None:
        self._source = acls
        self.super_users = frozenset(super_users)
        self.allow_everyone_if_no_acl_found = allow_everyone_if_no_acl_found

    @classmethod
    def from_config(cls, config: Mapping[str, str], acls: AclSnapshot | AclSource) -> AclAuthorizer:
        allow = str(config.get(ALLOW_EVERYONE_IF_NO_ACL_FOUND, "false")).strip().lower()
        if allow not in ("true", "false"):
            raise ValueError(f"{ALLOW_EVERYONE_IF_NO_ACL_FOUND} must be true or false, got {allow!r}")
        return cls(
            acls,
            super_users=parse_super_users(config.get(SUPER_USERS)),
            allow_everyone_if_no_acl_found=allow == "true",
        )

    @property
    def snapshot(self) -> AclSnapshot:
        source = self._source
        return source if isinstance(source, AclSnapshot) else source.snapshot

    def is_super_user(self, principal: KafkaPrincipal) -> bool:
        return principal in self.super_users

    def authorize(self, request: RequestInfo, actions: Sequence[Action]) -> list[AuthorizationResult]:
        snapshot = self.snapshot  # one consistent view for the whole request
        return [self._authorize_action(snapshot, request, a) for a in actions]

    def authorize_one(self, request: RequestInfo, action: Action) -> AuthorizationResult:
        return self._authorize_action(self.snapshot, request, action)

    def _authorize_action(
        self, snapshot: AclSnapshot, request: RequestInfo, action: Action
    ) -> AuthorizationResult:
        resource = action.resource
        if resource.pattern_type is not PatternType.LITERAL:
            raise ValueError(f"only literal resources are authorized, got {resource}")
        if self.is_super_user(request.principal):
            allowed = True
        else:
            acls = snapshot.matching_acls(resource.resource_type, resource.name)
            if not acls:
                allowed = self.allow_everyone_if_no_acl_found
            else:
                principal = str(request.principal)
                host = request.client_host
                op = action.operation
                deny = _any_match(acls, principal, host, AclPermissionType.DENY, frozenset({op}))
                allowed = not deny and _any_match(
                    acls, principal, host, AclPermissionType.ALLOW, _IMPLIED_BY.get(op, frozenset({op}))
                )
        self._audit(request, action, allowed)
        return AuthorizationResult.ALLOWED if allowed else AuthorizationResult.DENIED

    def authorize_by_resource_type(
        self, request: RequestInfo, operation: AclOperation, resource_type: ResourceType
    ) -> AuthorizationResult:
        """Kafka's authorizeByResourceType (KIP-679): may the principal do `operation` on at least one
        resource of the type? No implied operations here, as in Kafka; a literal `*` DENY denies all, and
        `allow.everyone.if.no.acl.found` allows unless that is so."""
        if self.is_super_user(request.principal):
            return AuthorizationResult.ALLOWED
        principal = str(request.principal)
        host = request.client_host
        ops = frozenset({operation})
        names: dict[tuple[AclPermissionType, PatternType], set[str]] = {}
        for pattern, acls in self.snapshot.items():
            if pattern.resource_type is not resource_type:
                continue
            for permission in AclPermissionType:
                if _any_match(acls, principal, host, permission, ops):
                    names.setdefault((permission, pattern.pattern_type), set()).add(pattern.name)
        deny_literals = names.get((AclPermissionType.DENY, PatternType.LITERAL), set())
        deny_prefixes = names.get((AclPermissionType.DENY, PatternType.PREFIXED), set())
        allow_literals = names.get((AclPermissionType.ALLOW, PatternType.LITERAL), set())
        allow_prefixes = names.get((AclPermissionType.ALLOW, PatternType.PREFIXED), set())
        action = Action(operation, ResourcePattern(resource_type, "NONE"), True, True)

        def dominated(name: str) -> bool:
            return any(name[:end] in deny_prefixes for end in range(len(name) + 1))

        if WILDCARD in deny_literals:
            allowed = False
        elif self.allow_everyone_if_no_acl_found:
            allowed = True
        else:
            allowed = any(not dominated(p) for p in allow_prefixes) or any(
                n == WILDCARD or (n not in deny_literals and not dominated(n)) for n in allow_literals
            )
        self._audit(request, action, allowed)
        return AuthorizationResult.ALLOWED if allowed else AuthorizationResult.DENIED

    @staticmethod
    def _audit(request: RequestInfo, action: Action, allowed: bool) -> None:
        if allowed:
            level = logging.DEBUG if action.log_if_allowed else TRACE
        else:
            level = logging.INFO if action.log_if_denied else TRACE
        if not audit_log.isEnabledFor(level):
            return
        r = action.resource
        audit_log.log(
            level,
            "Principal = %s is %s Operation = %s from host = %s on resource = %s:%s:%s for request = %s "
            "with resourceRefCount = %d",
            request.principal,
            "Allowed" if allowed else "Denied",
            action.operation.pascal,
            request.client_host,
            r.resource_type.pascal,
            r.pattern_type.value,
            r.name,
            request.api_name,
            action.resource_reference_count,
        )


def _any_match(
    acls: Iterable[AclEntry],
    principal: str,
    host: str,
    permission: AclPermissionType,
    operations: frozenset[AclOperation],
) -> bool:
    for acl in acls:
        if (
            acl.permission_type is permission
            and (acl.principal == principal or acl.principal == WILDCARD_PRINCIPAL)
            and (acl.operation in operations or acl.operation is AclOperation.ALL)
            and (acl.host == WILDCARD or acl.host == host)
        ):
            return True
    return False
