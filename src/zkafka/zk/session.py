"""One ZooKeeper session (kazoo) with Kafka's connection behaviour and a few generic primitives.

Connecting: when the connect string has a chroot and `create_chroot` is set, a short-lived session
without the chroot creates it first (what a Kafka broker does), then the real session is opened with the
chroot, so every path below is relative to it.

Retries: reads and idempotent writes are retried through connection loss (kazoo's `retry`, bounded by
the connection timeout); kazoo re-sends nothing by itself. Non-idempotent writes whose response may be
lost are handled by the callers that know how to recognise their own earlier write (broker
registration, controller election, producer-id blocks, partition-state updates).

Threading: kazoo's client is thread-safe and so is this class (it keeps no mutable state besides
the set of session ids it has owned). Every method BLOCKS on a ZooKeeper round trip: never call them on
an asyncio loop thread, use `watch_bridge.ZkExecutor`.

Security (`zookeeper.set.acl`): with `auth` the session authenticates with a digest user, and with
`secure_acls` every znode it creates (parents included) carries the ACLs `znode_acls.default_acls`
gives its path: creator-all plus world-read, creator-only below the sensitive roots.

jute.maxbuffer: ZooKeeper 3.6+ servers default to 1 MB per packet; Kafka raises its client limit to
4 MB because large topic or ACL znodes can exceed 1 MB. kazoo has no client-side limit; the server
started by `zkafka.local.zookeeper` is configured with 4 MB, production ensembles need the same setting.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Self, TypeVar

from kazoo.client import KazooClient
from kazoo.exceptions import (
    ConnectionLoss,
    NodeExistsError,
    NoNodeError,
    OperationTimeoutError,
    SessionExpiredError,
    UnimplementedError,
)
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.connection import ConnectionHandler
from kazoo.protocol.states import KazooState, ZnodeStat
from kazoo.retry import RetryFailedError
from kazoo.security import ACL

from zkafka.zk.connect import ConnectString, parse_connect_string
from zkafka.zk.errors import ZkConnectionError
from zkafka.zk.model import ANY_VERSION
from zkafka.zk.multi_read import MultiGetData, server_supports
from zkafka.zk.multi_write import encode_multi
from zkafka.zk.ops import Op, first_failure
from zkafka.zk.poll_handler import PollHandler
from zkafka.zk.znode_acls import DigestCredentials, default_acls

__all__ = ["DEFAULT_SESSION_TIMEOUT_MS", "ZkSession"]

log = logging.getLogger(__name__)

DEFAULT_SESSION_TIMEOUT_MS = 18000
"""Kafka's `zookeeper.session.timeout.ms` default (2.5+)."""

T = TypeVar("T")

MULTI_READ_MIN = 16
"""Fewer reads than this go pipelined (no version check needed for a handful)."""
MULTI_READ_PATHS = 1000
"""Paths per multiRead: ~150 KB of partition states per answer, far below `jute.maxbuffer`."""


def _create_missing(
    call: Callable[..., Any], zk: KazooClient, path: str, acls: Callable[[str], list[ACL]]
) -> None:
    """Create every missing znode of `path` (parents first) as an empty persistent znode with
    `acls(its path)`; kazoo's ensure_path would give the parents the leaf's ACLs."""
    parts = [p for p in path.split("/") if p]
    for i in range(1, len(parts) + 1):
        current = "/" + "/".join(parts[:i])
        if call(zk.exists, current) is None:
            try:
                call(zk.create, current, b"", acl=acls(current))
            except NodeExistsError:
                pass


def _fast_reconnect_retry() -> dict[str, Any]:
    # kazoo's default reconnect backoff grows to an hour; Kafka's client reconnects within ~1 s.
    return {"max_tries": -1, "delay": 0.1, "backoff": 2, "max_delay": 1.0}


