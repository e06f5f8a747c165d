"""The transaction APIs: AddPartitionsToTxn, AddOffsetsToTxn and EndTxn (clients, to the
transaction coordinator), TxnOffsetCommit (clients, to the group coordinator) and WriteTxnMarkers
(the transaction coordinator, to partition leaders); the KIP-664 views DescribeTransactions,
ListTransactions (the coordinator's state) and DescribeProducers (a partition leader's).

AddOffsetsToTxn adds the group's `__consumer_offsets` partition to the transaction, so the
transaction's marker reaches it and TxnOffsetCommit's offsets become the group's on commit.

AddPartitionsToTxn checks every partition against the metadata first, as Kafka does: if one is
unknown, it gets UNKNOWN_TOPIC_OR_PARTITION, the others OPERATION_NOT_ATTEMPTED, and the
coordinator is not asked. v4 (KIP-890) is the form partition leaders send: a list of
transactions, each either added or, with `verify_only`, only checked (`server.txn_verification`
sends it before a producer's first transactional batch lands on a partition).
Before v2 of AddPartitionsToTxn, AddOffsetsToTxn and EndTxn,
PRODUCER_FENCED is answered as INVALID_PRODUCER_EPOCH (KIP-588).
"""

from __future__ import annotations

import logging

from zkafka.coordinator.group import CommitRequest
from zkafka.protocol import ErrorCode
from zkafka.protocol.messages import (
    AddOffsetsToTxnRequest,
    AddOffsetsToTxnResponse,
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    DescribeProducersRequest,
    DescribeProducersResponse,
    DescribeTransactionsRequest,
    DescribeTransactionsResponse,
    EndTxnRequest,
    EndTxnResponse,
    ListTransactionsRequest,
    ListTransactionsResponse,
    TxnOffsetCommitRequest,
    TxnOffsetCommitResponse,
    WriteTxnMarkersRequest,
    WriteTxnMarkersResponse,
)
from zkafka.server.dispatcher import RequestContext
from zkafka.server.txn_markers import write_markers_locally
from zkafka.storage.naming import TopicPartition
from zkafka.transactions.coordinator import TransactionCoordinator
from zkafka.transactions.state import TxnState
from zkafka.zk.topic_names import GROUP_METADATA_TOPIC, is_internal_topic

log = logging.getLogger(__name__)

FIRST_VERSION_WITH_PRODUCER_FENCED = 2


def _fenced_as_epoch(error: ErrorCode, api_version: int) -> ErrorCode:
    if error == ErrorCode.PRODUCER_FENCED and api_version < FIRST_VERSION_WITH_PRODUCER_FENCED:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    return error


def _coordinator(ctx: RequestContext) -> TransactionCoordinator | None:
    service = ctx.services.transactions
    return service.coordinator if service is not None else None


# -- AddPartitionsToTxn --------------------------------------------------------------------------------

_AddResp = AddPartitionsToTxnResponse
_AddReq = AddPartitionsToTxnRequest


async def handle_add_partitions(ctx: RequestContext, request: _AddReq) -> _AddResp:
    if ctx.api_version < 4:
        outcome = await _add_partitions(
            ctx,
            request.v3_and_below_transactional_id,
            request.v3_and_below_producer_id,
            request.v3_and_below_producer_epoch,
            request.v3_and_below_topics,
            verify_only=False,
        )
        return _AddResp(results_by_topic_v3_and_below=_topic_results(outcome))
    # v4 (KIP-890): brokers verifying (or adding, for a future client-side batching) for several
    # transactional ids; the authorizer allowed it only to ClusterAction principals
    results = []
    for txn in request.transactions:
        outcome = await _add_partitions(
            ctx, txn.transactional_id, txn.producer_id, txn.producer_epoch, txn.topics, txn.verify_only
        )
        results.append(
            _AddResp.AddPartitionsToTxnResult(
                transactional_id=txn.transactional_id, topic_results=_topic_results(outcome)
            )
        )
    return _AddResp(results_by_transaction=results)


