"""Leader epoch cache (Kafka §7): assign, endOffsetFor, truncation, persistence."""

from __future__ import annotations

from pathlib import Path

import pytest

from zkafka.storage.leader_epoch import LeaderEpochCache


def test_assign_rules(tmp_path: Path) -> None:
    path = tmp_path / "leader-epoch-checkpoint"
    cache = LeaderEpochCache(path)
    assert cache.assign(1, 0)
    assert not cache.assign(1, 5)  # same epoch, later start: no-op
    assert cache.assign(2, 10)
    assert cache.assign(4, 20)
    assert cache.entries() == [(1, 0), (2, 10), (4, 20)]
    assert path.read_text() == "0\n3\n1 0\n2 10\n4 20\n"
    assert cache.assign(3, 15)  # lower epoch: the tail with epoch >= 3 goes
    assert cache.entries() == [(1, 0), (2, 10), (3, 15)]
    assert cache.assign(5, 12)  # earlier start: entries starting at >= 12 go
    assert cache.entries() == [(1, 0), (2, 10), (5, 12)]
    assert cache.assign(5, 11)  # same epoch, earlier start: replaced
    assert cache.entries() == [(1, 0), (2, 10), (5, 11)]
    with pytest.raises(ValueError):
        cache.assign(-1, 0)
    with pytest.raises(ValueError):
        cache.assign(1, -5)
    assert LeaderEpochCache.load(path).entries() == cache.entries()


def test_end_offset_for_cases_of_kafka() -> None:
    cache = LeaderEpochCache(None, [(1, 0), (3, 100), (5, 200)])
    leo = 300
    assert cache.end_offset_for(-1, leo) == (-1, -1)  # undefined epoch
    assert cache.end_offset_for(5, leo) == (5, leo)  # the latest epoch
    assert cache.end_offset_for(6, leo) == (-1, -1)  # nothing above
    assert cache.end_offset_for(0, leo) == (0, 0)  # nothing at or below: (requested, first start)
    assert cache.end_offset_for(1, leo) == (1, 100)
    assert cache.end_offset_for(2, leo) == (1, 100)  # largest epoch <= 2 and the next start
    assert cache.end_offset_for(3, leo) == (3, 200)
    assert cache.end_offset_for(4, leo) == (3, 200)
    assert LeaderEpochCache(None).end_offset_for(0, leo) == (-1, -1)


def test_truncate_from_end_and_start(tmp_path: Path) -> None:
    cache = LeaderEpochCache(tmp_path / "e", [(1, 0), (3, 100), (5, 200)])
    cache.truncate_from_end(200)
    assert cache.entries() == [(1, 0), (3, 100)]
    cache.truncate_from_end(1000)
    assert cache.entries() == [(1, 0), (3, 100)]
    cache.truncate_from_start(50)
    assert cache.entries() == [(1, 50), (3, 100)]
    cache.truncate_from_start(100)
    assert cache.entries() == [(3, 100)]
    cache.truncate_from_start(150)
    assert cache.entries() == [(3, 150)]
    cache.truncate_from_start(10)  # below the first start: nothing happens
    assert cache.entries() == [(3, 150)]
    assert LeaderEpochCache.load(tmp_path / "e").entries() == [(3, 150)]
    cache.clear()
    assert len(cache) == 0 and (tmp_path / "e").read_text() == "0\n0\n"


def test_epoch_for_offset_and_earliest() -> None:
    cache = LeaderEpochCache(None, [(2, 10), (4, 30)])
    assert cache.epoch_for_offset(5) is None
    assert cache.epoch_for_offset(10) == 2
    assert cache.epoch_for_offset(29) == 2
    assert cache.epoch_for_offset(1000) == 4
    assert cache.earliest_entry == (2, 10) and cache.latest_entry == (4, 30) and cache.latest_epoch == 4
