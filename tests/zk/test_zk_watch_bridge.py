"""The watch bridge against a real ZooKeeper: events arrive on the asyncio loop thread, one-shot
watches are re-armed, session state changes are delivered, and change-notification listeners work
end to end."""

from __future__ import annotations

import asyncio
import signal
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from zk_test_helpers import expire_session

from zkafka.local.zookeeper import ZooKeeperServer
from zkafka.zk.client import KafkaZkClient
from zkafka.zk.notifications import ChangeNotificationListener
from zkafka.zk.watch_bridge import (
    AsyncWatcher,
    SessionEvent,
    SessionState,
    WatchEventType,
    ZkExecutor,
    ZkWatchEvent,
)
from zkafka.zk.znodes import CONFIG_CHANGES

TIMEOUT = 10.0


@pytest.fixture
def zk(zk_connect: str) -> Iterator[KafkaZkClient]:
    client = KafkaZkClient(zk_connect, session_timeout_ms=10000)
    yield client
    client.close()


@pytest.fixture
def writer(zk_connect: str) -> Iterator[KafkaZkClient]:
    client = KafkaZkClient(zk_connect, session_timeout_ms=10000)
    yield client
    client.close()


class Recorder:
    """Collects events on the loop, remembering the thread each one arrived on."""

    def __init__(self) -> None:
        self.events: list[ZkWatchEvent | SessionEvent] = []
        self.threads: set[int] = set()
        self.changed = asyncio.Event()

    def __call__(self, event: ZkWatchEvent | SessionEvent) -> None:
        self.events.append(event)
        self.threads.add(threading.get_ident())
        self.changed.set()

    async def wait_for(
        self, predicate: Callable[[ZkWatchEvent | SessionEvent], bool]
    ) -> ZkWatchEvent | SessionEvent:
        async def scan() -> ZkWatchEvent | SessionEvent:
            seen = 0
            while True:
                for event in self.events[seen:]:
                    if predicate(event):
                        return event
                seen = len(self.events)
                self.changed.clear()
                await self.changed.wait()

        return await asyncio.wait_for(scan(), TIMEOUT)


def run(coro_fn: Callable[[], object]) -> None:
    asyncio.run(coro_fn())  # type: ignore[arg-type]


def test_children_watch_rearms_and_runs_on_the_loop_thread(zk: KafkaZkClient, writer: KafkaZkClient) -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        watcher = AsyncWatcher(zk, loop)
        rec = Recorder()
        writer.ensure_path("/brokers/ids")
        watcher.watch_children("/brokers/ids", rec)
        initial = await rec.wait_for(lambda e: True)
        assert isinstance(initial, ZkWatchEvent) and initial.type is WatchEventType.INITIAL
        assert initial.children == ()
        for i in range(3):  # one-shot watches must be re-armed every time
            await asyncio.to_thread(writer.create, f"/brokers/ids/{i}")
            await rec.wait_for(lambda e, i=i: isinstance(e, ZkWatchEvent) and e.children is not None
                               and str(i) in e.children)  # fmt: skip
        last = rec.events[-1]
        assert isinstance(last, ZkWatchEvent) and last.type is WatchEventType.CHILDREN_CHANGED
        assert sorted(last.children or ()) == ["0", "1", "2"]
        assert rec.threads == {threading.get_ident()}
        watcher.close()

    run(main)


def test_data_watch_sees_create_change_delete(zk: KafkaZkClient, writer: KafkaZkClient) -> None:
    async def main() -> None:
        watcher = AsyncWatcher(zk, asyncio.get_running_loop())
        rec = Recorder()
        handle = watcher.watch_data("/controller", rec)
        first = await rec.wait_for(lambda e: True)
        assert isinstance(first, ZkWatchEvent) and not first.exists and first.data is None
        await asyncio.to_thread(writer.create, "/controller", b"a")
        created = await rec.wait_for(lambda e: getattr(e, "type", None) is WatchEventType.CREATED)
        assert isinstance(created, ZkWatchEvent) and created.data == b"a" and created.exists
        await asyncio.to_thread(writer.set_data, "/controller", b"b")
        changed = await rec.wait_for(lambda e: getattr(e, "type", None) is WatchEventType.CHANGED)
        assert isinstance(changed, ZkWatchEvent) and changed.data == b"b" and changed.stat.version == 1  # type: ignore[union-attr]
        await asyncio.to_thread(writer.delete, "/controller")
        deleted = await rec.wait_for(lambda e: getattr(e, "type", None) is WatchEventType.DELETED)
        assert isinstance(deleted, ZkWatchEvent) and not deleted.exists
        await asyncio.to_thread(writer.create, "/controller", b"c")  # re-armed after deletion too
        again = await rec.wait_for(lambda e: getattr(e, "data", None) == b"c")
        assert isinstance(again, ZkWatchEvent) and again.type is WatchEventType.CREATED
        handle.cancel()
        count = len(rec.events)
        await asyncio.to_thread(writer.set_data, "/controller", b"d")
        await asyncio.sleep(0.3)
        assert len(rec.events) == count  # cancelled: nothing more delivered
        assert rec.threads == {threading.get_ident()}
        watcher.close()

    run(main)