async def _add_partitions(
    ctx: RequestContext,
    transactional_id: str,
    producer_id: int,
    producer_epoch: int,
    topics: list[_AddReq.AddPartitionsToTxnTopic],
    verify_only: bool,
) -> dict[TopicPartition, ErrorCode]:
    wanted = [TopicPartition(t.name, p) for t in topics for p in t.partitions]
    metadata = ctx.services.metadata
    errors = {
        tp: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        for tp in wanted
        if is_internal_topic(tp.topic) or metadata.partition(tp.topic, tp.partition) is None
    }
    if errors:
        return {tp: errors.get(tp, ErrorCode.OPERATION_NOT_ATTEMPTED) for tp in wanted}
    coordinator = _coordinator(ctx)
    if coordinator is None:
        return dict.fromkeys(wanted, ErrorCode.COORDINATOR_NOT_AVAILABLE)
    if verify_only:
        return coordinator.verify_partitions(transactional_id, producer_id, producer_epoch, wanted)
    error = await coordinator.add_partitions(transactional_id, producer_id, producer_epoch, wanted)
    return dict.fromkeys(wanted, _fenced_as_epoch(error, ctx.api_version))


def _topic_results(outcome: dict[TopicPartition, ErrorCode]) -> list[_AddResp.AddPartitionsToTxnTopicResult]:
    by_topic: dict[str, list[_AddResp.AddPartitionsToTxnPartitionResult]] = {}
    for tp, error in outcome.items():
        by_topic.setdefault(tp.topic, []).append(
            _AddResp.AddPartitionsToTxnPartitionResult(
                partition_index=tp.partition, partition_error_code=error
            )
        )
    return [
        _AddResp.AddPartitionsToTxnTopicResult(name=t, results_by_partition=ps) for t, ps in by_topic.items()
    ]


# -- AddOffsetsToTxn ---------------------------------------------------------------------------------


async def handle_add_offsets(ctx: RequestContext, request: AddOffsetsToTxnRequest) -> AddOffsetsToTxnResponse:
    coordinator = _coordinator(ctx)
    if coordinator is None:
        return AddOffsetsToTxnResponse(error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE)
    if not request.group_id:
        return AddOffsetsToTxnResponse(error_code=ErrorCode.INVALID_GROUP_ID)
    offsets_tp = TopicPartition(
        GROUP_METADATA_TOPIC, ctx.services.groups.coordinator.partition_for(request.group_id)
    )
    error = await coordinator.add_partitions(
        request.transactional_id, request.producer_id, request.producer_epoch, [offsets_tp]
    )
    return AddOffsetsToTxnResponse(error_code=_fenced_as_epoch(error, ctx.api_version))


# -- TxnOffsetCommit ---------------------------------------------------------------------------------

_CommitResp = TxnOffsetCommitResponse


async def handle_txn_offset_commit(ctx: RequestContext, request: TxnOffsetCommitRequest) -> _CommitResp:
    offsets = {
        TopicPartition(t.name, p.partition_index): CommitRequest(
            p.committed_offset,
            p.committed_leader_epoch if ctx.api_version >= 2 else -1,
            p.committed_metadata,
        )
        for t in request.topics
        for p in t.partitions
    }
    v3 = ctx.api_version >= 3
    results = await ctx.services.groups.coordinator.commit_txn_offsets(
        request.group_id,
        request.producer_id,
        request.producer_epoch,
        request.member_id if v3 else "",
        request.group_instance_id if v3 else None,
        request.generation_id if v3 else -1,
        offsets,
    )
    by_topic: dict[str, list[_CommitResp.TxnOffsetCommitResponsePartition]] = {}
    for tp, error in results.items():
        by_topic.setdefault(tp.topic, []).append(
            _CommitResp.TxnOffsetCommitResponsePartition(partition_index=tp.partition, error_code=error)
        )
    return _CommitResp(
        topics=[_CommitResp.TxnOffsetCommitResponseTopic(name=t, partitions=ps) for t, ps in by_topic.items()]
    )


# -- EndTxn -------------------------------------------------------------------------------------------


async def handle_end_txn(ctx: RequestContext, request: EndTxnRequest) -> EndTxnResponse:
    coordinator = _coordinator(ctx)
    if coordinator is None:
        return EndTxnResponse(error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE)
    error = await coordinator.end_transaction(
        request.transactional_id, request.producer_id, request.producer_epoch, request.committed
    )
    return EndTxnResponse(error_code=_fenced_as_epoch(error, ctx.api_version))


# -- WriteTxnMarkers ----------------------------------------------------------------------------------

_MarkResp = WriteTxnMarkersResponse


