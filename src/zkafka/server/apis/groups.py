"""The group APIs: FindCoordinator (also for transactional ids, key type 1), JoinGroup, SyncGroup,
Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch, ListGroups, DescribeGroups, DeleteGroups.
Version 0 of OffsetCommit/OffsetFetch keeps offsets in ZooKeeper instead (`zk_offsets.py`), as
Kafka does. OffsetFetch v7 `require_stable` answers an offset a transaction may still change with
UNSTABLE_OFFSET_COMMIT (KIP-447), and v8 answers several groups in one request (KIP-709).

Each handler turns a request into a call on the broker's group coordinator
(`zkafka.coordinator`) and the result into the response of the request's version. JoinGroup and
SyncGroup wait (long poll) and so return coroutines; so do OffsetCommit and DeleteGroups, which
wait for their records to be replicated.
"""

from __future__ import annotations

from collections.abc import Awaitable, Mapping
from typing import Any

from zkafka.coordinator.coordinator import CommitRequest, GroupCoordinator
from zkafka.protocol import ErrorCode
from zkafka.protocol.messages import (
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
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
from zkafka.server.apis import zk_offsets
from zkafka.server.coordinator_service import CoordinatorService
from zkafka.server.dispatcher import RequestContext
from zkafka.storage.naming import TopicPartition

GROUP_KEY = 0
TRANSACTION_KEY = 1
# Without an authorizer every operation a group supports is allowed: READ(3), DELETE(6), DESCRIBE(8).
GROUP_AUTHORIZED_OPERATIONS = (1 << 3) | (1 << 6) | (1 << 8)
NOT_REQUESTED_OPERATIONS = -(1 << 31)


def _service(ctx: RequestContext) -> CoordinatorService:
    return ctx.services.groups


def _coordinator(ctx: RequestContext) -> GroupCoordinator:
    return _service(ctx).coordinator


def _client_host(ctx: RequestContext) -> str:
    """Kafka reports the member's address as Java's InetAddress.toString(): "/127.0.0.1"."""
    host = ctx.connection.peer.rsplit(":", 1)[0]
    return "/" + host.strip("[]")


# -- FindCoordinator ----------------------------------------------------------------------------------


async def handle_find_coordinator(
    ctx: RequestContext, request: FindCoordinatorRequest
) -> FindCoordinatorResponse:
    key_type = request.key_type if ctx.api_version >= 1 else GROUP_KEY
    if key_type == TRANSACTION_KEY:
        transactions = ctx.services.transactions
        if transactions is None:
            return _coordinator_error(ErrorCode.COORDINATOR_NOT_AVAILABLE, "no transaction coordinator")
        if not request.key:
            return _coordinator_error(ErrorCode.INVALID_REQUEST, "the transactional id is empty")
        found = await transactions.find_coordinator(request.key, ctx.listener)
    elif key_type != GROUP_KEY:
        return _coordinator_error(ErrorCode.INVALID_REQUEST, f"unknown coordinator key type {key_type}")
    elif not request.key:
        return _coordinator_error(ErrorCode.INVALID_GROUP_ID, "the group id is empty")
    else:
        found = await _service(ctx).find_coordinator(request.key, ctx.listener)
    if found.error != ErrorCode.NONE:
        return _coordinator_error(found.error, found.message)
    return FindCoordinatorResponse(
        error_code=ErrorCode.NONE, node_id=found.node_id, host=found.host, port=found.port, error_message=None
    )


def _coordinator_error(code: ErrorCode, message: str | None) -> FindCoordinatorResponse:
    return FindCoordinatorResponse(error_code=code, error_message=message, node_id=-1, host="", port=-1)


# -- membership -----------------------------------------------------------------------------------------


async def handle_join_group(ctx: RequestContext, request: JoinGroupRequest) -> JoinGroupResponse:
    result = await _coordinator(ctx).join_group(
        request.group_id,
        request.member_id,
        request.group_instance_id if ctx.api_version >= 5 else None,
        require_known_member_id=ctx.api_version >= 4,
        client_id=ctx.header.client_id or "",
        client_host=_client_host(ctx),
        # v0 has no rebalance timeout: the session timeout is used (as Kafka does)
        rebalance_timeout_ms=request.rebalance_timeout_ms
        if ctx.api_version >= 1
        else request.session_timeout_ms,
        session_timeout_ms=request.session_timeout_ms,
        protocol_type=request.protocol_type,
        protocols=[(p.name, bytes(p.metadata)) for p in request.protocols],
    )
    return JoinGroupResponse(
        error_code=result.error,
        generation_id=result.generation,
        protocol_name=result.protocol_name,
        leader=result.leader_id,
        member_id=result.member_id,
        members=[
            JoinGroupResponse.JoinGroupResponseMember(member_id=m, group_instance_id=i, metadata=md)
            for m, i, md in result.members
        ],
    )


async def handle_sync_group(ctx: RequestContext, request: SyncGroupRequest) -> SyncGroupResponse:
    result = await _coordinator(ctx).sync_group(
        request.group_id,
        request.generation_id,
        request.member_id,
        request.group_instance_id if ctx.api_version >= 3 else None,
        {a.member_id: bytes(a.assignment) for a in request.assignments},
    )
    return SyncGroupResponse(error_code=result.error, assignment=result.assignment)


def handle_heartbeat(ctx: RequestContext, request: HeartbeatRequest) -> HeartbeatResponse:
    error = _coordinator(ctx).heartbeat(
        request.group_id,
        request.generation_id,
        request.member_id,
        request.group_instance_id if ctx.api_version >= 3 else None,
    )
    return HeartbeatResponse(error_code=error)


def handle_leave_group(ctx: RequestContext, request: LeaveGroupRequest) -> LeaveGroupResponse:
    if ctx.api_version >= 3:
        members = [(m.member_id, m.group_instance_id) for m in request.members]
    else:
        members = [(request.member_id, None)]
    error, per_member = _coordinator(ctx).leave_group(request.group_id, members)
    if ctx.api_version < 3:
        # one member: clients read its error as the request's
        return LeaveGroupResponse(error_code=error if error != ErrorCode.NONE else per_member[0])
    return LeaveGroupResponse(
        error_code=error,
        members=[
            LeaveGroupResponse.MemberResponse(member_id=m, group_instance_id=i, error_code=e)
            for (m, i), e in zip(members, per_member, strict=True)
        ],
    )


# -- offsets -------------------------------------------------------------------------------------------


async def handle_offset_commit(ctx: RequestContext, request: OffsetCommitRequest) -> OffsetCommitResponse:
    if ctx.api_version == 0:
        return _offset_commit_response(request, await zk_offsets.commit(ctx, request))
    offsets = {
        TopicPartition(t.name, p.partition_index): CommitRequest(
            p.committed_offset,
            p.committed_leader_epoch if ctx.api_version >= 6 else -1,
            p.committed_metadata,
            # v1's own timestamp: -1 (its default, and every later version) means now
            p.commit_timestamp if ctx.api_version == 1 else -1,
        )
        for t in request.topics
        for p in t.partitions
    }
    results = await _coordinator(ctx).commit_offsets(
        request.group_id,
        request.member_id,
        request.group_instance_id if ctx.api_version >= 7 else None,
        request.generation_id_or_member_epoch,
        offsets,
        retention_ms=request.retention_time_ms if 2 <= ctx.api_version <= 4 else -1,
    )
    return _offset_commit_response(request, results)


def _offset_commit_response(
    request: OffsetCommitRequest, results: Mapping[TopicPartition, ErrorCode]
) -> OffsetCommitResponse:
    by_topic: dict[str, list[OffsetCommitResponse.OffsetCommitResponsePartition]] = {}
    for t in request.topics:
        for p in t.partitions:
            by_topic.setdefault(t.name, []).append(
                OffsetCommitResponse.OffsetCommitResponsePartition(
                    partition_index=p.partition_index,
                    error_code=results[TopicPartition(t.name, p.partition_index)],
                )
            )
    return OffsetCommitResponse(
        topics=[
            OffsetCommitResponse.OffsetCommitResponseTopic(name=n, partitions=ps)
            for n, ps in by_topic.items()
        ]
    )


def handle_offset_fetch(
    ctx: RequestContext, request: OffsetFetchRequest
) -> OffsetFetchResponse | Awaitable[OffsetFetchResponse]:
    if ctx.api_version == 0:
        return _zk_offset_fetch(ctx, request)
    require_stable = ctx.api_version >= 7 and request.require_stable
    if ctx.api_version >= 8:  # several groups, each answered as v7 answers one (KIP-709)
        _Resp = OffsetFetchResponse
        groups = []
        for g in request.groups:
            error, found = _fetch_group(ctx, g.group_id, g.topics, require_stable)
            by_topic: dict[str, list[_Resp.OffsetFetchResponsePartitions]] = {}
            for tp, offset, epoch, metadata, code in found:
                by_topic.setdefault(tp.topic, []).append(
                    _Resp.OffsetFetchResponsePartitions(
                        partition_index=tp.partition,
                        committed_offset=offset,
                        committed_leader_epoch=epoch,
                        metadata=metadata,
                        error_code=code,
                    )
                )
            groups.append(
                _Resp.OffsetFetchResponseGroup(
                    group_id=g.group_id,
                    error_code=error,
                    topics=[
                        _Resp.OffsetFetchResponseTopics(name=n, partitions=ps) for n, ps in by_topic.items()
                    ],
                )
            )
        return _Resp(groups=groups)
    error, found = _fetch_group(ctx, request.group_id, request.topics, require_stable)
    if error != ErrorCode.NONE and ctx.api_version < 2:
        # v1 has no top-level error: a group error is reported in every requested partition
        wanted = [TopicPartition(t.name, p) for t in request.topics or [] for p in t.partition_indexes]
        found = [(tp, -1, -1, "", error) for tp in wanted]
    by_topic1: dict[str, list[OffsetFetchResponse.OffsetFetchResponsePartition]] = {}
    for tp, offset, epoch, metadata, code in found:
        by_topic1.setdefault(tp.topic, []).append(
            OffsetFetchResponse.OffsetFetchResponsePartition(
                partition_index=tp.partition,
                committed_offset=offset,
                committed_leader_epoch=epoch,
                metadata=metadata,
                error_code=code,
            )
        )
    return OffsetFetchResponse(
        error_code=error,
        topics=[
            OffsetFetchResponse.OffsetFetchResponseTopic(name=n, partitions=ps) for n, ps in by_topic1.items()
        ],
    )


_Fetched = tuple[TopicPartition, int, int, str, ErrorCode]
"""A partition's answer: (partition, offset, leader epoch, metadata, error)."""


def _fetch_group(
    ctx: RequestContext, group_id: str, topics: list[Any] | None, require_stable: bool
) -> tuple[ErrorCode, list[_Fetched]]:
    """One group's committed offsets for `topics` (None: every committed partition); with
    `require_stable` (v7+, KIP-447) an offset a transaction may still change is answered
    UNSTABLE_OFFSET_COMMIT instead. A group error leaves the list empty."""
    wanted = (
        None if topics is None else [TopicPartition(t.name, p) for t in topics for p in t.partition_indexes]
    )
    coordinator = _coordinator(ctx)
    error, found = coordinator.fetch_offsets(group_id, wanted)
    if error != ErrorCode.NONE:
        return error, []
    unstable = coordinator.unstable_partitions(group_id) if require_stable else set()
    out: list[_Fetched] = []
    for tp, om in found.items():
        if tp in unstable:
            out.append((tp, -1, -1, "", ErrorCode.UNSTABLE_OFFSET_COMMIT))
        elif om is None:
            out.append((tp, -1, -1, "", ErrorCode.NONE))
        else:
            out.append((tp, om.offset, om.leader_epoch, om.metadata, ErrorCode.NONE))
    return ErrorCode.NONE, out


async def _zk_offset_fetch(ctx: RequestContext, request: OffsetFetchRequest) -> OffsetFetchResponse:
    by_topic: dict[str, list[OffsetFetchResponse.OffsetFetchResponsePartition]] = {}
    for tp, (offset, error) in (await zk_offsets.fetch(ctx, request)).items():
        by_topic.setdefault(tp.topic, []).append(
            OffsetFetchResponse.OffsetFetchResponsePartition(
                partition_index=tp.partition, committed_offset=offset, metadata="", error_code=error
            )
        )
    return OffsetFetchResponse(
        topics=[
            OffsetFetchResponse.OffsetFetchResponseTopic(name=n, partitions=ps) for n, ps in by_topic.items()
        ]
    )


# -- group administration ----------------------------------------------------------------------------


def handle_list_groups(ctx: RequestContext, request: ListGroupsRequest) -> ListGroupsResponse:
    error, groups = _coordinator(ctx).list_groups(request.states_filter or ())
    return ListGroupsResponse(
        error_code=error,
        groups=[
            ListGroupsResponse.ListedGroup(group_id=g, protocol_type=t, group_state=state)
            for g, t, state in groups
        ],
    )


async def handle_offset_delete(ctx: RequestContext, request: OffsetDeleteRequest) -> OffsetDeleteResponse:
    wanted = [TopicPartition(t.name, p.partition_index) for t in request.topics for p in t.partitions]
    error, results = await _coordinator(ctx).delete_offsets(request.group_id, wanted)
    Out = OffsetDeleteResponse
    topics: dict[str, list[OffsetDeleteResponse.OffsetDeleteResponsePartition]] = {}
    if error == ErrorCode.NONE:
        for tp, code in results.items():
            topics.setdefault(tp.topic, []).append(
                Out.OffsetDeleteResponsePartition(partition_index=tp.partition, error_code=code)
            )
    return Out(
        error_code=error,
        topics=[Out.OffsetDeleteResponseTopic(name=name, partitions=ps) for name, ps in topics.items()],
    )


def handle_describe_groups(ctx: RequestContext, request: DescribeGroupsRequest) -> DescribeGroupsResponse:
    coordinator = _coordinator(ctx)
    operations = (
        GROUP_AUTHORIZED_OPERATIONS
        if ctx.api_version >= 3 and request.include_authorized_operations
        else NOT_REQUESTED_OPERATIONS
    )
    out = []
    for group_id in request.groups:
        s = coordinator.describe_group(group_id)
        out.append(
            DescribeGroupsResponse.DescribedGroup(
                error_code=s.error,
                group_id=group_id,
                group_state=s.state,
                protocol_type=s.protocol_type,
                protocol_data=s.protocol,
                members=[
                    DescribeGroupsResponse.DescribedGroupMember(
                        member_id=m.member_id,
                        group_instance_id=m.group_instance_id,
                        client_id=m.client_id,
                        client_host=m.client_host,
                        member_metadata=m.metadata,
                        member_assignment=m.assignment,
                    )
                    for m in s.members
                ],
                authorized_operations=operations,
            )
        )
    return DescribeGroupsResponse(groups=out)


async def handle_delete_groups(ctx: RequestContext, request: DeleteGroupsRequest) -> DeleteGroupsResponse:
    results = await _coordinator(ctx).delete_groups(request.groups_names)
    return DeleteGroupsResponse(
        results=[
            DeleteGroupsResponse.DeletableGroupResult(group_id=g, error_code=results[g])
            for g in request.groups_names
        ]
    )
