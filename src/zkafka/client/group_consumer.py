"""zkafka's consumer as a member of a broker-coordinated consumer group (join, sync, heartbeat,
commit; see `GroupConsumer`). Group administration is `group_admin.GroupAdmin`, which the member
also commits through; the assignors its leader runs are in `assignors`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Self

from zkafka.client.assignors import ASSIGNORS
from zkafka.client.group_admin import (
    COORDINATOR_ERRORS,
    MAX_VERSIONS,
    GroupAdmin,
    check_group_error,
)
from zkafka.client.security import ClientSecurity
from zkafka.client.types import ConsumerGroupMetadata, TopicPartition
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
from zkafka.protocol.messages import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    OffsetCommitRequest,
    OffsetCommitResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)

log = logging.getLogger(__name__)

# errors after which a member must join again (with a new member id for UNKNOWN_MEMBER_ID)
_REJOIN_ERRORS = frozenset(
    {ErrorCode.REBALANCE_IN_PROGRESS, ErrorCode.ILLEGAL_GENERATION, ErrorCode.UNKNOWN_MEMBER_ID}
)


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
        zookeeper_listener_name: str | None = None,
        request_timeout_ms: int = 30_000,
        retry_backoff_ms: int = 100,
        on_assign: Callable[[set[TopicPartition]], object] | None = None,
        on_revoke: Callable[[set[TopicPartition]], object] | None = None,
        security: ClientSecurity | None = None,
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
            zookeeper_listener_name=zookeeper_listener_name,
            client_id=client_id,
            auto_offset_reset=auto_offset_reset,
            request_timeout_ms=request_timeout_ms,
            retry_backoff_ms=retry_backoff_ms,
            security=security,
            **consumer_options,
        )
        # the group protocol has its own connections: a parked JoinGroup must not hold up fetches
        self.admin = GroupAdmin(
            bootstrap_servers,
            zookeeper_connect=zookeeper_connect,
            zookeeper_listener_name=zookeeper_listener_name,
            client_id=client_id,
            request_timeout_ms=request_timeout_ms,
            retry_backoff_ms=retry_backoff_ms,
            security=security,
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
    def group_metadata(self) -> ConsumerGroupMetadata:
        """For `Producer.send_offsets_to_transaction`: the coordinator refuses the transaction's
        offsets when this member has been fenced by a rebalance since."""
        return ConsumerGroupMetadata(self.group_id, self.generation, self.member_id, self.group_instance_id)

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
            resp = await self.admin.cluster.send(node, request, max_version=MAX_VERSIONS[OffsetCommitRequest])
            assert isinstance(resp, OffsetCommitResponse)
            for t in resp.topics:
                for p in t.partitions:
                    code = ErrorCode.lookup(p.error_code)
                    if code in _REJOIN_ERRORS:
                        self._need_rejoin(code)
                    check_group_error(p.error_code, f"OffsetCommit {t.name}-{p.partition_index}")

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
            check_group_error(resp.error_code, "Heartbeat")

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
            check_group_error(resp.error_code, "JoinGroup")
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
        check_group_error(sresp.error_code, "SyncGroup")
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
