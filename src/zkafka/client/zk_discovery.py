"""Brokers found through ZooKeeper (seed 003, "producer load balancing through ZooKeeper").

A client given `zookeeper.connect` reads the live brokers from `/brokers/ids` (each registration
decoded on its own with `zkafka.zk`'s codec: one that does not decode is reported and skipped) and
keeps that list current with a children watch, so brokers that register after the client started
are used without a restart, and brokers that are gone are no longer tried first.

Which endpoint of a broker is used: the one of the listener named by `zookeeper.listener.name`
when given; else the first endpoint whose security protocol is the client's own
(`security.protocol`, PLAINTEXT by default). A broker with no such endpoint is skipped (logged):
connecting to a TLS listener in plaintext, or the other way round, can only fail.

Threads: the ZooKeeper session is blocking kazoo code; it is opened and read on one
`ZkExecutor` thread, and the watch is bridged into the client's event loop (`zk.watch_bridge`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from zkafka.zk.client import KafkaZkClient
from zkafka.zk.errors import ZkError
from zkafka.zk.model import BrokerInfo, EndPoint
from zkafka.zk.watch_bridge import AsyncWatcher, WatchHandle, ZkExecutor, ZkWatchEvent
from zkafka.zk.znodes import BrokerIdsZNode

log = logging.getLogger(__name__)

Address = tuple[str, int]


def choose_endpoint(
    info: BrokerInfo, *, listener_name: str | None, security_protocol: str
) -> EndPoint | None:
    """The endpoint of `info` a client should connect to (see the module docstring), or None."""
    if listener_name:
        return info.endpoint(listener_name)
    wanted = security_protocol.upper()
    return next((e for e in info.endpoints if e.security_protocol.name == wanted), None)


class BrokerDiscovery:
    """The live brokers' addresses from ZooKeeper, kept current by a watch.

    `await start()` opens the session and returns after the first read; `on_change()` is called on
    the event loop after every later read that changed the set of addresses.
    """

    def __init__(
        self,
        connect: str,
        *,
        listener_name: str | None = None,
        security_protocol: str = "PLAINTEXT",
        timeout_s: float = 10.0,
        on_change: Callable[[], object] | None = None,
    ) -> None:
        self.connect = connect
        self.listener_name = listener_name
        self.security_protocol = security_protocol
        self.timeout_s = timeout_s
        self.on_change = on_change
        self.brokers: dict[int, Address] = {}
        """broker id -> (host, port) of the chosen endpoint, as last read."""
        self._executor = ZkExecutor("zk-discovery")
        self._zk: KafkaZkClient | None = None
        self._watcher: AsyncWatcher | None = None
        self._handle: WatchHandle | None = None
        self._reading: asyncio.Task[None] | None = None
        self._dirty = False
        self._skipped: set[int] = set()
        self._closed = False

    @property
    def addresses(self) -> list[Address]:
        return [self.brokers[b] for b in sorted(self.brokers)]

    async def start(self) -> None:
        try:
            zk = await self._executor.call(
                KafkaZkClient,
                self.connect,
                connection_timeout_ms=int(self.timeout_s * 1000),
                create_chroot=False,
            )
        except (ZkError, ValueError) as e:
            self._executor.shutdown(wait=False)
            raise ConnectionError(f"cannot read brokers from ZooKeeper {self.connect}: {e}") from e
        self._zk = zk
        await self._read()
        self._watcher = AsyncWatcher(zk, asyncio.get_running_loop())
        # initial=False: the read above was the initial one; the watch reports what follows it
        # (a registration between the read and the watch is caught by the re-read it triggers).
        self._handle = self._watcher.watch_children(BrokerIdsZNode.path(), self._on_event, initial=False)
        self._schedule_read()

    def _on_event(self, _event: ZkWatchEvent) -> None:
        self._schedule_read()

    def _schedule_read(self) -> None:
        """One read at a time; events during a read make it run once more afterwards."""
        if self._closed:
            return
        if self._reading is not None and not self._reading.done():
            self._dirty = True
            return
        self._reading = asyncio.get_running_loop().create_task(self._read_and_report())

    async def _read_and_report(self) -> None:
        while True:
            self._dirty = False
            before = dict(self.brokers)
            try:
                await self._read()
            except Exception as e:  # connection loss: the watch's resync reads again later
                log.debug("reading /brokers/ids failed: %s", e)
                return
            if self.brokers != before and self.on_change is not None and not self._closed:
                log.info("brokers in ZooKeeper: %s", dict(sorted(self.brokers.items())))
                self.on_change()
            if not self._dirty or self._closed:
                return

    async def _read(self) -> None:
        zk = self._zk
        assert zk is not None
        infos: list[BrokerInfo] = await self._executor.call(zk.get_all_brokers)
        found: dict[int, Address] = {}
        for info in infos:
            endpoint = choose_endpoint(
                info, listener_name=self.listener_name, security_protocol=self.security_protocol
            )
            if endpoint is None:
                if info.id not in self._skipped:
                    self._skipped.add(info.id)
                    wanted = self.listener_name or f"a {self.security_protocol} listener"
                    log.warning(
                        "broker %d registers no endpoint for %s (it has %s): not using it",
                        info.id,
                        wanted,
                        ", ".join(e.connection_string for e in info.endpoints) or "none",
                    )
                continue
            self._skipped.discard(info.id)
            found[info.id] = (endpoint.host or "localhost", endpoint.port)
        self.brokers = found

    async def close(self) -> None:
        self._closed = True
        if self._handle is not None:
            self._handle.cancel()
        if self._watcher is not None:
            self._watcher.close()
        if self._reading is not None and not self._reading.done():
            self._reading.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._reading
        zk, self._zk = self._zk, None
        if zk is not None:
            with contextlib.suppress(Exception):
                await self._executor.call(zk.close)
        self._executor.shutdown(wait=False)