async def handle_write_txn_markers(ctx: RequestContext, request: WriteTxnMarkersRequest) -> _MarkResp:
    results = []
    for marker in request.markers:
        tps = [TopicPartition(t.name, p) for t in marker.topics for p in t.partition_indexes]
        outcome = await write_markers_locally(
            ctx.services.replicas,
            marker.producer_id,
            marker.producer_epoch,
            marker.coordinator_epoch,
            marker.transaction_result,
            tps,
            ctx.services.groups.coordinator,
        )
        by_topic: dict[str, list[_MarkResp.WritableTxnMarkerPartitionResult]] = {}
        for tp in tps:
            by_topic.setdefault(tp.topic, []).append(
                _MarkResp.WritableTxnMarkerPartitionResult(
                    partition_index=tp.partition, error_code=outcome[tp]
                )
            )
        results.append(
            _MarkResp.WritableTxnMarkerResult(
                producer_id=marker.producer_id,
                topics=[
                    _MarkResp.WritableTxnMarkerTopicResult(name=t, partitions=ps)
                    for t, ps in by_topic.items()
                ],
            )
        )
    return _MarkResp(markers=results)


# -- DescribeTransactions / ListTransactions / DescribeProducers (KIP-664) ----------------------------

_DescResp = DescribeTransactionsResponse
_STATES_BY_NAME = {s.kafka_name: s for s in TxnState}


def handle_describe_transactions(ctx: RequestContext, request: DescribeTransactionsRequest) -> _DescResp:
    coordinator = _coordinator(ctx)
    out = []
    for txn_id in request.transactional_ids:
        entry = _DescResp.TransactionState(transactional_id=txn_id, transaction_state="", producer_id=-1)
        out.append(entry)
        if coordinator is None:
            entry.error_code = ErrorCode.COORDINATOR_NOT_AVAILABLE
            continue
        error, md = coordinator.describe(txn_id)
        entry.error_code = error
        if md is None:
            continue
        by_topic: dict[str, list[int]] = {}
        for tp in sorted(md.partitions, key=lambda tp: (tp.topic, tp.partition)):
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        entry.transaction_state = md.state.kafka_name
        entry.transaction_timeout_ms = md.timeout_ms
        entry.transaction_start_time_ms = md.start_ms
        entry.producer_id = md.producer_id
        entry.producer_epoch = md.producer_epoch
        entry.topics = [_DescResp.TopicData(topic=t, partitions=ps) for t, ps in by_topic.items()]
    return _DescResp(transaction_states=out)


def handle_list_transactions(
    ctx: RequestContext, request: ListTransactionsRequest
) -> ListTransactionsResponse:
    coordinator = _coordinator(ctx)
    if coordinator is None:
        return ListTransactionsResponse(error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE)
    unknown = [name for name in request.state_filters if name not in _STATES_BY_NAME]
    states = [_STATES_BY_NAME[name] for name in request.state_filters if name in _STATES_BY_NAME]
    if unknown and not states:  # only unknown states asked for: nothing can match
        return ListTransactionsResponse(unknown_state_filters=unknown)
    error, found = coordinator.list_transactions(
        states, request.producer_id_filters, request.duration_filter if ctx.api_version >= 1 else -1
    )
    return ListTransactionsResponse(
        error_code=error,
        unknown_state_filters=unknown,
        transaction_states=[
            ListTransactionsResponse.TransactionState(
                transactional_id=md.transactional_id,
                producer_id=md.producer_id,
                transaction_state=md.state.kafka_name,
            )
            for md in found
        ],
    )


_ProdResp = DescribeProducersResponse


def handle_describe_producers(ctx: RequestContext, request: DescribeProducersRequest) -> _ProdResp:
    replicas = ctx.services.replicas
    topics = []
    for t in request.topics:
        parts = []
        for index in t.partition_indexes:
            out = _ProdResp.PartitionResponse(partition_index=index)
            parts.append(out)
            p = replicas.get_partition(TopicPartition(t.name, index))
            if p is None:
                out.error_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            elif not p.is_leader:
                out.error_code = ErrorCode.NOT_LEADER_OR_FOLLOWER
            else:
                out.active_producers = [
                    _ProdResp.ProducerState(
                        producer_id=e.producer_id,
                        producer_epoch=e.epoch,
                        last_sequence=e.last_seq,
                        last_timestamp=e.last_timestamp,
                        coordinator_epoch=e.coordinator_epoch,
                        current_txn_start_offset=e.current_txn_first_offset,
                    )
                    for e in p.producer_state.producers.values()
                ]
        topics.append(_ProdResp.TopicResponse(name=t.name, partitions=parts))
    return _ProdResp(topics=topics)
