"""kazoo's threads meet asyncio here.

Thread-affinity contract:
* kazoo runs watch callbacks on its watch thread, async-call completions on its completion thread and
  session-state listeners on its connection thread. None of them may block (a blocked watch thread
  stalls every other watch; a blocked listener stalls reconnection).
* So this bridge only ever does non-blocking things on those threads: it re-arms a one-shot watch with
  an `*_async` read and hands the result to the event loop with `loop.call_soon_threadsafe`.
* An `*_async` call is not quite non-blocking: it wakes the connection thread with one byte on a
  socket pair whose buffer holds a few hundred wake-ups, and waits when that is full until the
  connection thread has sent as many requests. A broker that pipelines thousands of requests
  while the connection is down fills it; the connection thread, the only reader, must then
  never call kazoo itself, or it waits on itself forever (no pings, the session expires, kazoo
  never reconnects: a broker lost to ZooKeeper for good, seen at 30,000 partitions). So the
  re-reads after a reconnection run on kazoo's callback thread, not in the session listener.
* User callbacks therefore always run ON THE LOOP THREAD, one at a time, in the order ZooKeeper
  delivered them for a given path. A controller can feed them straight into its single event queue.
* Blocking ZooKeeper calls made from asyncio code go through `ZkExecutor`, a dedicated single thread
  (so calls also keep their submission order).

Subscriptions are persistent: ZooKeeper watches fire once, the bridge re-arms them by reading again
(with a new watch) and delivers what it read, so no change between two reads is missed. A children
watch on a missing znode waits for its creation with an exists-watch. After a session expiry every
watch is gone server-side: once a new session is connected every subscription is re-read and
delivered as `RESYNC`.
"""

from __future__ import annotations

import asyncio
import enum
import functools
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError
from kazoo.protocol.states import Callback, EventType, KazooState, KeeperState, WatchedEvent, ZnodeStat

from zkafka.zk.session import ZkSession

__all__ = [
    "AsyncWatcher",
    "SessionEvent",
    "SessionState",
    "WatchEventType",
    "WatchHandle",
    "ZkExecutor",
    "ZkWatchEvent",
]

log = logging.getLogger(__name__)

T = TypeVar("T")


class SessionState(enum.Enum):
    CONNECTED = "connected"
    """(Re)connected. `SessionEvent.new_session` says whether this is a new session (after expiry)."""
    SUSPENDED = "suspended"
    """Connection lost; the session (and its ephemerals and watches) may still be alive."""
    EXPIRED = "expired"
    """The session expired: its ephemeral znodes and watches are gone. kazoo opens a new one."""
    LOST = "lost"
    """The client was closed (or authentication failed): no new session will follow."""


@dataclass(frozen=True)
class SessionEvent:
    state: SessionState
    session_id: int | None
    new_session: bool = False


class WatchEventType(enum.Enum):
    INITIAL = "initial"
    """The read made when subscribing."""
    CREATED = "created"
    DELETED = "deleted"
    CHANGED = "changed"
    """Data changed."""
    CHILDREN_CHANGED = "children_changed"
    RESYNC = "resync"
    """Re-read after a reconnect that may have lost the watch (new session or a failed re-arm)."""


_KAZOO_EVENT_TYPES = {
    EventType.CREATED: WatchEventType.CREATED,
    EventType.DELETED: WatchEventType.DELETED,
    EventType.CHANGED: WatchEventType.CHANGED,
    EventType.CHILD: WatchEventType.CHILDREN_CHANGED,
}


@dataclass(frozen=True)
class ZkWatchEvent:
    path: str
    type: WatchEventType
    stat: ZnodeStat | None = None
    """None when the znode does not exist (after this event)."""
    data: bytes | None = None
    """For data subscriptions."""
    children: tuple[str, ...] | None = None
    """For children subscriptions (None when the znode does not exist)."""

    @property
    def exists(self) -> bool:
        return self.stat is not None


WatchCallback = Callable[[ZkWatchEvent], Any]


class _Kind(enum.Enum):
    CHILDREN = "children"
    DATA = "data"
    EXISTS = "exists"


