"""Consumer groups from the client side, through the brokers' group coordinator.

`GroupConsumer` is zkafka's consumer as a group member (join, sync, heartbeat, commit; see its
docstring). `GroupAdmin` lists, describes and deletes groups and reads and writes their committed offsets
(what `zkafka consumer-groups --bootstrap-server` uses):

    async with GroupAdmin("127.0.0.1:9092") as admin:
        print(await admin.list_groups())
        print(await admin.committed_offsets("my-group"))

Every group request goes to the group's coordinator, found with FindCoordinator and cached. The
retriable coordinator errors (COORDINATOR_NOT_AVAILABLE while `__consumer_offsets` is being
created, COORDINATOR_LOAD_IN_PROGRESS while a new coordinator loads, NOT_COORDINATOR after a
move) are retried with backoff until `request_timeout_ms`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Self, TypeVar

from zkafka.client.cluster import Cluster
from zkafka.client.connection import ConnectionError_
from zkafka.client.errors import BrokerUnavailableError
from zkafka.client.security import ClientSecurity
from zkafka.client.types import TopicPartition
from zkafka.protocol import ErrorCode, KafkaError
from zkafka.protocol.groups.consumer_protocol import (
    PROTOCOL_TYPE,
    Assignment,
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from zkafka.protocol.groups.formats import CorruptCoordinatorRecordError
from zkafka.protocol.messages import (
    DeleteGroupsRequest,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    ListGroupsRequest,
    ListGroupsResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetDeleteRequest,
    OffsetDeleteResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)

T = TypeVar("T")
log = logging.getLogger(__name__)

COORDINATOR_ERRORS = frozenset(
    {ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.NOT_COORDINATOR}
)
# errors after which a member must join again (with a new member id for UNKNOWN_MEMBER_ID)
_REJOIN_ERRORS = frozenset(
    {ErrorCode.REBALANCE_IN_PROGRESS, ErrorCode.ILLEGAL_GENERATION, ErrorCode.UNKNOWN_MEMBER_ID}
)
# the newest non-flexible versions (zkafka's wire codec serves those)
_MAX = {
    FindCoordinatorRequest: 2,
    OffsetFetchRequest: 5,
    OffsetCommitRequest: 7,
    DescribeGroupsRequest: 4,
    ListGroupsRequest: 2,
    DeleteGroupsRequest: 1,
    OffsetDeleteRequest: 0,
}


class _Retry(Exception):
    """A coordinator error: find the coordinator again and retry."""

    def __init__(self, code: ErrorCode) -> None:
        super().__init__(code.name)
        self.code = code


@dataclass(frozen=True, slots=True)
class MemberDescription:
    member_id: str
    client_id: str
    host: str
    assignment: Mapping[str, tuple[int, ...]]
    """topic -> partitions, decoded when the group uses the consumer protocol."""
    group_instance_id: str | None = None


@dataclass(frozen=True, slots=True)
class GroupDescription:
    group_id: str
    state: str
    protocol_type: str
    protocol: str
    members: tuple[MemberDescription, ...]
    coordinator: int


class GroupAdmin:
    def __init__(
        self,
        bootstrap_servers: str | list[str] | None = None,
        *,
        zookeeper_connect: str | None = None,
        client_id: str = "zkafka-groups",
        request_timeout_ms: int = 30_000,
        retry_backoff_ms: int = 100,
        security: ClientSecurity | None = None,
    ) -> None:
        self.cluster = Cluster(
            bootstrap_servers,
            zookeeper_connect=zookeeper_connect,
            client_id=client_id,
            request_timeout_ms=request_timeout_ms,
            retry_backoff_ms=retry_backoff_ms,
            security=security,
        )
        self._coordinators: dict[str, int] = {}

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        await self.cluster.close()

    # -- coordinator lookup -----------------------------------------------------------------------
    async def coordinator(self, group: str, *, refresh: bool = False) -> int:
        """The broker id coordinating `group` (FindCoordinator, retried while not available)."""
        if not refresh and group in self._coordinators:
            return self._coordinators[group]

        async def find() -> int:
            resp = await self.cluster.send_any(
                FindCoordinatorRequest(key=group, key_type=0), max_version=_MAX[FindCoordinatorRequest]
            )
            assert isinstance(resp, FindCoordinatorResponse)
            _check(resp.error_code, f"FindCoordinator for group {group!r}", resp.error_message)
            if resp.node_id not in self.cluster.metadata.brokers:
                await self.cluster.refresh()
            return int(resp.node_id)

        node = await self._retrying(find)
        self._coordinators[group] = node
        return node

    async def _retrying(self, attempt: Callable[[], Awaitable[T]]) -> T:
        deadline = time.monotonic() + self.cluster.request_timeout
        while True:
            try:
                return await attempt()
            except (_Retry, ConnectionError_, BrokerUnavailableError) as e:
                if time.monotonic() >= deadline:
                    if isinstance(e, _Retry):
                        raise KafkaError(
                            e.code, f"the group coordinator stayed unavailable: {e.code.message}"
                        ) from None
                    raise
                await asyncio.sleep(self.cluster.retry_backoff)

    async def _to_coordinator(self, group: str, build: Callable[[int], Awaitable[T]]) -> T:
        """Run `build(coordinator id)`; on a coordinator error look the coordinator up again."""

        async def attempt() -> T:
            node = await self.coordinator(group)
            try:
                return await build(node)
            except (_Retry, ConnectionError_):
                self._coordinators.pop(group, None)
                raise

        return await self._retrying(attempt)

    # -- groups -------------------------------------------------------------------------------------
    async def list_groups(self) -> list[tuple[str, str]]:
        """(group id, protocol type) of every group, from every broker's ListGroups."""
        await self.cluster.refresh()
        out: dict[str, str] = {}
        for node in sorted(self.cluster.metadata.brokers):

            async def ask(node: int = node) -> ListGroupsResponse:
                resp = await self.cluster.send(node, ListGroupsRequest(), max_version=_MAX[ListGroupsRequest])
                assert isinstance(resp, ListGroupsResponse)
                _check(resp.error_code, f"ListGroups on broker {node}")
                return resp

            resp = await self._retrying(ask)
            out.update((g.group_id, g.protocol_type) for g in resp.groups)
        return sorted(out.items())

    async def describe_group(self, group: str) -> GroupDescription:
        async def describe(node: int) -> GroupDescription:
            resp = await self.cluster.send(
                node, DescribeGroupsRequest(groups=[group]), max_version=_MAX[DescribeGroupsRequest]
            )
            assert isinstance(resp, DescribeGroupsResponse)
            [g] = resp.groups
            _check(g.error_code, f"DescribeGroups {group!r}")
            return GroupDescription(
                g.group_id,
                g.group_state,
                g.protocol_type,
                g.protocol_data,
                tuple(_member(m, g.protocol_type) for m in g.members),
                node,
            )

        return await self._to_coordinator(group, describe)

    async def delete_group(self, group: str) -> None:
        async def delete(node: int) -> None:
            resp = await self.cluster.send(
                node, DeleteGroupsRequest(groups_names=[group]), max_version=_MAX[DeleteGroupsRequest]
            )
            [r] = resp.results  # type: ignore[attr-defined]
            _check(r.error_code, f"DeleteGroups {group!r}")

        await self._to_coordinator(group, delete)

    async def delete_offsets(
        self, group: str, partitions: Iterable[TopicPartition]
    ) -> dict[TopicPartition, KafkaError | None]:
        """OffsetDelete (KIP-496): per partition None when its committed offset is gone, else the
        error (GROUP_SUBSCRIBED_TO_TOPIC while a member consumes the topic)."""
        wanted = sorted(set(partitions))
        by_topic: dict[str, list[int]] = {}
        for tp in wanted:
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        Req = OffsetDeleteRequest
        request = Req(
            group_id=group,
            topics=[
                Req.OffsetDeleteRequestTopic(
                    name=t, partitions=[Req.OffsetDeleteRequestPartition(partition_index=p) for p in ps]
                )
                for t, ps in by_topic.items()
            ],
        )

        async def delete(node: int) -> dict[TopicPartition, KafkaError | None]:
            resp = await self.cluster.send(node, request, max_version=_MAX[OffsetDeleteRequest])
            assert isinstance(resp, OffsetDeleteResponse)
            _check(resp.error_code, f"OffsetDelete {group!r}")
            return {
                TopicPartition(t.name, p.partition_index): (
                    None if p.error_code == ErrorCode.NONE else KafkaError(p.error_code)
                )
                for t in resp.topics
                for p in t.partitions
            }

        return await self._to_coordinator(group, delete)

    # -- offsets ------------------------------------------------------------------------------------
    async def committed_offsets(
        self, group: str, partitions: Iterable[TopicPartition] | None = None
    ) -> dict[TopicPartition, int]:
        """Committed offsets of `group` (all of them when `partitions` is None); partitions
        without a commit are left out."""
        wanted = None if partitions is None else sorted(set(partitions))

        async def fetch(node: int) -> dict[TopicPartition, int]:
            topics = None
            if wanted is not None:
                by_topic: dict[str, list[int]] = {}
                for tp in wanted:
                    by_topic.setdefault(tp.topic, []).append(tp.partition)
                topics = [
                    OffsetFetchRequest.OffsetFetchRequestTopic(name=t, partition_indexes=ps)
                    for t, ps in by_topic.items()
                ]
            resp = await self.cluster.send(
                node, OffsetFetchRequest(group_id=group, topics=topics), max_version=_MAX[OffsetFetchRequest]
            )
            assert isinstance(resp, OffsetFetchResponse)
            _check(resp.error_code, f"OffsetFetch {group!r}")
            out = {}
            for t in resp.topics:
                for p in t.partitions:
                    _check(p.error_code, f"OffsetFetch {group!r} {t.name}-{p.partition_index}")
                    if p.committed_offset >= 0:
                        out[TopicPartition(t.name, p.partition_index)] = int(p.committed_offset)
            return out

        return await self._to_coordinator(group, fetch)

    async def commit_offsets(self, group: str, offsets: Mapping[TopicPartition, int]) -> None:
        """Commit as an admin (generation -1, no member): the coordinator accepts this only while
        the group has no members, as with Kafka's `--reset-offsets`."""
        by_topic: dict[str, list[OffsetCommitRequest.OffsetCommitRequestPartition]] = {}
        for tp, offset in sorted(offsets.items()):
            if offset < 0:
                raise ValueError(f"{tp}: offsets are >= 0, got {offset}")
            by_topic.setdefault(tp.topic, []).append(
                OffsetCommitRequest.OffsetCommitRequestPartition(
                    partition_index=tp.partition, committed_offset=offset, committed_metadata=""
                )
            )
        request = OffsetCommitRequest(
            group_id=group,
            generation_id_or_member_epoch=-1,
            member_id="",
            topics=[
                OffsetCommitRequest.OffsetCommitRequestTopic(name=t, partitions=ps)
                for t, ps in by_topic.items()
            ],
        )

        async def commit(node: int) -> None:
            resp = await self.cluster.send(node, request, max_version=_MAX[OffsetCommitRequest])
            assert isinstance(resp, OffsetCommitResponse)
            for t in resp.topics:
                for p in t.partitions:
                    _check(p.error_code, f"OffsetCommit {group!r} {t.name}-{p.partition_index}")

        await self._to_coordinator(group, commit)


