"""The broker's ZooKeeper session: the client, the thread its blocking calls run on, and the watcher
that brings its events onto the event loop.

`connect` is the first step of start-up (Kafka's order, reference zk-layout §6): open the session
(creating the chroot) and create the top-level paths. The session authenticates with the digest user
of the JAAS `Client` section `KAFKA_OPTS` names (`zkafka.security.zookeeper_auth`), and with
`zookeeper.set.acl=true` every znode it creates carries secure ACLs (`zkafka.zk.znode_acls`); without
credentials that setting is a start-up error, as in Kafka. Everything else gets the narrow `ZooKeeper`
view (`run`); only the broker's own wiring (controller module, change notification listeners) is
handed the client, executor and watcher themselves.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Concatenate, ParamSpec, Protocol, TypeVar

from zkafka.config import BrokerConfig
from zkafka.security.zookeeper_auth import ZooKeeperAuthError, zookeeper_credentials
from zkafka.server.security import SecurityConfigError
from zkafka.zk.client import KafkaZkClient
from zkafka.zk.notifications import ChangeNotificationListener, NotificationHandler
from zkafka.zk.watch_bridge import AsyncWatcher, SessionEvent, SessionState, WatchHandle, ZkExecutor
from zkafka.zk.znodes import SequentialZNodes

log = logging.getLogger(__name__)

P = ParamSpec("P")
T = TypeVar("T")


class ZooKeeper(Protocol):
    """The broker's ZooKeeper session, for work on it only: `fn(client, *args, **kwargs)` runs on
    the ZooKeeper thread (a blocking call on the event loop would stall every connection); the
    session's lifecycle, watches and thread stay with their owner."""

    async def run(
        self, fn: Callable[Concatenate[KafkaZkClient, P], T], /, *args: P.args, **kwargs: P.kwargs
    ) -> T: ...


class BrokerZooKeeper:
    def __init__(self, client: KafkaZkClient, executor: ZkExecutor, watcher: AsyncWatcher) -> None:
        self.client = client
        self.executor = executor
        self.watcher = watcher
        self._handles: list[WatchHandle | Callable[[], None]] = [
            watcher.add_session_listener(_on_session_event)
        ]

    @classmethod
    async def connect(cls, config: BrokerConfig, name: str) -> BrokerZooKeeper:
        """A session to `zookeeper.connect` with Kafka's top-level paths in place."""
        try:
            auth = zookeeper_credentials()
        except ZooKeeperAuthError as e:
            raise SecurityConfigError(str(e)) from None
        if config.zookeeper_set_acl and auth is None:
            raise SecurityConfigError(
                "zookeeper.set.acl is true but ZooKeeper has no credentials: name a JAAS file with a "
                "Client section (org.apache.zookeeper.server.auth.DigestLoginModule username/password) "
                "in KAFKA_OPTS=-Djava.security.auth.login.config=<file>"
            )
        executor = ZkExecutor(name)
        try:
            client = await executor.call(
                KafkaZkClient,
                config.zookeeper_connect,
                session_timeout_ms=config.zookeeper_session_timeout_ms,
                connection_timeout_ms=config.zookeeper_connection_timeout_ms,
                create_chroot=True,
                auth=auth,
                secure_acls=config.zookeeper_set_acl,
            )
        except BaseException:
            executor.shutdown(wait=False)
            raise
        zk = cls(client, executor, AsyncWatcher(client, asyncio.get_running_loop()))
        try:
            await zk.run(KafkaZkClient.create_top_level_paths)
        except BaseException:
            await zk.close()
            raise
        return zk

    async def run(
        self, fn: Callable[Concatenate[KafkaZkClient, P], T], /, *args: P.args, **kwargs: P.kwargs
    ) -> T:
        """`fn(client, *args, **kwargs)` on the ZooKeeper thread."""
        return await self.executor.call(fn, self.client, *args, **kwargs)

    def listen(self, queue: SequentialZNodes, handler: NotificationHandler) -> None:
        """Process the change notifications under `queue` (now and on every change) until `close`;
        `handler` runs on the event loop."""
        listener = ChangeNotificationListener(self.client, queue, handler)
        self._handles.append(listener.attach(self.watcher, self.executor))

    def keep_until_close(self, handles: list[WatchHandle]) -> None:
        """Subscriptions made elsewhere (the ACL cache's) that end with `stop_listening`."""
        self._handles.extend(handles)

    def stop_listening(self) -> None:
        """No more change notifications or session news: called before the logs close, so no
        config change lands on a log being shut down."""
        for handle in self._handles:
            try:
                (handle.cancel if isinstance(handle, WatchHandle) else handle)()
            except Exception:
                log.debug("removing a ZooKeeper subscription failed", exc_info=True)
        self._handles.clear()

    async def close(self) -> None:
        """End the session (which removes our ephemeral znodes) and the ZooKeeper thread."""
        self.stop_listening()
        self.watcher.close()
        try:
            await self.executor.call(self.client.close)
        finally:
            self.executor.shutdown(wait=False)


def _on_session_event(event: SessionEvent) -> None:
    if event.state == SessionState.EXPIRED:
        log.warning("ZooKeeper session expired; the controller module re-registers on the new one")
