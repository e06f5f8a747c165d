"""Kafka's sampled Rate and the KIP-219 throttle time, on a simulated clock (ms)."""

from __future__ import annotations

import pytest

from zkafka.config.broker import BrokerConfig
from zkafka.quotas.entities import ClientEntity, EntityKey, QuotaLimit, resolve
from zkafka.quotas.manager import QuotaManager, QuotaWindows, RequestQuotaManager
from zkafka.quotas.rate import SampledRate
from zkafka.quotas.types import QuotaType

BOUND = 1000.0  # bytes/s
WHO = ClientEntity("ANONYMOUS", "app")


def limits(quotas: dict[EntityKey, dict[QuotaType, float]]):  # type: ignore[no-untyped-def]
    def limit(quota: QuotaType, who: ClientEntity) -> QuotaLimit | None:
        return resolve(quotas, quota, who)

    return limit


def produce_manager(bound: float = BOUND) -> tuple[QuotaManager, dict[EntityKey, dict[QuotaType, float]]]:
    quotas: dict[EntityKey, dict[QuotaType, float]] = {(None, "app"): {QuotaType.PRODUCE: bound}}
    return QuotaManager(QuotaType.PRODUCE, limits(quotas)), quotas


def test_a_young_measurement_divides_by_at_least_samples_minus_one_windows() -> None:
    rate = SampledRate(11, 1000)
    rate.record(5000, 0)
    assert rate.window_span_ms(0) == 10_000  # not 0 ms: a first burst is not an infinite rate
    assert rate.measure(0) == 500.0
    assert rate.measure(4_000) == 500.0
    rate.record(250, 10_500)
    assert rate.window_span_ms(10_500) == 10_500  # past the floor, the real span counts
    assert rate.measure(10_500) == 500.0
    assert rate.total(11_000) == 250  # a window as old as all 11 windows together is emptied
    assert rate.window_span_ms(11_000) == 500 + 10_000  # the 10500 window, plus the floor


def test_windows_are_reused_in_a_ring() -> None:
    rate = SampledRate(11, 1000)
    for t in range(0, 20_000, 1000):
        rate.record(1, t)
    assert rate.total(19_000) == 11  # windows starting 9000..19000
    assert rate.window_span_ms(19_000) == 10_000
    assert rate.measure(19_000) == pytest.approx(1.1)


def test_twice_the_quota_is_throttled_in_proportion_to_the_window() -> None:
    """200 bytes every 100 ms is 2x a 1000 B/s quota. Nothing is throttled until the average over the
    10-window floor passes the bound (5 s in); from then on throttle = (rate - bound) / bound * span,
    which at 2x settles at about one span: the client must wait as long again as it has been sending."""
    manager, _ = produce_manager()
    throttles = {t: manager.record(WHO, 200, t) for t in range(0, 30_001, 100)}
    assert all(throttles[t] == 0 for t in range(0, 4_901, 100))
    assert throttles[5_000] == 200  # 51 records: 10200 B / 10 s = 1020 B/s -> 0.02 * 10000 ms
    assert throttles[9_000] == 8_200  # 91 records: 1820 B/s -> 0.82 * 10000 ms
    # At 30 s: windows 20..29 s hold 2000 B each, the one started at 30 s holds 200 B; span 10 s.
    assert throttles[30_000] == 10_200
    assert manager.throttled[("produce", "", "app")] == len([t for t in throttles.values() if t])
    assert manager.throttle_time_ms[("produce", "", "app")] == sum(throttles.values())


@pytest.mark.parametrize("factor", [1.5, 2.0, 3.0, 5.0])
def test_steady_overload_is_throttled_by_the_excess_times_the_span(factor: float) -> None:
    """k times the quota, steadily: throttle = (k - 1) * span (10 s with Kafka's defaults)."""
    manager, _ = produce_manager()
    per_tick = BOUND * factor / 10  # every 100 ms
    throttle = 0
    for t in range(0, 60_001, 100):
        throttle = manager.record(WHO, per_tick, t)
    assert throttle == pytest.approx((factor - 1) * 10_000, rel=0.03)


def test_a_client_that_honours_throttles_converges_to_its_quota() -> None:
    """KIP-219 clients wait out throttle_time_ms before sending again: the achieved rate settles at the
    bound however hard the client pushes."""
    manager, _ = produce_manager()
    now, sent_after_warmup, warmup_ms, end_ms = 0, 0, 30_000, 150_000
    while now < end_ms:
        throttle = manager.record(WHO, 500, now)  # 5000 B/s offered: 5x the quota
        if now >= warmup_ms:
            sent_after_warmup += 500
        now += 100 + throttle
    achieved = sent_after_warmup / ((now - warmup_ms) / 1000)
    assert achieved == pytest.approx(BOUND, rel=0.05)


def test_within_the_quota_nothing_is_throttled() -> None:
    manager, _ = produce_manager()
    assert all(manager.record(WHO, 90, t) == 0 for t in range(0, 60_000, 100))  # 900 B/s
    assert manager.throttled == {}


def test_unbounded_clients_are_not_even_measured() -> None:
    manager, _ = produce_manager()
    other = ClientEntity("ANONYMOUS", "other")
    assert manager.record(other, 10**12, 0) == 0
    assert manager.rate(other, 0) is None and manager.max_value_in_window(other) is None


def test_a_quota_change_applies_at_once() -> None:
    manager, quotas = produce_manager()
    for t in range(0, 10_000, 100):
        manager.record(WHO, 100, t)  # 1000 B/s: at the bound
    quotas[(None, "app")] = {QuotaType.PRODUCE: 500.0}
    assert manager.record(WHO, 100, 10_000) > 0
    quotas[(None, "app")] = {QuotaType.PRODUCE: 10_000.0}
    assert manager.record(WHO, 100, 10_100) == 0


def test_fetch_responses_are_sized_to_the_measured_windows() -> None:
    quotas: dict[EntityKey, dict[QuotaType, float]] = {(None, "app"): {QuotaType.FETCH: 2000.0}}
    manager = QuotaManager(QuotaType.FETCH, limits(quotas), QuotaWindows(11, 2))
    assert manager.max_value_in_window(WHO) == 2000.0 * 10 * 2


def test_request_time_throttles_are_capped_at_one_window() -> None:
    quotas: dict[EntityKey, dict[QuotaType, float]] = {(None, "app"): {QuotaType.REQUEST: 1.0}}
    manager = RequestQuotaManager(limits(quotas), QuotaWindows(11, 1))
    assert manager.record_request_time(WHO, 5_000_000, 0) == 0  # 5 ms over a 10 s floor: 0.05 %
    assert manager.record_request_time(WHO, 2_000_000_000, 100) == 1000  # 2 s: capped at 1 window


def test_idle_measurements_expire() -> None:
    manager, _ = produce_manager()
    manager.record(WHO, 1, 0)
    assert manager.expire_idle(1_000) == 0
    assert manager.expire_idle(3_600_000) == 1
    assert manager.rate(WHO, 3_600_000) is None


def test_windows_come_from_the_broker_config() -> None:
    config = BrokerConfig.from_properties(
        {"zookeeper.connect": "zk:2181", "quota.window.num": "5", "quota.window.size.seconds": "2"}
    )
    assert QuotaWindows.from_config(config) == QuotaWindows(5, 2)
    defaults = BrokerConfig.from_properties({"zookeeper.connect": "zk:2181"})
    assert QuotaWindows.from_config(defaults) == QuotaWindows()