def _check(code: int, what: str, message: str | None = None) -> None:
    if code == ErrorCode.NONE:
        return
    error = ErrorCode.lookup(code)
    if error in COORDINATOR_ERRORS:
        raise _Retry(error)
    raise KafkaError(error, f"{what}: {message or error.message}")


def _member(m: DescribeGroupsResponse.DescribedGroupMember, protocol_type: str) -> MemberDescription:
    assignment: Mapping[str, tuple[int, ...]] = {}
    if protocol_type == PROTOCOL_TYPE and m.member_assignment:
        try:
            assignment = decode_assignment(bytes(m.member_assignment)).partitions
        except CorruptCoordinatorRecordError:
            assignment = {}
    return MemberDescription(m.member_id, m.client_id, m.client_host, assignment, m.group_instance_id)


# -- assignors (run by the group leader) ---------------------------------------------------------------


def range_assign(
    subscriptions: Mapping[str, Sequence[str]], partitions: Mapping[str, int]
) -> dict[str, dict[str, list[int]]]:
    """Java's RangeAssignor: per topic, its subscribers sorted by member id share the partitions
    in contiguous blocks, the first `count % members` getting one more."""
    out: dict[str, dict[str, list[int]]] = {m: {} for m in subscriptions}
    for topic in sorted({t for ts in subscriptions.values() for t in ts}):
        members = sorted(m for m, ts in subscriptions.items() if topic in ts)
        n, r = divmod(partitions.get(topic, 0), len(members))
        for i, m in enumerate(members):
            start = n * i + min(i, r)
            count = n + (1 if i < r else 0)
            if count:
                out[m][topic] = list(range(start, start + count))
    return out


