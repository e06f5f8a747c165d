"""`ElectionBackoff`: spacing of campaigns after a failed term, and one full report per cause."""

from __future__ import annotations

import logging

import pytest

from zkafka.controller.backoff import ElectionBackoff


def test_delays_double_up_to_the_cap_and_reset_on_success() -> None:
    backoff = ElectionBackoff(1, initial_s=0.5, max_s=4.0, jitter=0.0)
    error = RuntimeError("boom")
    assert [backoff.failed("controller failover", error) for _ in range(6)] == [0.5, 1, 2, 4, 4, 4]
    assert backoff.failures == 6
    backoff.succeeded()
    assert backoff.failed("controller failover", error) == 0.5


@pytest.mark.parametrize("draw", [0.0, 0.5, 0.999])
def test_jitter_stays_within_its_band(draw: float) -> None:
    backoff = ElectionBackoff(1, initial_s=1.0, max_s=30.0, jitter=0.2, rng=lambda: draw)
    delay = backoff.failed("controller election", RuntimeError("x"))
    assert 0.8 <= delay <= 1.2


def test_a_cause_is_logged_in_full_once(caplog: pytest.LogCaptureFixture) -> None:
    backoff = ElectionBackoff(7, jitter=0.0)
    with caplog.at_level(logging.WARNING, logger="zkafka.controller.controller"):
        for _ in range(50):
            backoff.failed("controller failover", ValueError("znode /x does not decode"))
        backoff.failed("controller failover", KeyError("other"))
    full = [r for r in caplog.records if r.exc_info]
    assert [str(r.exc_info[1]) for r in full if r.exc_info] == ["znode /x does not decode", "'other'"]
    repeats = [r for r in caplog.records if not r.exc_info]
    assert len(repeats) == 1  # the other 48 repeats are held back by the rate limiter
