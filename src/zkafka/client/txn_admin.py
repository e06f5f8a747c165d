"""Transaction administration (KIP-664): the calls `zkafka transactions` is built on, as Kafka's
Admin client makes them.

    async with TransactionAdmin("127.0.0.1:9092") as admin:
        print(await admin.list_transactions())                  # ListTransactions, every broker
        print(await admin.describe_transaction("my-app"))       # DescribeTransactions, its coordinator
        print(await admin.describe_producers([TopicPartition("t", 0)]))  # DescribeProducers, the leader
        await admin.abort_transaction(AbortSpec(TopicPartition("t", 0), pid, epoch, coordinator_epoch))

`abort_transaction` writes an ABORT marker straight to the partition leader with WriteTxnMarkers,
as Kafka's `Admin.abortTransaction` does: it ends a *hanging* transaction, one whose coordinator
no longer knows it, and the leader's LSO moves past it. It needs Cluster:ClusterAction when the
brokers have an authorizer. `force_terminate_transaction` is Kafka 4.1's (KIP-939): an
InitProducerId for the transactional id, which bumps its epoch, fences the running producer and
aborts its open transaction through the coordinator.

Retriable answers (COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR,
NOT_LEADER_OR_FOLLOWER, CONCURRENT_TRANSACTIONS) are retried with backoff until
`request_timeout_ms`; every other error is raised as the broker's `KafkaError`, or returned per
item by the calls that answer per item.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TypeVar

from zkafka.client.cluster import ClusterMetadata
from zkafka.client.cluster_client import ClusterClient, RetriableAnswer
from zkafka.client.security import ClientSecurity
from zkafka.client.types import TopicPartition
from zkafka.protocol import ErrorCode, KafkaError
from zkafka.protocol.messages import (
    DescribeProducersRequest,
    DescribeProducersResponse,
    DescribeTransactionsRequest,
    DescribeTransactionsResponse,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    InitProducerIdRequest,
    InitProducerIdResponse,
    ListTransactionsRequest,
    ListTransactionsResponse,
    WriteTxnMarkersRequest,
    WriteTxnMarkersResponse,
)

__all__ = [
    "AbortSpec",
    "OpenTransaction",
    "ProducerState",
    "TransactionAdmin",
    "TransactionDescription",
    "TransactionListing",
]

T = TypeVar("T")
TRANSACTION_KEY_TYPE = 1
"""FindCoordinator's key type for a transactional id."""
RETRIABLE = frozenset(
    {
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ErrorCode.NOT_COORDINATOR,
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.CONCURRENT_TRANSACTIONS,
    }
)
# WriteTxnMarkers v1 is flexible and FindCoordinator v4 batches keys: the versions below are the
# ones every zkafka broker serves (the brokers may advertise more).
MAX_VERSIONS = {FindCoordinatorRequest: 2, WriteTxnMarkersRequest: 0, InitProducerIdRequest: 1}
FORCE_TERMINATE_TIMEOUT_MS = 60_000
"""The transaction timeout sent with force-terminate's InitProducerId (Kafka's fenceProducers uses
the admin client's default API timeout, one minute); it bounds nothing once the epoch is bumped."""


@dataclass(frozen=True, slots=True)
class TransactionListing:
    transactional_id: str
    producer_id: int
    state: str
    """Kafka's state name: Empty, Ongoing, PrepareCommit, PrepareAbort, CompleteCommit, ..."""


@dataclass(frozen=True, slots=True)
class TransactionDescription:
    coordinator_id: int
    transactional_id: str
    state: str
    producer_id: int
    producer_epoch: int
    transaction_timeout_ms: int
    transaction_start_time_ms: int | None
    """None when no transaction is open (the broker sends -1)."""
    topic_partitions: tuple[TopicPartition, ...]
    """The partitions of the open transaction, or those still waiting for a marker."""


@dataclass(frozen=True, slots=True)
class ProducerState:
    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_timestamp: int
    coordinator_epoch: int | None
    """None when no marker from a coordinator was seen yet (the broker sends -1)."""
    current_transaction_start_offset: int | None
    """The first offset of the open transaction, None when none is open."""


@dataclass(frozen=True, slots=True)
class AbortSpec:
    """What an ABORT marker for one partition needs (Kafka's AbortTransactionSpec)."""

    topic_partition: TopicPartition
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int


@dataclass(frozen=True, slots=True)
class OpenTransaction:
    """A transaction a partition leader holds open (found by `find_hanging_transactions`)."""

    topic_partition: TopicPartition
    producer: ProducerState


