"""`MemoryPool` and `ConnectionQuotas` on their own (the network tests use them for real)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from zkafka.server.connection_quotas import ConnectionQuotas, canonical_ip
from zkafka.server.memory_pool import MemoryPool


def test_pool_queues_what_does_not_fit_and_grants_in_order() -> None:
    pool = MemoryPool(100)
    granted: list[str] = []
    assert pool.reserve(60, lambda: granted.append("x"))
    assert not pool.reserve(50, lambda: granted.append("a"))
    assert not pool.reserve(10, lambda: granted.append("b"))  # it would fit, but a waits first
    pool.release(60)
    assert granted == ["a", "b"] and pool.used == 60 and pool.peak == 60 and pool.waiting == 0


def test_a_large_waiter_is_not_starved_by_small_ones() -> None:
    pool = MemoryPool(100)
    granted: list[str] = []
    assert pool.reserve(30, lambda: None)
    assert not pool.reserve(90, lambda: granted.append("large"))
    # 30 + 10 would fit, but a stream of such small requests could keep 90 from ever fitting
    assert not pool.reserve(10, lambda: granted.append("small"))
    assert pool.used == 30
    pool.release(30)
    assert granted == ["large", "small"] and pool.used == 100


def test_a_waiter_that_goes_away_lets_the_next_one_in() -> None:
    pool = MemoryPool(100)
    granted: list[str] = []
    assert pool.reserve(50, lambda: None)

    def large() -> None:
        granted.append("large")

    assert not pool.reserve(80, large)
    assert not pool.reserve(40, lambda: granted.append("small"))
    pool.forget(large)  # its connection closed
    assert granted == ["small"] and pool.used == 90


def test_pool_always_admits_a_frame_into_an_empty_pool() -> None:
    pool = MemoryPool(10)
    assert pool.reserve(1000, lambda: None)  # larger than the pool: alone, it must pass (no deadlock)
    assert not pool.reserve(1, lambda: None)
    pool.release(1000)
    assert pool.used == 1


def test_an_unbounded_pool_only_counts() -> None:
    pool = MemoryPool(-1)
    assert pool.reserve(10**12, lambda: None) and pool.used == 10**12


def test_quotas_per_ip_overrides_total_and_inter_broker() -> None:
    now = [0.0]
    quotas = ConnectionQuotas(
        max_connections=3,
        max_per_ip=1,
        per_ip_overrides={"10.0.0.1": 2},
        max_creation_rate=100,
        inter_broker_listener="INTERNAL",
        clock=lambda: now[0],
    )
    assert quotas.accept("10.0.0.1", "CLIENT") and quotas.accept("10.0.0.1", "CLIENT")
    assert not quotas.accept("10.0.0.1", "CLIENT")  # its override: 2
    assert quotas.accept("10.0.0.2", "CLIENT")
    assert not quotas.accept("10.0.0.3", "CLIENT")  # max.connections=3
    assert quotas.accept("10.0.0.3", "INTERNAL") and not quotas.counts("INTERNAL")  # never locked out
    quotas.closed("10.0.0.2")
    assert quotas.accept("10.0.0.3", "CLIENT") and quotas.total == 3 and quotas.refused == 2


def test_creation_rate_per_second() -> None:
    now = [100.0]
    quotas = ConnectionQuotas(
        max_connections=1000, max_per_ip=1000, max_creation_rate=2, clock=lambda: now[0]
    )
    assert [quotas.accept("h", "CLIENT") for _ in range(3)] == [True, True, False]
    now[0] = 101.0
    assert quotas.accept("h", "CLIENT")


def test_a_thousand_muted_connections_are_woken_without_recursion() -> None:
    """Each waiter, once granted, answers at once and releases its memory (a small request): the
    pool loops instead of nesting one grant inside another."""
    pool = MemoryPool(10)
    assert pool.reserve(10, lambda: None)
    order: list[int] = []

    def waiter(n: int) -> Callable[[], None]:
        def granted() -> None:
            order.append(n)
            pool.release(10)

        return granted

    for n in range(5000):
        assert not pool.reserve(10, waiter(n))
    pool.release(10)
    assert order == list(range(5000)) and pool.used == 0 and pool.waiting == 0


@dataclass
class Conn:
    last_active: float
    waiting_on_broker: bool = False
    closed_because: str = ""

    def abort(self, reason: str, *, level: int = logging.WARNING) -> None:
        self.closed_because = reason


def test_idle_means_waiting_on_the_client() -> None:
    quotas = ConnectionQuotas(max_connections=10, max_per_ip=10, max_creation_rate=10, clock=lambda: 100.0)
    idle, parked, fresh = Conn(10.0), Conn(10.0, waiting_on_broker=True), Conn(99.0)
    assert quotas.close_idle([idle, parked, fresh], 60.0) == 1
    assert "connections.max.idle.ms=60000" in idle.closed_because
    assert not parked.closed_because and not fresh.closed_because


def test_addresses_are_counted_in_one_form() -> None:
    assert canonical_ip("::ffff:10.0.0.1") == "10.0.0.1"
    assert canonical_ip("0:0:0:0:0:0:0:1") == "::1"
    quotas = ConnectionQuotas(
        max_connections=100,
        max_per_ip=1,
        per_ip_overrides={"localhost": 3, "0:0:0:0:0:0:0:1": 2},
        max_creation_rate=100,
    )
    assert quotas.limit_for("127.0.0.1") == 3  # a host name is resolved, as Kafka does
    assert quotas.limit_for("::1") == 2 and quotas.limit_for("10.0.0.1") == 1