class WatchHandle:
    """A persistent subscription; `cancel()` stops deliveries (the pending one-shot ZooKeeper watch
    simply fires into nothing)."""

    def __init__(self, watcher: AsyncWatcher, kind: _Kind, path: str, callback: WatchCallback) -> None:
        self._watcher = watcher
        self.kind = kind
        self.path = path
        self._callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True
        self._watcher._forget(self)

    def __repr__(self) -> str:
        return f"<WatchHandle {self.kind.value} {self.path}{' cancelled' if self.cancelled else ''}>"

    # -- kazoo threads: never block here ----------------------------------------------------------------
    def _on_zk_watch(self, event: WatchedEvent) -> None:
        if self.cancelled:
            return
        mapped = _KAZOO_EVENT_TYPES.get(event.type)
        if mapped is None:
            # EventType.NONE: kazoo clearing watches on session loss; the session listener re-arms.
            return
        self._arm(mapped)

    def _arm(self, event_type: WatchEventType | None) -> None:
        """Read with a new watch; deliver the result as `event_type` (None = arm only, deliver nothing)."""
        if self.cancelled:
            return
        zk = self._watcher.zk
        try:
            if self.kind is _Kind.CHILDREN:
                result = zk.get_children_async(self.path, watch=self._on_zk_watch, include_data=True)
            elif self.kind is _Kind.DATA:
                result = zk.get_async(self.path, watch=self._on_zk_watch)
            else:
                result = zk.exists_async(self.path, watch=self._on_zk_watch)
        except Exception:  # the client is closing
            self._watcher._needs_rearm(self)
            return
        result.rawlink(functools.partial(self._on_read, event_type))

    def _on_read(self, event_type: WatchEventType | None, result: Any) -> None:
        if self.cancelled:
            return
        try:
            value = result.get_nowait()
        except NoNodeError:
            if self.kind is not _Kind.EXISTS:
                # Wait for the znode to be created (the exists-watch re-arms this subscription).
                self._arm_exists_fallback(event_type)
            return
        except Exception as e:  # connection loss / expiry: re-read once connected again
            log.debug("re-arming %r after %r", self, e)
            self._watcher._needs_rearm(self)
            return
        if self.kind is _Kind.CHILDREN:
            children, stat = value
            event = ZkWatchEvent(self.path, event_type or WatchEventType.INITIAL, stat, None, tuple(children))
        elif self.kind is _Kind.DATA:
            data, stat = value
            event = ZkWatchEvent(self.path, event_type or WatchEventType.INITIAL, stat, data or b"")
        else:
            event = ZkWatchEvent(self.path, event_type or WatchEventType.INITIAL, value)
        if event_type is not None:
            self._watcher._deliver(self, event)

    def _arm_exists_fallback(self, event_type: WatchEventType | None) -> None:
        def on_exists(result: Any) -> None:
            if self.cancelled:
                return
            try:
                stat = result.get_nowait()
            except Exception:
                self._watcher._needs_rearm(self)
                return
            if stat is not None:
                self._arm(event_type)  # created between the two reads: read it now
            elif event_type is not None:
                self._watcher._deliver(self, ZkWatchEvent(self.path, event_type))

        try:
            self._watcher.zk.exists_async(self.path, watch=self._on_zk_watch).rawlink(on_exists)
        except Exception:
            self._watcher._needs_rearm(self)

    # -- loop thread ----------------------------------------------------------------------------------------
    def _run_callback(self, event: ZkWatchEvent) -> None:
        if self.cancelled:
            return
        try:
            self._callback(event)
        except Exception:
            log.exception("watch callback for %s failed on %s", self.path, event.type.value)


SessionCallback = Callable[[SessionEvent], Any]


