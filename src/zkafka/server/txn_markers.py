"""Transaction markers: how the transaction coordinator's COMMIT/ABORT markers reach the
partitions of a transaction, and how a partition leader writes them.

`write_markers_locally` is the leader side, shared by the WriteTxnMarkers handler and by a
coordinator that leads the partition itself: one control batch per partition (the producer's id
and epoch, the coordinator epoch in the marker record), appended with acks=all and waited for.
`TxnMarkerChannel` is the coordinator side (`transactions.coordinator.MarkerWriter`): it groups
the partitions by their leader in the metadata cache, writes locally or sends WriteTxnMarkers v0
over the inter-broker listener (`BrokerLinks`, with the broker's client security), and reports
what must be retried.

Per-partition outcomes: NONE is done; UNKNOWN_TOPIC_OR_PARTITION (the topic was deleted) is done
as in Kafka; a fenced marker (TRANSACTION_COORDINATOR_FENCED, INVALID_PRODUCER_EPOCH) is dropped
with a warning: a newer coordinator or producer epoch has taken over; anything else is retried.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from typing import Final, Protocol

from zkafka.client.connection import NoCommonVersionError
from zkafka.protocol import ErrorCode, KafkaError
from zkafka.protocol.messages import WriteTxnMarkersRequest, WriteTxnMarkersResponse
from zkafka.records.batch import validate_batches
from zkafka.records.record import build_end_txn_marker
from zkafka.server.broker_links import BrokerLinks
from zkafka.server.metadata_cache import MetadataCache
from zkafka.server.replica_manager import ReplicaManager
from zkafka.storage.naming import TopicPartition
from zkafka.zk.topic_names import GROUP_METADATA_TOPIC

log = logging.getLogger(__name__)

MARKER_TIMEOUT_S = 30.0
"""How long a marker waits for its replication (Kafka's request.timeout.ms)."""

SETTLED: Final = frozenset({ErrorCode.NONE, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION})
FENCED: Final = frozenset({ErrorCode.TRANSACTION_COORDINATOR_FENCED, ErrorCode.INVALID_PRODUCER_EPOCH})


class TransactionalOffsets(Protocol):
    """The group coordinator's side of a marker on `__consumer_offsets` (TxnOffsetCommit)."""

    def complete_transaction(self, producer_id: int, partition: int, commit: bool) -> None: ...


async def write_markers_locally(
    replicas: ReplicaManager,
    producer_id: int,
    producer_epoch: int,
    coordinator_epoch: int,
    commit: bool,
    partitions: Iterable[TopicPartition],
    groups: TransactionalOffsets | None = None,
) -> dict[TopicPartition, ErrorCode]:
    """Append the marker to each partition led here (acks=all) and wait for the ISR; the group
    coordinator then applies or drops the offsets a transaction committed to a group."""
    out: dict[TopicPartition, ErrorCode] = {}
    waiting: dict[TopicPartition, tuple[int, int]] = {}
    now = replicas.now_ms()
    for tp in partitions:
        if replicas.get_partition(tp) is None:
            out[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            continue
        batch = bytearray(build_end_txn_marker(producer_id, producer_epoch, commit, coordinator_epoch, now))
        try:
            info, epoch = replicas.append_to_leader(tp, batch, validate_batches(batch), required_acks=-1)
        except KafkaError as e:
            out[tp] = e.code
            continue
        waiting[tp] = (info.last_offset + 1, epoch)
    if waiting:
        out.update(await replicas.wait_for_replication(waiting, MARKER_TIMEOUT_S))
    if groups is not None:
        for tp, error in out.items():
            if tp.topic == GROUP_METADATA_TOPIC and error == ErrorCode.NONE:
                groups.complete_transaction(producer_id, tp.partition, commit)
    return out


class TxnMarkerChannel:
    """The coordinator's way to the partition leaders (`transactions.coordinator.MarkerWriter`)."""

    def __init__(
        self,
        broker_id: int,
        replicas: ReplicaManager,
        metadata: MetadataCache,
        links: BrokerLinks,
        groups: TransactionalOffsets | None = None,
    ) -> None:
        self._broker_id = broker_id
        self._groups = groups
        self._replicas = replicas
        self._metadata = metadata
        self._links = links

    def close(self) -> None:
        self._links.close()

    async def write_markers(
        self,
        producer_id: int,
        producer_epoch: int,
        coordinator_epoch: int,
        commit: bool,
        partitions: frozenset[TopicPartition],
    ) -> frozenset[TopicPartition]:
        by_leader: dict[int, list[TopicPartition]] = {}
        remaining: set[TopicPartition] = set()
        for tp in partitions:
            info = self._metadata.partition(tp.topic, tp.partition)
            if info is None and not self._metadata.contains_topic(tp.topic):
                continue  # deleted: nothing to mark
            if info is None or info.leader < 0:
                remaining.add(tp)
                continue
            by_leader.setdefault(info.leader, []).append(tp)
        calls = [
            self._write(leader, tps, producer_id, producer_epoch, coordinator_epoch, commit)
            for leader, tps in by_leader.items()
        ]
        for outcome in await asyncio.gather(*calls):
            for tp, error in outcome.items():
                if error in FENCED:
                    log.warning("marker for producer %d on %s refused: %s", producer_id, tp, error.name)
                elif error not in SETTLED:
                    remaining.add(tp)
        return frozenset(remaining)

    async def _write(
        self,
        leader: int,
        partitions: list[TopicPartition],
        producer_id: int,
        producer_epoch: int,
        coordinator_epoch: int,
        commit: bool,
    ) -> dict[TopicPartition, ErrorCode]:
        if leader == self._broker_id:
            return await write_markers_locally(
                self._replicas,
                producer_id,
                producer_epoch,
                coordinator_epoch,
                commit,
                partitions,
                self._groups,
            )
        topics: dict[str, list[int]] = {}
        for tp in partitions:
            topics.setdefault(tp.topic, []).append(tp.partition)
        request = WriteTxnMarkersRequest(
            markers=[
                WriteTxnMarkersRequest.WritableTxnMarker(
                    producer_id=producer_id,
                    producer_epoch=producer_epoch,
                    transaction_result=commit,
                    topics=[
                        WriteTxnMarkersRequest.WritableTxnMarkerTopic(name=t, partition_indexes=ps)
                        for t, ps in topics.items()
                    ],
                    coordinator_epoch=coordinator_epoch,
                )
            ]
        )
        try:
            conn = await self._links.get(leader)
            response = await conn.send(request, version=0, timeout=MARKER_TIMEOUT_S + 5)
        except (TimeoutError, OSError, ConnectionError, NoCommonVersionError) as e:
            log.info("WriteTxnMarkers to broker %d failed: %s", leader, e)
            self._links.drop(leader)
            return {tp: ErrorCode.NETWORK_EXCEPTION for tp in partitions}
        assert isinstance(response, WriteTxnMarkersResponse)
        out = {tp: ErrorCode.NETWORK_EXCEPTION for tp in partitions}
        for marker in response.markers:
            for t in marker.topics:
                for p in t.partitions:
                    out[TopicPartition(t.name, p.partition_index)] = ErrorCode.lookup(p.error_code)
        return out
