"""The change-notification algorithm: process in sequence order, never twice, purge old ones."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from zkafka.zk.client import KafkaZkClient
from zkafka.zk.notifications import ChangeNotificationListener
from zkafka.zk.znodes import CONFIG_CHANGES


@pytest.fixture
def zk(zk_connect: str) -> Iterator[KafkaZkClient]:
    client = KafkaZkClient(zk_connect)
    client.create_top_level_paths()
    yield client
    client.close()


def test_sequential_suffixes_have_ten_digits(zk: KafkaZkClient) -> None:
    paths = [zk.create_config_change_notification(f"topics/t{i}") for i in range(3)]
    assert [p.rsplit("_", 1)[1] for p in paths] == ["0000000000", "0000000001", "0000000002"]
    assert all(len(p.rsplit("_", 1)[1]) == 10 for p in paths)


def test_processes_each_notification_once_in_order(zk: KafkaZkClient) -> None:
    seen: list[tuple[str, bytes]] = []
    listener = ChangeNotificationListener(zk, CONFIG_CHANGES, lambda n, d: seen.append((n, d)))
    for i in range(3):
        zk.create_config_change_notification(f"topics/t{i}")
    zk.create(CONFIG_CHANGES.root + "/unrelated", b"x")  # not a notification: ignored
    assert listener.process_notifications() == [f"config_change_{i:010d}" for i in range(3)]
    assert [d for _, d in seen] == [f'{{"version":2,"entity_path":"topics/t{i}"}}'.encode() for i in range(3)]
    assert listener.process_notifications() == []
    zk.create_config_change_notification("topics/t3")
    # the sequence counter is the parent's child version: the unrelated child used up number 3
    assert listener.process_notifications() == ["config_change_0000000004"]
    assert listener.last_processed == 4


def test_a_failing_handler_does_not_stop_the_others(zk: KafkaZkClient) -> None:
    seen: list[str] = []

    def handler(name: str, data: bytes) -> None:
        if name.endswith("1"):
            raise RuntimeError("boom")
        seen.append(name)

    listener = ChangeNotificationListener(zk, CONFIG_CHANGES, handler)
    for i in range(3):
        zk.create_config_change_notification(f"topics/t{i}")
    listener.process_notifications()
    assert seen == ["config_change_0000000000", "config_change_0000000002"]
    assert listener.last_processed == 2


def test_purges_only_notifications_older_than_the_window(zk: KafkaZkClient) -> None:
    old = zk.create_config_change_notification("topics/old")
    time.sleep(0.05)
    new = zk.create_config_change_notification("topics/new")
    old_ctime = zk.exists(old).ctime  # type: ignore[union-attr]
    new_ctime = zk.exists(new).ctime  # type: ignore[union-attr]
    assert old_ctime < new_ctime
    window = 10
    listener = ChangeNotificationListener(
        zk, CONFIG_CHANGES, lambda n, d: None, purge_after_ms=window, clock_ms=lambda: new_ctime + window
    )
    listener.process_notifications()
    assert zk.get_notifications(CONFIG_CHANGES) == [new.rsplit("/", 1)[1]]


def test_tiny_window_purges_everything_processed_and_default_window_keeps_it(zk: KafkaZkClient) -> None:
    for i in range(3):
        zk.create_config_change_notification(f"topics/t{i}")
    ChangeNotificationListener(zk, CONFIG_CHANGES, lambda n, d: None).process_notifications()
    assert len(zk.get_notifications(CONFIG_CHANGES)) == 3  # 15 minutes: nothing is old yet
    time.sleep(0.02)
    handled: list[str] = []
    ChangeNotificationListener(
        zk, CONFIG_CHANGES, lambda n, d: handled.append(n), purge_after_ms=1
    ).process_notifications()
    assert len(handled) == 3  # processed before being purged
    assert zk.get_notifications(CONFIG_CHANGES) == []