def test_exists_watch_and_children_of_a_missing_node(zk: KafkaZkClient, writer: KafkaZkClient) -> None:
    async def main() -> None:
        watcher = AsyncWatcher(zk, asyncio.get_running_loop())
        exists_rec, children_rec = Recorder(), Recorder()
        watcher.watch_exists("/admin/reassign_partitions", exists_rec)
        watcher.watch_children("/admin/delete_topics", children_rec)
        await exists_rec.wait_for(lambda e: True)
        initial = await children_rec.wait_for(lambda e: True)
        assert isinstance(initial, ZkWatchEvent) and initial.children is None and not initial.exists

        await asyncio.to_thread(writer.create, "/admin/reassign_partitions", b"{}", makepath=True)
        created = await exists_rec.wait_for(lambda e: getattr(e, "type", None) is WatchEventType.CREATED)
        assert isinstance(created, ZkWatchEvent) and created.stat is not None and created.data is None
        await asyncio.to_thread(writer.set_data, "/admin/reassign_partitions", b"{ }")
        await exists_rec.wait_for(lambda e: getattr(e, "type", None) is WatchEventType.CHANGED)
        await asyncio.to_thread(writer.delete, "/admin/reassign_partitions")
        await exists_rec.wait_for(lambda e: getattr(e, "type", None) is WatchEventType.DELETED)

        await asyncio.to_thread(writer.create, "/admin/delete_topics/t", makepath=True)
        seen = await children_rec.wait_for(lambda e: bool(getattr(e, "children", None)))
        assert isinstance(seen, ZkWatchEvent) and seen.children == ("t",)
        assert exists_rec.threads == children_rec.threads == {threading.get_ident()}
        watcher.close()

    run(main)


def test_session_expiry_is_delivered_and_subscriptions_resync(
    zk: KafkaZkClient, writer: KafkaZkClient
) -> None:
    async def main() -> None:
        watcher = AsyncWatcher(zk, asyncio.get_running_loop())
        sessions, data = Recorder(), Recorder()
        watcher.add_session_listener(sessions)
        writer.create("/watched", b"1")
        watcher.watch_data("/watched", data)
        await data.wait_for(lambda e: True)
        old_session = await asyncio.to_thread(expire_session, zk)
        expired = await sessions.wait_for(lambda e: getattr(e, "state", None) is SessionState.EXPIRED)
        assert isinstance(expired, SessionEvent) and expired.session_id == old_session
        reconnected = await sessions.wait_for(lambda e: getattr(e, "new_session", False))
        assert isinstance(reconnected, SessionEvent) and reconnected.state is SessionState.CONNECTED
        assert reconnected.session_id == zk.session_id != old_session
        await data.wait_for(lambda e: getattr(e, "type", None) is WatchEventType.RESYNC)
        # the watch works on the new session
        await asyncio.to_thread(writer.set_data, "/watched", b"2")
        await data.wait_for(lambda e: getattr(e, "data", None) == b"2")
        assert sessions.threads == data.threads == {threading.get_ident()}
        watcher.close()

    run(main)


def test_suspended_reconnected_and_lost(tmp_path: Path) -> None:
    """A ZooKeeper restart: SUSPENDED, then CONNECTED on the same session; closing gives LOST."""
    server = ZooKeeperServer(data_dir=tmp_path / "zk", force_sync=False).start()
    try:
        client = KafkaZkClient(server.connect_string, session_timeout_ms=20000)

        async def main() -> None:
            watcher = AsyncWatcher(client, asyncio.get_running_loop())
            rec = Recorder()
            watcher.add_session_listener(rec)
            session = client.session_id
            port = server.port
            await asyncio.to_thread(server.stop)
            await rec.wait_for(lambda e: getattr(e, "state", None) is SessionState.SUSPENDED)
            server.port = port
            await asyncio.to_thread(server.start)
            back = await rec.wait_for(lambda e: getattr(e, "state", None) is SessionState.CONNECTED)
            assert isinstance(back, SessionEvent) and not back.new_session and back.session_id == session
            await asyncio.to_thread(client.close)
            lost = await rec.wait_for(lambda e: getattr(e, "state", None) is SessionState.LOST)
            assert isinstance(lost, SessionEvent)
            watcher.close()

        run(main)
    finally:
        server.stop()