def roundrobin_assign(
    subscriptions: Mapping[str, Sequence[str]], partitions: Mapping[str, int]
) -> dict[str, dict[str, list[int]]]:
    """Java's RoundRobinAssignor: every partition, by topic then number, dealt to the members in
    member-id order, skipping members not subscribed to its topic."""
    out: dict[str, dict[str, list[int]]] = {m: {} for m in subscriptions}
    members = sorted(subscriptions)
    if not members:
        return out
    i = 0
    for topic in sorted({t for ts in subscriptions.values() for t in ts}):
        for p in range(partitions.get(topic, 0)):
            for _ in range(len(members)):
                m = members[i % len(members)]
                i += 1
                if topic in subscriptions[m]:
                    out[m].setdefault(topic, []).append(p)
                    break
    return out


ASSIGNORS: dict[
    str, Callable[[Mapping[str, Sequence[str]], Mapping[str, int]], dict[str, dict[str, list[int]]]]
] = {
    "range": range_assign,
    "roundrobin": roundrobin_assign,
}


# -- the group member --------------------------------------------------------------------------------


class GroupConsumer:
    """zkafka's `Consumer` as a member of a broker-coordinated consumer group.

        async with GroupConsumer("127.0.0.1:9092", group_id="g", topics=["events"]) as consumer:
            async for record in consumer:
                ...

    A background task runs the group protocol on its own connection: find the coordinator, join
    (answering MEMBER_ID_REQUIRED), assign as leader (range or roundrobin, chosen by the
    group's vote), sync, then heartbeat every `heartbeat_interval_ms`; REBALANCE_IN_PROGRESS,
    ILLEGAL_GENERATION or UNKNOWN_MEMBER_ID make it commit (with auto-commit), give up its
    partitions and rejoin; a coordinator error makes it look the coordinator up again. New
    partitions start at their committed offset, else at `auto_offset_reset`. With auto-commit the
    positions are committed every `auto_commit_interval_ms`, before each rebalance and on close;
    the commit timer only runs while the application awaits, so what it commits was returned by
    `poll` before (at-least-once for applications that process between polls).
    """

    def __init__(
        self,
        bootstrap_servers: str | list[str] | None = None,
        *,
        group_id: str,
        topics: Iterable[str],
        client_id: str = "zkafka-consumer",
        group_instance_id: str | None = None,
        session_timeout_ms: int = 10_000,
        rebalance_timeout_ms: int = 60_000,
        heartbeat_interval_ms: int = 3_000,
        enable_auto_commit: bool = True,
        auto_commit_interval_ms: int = 5_000,
        auto_offset_reset: str = "latest",
        assignment_strategy: Sequence[str] = ("range", "roundrobin"),
        zookeeper_connect: str | None = None,
        request_timeout_ms: int = 30_000,
        retry_backoff_ms: int = 100,
        on_assign: Callable[[set[TopicPartition]], object] | None = None,
        on_revoke: Callable[[set[TopicPartition]], object] | None = None,
        **consumer_options: Any,
    ) -> None:
        from zkafka.client.consumer import Consumer
        from zkafka.client.errors import ConfigError

        self.topics = sorted(set([topics] if isinstance(topics, str) else topics))
        if not group_id:
            raise ConfigError("group_id is required")
        if not self.topics:
            raise ConfigError("subscribe to at least one topic")
        unknown = [s for s in assignment_strategy if s not in ASSIGNORS]
        if unknown or not assignment_strategy:
            raise ConfigError(
                f"assignment_strategy must be a list of {sorted(ASSIGNORS)}, got {assignment_strategy!r}"
            )
        if not 0 < heartbeat_interval_ms < session_timeout_ms:
            raise ConfigError("heartbeat_interval_ms must be positive and below session_timeout_ms")
        if auto_commit_interval_ms < 1:
            raise ConfigError(f"auto_commit_interval_ms must be >= 1, got {auto_commit_interval_ms}")
        self.group_id = group_id
        self.group_instance_id = group_instance_id
        self.session_timeout_ms = session_timeout_ms
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.heartbeat_interval_ms = heartbeat_interval_ms
        self.enable_auto_commit = enable_auto_commit
        self.auto_commit_interval_ms = auto_commit_interval_ms
        self.strategies = list(assignment_strategy)
        self.on_assign = on_assign
        self.on_revoke = on_revoke
        self.consumer = Consumer(
            bootstrap_servers,
            zookeeper_connect=zookeeper_connect,
            client_id=client_id,
            auto_offset_reset=auto_offset_reset,
            request_timeout_ms=request_timeout_ms,
            retry_backoff_ms=retry_backoff_ms,
            **consumer_options,
        )
        # the group protocol has its own connections: a parked JoinGroup must not hold up fetches
        self.admin = GroupAdmin(
            bootstrap_servers,
            zookeeper_connect=zookeeper_connect,
            client_id=client_id,
            request_timeout_ms=request_timeout_ms,
            retry_backoff_ms=retry_backoff_ms,
        )
        self.member_id = ""
        self.generation = -1
        self.leader_id = ""
        self.protocol = ""
        self._assigned: set[TopicPartition] = set()
        self._committed: dict[TopicPartition, int] = {}
        self._rejoin = asyncio.Event()
        self._joined = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._error: BaseException | None = None
        self._iter_buffer: list[Any] = []
        self._closed = False

    # -- lifecycle -----------------------------------------------------------------------------------
    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def start(self, timeout_s: float = 60.0) -> None:
        """Join the group and wait for the first assignment."""
        if self._tasks:
            return
        loop = asyncio.get_running_loop()
        self._tasks.append(loop.create_task(self._run(), name=f"group-{self.group_id}"))
        if self.enable_auto_commit:
            self._tasks.append(loop.create_task(self._auto_commit(), name=f"commit-{self.group_id}"))
        self._rejoin.set()
        await asyncio.wait_for(self._joined.wait(), timeout_s)
        self._raise_pending()

    async def close(self) -> None:
        """Commit (with auto-commit), leave the group, close the connections."""
        if self._closed:
            return
        self._closed = True
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        try:
            if self.enable_auto_commit and self._assigned:
                await self.commit()
        except Exception as e:
            log.warning("group %s: final commit failed: %s", self.group_id, e)
        self._revoke()
        if self.member_id:
            try:
                await self._leave()
            except Exception as e:
                log.info("group %s: LeaveGroup failed: %s", self.group_id, e)
        await self.consumer.close()
        await self.admin.close()

    # -- what the application sees ---------------------------------------------------------------------
    def assignment(self) -> set[TopicPartition]:
        return set(self._assigned)

    def seek(self, tp: TopicPartition, offset: int) -> None:
        """Read an assigned partition from `offset` on; the next commit writes the new position."""
        if tp not in self._assigned:
            raise ValueError(f"{tp} is not assigned to this consumer")
        self.consumer.seek(tp, offset)

    async def poll(self, timeout_ms: float = 1000) -> list[Any]:
        """Records of the assigned partitions; waits up to `timeout_ms` for some."""
        from zkafka.client.errors import ClientClosedError

        if self._closed:
            raise ClientClosedError("consumer closed")
        deadline = time.monotonic() + timeout_ms / 1000
        while True:
            self._raise_pending()
            remaining = deadline - time.monotonic()
            if not self._assigned:
                if remaining <= 0:
                    return []
                await asyncio.sleep(min(remaining, 0.05))  # rebalancing: look again soon
                continue
            records = await self.consumer.poll(max(min(remaining, 0.1), 0) * 1000)
            if records or remaining <= 0:
                return records

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> Any:
        while not self._iter_buffer:
            if self._closed:
                raise StopAsyncIteration
            self._iter_buffer.extend(reversed(await self.poll(1000)))
        return self._iter_buffer.pop()

    def _raise_pending(self) -> None:
        if self._error is not None:
            error, self._error = self._error, None
            raise error

    async def commit(self, offsets: Mapping[TopicPartition, int] | None = None) -> dict[TopicPartition, int]:
        """Commit the next offset to read of every assigned partition (or `offsets`) for the
        current generation; unchanged ones are skipped. Returns what was committed."""
        if offsets is None:
            positions: dict[TopicPartition, int] = {}
            for tp in list(self._assigned):
                with contextlib.suppress(ValueError, KafkaError):  # unassigned meanwhile, no broker
                    positions[tp] = await self.consumer.position(tp)
            offsets = positions
        todo = {tp: o for tp, o in offsets.items() if self._committed.get(tp) != o}
        if not todo:
            return {}
        by_topic: dict[str, list[OffsetCommitRequest.OffsetCommitRequestPartition]] = {}
        for tp, offset in sorted(todo.items()):
            by_topic.setdefault(tp.topic, []).append(
                OffsetCommitRequest.OffsetCommitRequestPartition(
                    partition_index=tp.partition, committed_offset=offset, committed_metadata=""
                )
            )
        request = OffsetCommitRequest(
            group_id=self.group_id,
            generation_id_or_member_epoch=self.generation,
            member_id=self.member_id,
            group_instance_id=self.group_instance_id,
            topics=[
                OffsetCommitRequest.OffsetCommitRequestTopic(name=t, partitions=ps)
                for t, ps in by_topic.items()
            ],
        )

        async def send(node: int) -> None:
            resp = await self.admin.cluster.send(node, request, max_version=_MAX[OffsetCommitRequest])
            assert isinstance(resp, OffsetCommitResponse)
            for t in resp.topics:
                for p in t.partitions:
                    code = ErrorCode.lookup(p.error_code)
                    if code in _REJOIN_ERRORS:
                        self._need_rejoin(code)
                    _check(p.error_code, f"OffsetCommit {t.name}-{p.partition_index}")

        await self.admin._to_coordinator(self.group_id, send)
        self._committed.update(todo)
        return todo

    # -- the group protocol --------------------------------------------------------------------------
    def _need_rejoin(self, code: ErrorCode) -> None:
        if code == ErrorCode.UNKNOWN_MEMBER_ID:
            self.member_id = ""
        if code in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.ILLEGAL_GENERATION):
            self.generation = -1
        self._rejoin.set()

    async def _run(self) -> None:
        while True:
            try:
                if self._rejoin.is_set():
                    self._rejoin.clear()
                    await self._join()
                    self._joined.set()
                await self._heartbeat()
            except asyncio.CancelledError:
                raise
            except KafkaError as e:
                if e.code == ErrorCode.FENCED_INSTANCE_ID or not (e.retriable or e.code in _REJOIN_ERRORS):
                    log.error("group %s: %s", self.group_id, e)
                    self._error = e
                    self._joined.set()
                    return
                log.info("group %s: %s; rejoining", self.group_id, e)
                self._rejoin.set()
                await asyncio.sleep(self.admin.cluster.retry_backoff)
            except Exception as e:  # connection trouble: look the coordinator up again
                log.info("group %s: %s; retrying", self.group_id, e)
                self.admin._coordinators.pop(self.group_id, None)
                self._rejoin.set()
                await asyncio.sleep(self.admin.cluster.retry_backoff)

    async def _heartbeat(self) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._rejoin.wait(), self.heartbeat_interval_ms / 1000)
            return  # rejoin requested (e.g. by a commit error)
        request = HeartbeatRequest(
            group_id=self.group_id,
            generation_id=self.generation,
            member_id=self.member_id,
            group_instance_id=self.group_instance_id,
        )

        async def send(node: int) -> None:
            resp = await self.admin.cluster.send(node, request, max_version=3)
            assert isinstance(resp, HeartbeatResponse)
            code = ErrorCode.lookup(resp.error_code)
            if code in _REJOIN_ERRORS:
                self._need_rejoin(code)
                return
            _check(resp.error_code, "Heartbeat")

        await self.admin._to_coordinator(self.group_id, send)

    async def _join(self) -> None:
        await self._release()
        while True:
            node = await self.admin.coordinator(self.group_id)
            metadata = encode_subscription(Subscription(tuple(self.topics)))
            request = JoinGroupRequest(
                group_id=self.group_id,
                session_timeout_ms=self.session_timeout_ms,
                rebalance_timeout_ms=self.rebalance_timeout_ms,
                member_id=self.member_id,
                group_instance_id=self.group_instance_id,
                protocol_type=PROTOCOL_TYPE,
                protocols=[
                    JoinGroupRequest.JoinGroupRequestProtocol(name=s, metadata=metadata)
                    for s in self.strategies
                ],
            )
            resp = await self.admin.cluster.send(
                node, request, max_version=5, timeout=self.rebalance_timeout_ms / 1000 + 5
            )
            assert isinstance(resp, JoinGroupResponse)
            code = ErrorCode.lookup(resp.error_code)
            if code == ErrorCode.MEMBER_ID_REQUIRED:
                self.member_id = resp.member_id
                continue
            if code in _REJOIN_ERRORS:
                self._need_rejoin(code)
                raise KafkaError(code)
            if code in COORDINATOR_ERRORS:
                self.admin._coordinators.pop(self.group_id, None)
            _check(resp.error_code, "JoinGroup")
            break
        self.member_id, self.generation = resp.member_id, resp.generation_id
        self.leader_id, self.protocol = resp.leader, resp.protocol_name
        assignments = []
        if self.member_id == self.leader_id:
            assignments = await self._assign(resp.members)
        sync = SyncGroupRequest(
            group_id=self.group_id,
            generation_id=self.generation,
            member_id=self.member_id,
            group_instance_id=self.group_instance_id,
            assignments=assignments,
        )
        sresp = await self.admin.cluster.send(
            node, sync, max_version=3, timeout=self.rebalance_timeout_ms / 1000 + 5
        )
        assert isinstance(sresp, SyncGroupResponse)
        code = ErrorCode.lookup(sresp.error_code)
        if code in _REJOIN_ERRORS:
            self._need_rejoin(code)
            raise KafkaError(code)
        _check(sresp.error_code, "SyncGroup")
        assigned = decode_assignment(bytes(sresp.assignment)).partitions
        tps = {TopicPartition(t, p) for t, ps in assigned.items() for p in ps}
        committed = await self.admin.committed_offsets(self.group_id, tps) if tps else {}
        self.consumer.assign(sorted(tps))
        for tp, offset in committed.items():
            self.consumer.seek(tp, offset)
        self._committed = dict(committed)
        self._assigned = tps
        log.info(
            "group %s: generation %d, member %s%s, assigned %s",
            self.group_id,
            self.generation,
            self.member_id,
            " (leader)" if self.member_id == self.leader_id else "",
            sorted(tps),
        )
        if self.on_assign is not None:
            self.on_assign(set(tps))

    async def _assign(
        self, members: Sequence[JoinGroupResponse.JoinGroupResponseMember]
    ) -> list[SyncGroupRequest.SyncGroupRequestAssignment]:
        subscriptions = {m.member_id: decode_subscription(bytes(m.metadata)).topics for m in members}
        counts = {}
        for topic in sorted({t for ts in subscriptions.values() for t in ts}):
            with contextlib.suppress(KafkaError):
                counts[topic] = (await self.consumer.cluster.topic(topic, timeout=5)).partition_count
        plan = ASSIGNORS[self.protocol](subscriptions, counts)
        return [
            SyncGroupRequest.SyncGroupRequestAssignment(
                member_id=m,
                assignment=encode_assignment(Assignment({t: tuple(ps) for t, ps in parts.items()})),
            )
            for m, parts in plan.items()
        ]

    async def _release(self) -> None:
        """Before rejoining: commit (with auto-commit) and give up the partitions."""
        if self.enable_auto_commit and self._assigned and self.generation >= 0:
            try:
                await self.commit()
            except Exception as e:
                log.info("group %s: commit before rebalance failed: %s", self.group_id, e)
        self._revoke()

    def _revoke(self) -> None:
        revoked, self._assigned = self._assigned, set()
        self.consumer.assign([])
        if revoked and self.on_revoke is not None:
            self.on_revoke(set(revoked))

    async def _leave(self) -> None:
        request = LeaveGroupRequest(
            group_id=self.group_id,
            member_id=self.member_id,
            members=[
                LeaveGroupRequest.MemberIdentity(
                    member_id=self.member_id, group_instance_id=self.group_instance_id
                )
            ],
        )
        node = await self.admin.coordinator(self.group_id)
        await self.admin.cluster.send(node, request, max_version=3)
        self.member_id, self.generation = "", -1

    async def _auto_commit(self) -> None:
        while True:
            await asyncio.sleep(self.auto_commit_interval_ms / 1000)
            if self._assigned and not self._rejoin.is_set():
                try:
                    await self.commit()
                except Exception as e:
                    log.info("group %s: auto-commit failed: %s", self.group_id, e)