class AsyncWatcher:
    """Delivers ZooKeeper watch and session events into an asyncio loop (see the module docstring).

    Create it on any thread; callbacks run on `loop`'s thread.
    """

    def __init__(self, zk: ZkSession | KazooClient, loop: asyncio.AbstractEventLoop) -> None:
        self.zk: KazooClient = zk.kazoo if isinstance(zk, ZkSession) else zk
        self.loop = loop
        self._lock = threading.Lock()
        self._handles: set[WatchHandle] = set()
        self._rearm: set[WatchHandle] = set()
        self._session_callbacks: list[SessionCallback] = []
        client_id = self.zk.client_id
        self._session_id: int | None = client_id[0] if client_id else None
        self._closed = False
        self.zk.add_listener(self._on_session_state)

    # -- subscriptions ---------------------------------------------------------------------------------------
    def watch_children(self, path: str, callback: WatchCallback, *, initial: bool = True) -> WatchHandle:
        """Child list changes (and creation/deletion) of `path`; events carry `children`."""
        return self._subscribe(_Kind.CHILDREN, path, callback, initial)

    def watch_data(self, path: str, callback: WatchCallback, *, initial: bool = True) -> WatchHandle:
        """Data changes, creation and deletion of `path`; events carry `data` and `stat`."""
        return self._subscribe(_Kind.DATA, path, callback, initial)

    def watch_exists(self, path: str, callback: WatchCallback, *, initial: bool = True) -> WatchHandle:
        """Creation, deletion and data changes of `path`; events carry only `stat`."""
        return self._subscribe(_Kind.EXISTS, path, callback, initial)

    def add_session_listener(self, callback: SessionCallback) -> Callable[[], None]:
        """`callback(SessionEvent)` on the loop thread for every session state change; returns a remover."""
        with self._lock:
            self._session_callbacks.append(callback)

        def remove() -> None:
            with self._lock:
                if callback in self._session_callbacks:
                    self._session_callbacks.remove(callback)

        return remove

    def close(self) -> None:
        """Cancel every subscription and stop listening (the ZooKeeper client stays open)."""
        with self._lock:
            self._closed = True
            handles = list(self._handles)
            self._session_callbacks.clear()
        for handle in handles:
            handle.cancel()
        self.zk.remove_listener(self._on_session_state)

    def _subscribe(self, kind: _Kind, path: str, callback: WatchCallback, initial: bool) -> WatchHandle:
        handle = WatchHandle(self, kind, path, callback)
        with self._lock:
            if self._closed:
                raise RuntimeError("AsyncWatcher is closed")
            self._handles.add(handle)
        handle._arm(WatchEventType.INITIAL if initial else None)
        return handle

    def _forget(self, handle: WatchHandle) -> None:
        with self._lock:
            self._handles.discard(handle)
            self._rearm.discard(handle)

    def _needs_rearm(self, handle: WatchHandle) -> None:
        with self._lock:
            if handle in self._handles:
                self._rearm.add(handle)
        # The connection may already be back (the failure raced with the reconnect).
        if self.zk.connected:
            self._rearm_pending()

    def _rearm_pending(self) -> None:
        with self._lock:
            pending, self._rearm = list(self._rearm), set()
        for handle in pending:
            handle._arm(WatchEventType.RESYNC)

    def _deliver(self, handle: WatchHandle, event: ZkWatchEvent) -> None:
        try:
            self.loop.call_soon_threadsafe(handle._run_callback, event)
        except RuntimeError:  # loop closed: nobody is listening any more
            handle.cancelled = True

    # -- session states (kazoo connection thread: never block) ---------------------------------------------
    def _on_session_state(self, state: KazooState) -> None:
        if state == KazooState.CONNECTED:
            client_id = self.zk.client_id
            session_id = client_id[0] if client_id else None
            new_session = session_id != self._session_id
            self._session_id = session_id
            event = SessionEvent(SessionState.CONNECTED, session_id, new_session)
            if new_session:
                # Watches died with the old session: re-read everything.
                with self._lock:
                    self._rearm |= self._handles
            # Not from this thread (see the module docstring): on kazoo's callback thread.
            self.zk.handler.dispatch_callback(Callback("session", self._rearm_pending, ()))
        elif state == KazooState.SUSPENDED:
            event = SessionEvent(SessionState.SUSPENDED, self._session_id)
        else:
            expired = self.zk.client_state == KeeperState.EXPIRED_SESSION
            event = SessionEvent(SessionState.EXPIRED if expired else SessionState.LOST, self._session_id)
        with self._lock:
            callbacks = list(self._session_callbacks)
        for callback in callbacks:
            try:
                self.loop.call_soon_threadsafe(_run_session_callback, callback, event)
            except RuntimeError:
                return


def _run_session_callback(callback: SessionCallback, event: SessionEvent) -> None:
    try:
        callback(event)
    except Exception:
        log.exception("session listener failed on %s", event.state.value)


class ZkExecutor:
    """A dedicated thread for blocking ZooKeeper calls from asyncio code: `await ex.call(fn, *args)`.

    One thread on purpose: calls complete in submission order, and a slow ZooKeeper never eats the
    loop's default executor.
    """

    def __init__(self, name: str = "zk-calls") -> None:
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)
        self.observe_ms: Callable[[float], None] | None = None
        """Told how long each call took, waiting for the thread included (the broker's metrics)."""

    async def call(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        loop = asyncio.get_running_loop()
        observe = self.observe_ms
        if observe is None:
            return await loop.run_in_executor(self._executor, functools.partial(fn, *args, **kwargs))
        began = time.perf_counter()
        try:
            return await loop.run_in_executor(self._executor, functools.partial(fn, *args, **kwargs))
        finally:
            observe((time.perf_counter() - began) * 1000)

    def shutdown(self, wait: bool = True) -> None:
        self._executor.shutdown(wait=wait)
