"""ElectLeaders, AlterPartitionReassignments, ListPartitionReassignments: carried out by the controller.

As in Kafka's ZooKeeper mode only the active controller acts on them (clients send them to the
controller named in Metadata). Any other broker answers NOT_CONTROLLER: per partition for
ElectLeaders (Kafka's `KafkaController.electLeaders` answers every partition so), at the top level
for the two reassignment APIs.

ElectLeaders (KafkaApis.handleElectReplicaLeader + ReplicaManager.electLeaders): a null topic list
means every partition, and then the partitions that needed no election (ELECTION_NOT_NEEDED) are left
out of the answer. A partition the controller elected is answered once this broker's metadata shows
its new leader (Kafka's DelayedElectLeader); what does not happen within the request's timeout
(the controller's decision included) is answered REQUEST_TIMED_OUT, the election itself goes on.
Timeout 0 answers as soon as the controller has decided (elected partitions: REQUEST_TIMED_OUT
unless this broker already knows the new leader, as in Kafka).

AlterPartitionReassignments / ListPartitionReassignments: the controller starts or cancels
(null replicas) the moves and answers per partition; the listing shows only the partitions being
reassigned (requested partitions that are not moving are left out, as in Kafka).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable, Mapping
from typing import TypeVar

from zkafka.controller.context import ReplicaAssignment
from zkafka.protocol import ErrorCode
from zkafka.protocol.messages import (
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsResponse,
    ElectLeadersRequest,
    ElectLeadersResponse,
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsResponse,
)
from zkafka.server.dispatcher import RequestContext
from zkafka.server.services import ControllerAccess
from zkafka.zk.model import TopicPartition

log = logging.getLogger(__name__)

PREFERRED, UNCLEAN = 0, 1
DECISION_WAIT_S = 30.0
Results = dict[TopicPartition, tuple[ErrorCode, str | None]]
R = TypeVar("R")

ElectResp = ElectLeadersResponse
AlterResp = AlterPartitionReassignmentsResponse
ListResp = ListPartitionReassignmentsResponse


def _controller(ctx: RequestContext) -> ControllerAccess | None:
    """The controller module when it is the active controller (else these APIs are NOT_CONTROLLER)."""
    controller = ctx.services.controller
    return controller if controller.is_active else None


async def _within(step: Awaitable[R], timeout_s: float) -> R | None:
    """`step`'s result, or None when it takes longer than `timeout_s` (it carries on regardless).
    A timeout that is already over (requests with timeout 0: librdkafka's "do not wait") still
    waits up to DECISION_WAIT_S: Kafka always answers with the controller's decision."""
    task = asyncio.ensure_future(step)
    try:
        return await asyncio.wait_for(asyncio.shield(task), timeout_s if timeout_s > 0 else DECISION_WAIT_S)
    except TimeoutError:
        task.add_done_callback(_log_failure)
        return None


def _log_failure(task: asyncio.Future[object]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("controller request failed after its timeout", exc_info=task.exception())


# -- ElectLeaders ----------------------------------------------------------------------------------


async def handle_elect_leaders(ctx: RequestContext, request: ElectLeadersRequest) -> ElectResp:
    metadata = ctx.services.metadata
    deadline = time.monotonic() + request.timeout_ms / 1000
    election_type = request.election_type if ctx.api_version >= 1 else PREFERRED
    everything = request.topic_partitions is None
    requested = (
        None
        if everything
        else sorted(
            {TopicPartition(t.topic, p) for t in request.topic_partitions or () for p in t.partitions}
        )
    )
    if election_type not in (PREFERRED, UNCLEAN):
        return ElectResp(error_code=ErrorCode.INVALID_REQUEST)
    controller = _controller(ctx)
    if controller is None:
        if requested is None:  # Kafka names every partition its metadata cache knows
            requested = [
                TopicPartition(topic, p) for topic in metadata.topics()
                for p in metadata.topic_partitions(topic)
            ]  # fmt: skip
        return _elect_response({tp: (ErrorCode.NOT_CONTROLLER, None) for tp in requested})
    try:
        results = await _within(
            controller.elect_leaders(requested, unclean=election_type == UNCLEAN), deadline - time.monotonic()
        )
    except Exception:
        log.exception("leader election failed")
        return ElectResp(error_code=ErrorCode.UNKNOWN_SERVER_ERROR)
    if results is None:
        return _elect_response(
            {
                tp: (ErrorCode.REQUEST_TIMED_OUT, "the controller did not decide in time")
                for tp in requested or ()
            }
        )
    elected = [tp for tp, (error, _) in results.items() if error == ErrorCode.NONE]
    if elected:

        def visible(tp: TopicPartition) -> bool:
            info = metadata.partition(tp.topic, tp.partition)
            if info is None or info.leader < 0:
                return False
            return election_type == UNCLEAN or (bool(info.replicas) and info.leader == info.replicas[0])

        await ctx.services.metadata_waits.wait(
            lambda: all(visible(tp) for tp in elected), deadline - time.monotonic()
        )
        for tp in elected:
            if not visible(tp):
                results[tp] = (ErrorCode.REQUEST_TIMED_OUT, "the new leader is not known here yet")
    if everything:
        results = {tp: r for tp, r in results.items() if r[0] != ErrorCode.ELECTION_NOT_NEEDED}
    return _elect_response(results)


def _elect_response(results: Results) -> ElectResp:
    return ElectResp(replica_election_results=_grouped(results, _elect_partition, _elect_topic))


def _elect_partition(tp: TopicPartition, result: tuple[ErrorCode, str | None]) -> object:
    return ElectResp.PartitionResult(partition_id=tp.partition, error_code=result[0], error_message=result[1])


def _elect_topic(name: str, partitions: list) -> object:  # type: ignore[type-arg]
    return ElectResp.ReplicaElectionResult(topic=name, partition_result=partitions)


# -- AlterPartitionReassignments ------------------------------------------------------------------------


async def handle_alter_partition_reassignments(
    ctx: RequestContext, request: AlterPartitionReassignmentsRequest
) -> AlterResp:
    controller = _controller(ctx)
    if controller is None:
        return AlterResp(error_code=ErrorCode.NOT_CONTROLLER)
    requested: dict[TopicPartition, list[int] | None] = {
        TopicPartition(t.name, p.partition_index): None if p.replicas is None else list(p.replicas)
        for t in request.topics
        for p in t.partitions
    }
    try:
        results = await _within(
            controller.alter_partition_reassignments(requested), request.timeout_ms / 1000
        )
    except Exception:
        log.exception("partition reassignment failed")
        return AlterResp(error_code=ErrorCode.UNKNOWN_SERVER_ERROR)
    if results is None:
        results = {
            tp: (ErrorCode.REQUEST_TIMED_OUT, "the controller did not answer in time") for tp in requested
        }
    return AlterResp(responses=_grouped(results, _alter_partition, _alter_topic))


def _alter_partition(tp: TopicPartition, result: tuple[ErrorCode, str | None]) -> object:
    return AlterResp.ReassignablePartitionResponse(
        partition_index=tp.partition, error_code=result[0], error_message=result[1]
    )


def _alter_topic(name: str, partitions: list) -> object:  # type: ignore[type-arg]
    return AlterResp.ReassignableTopicResponse(name=name, partitions=partitions)


# -- ListPartitionReassignments -------------------------------------------------------------------------


def handle_list_partition_reassignments(
    ctx: RequestContext, request: ListPartitionReassignmentsRequest
) -> ListResp:
    controller = _controller(ctx)
    if controller is None:
        return ListResp(error_code=ErrorCode.NOT_CONTROLLER)
    wanted = (
        None
        if request.topics is None
        else [TopicPartition(t.name, p) for t in request.topics for p in t.partition_indexes]
    )
    ongoing = controller.list_partition_reassignments(wanted)
    return ListResp(topics=_grouped(ongoing, _ongoing_partition, _ongoing_topic))


def _ongoing_partition(tp: TopicPartition, assignment: ReplicaAssignment) -> object:
    return ListResp.OngoingPartitionReassignment(
        partition_index=tp.partition,
        replicas=list(assignment.replicas),
        adding_replicas=list(assignment.adding),
        removing_replicas=list(assignment.removing),
    )


def _ongoing_topic(name: str, partitions: list) -> object:  # type: ignore[type-arg]
    return ListResp.OngoingTopicReassignment(name=name, partitions=partitions)


# -- shared ---------------------------------------------------------------------------------------------


def _grouped(
    per_partition: Mapping[TopicPartition, R],
    partition: Callable[[TopicPartition, R], object],
    topic: Callable[[str, list[object]], object],
) -> list:  # type: ignore[type-arg]
    """Per-partition answers grouped by topic (both in name/id order), as the responses nest them."""
    by_topic: dict[str, list[object]] = defaultdict(list)
    for tp in sorted(per_partition):
        by_topic[tp.topic].append(partition(tp, per_partition[tp]))
    return [topic(name, parts) for name, parts in by_topic.items()]