def handshake_timeout_s(session_timeout_ms: int) -> float:
    """How long one connection attempt waits for the server's answer to its ConnectRequest.

    kazoo (like ZooKeeper's Java client) waits the whole session timeout. That loses the session when a
    restarting server accepts a connection and never answers it: ZooKeeper 3.8 binds its port before it
    has a database, and closing a connection in that window fails with a NullPointerException that
    leaves the socket open. The server restarts every session's expiry when it comes up, moments after
    the stuck connection was made, so a client that waits a whole session timeout before trying again
    comes back just too late. A third of the timeout leaves room for two more attempts."""
    return session_timeout_ms / 3000


class _HandshakeBoundedConnection(ConnectionHandler):
    """kazoo's connection handler with a bounded handshake (`_invoke` serves only the ConnectRequest and
    the auth packets of a new connection)."""

    handshake_timeout_s: float = 10.0

    def _invoke(self, timeout: float, request: Any, xid: int | None = None) -> Any:
        return super()._invoke(min(timeout, self.handshake_timeout_s), request, xid)


def _bound_handshake(zk: KazooClient, session_timeout_ms: int) -> KazooClient:
    connection = zk._connection
    connection.__class__ = _HandshakeBoundedConnection  # same state, one method changed
    connection.handshake_timeout_s = handshake_timeout_s(session_timeout_ms)
    return zk


