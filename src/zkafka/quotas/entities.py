"""Which configured entity's quota applies to a (user, client-id), by Kafka's precedence.

Entities are `(user part, client part)`: each part is a name, `<default>`, or None when the entity does
not mention it (`/config/clients/c` is `(None, "c")`, `/config/users/u` is `("u", None)`). Kafka's
order (DefaultQuotaCallback), first configured wins, resolved separately for each quota type (a user
entity with only a consume quota does not hide a client-id produce quota):

    1 /config/users/<user>/clients/<client-id>     5 /config/users/<default>/clients/<default>
    2 /config/users/<user>/clients/<default>       6 /config/users/<default>
    3 /config/users/<user>                         7 /config/clients/<client-id>
    4 /config/users/<default>/clients/<client-id>  8 /config/clients/<default>

The matched entity also says who shares a rate measurement (Kafka's quota metric tags): a part that
the entity mentions, by name or by `<default>`, is the client's own value; a part it does not mention
is "". So `/config/users/<default>` gives every user their own bound shared by all their client ids,
and `/config/clients/<default>` every client id its own bound shared across users.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

from zkafka.quotas.types import QuotaType

__all__ = ["DEFAULT", "ClientEntity", "EntityKey", "QuotaLimit", "precedence", "resolve"]

DEFAULT = "<default>"
EntityKey = tuple[str | None, str | None]


class ClientEntity(NamedTuple):
    """Who sent a request: the authenticated principal's name (Kafka uses "ANONYMOUS" without
    authentication, which `<default>` user quotas cover) and the request header's client id."""

    user: str
    client_id: str


class QuotaLimit(NamedTuple):
    bound: float
    entity: EntityKey
    """The configured entity the bound came from."""
    sensor: tuple[str, str]
    """(user, client id) whose traffic shares one rate measurement."""


def precedence(user: str, client_id: str) -> tuple[EntityKey, ...]:
    """The eight candidate entities for a client, highest precedence first."""
    return (
        (user, client_id), (user, DEFAULT), (user, None),
        (DEFAULT, client_id), (DEFAULT, DEFAULT), (DEFAULT, None),
        (None, client_id), (None, DEFAULT),
    )  # fmt: skip


def resolve(
    quotas: Mapping[EntityKey, Mapping[QuotaType, float]], quota: QuotaType, who: ClientEntity
) -> QuotaLimit | None:
    """The bound on `who` for `quota`, or None when no entity sets one (unlimited)."""
    for entity in precedence(who.user, who.client_id):
        bound = quotas.get(entity, {}).get(quota)
        if bound is not None:
            sensor = ("" if entity[0] is None else who.user, "" if entity[1] is None else who.client_id)
            return QuotaLimit(bound, entity, sensor)
    return None
