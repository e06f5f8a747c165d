"""The base of `KafkaZkClient`'s parts: a ZooKeeper session that decodes znode by znode (a znode
whose data does not decode is reported to `bad_znodes` once and read as absent) and makes the
controller's fenced writes: every write of a controller is a multi that starts with
`check(/controller_epoch, epochZkVersion)`, so a controller that lost its election can no longer
change anything (`ControllerMovedError`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, TypeVar

from kazoo.exceptions import (
    ConnectionLoss,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    OperationTimeoutError,
    SessionExpiredError,
    ZookeeperError,
)
from kazoo.protocol.states import ZnodeStat

from zkafka.zk.bad_znodes import BadZNodes
from zkafka.zk.errors import (
    ControllerMovedError,
    ZkError,
)
from zkafka.zk.ops import CheckOp, CreateOp, DeleteOp, Op, SetDataOp, first_failure
from zkafka.zk.session import ZkSession, chunked
from zkafka.zk.znodes import (
    ControllerEpochZNode,
)

TRANSIENT = (ConnectionLoss, OperationTimeoutError)
FENCED_RETRY = (*TRANSIENT, SessionExpiredError)
"""What a fenced write waits out and sends again: the `/controller_epoch` check in the same multi
decides whether it may still apply (a controller whose session expired is refused by it once
another controller was elected, the answer it must act on)."""
DEFAULT_RESERVED_BROKER_MAX_ID = 1000
"""Kafka's `reserved.broker.max.id`: generated broker ids start above it."""
_DELETE_BATCH = 500
MULTI_MAX_BYTES = 512 * 1024
"""Bound of one batched multi's request. ZooKeeper refuses a packet above `jute.maxbuffer`
(1 MB by default on the server; Kafka's docs tell operators to raise it, zkafka's local server
has 4 MB): half the default leaves room for the response (a Stat per operation)."""
MULTI_MAX_OPS = 2000
"""Bound of the operations in one batched multi: a failure rolls back the whole multi, and its
operations are then retried one by one; this keeps that retry small."""
MULTI_OP_OVERHEAD = 48
"""Bytes of a multi operation besides its path and data (header, version, flags, ACL)."""
T = TypeVar("T")

NOT_LIVE = "the broker is treated as not live"
NO_STATE = "the partition has no leader until its state znode is rewritten (or deleted)"
TOPIC_SKIPPED = "the topic is left out until its znode is rewritten"
DEFAULTS_APPLY = "its entity's overrides are ignored (defaults apply)"
UNKNOWN_CONTROLLER = "treated as held by an unknown controller until it goes away"


def _controller_moved(epoch_zk_version: int) -> ControllerMovedError:
    return ControllerMovedError(
        f"controller epoch zkVersion {epoch_zk_version} is stale: another controller was elected"
    )