class ZkSession:
    def __init__(
        self,
        connect: str,
        *,
        session_timeout_ms: int = DEFAULT_SESSION_TIMEOUT_MS,
        connection_timeout_ms: int | None = None,
        create_chroot: bool = True,
        auth: DigestCredentials | None = None,
        secure_acls: bool = False,
    ) -> None:
        self.connect_string: ConnectString = parse_connect_string(connect)
        if secure_acls and auth is None:
            # ZooKeeper refuses creator ACLs from an unauthenticated session; Kafka refuses to start too.
            raise ValueError(
                "zookeeper.set.acl is true but the ZooKeeper session has no credentials "
                "(a JAAS Client section with DigestLoginModule username and password)"
            )
        self.auth = auth
        self.secure_acls = secure_acls
        if session_timeout_ms <= 0:
            raise ValueError(f"session_timeout_ms must be positive, got {session_timeout_ms}")
        self.session_timeout_ms = session_timeout_ms
        # Kafka's zookeeper.connection.timeout.ms defaults to the session timeout.
        self.connection_timeout_ms = connection_timeout_ms or session_timeout_ms
        self._own_sessions: set[int] = set()
        self._sessions_lock = threading.Lock()
        self._multi_read: bool | None = None
        """Whether the server connected to takes multiRead; None: not asked since (re)connecting."""
        if self.connect_string.chroot and create_chroot:
            self._create_chroot()
        self._zk = self._new_kazoo(str(self.connect_string))
        self._zk.add_listener(self._remember_session)
        self._start(self._zk)
        self._remember_session(KazooState.CONNECTED)

    # -- connection --------------------------------------------------------------------------------------
    def _new_kazoo(self, hosts: str) -> KazooClient:
        timeout_s = self.connection_timeout_ms / 1000
        zk = KazooClient(
            hosts=hosts,
            handler=PollHandler(),
            auth_data=self.auth.auth_data() if self.auth is not None else None,
            timeout=self.session_timeout_ms / 1000,
            connection_retry=_fast_reconnect_retry(),
            command_retry={**_fast_reconnect_retry(), "deadline": timeout_s},
        )
        return _bound_handshake(zk, self.session_timeout_ms)

    def _start(self, zk: KazooClient) -> None:
        timeout_s = self.connection_timeout_ms / 1000
        try:
            zk.start(timeout=timeout_s)
        except KazooTimeoutError:
            zk.stop()
            zk.close()
            raise ZkConnectionError(
                f"could not connect to ZooKeeper at {self.connect_string.hosts} within {timeout_s:g} s"
            ) from None

    def _create_chroot(self) -> None:
        chroot = self.connect_string.chroot
        assert chroot is not None
        bootstrap = self._new_kazoo(self.connect_string.hosts)
        self._start(bootstrap)
        try:
            # The chroot (and any parent of it) gets a cluster path's ACLs (creator-all + world-read).
            _create_missing(bootstrap.retry, bootstrap, chroot, lambda _: default_acls("/", self.secure_acls))
        finally:
            bootstrap.stop()
            bootstrap.close()

    def _remember_session(self, state: KazooState) -> None:
        # Called on kazoo's event thread: must not block.
        self._multi_read = None  # the next connection may be to another server (another version)
        if state == KazooState.CONNECTED:
            client_id = self._zk.client_id
            if client_id is not None:
                with self._sessions_lock:
                    self._own_sessions.add(client_id[0])

    @property
    def kazoo(self) -> KazooClient:
        """The underlying kazoo client (for watches and tools)."""
        return self._zk

    @property
    def session_id(self) -> int | None:
        client_id = self._zk.client_id
        return client_id[0] if client_id else None

    def is_own_session(self, session_id: int) -> bool:
        """True if `session_id` is (or was) a session of this client: an ephemeral znode it owns was
        created by us, possibly on a session that just expired."""
        with self._sessions_lock:
            return session_id in self._own_sessions

    @property
    def connected(self) -> bool:
        return bool(self._zk.connected)

    def close(self) -> None:
        """End the session (its ephemeral znodes go away at once) and release the client."""
        try:
            self._zk.stop()
        finally:
            self._zk.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- primitives ------------------------------------------------------------------------------------
    def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run a kazoo call, retrying through connection loss until the connection timeout."""
        try:
            return self._zk.retry(fn, *args, **kwargs)
        except RetryFailedError as e:
            raise ZkConnectionError(
                f"ZooKeeper at {self.connect_string.hosts} unavailable for {self.connection_timeout_ms} ms"
            ) from e

    def get_data(self, path: str) -> tuple[bytes, ZnodeStat] | None:
        """(data, stat), or None if the znode does not exist. Null data reads as b""."""
        try:
            data, stat = self.call(self._zk.get, path)
        except NoNodeError:
            return None
        return (data or b""), stat

    def get_data_many(self, paths: Sequence[str]) -> dict[str, tuple[bytes, ZnodeStat] | None]:
        """Many reads in few round trips: multiRead requests of `MULTI_READ_PATHS` paths where the
        server takes them (ZooKeeper 3.6+), else one pipelined getData per path; all requests are
        sent before the first answer is awaited."""
        if len(paths) >= MULTI_READ_MIN and self._multi_read_supported():
            try:
                return self._get_data_multi_read(paths)
            except UnimplementedError:
                self._multi_read = False
        return self._get_data_pipelined(paths)

    def _multi_read_supported(self) -> bool:
        supported = self._multi_read
        if supported is None:
            supported = self._multi_read = server_supports(self._zk)
        return supported

    def _get_data_multi_read(self, paths: Sequence[str]) -> dict[str, tuple[bytes, ZnodeStat] | None]:
        chroot = self._zk.chroot or ""
        pending = []
        for i in range(0, len(paths), MULTI_READ_PATHS):
            chunk = paths[i : i + MULTI_READ_PATHS]
            result = self._zk.handler.async_result()
            self._zk._call(MultiGetData([chroot + p for p in chunk]), result)
            pending.append((chunk, result))
        out: dict[str, tuple[bytes, ZnodeStat] | None] = {}
        for chunk, result in pending:
            try:
                values = result.get()
            except UnimplementedError:
                raise
            except Exception as e:
                if not _is_retryable(e):
                    raise
                out.update(self._get_data_pipelined(chunk))  # connection blip: retried reads
                continue
            for path, value in zip(chunk, values, strict=True):
                if isinstance(value, Exception):
                    raise value
                out[path] = value
        return out

    def _get_data_pipelined(self, paths: Sequence[str]) -> dict[str, tuple[bytes, ZnodeStat] | None]:
        pending = [(p, self._zk.get_async(p)) for p in paths]
        out: dict[str, tuple[bytes, ZnodeStat] | None] = {}
        for path, result in pending:
            try:
                data, stat = result.get()
            except NoNodeError:
                out[path] = None
                continue
            except Exception as e:
                if not _is_retryable(e):
                    raise
                out[path] = self.get_data(path)  # connection blip: fall back to a retried read
                continue
            out[path] = (data or b""), stat
        return out

    def stat_many(self, paths: Sequence[str]) -> dict[str, ZnodeStat | None]:
        """Pipelined exists() for many paths."""
        pending = [(p, self._zk.exists_async(p)) for p in paths]
        out: dict[str, ZnodeStat | None] = {}
        for path, result in pending:
            try:
                out[path] = result.get()
            except Exception as e:
                if not _is_retryable(e):
                    raise
                out[path] = self.exists(path)
        return out

    def wait_connected(self) -> None:
        """Block until the session is usable again (bounded by the connection timeout)."""
        self.call(self._zk.exists, "/")

    def get_children(self, path: str) -> list[str] | None:
        """Child names in ZooKeeper's order, or None if the znode does not exist."""
        try:
            return list(self.call(self._zk.get_children, path))
        except NoNodeError:
            return None

    def get_children_with_stat(self, path: str) -> tuple[list[str], ZnodeStat] | None:
        try:
            children, stat = self.call(self._zk.get_children, path, include_data=True)
        except NoNodeError:
            return None
        return list(children), stat

    def exists(self, path: str) -> ZnodeStat | None:
        return self.call(self._zk.exists, path)

    def acls(self, path: str) -> list[ACL]:
        """The ACLs a znode this session creates at `path` gets (`znode_acls.default_acls`)."""
        return default_acls(path, self.secure_acls)

    def ensure_path(self, path: str) -> None:
        """Create `path` and its parents as empty persistent znodes where missing, each with its
        own path's ACLs."""
        if self.call(self._zk.exists, path) is None:
            _create_missing(self.call, self._zk, path, self.acls)

    def create(
        self,
        path: str,
        data: bytes = b"",
        *,
        ephemeral: bool = False,
        sequential: bool = False,
        makepath: bool = False,
    ) -> str:
        """Create a znode; returns its actual path (with the sequence suffix). Raises NodeExistsError."""
        acl = self.acls(path)
        try:
            return self.call(self._zk.create, path, data, acl=acl, ephemeral=ephemeral, sequence=sequential)
        except NoNodeError:
            parent = path.rsplit("/", 1)[0]
            if not makepath or not parent:
                raise
        # The parents first, each with its own path's ACLs (kazoo's makepath would give them ours).
        self.ensure_path(parent)
        return self.call(self._zk.create, path, data, acl=acl, ephemeral=ephemeral, sequence=sequential)

    def create_if_absent(self, path: str, data: bytes = b"") -> bool:
        """Create a persistent znode (and parents); False if it already existed."""
        try:
            self.create(path, data, makepath=True)
        except NodeExistsError:
            return False
        return True

    def set_data(self, path: str, data: bytes, version: int = ANY_VERSION) -> ZnodeStat:
        """setData; raises NoNodeError / BadVersionError."""
        return self.call(self._zk.set, path, data, version)

    def set_or_create(self, path: str, data: bytes) -> int:
        """Unconditional setData, creating the znode (and parents) when missing; returns the new zkVersion."""
        while True:
            try:
                return self.set_data(path, data).version
            except NoNodeError:
                pass
            try:
                self.create(path, data, makepath=True)
                return 0
            except NodeExistsError:
                continue  # created concurrently: set it

    def create_many(self, items: Sequence[tuple[str, bytes]]) -> dict[str, str | Exception]:
        """Many independent persistent creates, pipelined: every request is sent before the first
        answer is awaited (one round trip for all, where `create` costs one each). Returns path ->
        the created path, or that create's error (NodeExistsError...). A create whose parent is
        missing, or whose answer was lost to a connection blip, is made again alone through
        `create` (parents made, retried): like a retried `create`, it may then find its own
        earlier znode and answer NodeExistsError."""
        pending = [
            (path, data, self._zk.create_async(path, data, acl=self.acls(path))) for path, data in items
        ]
        out: dict[str, str | Exception] = {}
        for path, data, result in pending:
            try:
                out[path] = result.get()
                continue
            except Exception as e:
                if not isinstance(e, NoNodeError) and not _is_retryable(e):
                    out[path] = e
                    continue
            try:
                out[path] = self.create(path, data, makepath=True)
            except Exception as e:
                out[path] = e
        return out

    def set_or_create_many(self, items: Sequence[tuple[str, bytes]]) -> dict[str, int | Exception]:
        """`set_or_create` for many znodes, pipelined: all the setData first, then the creates of
        the missing ones. Returns path -> the new zkVersion, or the error of that write."""
        pending = [(path, data, self._zk.set_async(path, data)) for path, data in items]
        out: dict[str, int | Exception] = {}
        missing: dict[str, bytes] = {}
        for path, data, result in pending:
            try:
                out[path] = result.get().version
            except NoNodeError:
                missing[path] = data
            except Exception as e:
                out[path] = self._set_or_create_alone(path, data) if _is_retryable(e) else e
        for path, created in self.create_many(list(missing.items())).items():
            if isinstance(created, NodeExistsError):  # created meanwhile: set it, as set_or_create does
                out[path] = self._set_or_create_alone(path, missing[path])
            else:
                out[path] = created if isinstance(created, Exception) else 0
        return out

    def _set_or_create_alone(self, path: str, data: bytes) -> int | Exception:
        try:
            return self.set_or_create(path, data)
        except Exception as e:
            return e

    def delete(self, path: str, version: int = ANY_VERSION, *, recursive: bool = False) -> bool:
        """Delete (recursively if asked); False if it did not exist."""
        try:
            self.call(self._zk.delete, path, version, recursive)
        except NoNodeError:
            return False
        return True

    def multi(self, ops: Sequence[Op]) -> list[Any]:
        """One atomic ZooKeeper multi; raises the failing operation's kazoo exception (with
        `op_index` set on it) if any operation fails. Not retried: callers know how to recover."""
        results = list(self.send_multi(ops).get())
        failure = first_failure(results)
        if failure is not None:
            failure.error.op_index = failure.index  # type: ignore[attr-defined]
            raise failure.error
        return results

    def send_multi(self, ops: Sequence[Op]) -> Any:
        """Send `ops` as one multi, without waiting: kazoo's async result, whose value is the
        per-operation results (what its `TransactionRequest.commit_async` gives). Encoded here
        (`zk.multi_write`: the same bytes, a fraction of kazoo's CPU per operation); a created
        znode gets its path's ACLs (`acls`)."""
        result = self._zk.handler.async_result()
        self._zk._call(encode_multi(self._zk.chroot or "", ops, self.acls), result)
        return result

    def list_recursive(self, path: str) -> list[str]:
        """`path` and all its descendants, children before parents (deletion order)."""
        children = self.get_children(path)
        if children is None:
            return []
        out: list[str] = []
        for child in sorted(children):
            out.extend(self.list_recursive(f"{path.rstrip('/')}/{child}"))
        out.append(path)
        return out


ZK_UNAVAILABLE: tuple[type[Exception], ...] = (
    ZkConnectionError,
    ConnectionLoss,
    OperationTimeoutError,
    SessionExpiredError,
)
"""What a call raises while ZooKeeper cannot be reached: callers outside `zkafka.zk` catch these to wait
for ZooKeeper quietly instead of importing kazoo."""


def _is_retryable(e: BaseException) -> bool:
    return isinstance(e, ConnectionLoss | OperationTimeoutError | SessionExpiredError)


def chunked(items: Iterable[T], size: int) -> Iterable[list[T]]:
    batch: list[T] = []
    for item in items:
        batch.append(item)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch
