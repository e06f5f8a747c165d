"""Kafka's eight-level precedence against an independent model of it.

The model states the rule differently from the code: an entity matches a client when each part it
names is the client's value or `<default>` (a part it leaves out matches anything); among the matching
entities that set the quota, the most specific wins, comparing the user part first (exact, then
`<default>`, then absent) and the client part second (same order)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from zkafka.quotas.entities import DEFAULT, ClientEntity, EntityKey, resolve
from zkafka.quotas.types import QuotaType

USERS = ["alice", "bob"]
CLIENTS = ["app", "cli"]


def rank(part: str | None, value: str) -> int | None:
    if part is None:
        return 2
    if part == DEFAULT:
        return 1
    return 0 if part == value else None


def model(
    quotas: dict[EntityKey, dict[QuotaType, float]], quota: QuotaType, who: ClientEntity
) -> tuple[float, tuple[str, str]] | None:
    best = None
    for (user, client), bounds in quotas.items():
        u, c = rank(user, who.user), rank(client, who.client_id)
        if u is None or c is None or quota not in bounds:
            continue
        if best is None or (u, c) < best[0]:
            shared = ("" if user is None else who.user, "" if client is None else who.client_id)
            best = ((u, c), bounds[quota], shared)
    return None if best is None else (best[1], best[2])


entity_parts = st.sampled_from([*USERS, DEFAULT, None])
client_parts = st.sampled_from([*CLIENTS, DEFAULT, None])
entities = st.tuples(entity_parts, client_parts).filter(lambda e: e != (None, None))
bounds = st.dictionaries(st.sampled_from(list(QuotaType)), st.integers(1, 10**9).map(float), max_size=4)


@given(st.dictionaries(entities, bounds, max_size=12), st.sampled_from(USERS), st.sampled_from(CLIENTS))
def test_resolution_matches_the_model(
    quotas: dict[EntityKey, dict[QuotaType, float]], user: str, client: str
) -> None:
    who = ClientEntity(user, client)
    for quota in QuotaType:
        found = resolve(quotas, quota, who)
        expected = model(quotas, quota, who)
        assert (None if found is None else (found.bound, found.sensor)) == expected


def test_the_documented_order_one_level_at_a_time() -> None:
    order: list[EntityKey] = [
        ("alice", "app"), ("alice", DEFAULT), ("alice", None), (DEFAULT, "app"),
        (DEFAULT, DEFAULT), (DEFAULT, None), (None, "app"), (None, DEFAULT),
    ]  # fmt: skip
    who = ClientEntity("alice", "app")
    quotas = {entity: {QuotaType.PRODUCE: float(i + 1)} for i, entity in enumerate(order)}
    for entity in order:
        found = resolve(quotas, QuotaType.PRODUCE, who)
        assert found is not None and found.entity == entity
        del quotas[entity]
    assert resolve(quotas, QuotaType.PRODUCE, who) is None


def test_each_quota_type_resolves_on_its_own() -> None:
    quotas: dict[EntityKey, dict[QuotaType, float]] = {
        ("alice", None): {QuotaType.FETCH: 5.0},
        (None, "app"): {QuotaType.PRODUCE: 7.0},
    }
    who = ClientEntity("alice", "app")
    assert resolve(quotas, QuotaType.PRODUCE, who).entity == (None, "app")  # type: ignore[union-attr]
    assert resolve(quotas, QuotaType.FETCH, who).entity == ("alice", None)  # type: ignore[union-attr]


def test_who_shares_a_measurement() -> None:
    quotas: dict[EntityKey, dict[QuotaType, float]] = {(DEFAULT, None): {QuotaType.PRODUCE: 1.0}}
    a1, a2 = (resolve(quotas, QuotaType.PRODUCE, ClientEntity("alice", c)) for c in CLIENTS)
    b = resolve(quotas, QuotaType.PRODUCE, ClientEntity("bob", "app"))
    assert a1 is not None and a2 is not None and b is not None
    assert a1.sensor == a2.sensor == ("alice", "")  # a user's clients share the user's bound
    assert b.sensor == ("bob", "")  # each user has their own
