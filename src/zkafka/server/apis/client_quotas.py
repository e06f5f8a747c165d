"""DescribeClientQuotas (48) and AlterClientQuotas (49): client quotas over the wire (KIP-546), read
from and written to ZooKeeper as Kafka's ZooKeeper-mode brokers do (`zkafka.quotas.admin`); the
change notification makes every broker apply an alteration, and this broker applies it before
answering, so its next request already sees the new bound.

Entities on the wire are lists of (`user` | `client-id`, name), a null name the default entity. A
component or entity Kafka would refuse (unknown or repeated type, an exact match without a name), an
unknown quota key or a bad value (not positive, a fractional byte rate) is INVALID_REQUEST: for the
whole describe, for that entity only in an alter. Who may call them is `authorization.py`'s
business (Cluster:DescribeConfigs and Cluster:AlterConfigs).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from zkafka.protocol import ErrorCode
from zkafka.protocol.messages import (
    AlterClientQuotasRequest,
    AlterClientQuotasResponse,
    DescribeClientQuotasRequest,
    DescribeClientQuotasResponse,
)
from zkafka.quotas import DEFAULT
from zkafka.quotas.admin import QuotaAlterError, alter_quotas, check_quota_changes, entity_znode
from zkafka.quotas.cache import QuotaConfigCache
from zkafka.quotas.entities import EntityKey
from zkafka.quotas.types import KEYS
from zkafka.server.dispatcher import RequestContext

log = logging.getLogger(__name__)

USER, CLIENT_ID = "user", "client-id"
MATCH_EXACT, MATCH_DEFAULT, MATCH_ANY = 0, 1, 2

DResp = DescribeClientQuotasResponse
AResp = AlterClientQuotasResponse


# -- DescribeClientQuotas -----------------------------------------------------------------------------
async def handle_describe(ctx: RequestContext, request: DescribeClientQuotasRequest) -> DResp:
    try:
        wanted = _components(request.components)
    except QuotaAlterError as e:
        return DResp(error_code=ErrorCode.INVALID_REQUEST, error_message=str(e), entries=None)
    found = await ctx.services.zk.run(lambda zk: QuotaConfigCache(zk).read_all())
    entries = []
    for entity, bounds in sorted(found.items(), key=lambda kv: (kv[0][0] or "", kv[0][1] or "")):
        if _matches(wanted, request.strict, entity):
            entries.append(
                DResp.EntryData(
                    entity=_wire_entity(entity, DResp.EntityData),
                    values=[
                        DResp.ValueData(key=q.value, value=v)
                        for q, v in sorted(bounds.items(), key=lambda kv: kv[0].value)
                    ],
                )
            )
    return DResp(entries=entries)


def _components(components: Sequence[Any]) -> dict[str, tuple[int, str | None]]:
    out: dict[str, tuple[int, str | None]] = {}
    for c in components:
        if c.entity_type not in (USER, CLIENT_ID):
            raise QuotaAlterError(f"unknown entity type {c.entity_type!r} (expected user or client-id)")
        if c.entity_type in out:
            raise QuotaAlterError(f"duplicate filter component for {c.entity_type}")
        if c.match_type == MATCH_EXACT and c.match is None:
            raise QuotaAlterError(f"an exact match of {c.entity_type} needs a name")
        if c.match_type not in (MATCH_EXACT, MATCH_DEFAULT, MATCH_ANY):
            raise QuotaAlterError(f"unknown match type {c.match_type}")
        out[c.entity_type] = (c.match_type, c.match)
    return out


def _matches(wanted: dict[str, tuple[int, str | None]], strict: bool, entity: EntityKey) -> bool:
    for kind, name in ((USER, entity[0]), (CLIENT_ID, entity[1])):
        component = wanted.get(kind)
        if component is None:
            if name is not None and strict:
                return False
            continue
        match_type, match = component
        if name is None:
            return False
        if match_type == MATCH_EXACT and name != match:
            return False
        if match_type == MATCH_DEFAULT and name != DEFAULT:
            return False
    return True


def _wire_entity(entity: EntityKey, make: Any) -> list[Any]:
    return [
        make(entity_type=kind, entity_name=None if name == DEFAULT else name)
        for kind, name in ((USER, entity[0]), (CLIENT_ID, entity[1]))
        if name is not None
    ]


# -- AlterClientQuotas --------------------------------------------------------------------------------
async def handle_alter(ctx: RequestContext, request: AlterClientQuotasRequest) -> AResp:
    out = []
    quotas = ctx.services.quotas
    for entry in request.entries:
        result = AResp.EntryData(
            entity=[
                AResp.EntityData(entity_type=e.entity_type, entity_name=e.entity_name) for e in entry.entity
            ]
        )
        out.append(result)
        try:
            entity = _entity(entry.entity)
            added, removed = _ops(entry.ops)
            check_quota_changes(added, removed)
            config_type, name = entity_znode(entity)
            if not request.validate_only:
                await ctx.services.zk.run(alter_quotas, entity, added, removed)
                if quotas is not None:
                    await quotas.refresh(f"{config_type.value}/{name}")
        except QuotaAlterError as e:
            result.error_code, result.error_message = ErrorCode.INVALID_REQUEST, str(e)
        except Exception as e:  # ZooKeeper trouble: this entity fails, the request is answered
            log.warning(
                "AlterClientQuotas of %s failed: %s",
                [(x.entity_type, x.entity_name) for x in entry.entity],
                e,
            )
            result.error_code, result.error_message = ErrorCode.UNKNOWN_SERVER_ERROR, str(e)
    return AResp(entries=out)


def _entity(parts: Sequence[Any]) -> EntityKey:
    found: dict[str, str] = {}
    for p in parts:
        if p.entity_type not in (USER, CLIENT_ID):
            raise QuotaAlterError(f"unknown entity type {p.entity_type!r} (expected user or client-id)")
        if p.entity_type in found:
            raise QuotaAlterError(f"entity type {p.entity_type} given twice")
        if p.entity_name is not None and (p.entity_name == "" or p.entity_name == DEFAULT):
            raise QuotaAlterError(f"invalid {p.entity_type} name {p.entity_name!r}")
        found[p.entity_type] = DEFAULT if p.entity_name is None else p.entity_name
    if not found:
        raise QuotaAlterError("an entity needs a user, a client-id or both")
    return (found.get(USER), found.get(CLIENT_ID))


def _ops(ops: Sequence[Any]) -> tuple[dict[str, str], list[str]]:
    added: dict[str, str] = {}
    removed: list[str] = []
    for op in ops:
        if op.key in added or op.key in removed:
            raise QuotaAlterError(f"quota {op.key} altered twice")
        if op.remove:
            removed.append(op.key)
            continue
        quota = KEYS.get(op.key)
        value = float(op.value)
        # Kafka stores byte rates as longs: a whole number is written without ".0", else refused
        if quota is not None and quota.value.endswith("byte_rate") and value.is_integer():
            added[op.key] = str(int(value))
        else:
            added[op.key] = repr(value)
    return added, removed