def _check(code: int, what: str, message: str | None = None) -> None:
    """Raise `RetriableAnswer` for a retriable error code, `KafkaError` for any other."""
    if code == ErrorCode.NONE:
        return
    error = ErrorCode.lookup(code)
    if error in RETRIABLE:
        raise RetriableAnswer(error, what)
    raise KafkaError(error, f"{what}: {message or error.message}")


def _missing(meta: ClusterMetadata, tp: TopicPartition) -> KafkaError | None:
    """Why the metadata has no `tp` (TOPIC_AUTHORIZATION_FAILED for a topic the principal may not
    describe, UNKNOWN_TOPIC_OR_PARTITION), None when it has it."""
    topic = meta.topics.get(tp.topic)
    if topic is not None and topic.error != ErrorCode.NONE:
        return KafkaError(topic.error, f"topic {tp.topic!r}: {topic.error.message}")
    if topic is None or tp.partition not in topic.partitions:
        return KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"{tp.topic}-{tp.partition} does not exist")
    return None


class TransactionAdmin(ClusterClient):
    def __init__(
        self,
        bootstrap_servers: str | list[str] | None = None,
        *,
        client_id: str = "zkafka-transactions",
        request_timeout_ms: int = 30_000,
        retry_backoff_ms: int = 100,
        security: ClientSecurity | None = None,
    ) -> None:
        super().__init__(
            bootstrap_servers,
            client_id=client_id,
            request_timeout_ms=request_timeout_ms,
            retry_backoff_ms=retry_backoff_ms,
            security=security,
        )

    # -- ListTransactions --------------------------------------------------------------------------
    async def list_transactions(
        self,
        *,
        states: Iterable[str] = (),
        producer_ids: Iterable[int] = (),
        duration_filter_ms: int = -1,
    ) -> dict[int, list[TransactionListing]]:
        """broker id -> the transactions it coordinates, asked of every live broker (each one
        coordinates the `__transaction_state` partitions it leads). An empty filter passes every
        transaction; `duration_filter_ms` >= 0 keeps those open at least that long (KIP-994,
        ListTransactions v1)."""
        request = ListTransactionsRequest(
            state_filters=list(states),
            producer_id_filters=list(producer_ids),
            duration_filter=duration_filter_ms,
        )
        meta = await self.cluster.refresh()
        out: dict[int, list[TransactionListing]] = {}
        for broker in sorted(meta.brokers):

            async def ask(broker: int = broker) -> list[TransactionListing]:
                resp = await self.cluster.send(broker, request)
                assert isinstance(resp, ListTransactionsResponse)
                _check(resp.error_code, f"ListTransactions on broker {broker}")
                return [
                    TransactionListing(t.transactional_id, t.producer_id, t.transaction_state)
                    for t in resp.transaction_states
                ]

            out[broker] = await self._retrying(ask)
        return out

    # -- DescribeTransactions ------------------------------------------------------------------------
    async def coordinator(self, transactional_id: str) -> int:
        """The broker id coordinating `transactional_id` (FindCoordinator, key type TRANSACTION)."""

        async def find() -> int:
            resp = await self.cluster.send_any(
                FindCoordinatorRequest(key=transactional_id, key_type=TRANSACTION_KEY_TYPE),
                max_version=MAX_VERSIONS[FindCoordinatorRequest],
            )
            assert isinstance(resp, FindCoordinatorResponse)
            _check(resp.error_code, f"FindCoordinator for {transactional_id!r}", resp.error_message)
            if resp.node_id not in self.cluster.metadata.brokers:
                await self.cluster.refresh()
            return int(resp.node_id)

        return await self._retrying(find)

    async def describe_transaction(self, transactional_id: str) -> TransactionDescription:
        """The coordinator's state of `transactional_id`; KafkaError TRANSACTIONAL_ID_NOT_FOUND
        for an id the coordinator does not know."""

        async def ask() -> TransactionDescription:
            node = await self.coordinator(transactional_id)
            resp = await self.cluster.send(
                node, DescribeTransactionsRequest(transactional_ids=[transactional_id])
            )
            assert isinstance(resp, DescribeTransactionsResponse)
            found = [s for s in resp.transaction_states if s.transactional_id == transactional_id]
            if not found:
                raise KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR, f"broker {node} did not describe it")
            s = found[0]
            _check(s.error_code, f"DescribeTransactions of {transactional_id!r} on broker {node}")
            return TransactionDescription(
                coordinator_id=node,
                transactional_id=transactional_id,
                state=s.transaction_state,
                producer_id=s.producer_id,
                producer_epoch=s.producer_epoch,
                transaction_timeout_ms=s.transaction_timeout_ms,
                transaction_start_time_ms=None
                if s.transaction_start_time_ms < 0
                else s.transaction_start_time_ms,
                topic_partitions=tuple(TopicPartition(t.topic, p) for t in s.topics for p in t.partitions),
            )

        return await self._retrying(ask)

    async def describe_transactions(
        self, transactional_ids: Iterable[str]
    ) -> dict[str, TransactionDescription | KafkaError]:
        """Each id's description, or the error that id got."""
        out: dict[str, TransactionDescription | KafkaError] = {}
        for txn_id in dict.fromkeys(transactional_ids):
            try:
                out[txn_id] = await self.describe_transaction(txn_id)
            except KafkaError as e:
                out[txn_id] = e
        return out

    # -- DescribeProducers ---------------------------------------------------------------------------
    async def describe_producers(
        self, partitions: Iterable[TopicPartition], *, broker_id: int | None = None
    ) -> dict[TopicPartition, list[ProducerState] | KafkaError]:
        """The producers each partition's leader (or, with `broker_id`, that replica) holds, or
        the error the partition got: UNKNOWN_TOPIC_OR_PARTITION for one the cluster does not have,
        NOT_LEADER_OR_FOLLOWER when `broker_id` is not its leader (zkafka answers on leaders)."""
        wanted = list(dict.fromkeys(partitions))
        out: dict[TopicPartition, list[ProducerState] | KafkaError] = {}
        meta = await self.cluster.refresh(sorted({tp.topic for tp in wanted}))
        by_broker: dict[int, list[TopicPartition]] = {}
        for tp in wanted:
            missing = _missing(meta, tp)
            if missing is not None:
                out[tp] = missing
                continue
            target = broker_id if broker_id is not None else meta.leader(tp)
            by_broker.setdefault(target, []).append(tp)
        for target, tps in by_broker.items():
            out.update(await self._describe_producers_on(target, tps, fixed=broker_id is not None))
        return {tp: out[tp] for tp in wanted}

    async def _describe_producers_on(
        self, broker: int, tps: list[TopicPartition], *, fixed: bool
    ) -> dict[TopicPartition, list[ProducerState] | KafkaError]:
        by_topic: dict[str, list[int]] = {}
        for tp in tps:
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        request = DescribeProducersRequest(
            topics=[
                DescribeProducersRequest.TopicRequest(name=t, partition_indexes=ps)
                for t, ps in by_topic.items()
            ]
        )
        out: dict[TopicPartition, list[ProducerState] | KafkaError] = {}

        async def ask() -> None:
            target = broker if fixed else self.cluster.metadata.leader(tps[0])
            if target < 0:
                await self.cluster.refresh(list(by_topic))
                raise RetriableAnswer(ErrorCode.LEADER_NOT_AVAILABLE, f"DescribeProducers of {tps[0]}")
            resp = await self.cluster.send(target, request)
            assert isinstance(resp, DescribeProducersResponse)
            for t in resp.topics:
                for p in t.partitions:
                    tp = TopicPartition(t.name, p.partition_index)
                    error = ErrorCode.lookup(p.error_code)
                    if error == ErrorCode.NOT_LEADER_OR_FOLLOWER and not fixed:
                        await self.cluster.refresh(list(by_topic))
                        raise RetriableAnswer(error, f"DescribeProducers of {tp.topic}-{tp.partition}")
                    if error != ErrorCode.NONE:
                        out[tp] = KafkaError(error, p.error_message or error.message)
                        continue
                    out[tp] = [
                        ProducerState(
                            s.producer_id,
                            s.producer_epoch,
                            s.last_sequence,
                            s.last_timestamp,
                            None if s.coordinator_epoch < 0 else s.coordinator_epoch,
                            None if s.current_txn_start_offset < 0 else s.current_txn_start_offset,
                        )
                        for s in p.active_producers
                    ]

        await self._retrying(ask)
        for tp in tps:
            out.setdefault(tp, KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR, "the broker did not answer for it"))
        return out

    # -- WriteTxnMarkers (abort) ---------------------------------------------------------------------
    async def abort_transaction(self, spec: AbortSpec) -> None:
        """Write an ABORT marker for `spec` on the partition's leader; raises the leader's
        KafkaError (INVALID_PRODUCER_EPOCH for an epoch older than the producer's,
        TRANSACTION_COORDINATOR_FENCED for an older coordinator epoch, CLUSTER_AUTHORIZATION_FAILED
        without ClusterAction)."""
        tp = spec.topic_partition
        request = WriteTxnMarkersRequest(
            markers=[
                WriteTxnMarkersRequest.WritableTxnMarker(
                    producer_id=spec.producer_id,
                    producer_epoch=spec.producer_epoch,
                    transaction_result=False,  # ABORT
                    topics=[
                        WriteTxnMarkersRequest.WritableTxnMarkerTopic(
                            name=tp.topic, partition_indexes=[tp.partition]
                        )
                    ],
                    coordinator_epoch=spec.coordinator_epoch,
                )
            ]
        )
        what = f"WriteTxnMarkers (ABORT) for {tp.topic}-{tp.partition}"

        async def ask() -> None:
            meta = await self.cluster.refresh([tp.topic])
            missing = _missing(meta, tp)
            if missing is not None:
                raise missing
            leader = meta.leader(tp)
            if leader < 0:
                raise RetriableAnswer(ErrorCode.LEADER_NOT_AVAILABLE, what)
            resp = await self.cluster.send(leader, request, max_version=MAX_VERSIONS[WriteTxnMarkersRequest])
            assert isinstance(resp, WriteTxnMarkersResponse)
            codes = [p.error_code for m in resp.markers for t in m.topics for p in t.partitions]
            if not codes:
                raise KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR, f"{what}: broker {leader} answered nothing")
            _check(codes[0], f"{what} on broker {leader}")

        await self._retrying(ask)

    # -- InitProducerId (force-terminate) --------------------------------------------------------------
    async def force_terminate_transaction(self, transactional_id: str) -> tuple[int, int]:
        """Fence `transactional_id`'s producer and abort its open transaction (Kafka's
        `Admin.forceTerminateTransaction`); returns the new (producer id, epoch). The coordinator
        answers CONCURRENT_TRANSACTIONS while the abort it started completes: retried."""

        async def ask() -> tuple[int, int]:
            node = await self.coordinator(transactional_id)
            resp = await self.cluster.send(
                node,
                InitProducerIdRequest(
                    transactional_id=transactional_id, transaction_timeout_ms=FORCE_TERMINATE_TIMEOUT_MS
                ),
                max_version=MAX_VERSIONS[InitProducerIdRequest],
            )
            assert isinstance(resp, InitProducerIdResponse)
            _check(resp.error_code, f"InitProducerId for {transactional_id!r} on broker {node}")
            return resp.producer_id, resp.producer_epoch

        return await self._retrying(ask)

    # -- hanging transactions --------------------------------------------------------------------------
    async def find_hanging_transactions(
        self,
        partitions: Iterable[TopicPartition],
        max_transaction_timeout_ms: int,
        *,
        now_ms: int | None = None,
        batch_size: int = 500,
    ) -> list[OpenTransaction]:
        """The hanging transactions of `partitions`, as kafka-transactions finds them: an open
        transaction whose last write is more than `max_transaction_timeout_ms` old (a live one would
        have been aborted by its coordinator by then), whose producer id no coordinator lists, or
        whose coordinator does not know it (TRANSACTIONAL_ID_NOT_FOUND) or does not have this
        partition in its transaction. A partition's error raises it."""
        wanted = list(dict.fromkeys(partitions))
        now = int(time.time() * 1000) if now_ms is None else now_ms
        candidates: list[OpenTransaction] = []
        for start in range(0, len(wanted), batch_size):
            found = await self.describe_producers(wanted[start : start + batch_size])
            for tp, producers in found.items():
                if isinstance(producers, KafkaError):
                    raise KafkaError(
                        producers.code, f"DescribeProducers of {tp.topic}-{tp.partition}: {producers.message}"
                    )
                candidates += [
                    OpenTransaction(tp, p)
                    for p in producers
                    if p.current_transaction_start_offset is not None
                    and now - p.last_timestamp > max_transaction_timeout_ms
                ]
        if not candidates:
            return []
        producer_ids = {c.producer.producer_id for c in candidates}
        listed = await self.list_transactions(producer_ids=producer_ids)
        txn_ids = {
            t.producer_id: t.transactional_id
            for ts in listed.values()
            for t in ts
            if t.producer_id in producer_ids
        }
        descriptions: dict[str, TransactionDescription | None] = {}
        for txn_id, found_or_error in (await self.describe_transactions(set(txn_ids.values()))).items():
            if isinstance(found_or_error, KafkaError):
                if found_or_error.code != ErrorCode.TRANSACTIONAL_ID_NOT_FOUND:
                    raise found_or_error
                descriptions[txn_id] = None
            else:
                descriptions[txn_id] = found_or_error
        hanging = []
        for c in candidates:
            txn_id = txn_ids.get(c.producer.producer_id)
            description = None if txn_id is None else descriptions.get(txn_id)
            # DescribeTransactions lists the partitions of an ongoing transaction and those still
            # waiting for their marker: the coordinator will end those, and no other.
            if description is None or c.topic_partition not in description.topic_partitions:
                hanging.append(c)
        return hanging
