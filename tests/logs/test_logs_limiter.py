"""`RateLimitedLog`: the first line of a kind per window, then a count of what was held back."""

from __future__ import annotations

import logging

import pytest

from zkafka.logs import RateLimitedLog


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_repeats_are_counted_and_reported_with_the_next_line(caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    limited = RateLimitedLog(logging.getLogger("t.limiter"), 60, clock=clock)
    with caplog.at_level(logging.WARNING, logger="t.limiter"):
        assert limited.warning("bad frame", "bad frame from %s", "a")
        for i in range(5122):
            assert not limited.warning("bad frame", "bad frame from %s", i)
        assert limited.warning("other", "another kind")  # kinds are independent
        clock.now = 61
        assert limited.warning("bad frame", "bad frame from %s", "b")
    assert [r.getMessage() for r in caplog.records] == [
        "bad frame from a",
        "another kind",
        "bad frame from b (5,122 more like this in the last 60 s)",
    ]


def test_flush_reports_a_burst_that_stopped(caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    limited = RateLimitedLog(logging.getLogger("t.flush"), 10, clock=clock)
    with caplog.at_level(logging.WARNING, logger="t.flush"):
        limited.warning("k", "first")
        limited.warning("k", "second")
        assert limited.flush() == 0  # window still open
        clock.now = 11
        assert limited.flush() == 1
        assert limited.flush() == 0
    assert caplog.records[-1].getMessage() == "1 more like 'k' in the last 10 s"


def test_kinds_are_bounded() -> None:
    limited = RateLimitedLog(logging.getLogger("t.bounded"), 60)
    for i in range(10_000):
        limited.warning(("peer", i), "refused %s", i)
    assert len(limited._windows.by_kind) <= 4096


def test_repeat_filter_summarises_a_chatty_library() -> None:
    from zkafka.logs import RepeatFilter

    clock = Clock()
    records: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(f"{record.name}: {record.getMessage()}")

    handler = Collect()
    handler.addFilter(RepeatFilter("kazoo", 60, clock=clock))
    chatty, ours = logging.getLogger("kazoo.client.test"), logging.getLogger("zkafka.test.repeat")
    levels = {logger: logger.level for logger in (chatty, ours)}
    for logger in (chatty, ours):
        logger.addHandler(handler)
        logger.propagate = False
        logger.setLevel(logging.INFO)  # whatever another test set on "kazoo" (the CLI quiets it)
    try:
        for _ in range(30):
            chatty.warning("Connection dropped: %s", "refused")
            ours.warning("not filtered")
        clock.now = 61
        chatty.warning("Connection dropped: %s", "refused")
    finally:
        for logger in (chatty, ours):
            logger.removeHandler(handler)
            logger.propagate = True
            logger.setLevel(levels[logger])
    assert records.count("zkafka.test.repeat: not filtered") == 30
    assert [r for r in records if r.startswith("kazoo")] == [
        "kazoo.client.test: Connection dropped: refused",
        "kazoo.client.test: Connection dropped: refused (29 more like this in the last 60 s)",
    ]
