"""Consumer-group administration through the brokers' group coordinator: `GroupAdmin` lists,
describes and deletes groups and reads and writes their committed offsets (what
`zkafka consumer-groups --bootstrap-server` uses, and what `GroupConsumer` commits through):

    async with GroupAdmin("127.0.0.1:9092") as admin:
        print(await admin.list_groups())
        print(await admin.committed_offsets("my-group"))

Every group request goes to the group's coordinator, found with FindCoordinator and cached. The
retriable coordinator errors (COORDINATOR_NOT_AVAILABLE while `__consumer_offsets` is being
created, COORDINATOR_LOAD_IN_PROGRESS while a new coordinator loads, NOT_COORDINATOR after a
move) are retried with backoff until `request_timeout_ms`.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from zkafka.client.cluster import Cluster
from zkafka.client.cluster_client import ClusterClient, RetriableAnswer
from zkafka.client.connection import ConnectionError_
from zkafka.client.security import ClientSecurity
from zkafka.client.types import TopicPartition
from zkafka.protocol import ErrorCode, KafkaError
from zkafka.protocol.groups.consumer_protocol import (
    PROTOCOL_TYPE,
    decode_assignment,
)
from zkafka.protocol.groups.formats import CorruptCoordinatorRecordError
from zkafka.protocol.messages import (
    DeleteGroupsRequest,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    ListGroupsRequest,
    ListGroupsResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetDeleteRequest,
    OffsetDeleteResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
)

T = TypeVar("T")
log = logging.getLogger(__name__)

COORDINATOR_ERRORS = frozenset(
    {ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.NOT_COORDINATOR}
)
# the newest non-flexible versions (zkafka's wire codec serves those)
MAX_VERSIONS = {
    FindCoordinatorRequest: 2,
    OffsetFetchRequest: 5,
    OffsetCommitRequest: 7,
    DescribeGroupsRequest: 4,
    ListGroupsRequest: 2,
    DeleteGroupsRequest: 1,
    OffsetDeleteRequest: 0,
}
_MAX = MAX_VERSIONS


class CoordinatorRetry(RetriableAnswer):
    """A coordinator error: find the coordinator again and retry."""

    def __init__(self, code: ErrorCode) -> None:
        super().__init__(code, "the coordinator")


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


class GroupAdmin(ClusterClient):
    def __init__(
        self,
        bootstrap_servers: str | list[str] | None = None,
        *,
        zookeeper_connect: str | None = None,
        zookeeper_listener_name: str | None = None,
        client_id: str = "zkafka-groups",
        request_timeout_ms: int = 30_000,
        retry_backoff_ms: int = 100,
        security: ClientSecurity | None = None,
    ) -> None:
        super().__init__(
            bootstrap_servers,
            zookeeper_connect=zookeeper_connect,
            zookeeper_listener_name=zookeeper_listener_name,
            client_id=client_id,
            request_timeout_ms=request_timeout_ms,
            retry_backoff_ms=retry_backoff_ms,
            security=security,
        )
        self._coordinators: dict[str, int] = {}

    # -- coordinator lookup -----------------------------------------------------------------------
    async def coordinator(self, group: str, *, refresh: bool = False) -> int:
        """The broker id coordinating `group` (FindCoordinator, retried while not available)."""
        if not refresh and group in self._coordinators:
            return self._coordinators[group]

        node = await self._retrying(lambda: find_coordinator(self.cluster, group, GROUP_KEY))
        self._coordinators[group] = node
        return node

    async def _to_coordinator(self, group: str, build: Callable[[int], Awaitable[T]]) -> T:
        """Run `build(coordinator id)`; on a coordinator error look the coordinator up again."""

        async def attempt() -> T:
            node = await self.coordinator(group)
            try:
                return await build(node)
            except (CoordinatorRetry, ConnectionError_):
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
                check_group_error(resp.error_code, f"ListGroups on broker {node}")
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
            check_group_error(g.error_code, f"DescribeGroups {group!r}")
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
            check_group_error(r.error_code, f"DeleteGroups {group!r}")

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
            check_group_error(resp.error_code, f"OffsetDelete {group!r}")
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
                node,
                OffsetFetchRequest(group_id=group, topics=topics),
                max_version=_MAX[OffsetFetchRequest],
            )
            assert isinstance(resp, OffsetFetchResponse)
            check_group_error(resp.error_code, f"OffsetFetch {group!r}")
            out = {}
            for t in resp.topics:
                for p in t.partitions:
                    check_group_error(p.error_code, f"OffsetFetch {group!r} {t.name}-{p.partition_index}")
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
                    check_group_error(p.error_code, f"OffsetCommit {group!r} {t.name}-{p.partition_index}")

        await self._to_coordinator(group, commit)


GROUP_KEY = 0
TRANSACTION_KEY = 1
"""FindCoordinator's key types."""


async def find_coordinator(cluster: Cluster, key: str, key_type: int) -> int:
    """One FindCoordinator round trip: the broker id coordinating a group (`GROUP_KEY`) or a
    transactional id (`TRANSACTION_KEY`). Raises `CoordinatorRetry` for the coordinator errors."""
    resp = await cluster.send_any(
        FindCoordinatorRequest(key=key, key_type=key_type), max_version=_MAX[FindCoordinatorRequest]
    )
    assert isinstance(resp, FindCoordinatorResponse)
    what = "group" if key_type == GROUP_KEY else "transactional id"
    check_group_error(resp.error_code, f"FindCoordinator for {what} {key!r}", resp.error_message)
    if resp.node_id not in cluster.metadata.brokers:
        await cluster.refresh()
    return int(resp.node_id)


def check_group_error(code: int, what: str, message: str | None = None) -> None:
    """Raise for a group API's error code: `CoordinatorRetry` (find the coordinator again) for the
    coordinator errors, `KafkaError` for the rest."""
    if code == ErrorCode.NONE:
        return
    error = ErrorCode.lookup(code)
    if error in COORDINATOR_ERRORS:
        raise CoordinatorRetry(error)
    raise KafkaError(error, f"{what}: {message or error.message}")


def _member(m: DescribeGroupsResponse.DescribedGroupMember, protocol_type: str) -> MemberDescription:
    assignment: Mapping[str, tuple[int, ...]] = {}
    if protocol_type == PROTOCOL_TYPE and m.member_assignment:
        try:
            assignment = decode_assignment(bytes(m.member_assignment)).partitions
        except CorruptCoordinatorRecordError:
            assignment = {}
    return MemberDescription(m.member_id, m.client_id, m.client_host, assignment, m.group_instance_id)
