"""Who may do what, and how fast, for `/acls` and `/quotas`: ACL bindings through DescribeAcls and
client quotas through DescribeClientQuotas, both asked of the brokers so their authorizer decides
what the console's principal may see. A cluster without an authorizer answers DescribeAcls with
SECURITY_DISABLED: the page says so rather than show an empty list."""

from __future__ import annotations

from dataclasses import dataclass

from zkafka.console.source import ClusterSource
from zkafka.protocol import ErrorCode, KafkaError


@dataclass(frozen=True, slots=True)
class AclRow:
    resource_type: str
    resource_name: str
    pattern_type: str
    principal: str
    host: str
    operation: str
    permission: str


@dataclass
class Acls:
    rows: list[AclRow]
    no_authorizer: str | None = None
    """The broker's own words when no authorizer is configured (then there are no rows)."""


async def acls(source: ClusterSource) -> Acls:
    try:
        bindings = await source.admin.describe_acls()
    except KafkaError as e:
        if e.code == ErrorCode.SECURITY_DISABLED:
            return Acls([], e.message)
        raise
    rows = [
        AclRow(
            p.resource_type.value,
            p.name,
            p.pattern_type.value,
            e.principal,
            e.host,
            e.operation.value,
            e.permission_type.value,
        )
        for p, entries in bindings.items()
        for e in entries
    ]
    rows.sort(key=lambda r: (r.resource_type, r.resource_name, r.pattern_type, r.principal, r.operation))
    return Acls(rows)


@dataclass(frozen=True, slots=True)
class QuotaRow:
    user: str | None
    """None: the entity does not name a user; `<default>` for the default user."""
    client_id: str | None
    quotas: tuple[tuple[str, float], ...]

    @property
    def entity(self) -> str:
        """As kafka-configs names it: user-principal 'alice', client-id 'app', or both."""
        parts = []
        if self.user is not None:
            parts.append(f"user-principal '{self.user}'")
        if self.client_id is not None:
            parts.append(f"client-id '{self.client_id}'")
        return ", ".join(parts)


async def quotas(source: ClusterSource) -> list[QuotaRow]:
    found = await source.admin.describe_client_quotas([])
    return sorted(
        (QuotaRow(user, client, tuple(sorted(bounds.items()))) for (user, client), bounds in found),
        key=lambda r: (r.user is None, r.user or "", r.client_id or ""),
    )
