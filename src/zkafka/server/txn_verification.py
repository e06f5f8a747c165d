"""KIP-890 part 1: a partition leader checks with the transaction coordinator before it appends
the first batch of a producer's transaction to a partition.

Without the check a transactional batch that never went through AddPartitionsToTxn (a buggy
client, or a batch of a transaction that has already ended arriving late) opens a transaction no
coordinator knows about: no marker ever closes it and the LSO stays behind it (a *hanging
transaction*). With it, the leader asks the coordinator of the produce request's
`transactional_id` (AddPartitionsToTxn v4, `verify_only`) whether the partition is in the
producer's current transaction: locally when this broker is that coordinator, else over the
inter-broker listener with the broker's own client security (`BrokerLinks`).

Only the first batch costs a question: once a producer has an open transaction on the partition
at that epoch (the partition's producer state), later batches go straight to the log. The answer
is tied to the partition's state by a guard (`ProducerStateManager.start_verification`): a marker
that lands while the question is out (the transaction ended meanwhile) drops it, and the batch is
refused. An old epoch is refused by the coordinator (the producer was fenced), so a late batch of
an earlier instance cannot join the new instance's transaction.

Answers, as Kafka's partition leaders give them to producers: a partition not in the transaction
is INVALID_TXN_STATE; PRODUCER_FENCED becomes INVALID_PRODUCER_EPOCH; an answer the coordinator
could not give yet (CONCURRENT_TRANSACTIONS, COORDINATOR_LOAD_IN_PROGRESS, NOT_COORDINATOR,
COORDINATOR_NOT_AVAILABLE, a network failure) becomes NOT_ENOUGH_REPLICAS, which every producer
retries without a metadata refresh; a coordinator that refuses the broker (CLUSTER_AUTHORIZATION_
FAILED) is INVALID_TXN_STATE. A coordinator too old for v4 is not asked (the batch is appended,
as Kafka does). `transaction.partition.verification.enable=false` turns all of it off.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Final

from zkafka.client.connection import NoCommonVersionError
from zkafka.protocol import ErrorCode
from zkafka.protocol.messages import AddPartitionsToTxnRequest, AddPartitionsToTxnResponse
from zkafka.server.broker_links import BrokerLinks
from zkafka.server.metadata_cache import MetadataCache
from zkafka.storage.naming import TopicPartition
from zkafka.transactions.coordinator import TransactionCoordinator
from zkafka.zk.topic_names import TRANSACTION_STATE_TOPIC

log = logging.getLogger(__name__)

VERIFY_VERSION: Final = 4
VERIFY_TIMEOUT_S: Final = 30.0
"""How long a remote coordinator may take (Kafka's request.timeout.ms)."""

_RETRIABLE: Final = frozenset(
    {
        ErrorCode.CONCURRENT_TRANSACTIONS,
        ErrorCode.NETWORK_EXCEPTION,
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ErrorCode.NOT_COORDINATOR,
        ErrorCode.REQUEST_TIMED_OUT,
    }
)


def for_producer(error: ErrorCode) -> ErrorCode:
    """The coordinator's answer as a produce error (Kafka's ReplicaManager mapping)."""
    if error == ErrorCode.PRODUCER_FENCED:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    if error in _RETRIABLE:
        return ErrorCode.NOT_ENOUGH_REPLICAS
    if error == ErrorCode.CLUSTER_AUTHORIZATION_FAILED:
        return ErrorCode.INVALID_TXN_STATE
    return error


class TxnVerifier:
    def __init__(
        self,
        broker_id: int,
        metadata: MetadataCache,
        coordinator: TransactionCoordinator,
        links: BrokerLinks,
    ) -> None:
        self._broker_id = broker_id
        self._metadata = metadata
        self._coordinator = coordinator
        self._links = links

    async def verify(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Iterable[TopicPartition],
    ) -> dict[TopicPartition, ErrorCode]:
        """Each partition's produce error; NONE where the partition is in the transaction."""
        wanted = list(partitions)
        info = self._metadata.partition(
            TRANSACTION_STATE_TOPIC, self._coordinator.partition_for(transactional_id)
        )
        if info is None or info.leader < 0:
            return dict.fromkeys(wanted, for_producer(ErrorCode.COORDINATOR_NOT_AVAILABLE))
        if info.leader == self._broker_id:
            answer = self._coordinator.verify_partitions(
                transactional_id, producer_id, producer_epoch, wanted
            )
        else:
            answer = await self._ask(info.leader, transactional_id, producer_id, producer_epoch, wanted)
        return {tp: for_producer(answer.get(tp, ErrorCode.UNKNOWN_SERVER_ERROR)) for tp in wanted}

    async def _ask(
        self,
        leader: int,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: list[TopicPartition],
    ) -> dict[TopicPartition, ErrorCode]:
        topics: dict[str, list[int]] = {}
        for tp in partitions:
            topics.setdefault(tp.topic, []).append(tp.partition)
        req = AddPartitionsToTxnRequest
        request = req(
            transactions=[
                req.AddPartitionsToTxnTransaction(
                    transactional_id=transactional_id,
                    producer_id=producer_id,
                    producer_epoch=producer_epoch,
                    verify_only=True,
                    topics=[req.AddPartitionsToTxnTopic(name=t, partitions=ps) for t, ps in topics.items()],
                )
            ]
        )
        try:
            conn = await self._links.get(leader)
            response = await conn.send(request, version=VERIFY_VERSION, timeout=VERIFY_TIMEOUT_S)
        except NoCommonVersionError:
            log.warning("broker %d cannot verify transactions (no AddPartitionsToTxn v4): not asked", leader)
            return dict.fromkeys(partitions, ErrorCode.NONE)
        except (TimeoutError, OSError, ConnectionError) as e:
            log.info("verifying %r with broker %d failed: %s", transactional_id, leader, e)
            self._links.drop(leader)
            return dict.fromkeys(partitions, ErrorCode.NETWORK_EXCEPTION)
        assert isinstance(response, AddPartitionsToTxnResponse)
        if response.error_code:
            return dict.fromkeys(partitions, ErrorCode.lookup(response.error_code))
        out: dict[TopicPartition, ErrorCode] = {}
        for result in response.results_by_transaction:
            for t in result.topic_results:
                for p in t.results_by_partition:
                    out[TopicPartition(t.name, p.partition_index)] = ErrorCode.lookup(p.partition_error_code)
        return out
