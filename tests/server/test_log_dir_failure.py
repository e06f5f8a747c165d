"""A failed log dir write: the dir goes offline once; the broker halts when every log dir of it is
offline (Kafka's "Shutdown broker because all log dirs ... have failed"), not before."""

from __future__ import annotations

from pathlib import Path

from zkafka.server.log_dir_failure import LogDirFailures
from zkafka.storage.errors import LogDirIOError


def failure(path: Path) -> LogDirIOError:
    return LogDirIOError("No space left on device", path=str(path))


def test_the_broker_halts_when_its_last_log_dir_fails(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    halted: list[int] = []
    failures = LogDirFailures([str(a), str(b)], halt=halted.append)
    failures.failed(failure(tmp_path / "elsewhere" / "t-0" / "0.log"))  # not a log dir of ours
    failures.failed(failure(a / "t-0" / "00000000000000000000.log"))
    failures.failed(failure(a / "t-1" / "00000000000000000000.log"))
    assert failures.offline == {str(a.resolve())} and halted == []
    failures.failed(failure(b / "t-2"))
    assert halted == [1]


def test_one_log_dir_halts_at_its_first_failure(tmp_path: Path) -> None:
    halted: list[int] = []
    LogDirFailures([str(tmp_path)], halt=halted.append).failed(failure(tmp_path / "t-0" / "x.log"))
    assert halted == [1]


def test_a_failed_dir_is_reported_offline_once_before_any_halt(tmp_path: Path) -> None:
    """`on_offline` (the log manager's `mark_dir_offline`) hears of each dir once, as it fails,
    so no new replica is placed there; the last dir is reported before the halt."""
    a, b = tmp_path / "a", tmp_path / "b"
    events: list[object] = []
    failures = LogDirFailures([str(a), str(b)], halt=events.append, on_offline=events.append)
    failures.failed(failure(a / "t-0" / "0.log"))
    failures.failed(failure(a / "t-1" / "0.log"))
    assert events == [str(a.resolve())]
    failures.failed(failure(b / "t-2" / "0.log"))
    assert events == [str(a.resolve()), str(b.resolve()), 1]