def test_a_reconnection_with_thousands_of_requests_queued_does_not_deadlock(tmp_path: Path) -> None:
    """kazoo wakes its connection thread with one byte per request on a socket pair that holds a few
    hundred wake-ups; callers queuing more while ZooKeeper is away wait until the connection thread
    has sent theirs. Session listeners run on that thread, the only reader: a listener that re-read
    a watch itself waited on itself forever, the session expired and kazoo never reconnected (a
    broker pipelining thousands of ISR writes, at 30,000 partitions)."""
    server = ZooKeeperServer(data_dir=tmp_path / "zk", force_sync=False).start()
    requests = 3000
    try:
        client = KafkaZkClient(server.connect_string, session_timeout_ms=20000)

        async def main() -> None:
            watcher = AsyncWatcher(client, asyncio.get_running_loop())
            sessions, data = Recorder(), Recorder()
            watcher.add_session_listener(sessions)
            client.create("/watched", b"1")
            session, port = client.session_id, server.port
            # a watch read in flight when the server dies fails: it is read again on reconnection
            assert server.process is not None
            server.process.send_signal(signal.SIGSTOP)
            watcher.watch_data("/watched", data)
            await asyncio.sleep(0.5)
            server.process.kill()
            await asyncio.to_thread(server.stop)
            await sessions.wait_for(lambda e: getattr(e, "state", None) is SessionState.SUSPENDED)
            queued: list[object] = []

            def flood() -> None:  # what a broker's ZooKeeper thread does with a pipelined write
                for _ in range(requests):
                    queued.append(client.kazoo.exists_async("/watched"))

            flooder = threading.Thread(target=flood, daemon=True)
            flooder.start()
            seen = -1
            while seen != len(queued):  # until the flooder waits for the connection thread
                seen = len(queued)
                await asyncio.sleep(0.5)
            assert flooder.is_alive() and len(queued) < requests  # the wake-up socket is full
            server.port = port
            await asyncio.to_thread(server.start)
            back = await sessions.wait_for(lambda e: getattr(e, "state", None) is SessionState.CONNECTED)
            assert isinstance(back, SessionEvent) and back.session_id == session
            await data.wait_for(lambda e: getattr(e, "data", None) == b"1")
            await asyncio.to_thread(flooder.join, TIMEOUT)
            assert not flooder.is_alive() and len(queued) == requests
            assert await asyncio.to_thread(client.exists, "/watched") is not None
            watcher.close()

        run(main)
        client.close()
    finally:
        server.stop()


def test_executor_runs_blocking_calls_off_the_loop_in_order(zk: KafkaZkClient) -> None:
    async def main() -> None:
        executor = ZkExecutor()
        try:
            loop_thread = threading.get_ident()
            threads = await asyncio.gather(*(executor.call(threading.get_ident) for _ in range(5)))
            assert len(set(threads)) == 1 and loop_thread not in threads
            order: list[int] = []
            await asyncio.gather(*(executor.call(order.append, i) for i in range(20)))
            assert order == list(range(20))
            await executor.call(zk.ensure_path, "/from/executor")
            assert await executor.call(zk.exists, "/from/executor") is not None
        finally:
            executor.shutdown()

    run(main)


def test_change_notification_listener_attached_to_the_loop(zk: KafkaZkClient, writer: KafkaZkClient) -> None:
    writer.set_entity_config("topics", "before", {"a": "1"})  # present at startup: processed too

    async def main() -> None:
        loop = asyncio.get_running_loop()
        watcher, executor = AsyncWatcher(zk, loop), ZkExecutor()
        handled: list[tuple[str, bytes, int]] = []
        got = asyncio.Event()

        def handler(name: str, data: bytes) -> None:
            handled.append((name, data, threading.get_ident()))
            got.set()

        listener = ChangeNotificationListener(zk, CONFIG_CHANGES, handler)
        listener.attach(watcher, executor)
        try:
            for topic in ("after1", "after2"):
                await asyncio.to_thread(writer.set_entity_config, "topics", topic, {"b": "2"})
            while len(handled) < 3:
                got.clear()
                await asyncio.wait_for(got.wait(), TIMEOUT)
            assert [d for _, d, _ in handled] == [
                b'{"version":2,"entity_path":"topics/before"}',
                b'{"version":2,"entity_path":"topics/after1"}',
                b'{"version":2,"entity_path":"topics/after2"}',
            ]
            assert {t for _, _, t in handled} == {threading.get_ident()}
            assert listener.last_processed == 2
        finally:
            watcher.close()
            executor.shutdown()

    run(main)