class ZkStore(ZkSession):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.bad_znodes = BadZNodes()
        super().__init__(*args, **kwargs)

    def _decoded(
        self,
        decode: Callable[[bytes, str, ZnodeStat], T],
        path: str,
        found: tuple[bytes, ZnodeStat] | None,
        instead: str,
    ) -> T | None:
        """`decode` the data read from `path`; None if it was absent or does not decode (reported)."""
        if found is None:
            return None
        try:
            value = decode(found[0], path, found[1])
        except (ZkError, ValueError, TypeError, KeyError, AttributeError) as e:
            # Decoders raise ZNodeDataError; anything else from them is a decoder gap, and still
            # only this one znode's problem.
            self.bad_znodes.report(e, path, found[0], found[1], instead)
            return None
        self.bad_znodes.cleared(path)
        return value

    # -- fenced writes ----------------------------------------------------------------------------------
    def fenced_multi(self, epoch_zk_version: int, ops: Sequence[Op]) -> list[Any]:
        """Run `ops` atomically, only if `/controller_epoch` still has `epoch_zk_version`.

        Returns the results of `ops` (without the check). Raises ControllerMovedError when the check fails,
        or the failing operation's kazoo exception. Re-sent once reconnected after a connection loss, so a
        lost response shows up as that operation's NodeExists/NoNode/BadVersion.
        """
        all_ops: list[Op] = [CheckOp(ControllerEpochZNode.path(), epoch_zk_version), *ops]
        while True:
            try:
                return self.multi(all_ops)[1:]
            except FENCED_RETRY:
                self.wait_connected()
            except ZookeeperError as e:
                if getattr(e, "op_index", None) == 0:
                    raise _controller_moved(epoch_zk_version) from e
                raise

    def _pipelined_fenced(
        self, epoch_zk_version: int, batches: Sequence[tuple[Any, Sequence[Op]]]
    ) -> dict[Any, list[Any] | Exception]:
        """Many independent fenced multis sent back to back (one round trip for all). Returns key -> results
        or the failing operation's error; raises ControllerMovedError if any fencing check failed."""
        check = CheckOp(ControllerEpochZNode.path(), epoch_zk_version)
        pending = []
        for key, ops in batches:
            pending.append((key, ops, self.send_multi([check, *ops])))
        out: dict[Any, list[Any] | Exception] = {}
        moved = False
        for key, ops, async_result in pending:
            try:
                results = list(async_result.get())
            except FENCED_RETRY:
                try:
                    out[key] = self.fenced_multi(epoch_zk_version, ops)
                except ControllerMovedError:
                    moved = True
                except ZookeeperError as e:
                    out[key] = e
                continue
            failure = first_failure(results)
            if failure is None:
                out[key] = results[1:]
            elif failure.index == 0:
                moved = True
            else:
                out[key] = failure.error
        if moved:
            raise _controller_moved(epoch_zk_version)
        return out

    def _send_chunked(
        self, items: Iterable[tuple[Any, Op]], prefix: Sequence[Op], max_bytes: int, max_ops: int
    ) -> tuple[dict[Any, Any], list[tuple[Any, Op]], bool]:
        """Send `items` as multis of at most `max_bytes` and `max_ops` each, every one led by
        `prefix` (a fencing check, or nothing), all back to back (one round trip for all).
        Returns (key -> the operation's result, for the multis applied; the items of the multis
        not applied or not answered; whether an operation of `prefix` failed).

        Each multi goes out as soon as its operations are made: given a generator, ZooKeeper
        applies the first multis while the later ones are encoded (33,000 elections after a
        broker's death: ~0.3 s of making znode paths and JSON that ZooKeeper used to wait for)."""
        skip = len(prefix)
        pending = [
            (chunk, self.send_multi([*prefix, *(op for _, op in chunk)]))
            for chunk in iter_multi_chunks(items, max_bytes, max_ops)
        ]
        done: dict[Any, Any] = {}
        left: list[tuple[Any, Op]] = []
        prefix_failed = False
        for chunk, async_result in pending:
            try:
                results = list(async_result.get())
            except FENCED_RETRY:
                left.extend(chunk)
                continue
            failure = first_failure(results)
            if failure is None:
                done.update((key, result) for (key, _), result in zip(chunk, results[skip:], strict=True))
            elif failure.index < skip:
                prefix_failed = True
            else:
                left.extend(chunk)
        return done, left, prefix_failed

    def _batched_fenced(
        self,
        epoch_zk_version: int,
        items: Iterable[tuple[Any, Op]],
        max_bytes: int = MULTI_MAX_BYTES,
        max_ops: int = MULTI_MAX_OPS,
    ) -> dict[Any, Any | Exception]:
        """Many independent single-operation writes, as few fenced multis as fit in `max_bytes`
        and `max_ops` each, all sent back to back (one round trip for all). Returns key -> the
        operation's result or its error; raises ControllerMovedError if a fencing check failed.

        Each operation keeps its own condition (a setData's version, a create's absence). Since a
        multi is atomic, one failing operation rolls back its whole chunk: such a chunk is sent
        again one operation per multi (`_pipelined_fenced`), so every key gets its own outcome."""
        check = CheckOp(ControllerEpochZNode.path(), epoch_zk_version)
        out, retry, moved = self._send_chunked(items, [check], max_bytes, max_ops)
        if moved:
            raise _controller_moved(epoch_zk_version)
        if retry:
            one_by_one = self._pipelined_fenced(epoch_zk_version, [(key, [op]) for key, op in retry])
            for key, result in one_by_one.items():
                out[key] = result if isinstance(result, Exception) else result[0]
        return out

    def batched_multis(
        self,
        items: Iterable[tuple[Any, Op]],
        max_bytes: int = MULTI_MAX_BYTES,
        max_ops: int = MULTI_MAX_OPS,
    ) -> tuple[dict[Any, Any], list[Any]]:
        """Many independent single-operation writes that need no fencing (each carries its own
        condition), as few multis as fit in `max_bytes` and `max_ops` each, all sent back to back:
        ZooKeeper commits a multi as one transaction, so thousands of writes cost a few requests
        rather than one each (client and server). Returns (key -> the operation's result for the
        multis that were applied, the keys of the others). A multi is atomic: one failing
        operation, or a lost answer, leaves its whole chunk to the caller, who sends those again
        one by one to learn each outcome (a lost answer may hide an applied multi: the caller's
        single writes must recognise their own)."""
        done, left, _ = self._send_chunked(items, (), max_bytes, max_ops)
        return done, [key for key, _ in left]

    def fenced_delete_recursive(self, path: str, epoch_zk_version: int) -> bool:
        """Delete `path` and its subtree, every batch fenced. False if it did not exist."""
        deleted_any = False
        for _ in range(20):
            nodes = self.list_recursive(path)
            if not nodes:
                return deleted_any
            try:
                for batch in chunked(nodes, _DELETE_BATCH):
                    self.fenced_multi(epoch_zk_version, [DeleteOp(p) for p in batch])
                return True
            except (NoNodeError, NotEmptyError):
                deleted_any = True  # the tree changed under us: list it again
        raise ZkError(f"{path} keeps changing while being deleted")

    def _fenced_delete_if_exists(self, path: str, epoch_zk_version: int | None) -> bool:
        try:
            if epoch_zk_version is None:
                return self.delete(path)
            self.fenced_multi(epoch_zk_version, [DeleteOp(path)])
            return True
        except NoNodeError:
            return False

    def _set_or_create(self, path: str, data: bytes, epoch_zk_version: int | None) -> None:
        if epoch_zk_version is None:
            self.set_or_create(path, data)
            return
        while True:
            try:
                self.fenced_multi(epoch_zk_version, [SetDataOp(path, data)])
                return
            except NoNodeError:
                pass
            try:
                self.fenced_multi(epoch_zk_version, [CreateOp(path, data)])
                return
            except NodeExistsError:
                continue


def _op_size(op: Op) -> int:
    data = getattr(op, "data", b"")
    return MULTI_OP_OVERHEAD + len(op.path.encode()) + len(data)


def iter_multi_chunks(
    items: Iterable[tuple[Any, Op]], max_bytes: int, max_ops: int
) -> Iterator[list[tuple[Any, Op]]]:
    """`items` cut, in order, into runs of at most `max_ops` whose operations fit in `max_bytes`
    (one operation larger than that goes alone: ZooKeeper is the judge of it). Each run is
    yielded as soon as it is complete, so a caller handing in a generator can send the first
    multi while the later operations are still being made."""
    current: list[tuple[Any, Op]] = []
    size = 0
    for item in items:
        n = _op_size(item[1])
        if current and (size + n > max_bytes or len(current) >= max_ops):
            yield current
            current, size = [], 0
        current.append(item)
        size += n
    if current:
        yield current


def multi_chunks(items: Iterable[tuple[Any, Op]], max_bytes: int, max_ops: int) -> list[list[tuple[Any, Op]]]:
    """`iter_multi_chunks`, all at once."""
    return list(iter_multi_chunks(items, max_bytes, max_ops))
