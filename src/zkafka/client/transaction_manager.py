"""The transactional producer's state machine and its requests to the two coordinators.

States, as in Kafka's producer: UNINITIALIZED --init_transactions--> READY --begin--> IN_TRANSACTION
--commit/abort--> READY. Two error states:

* ABORTABLE_ERROR: a send, AddPartitionsToTxn or an offsets commit of the open transaction failed.
  `send` and `commit_transaction` raise `TransactionAbortableError`; `abort_transaction` clears it.
* FATAL_ERROR: a newer producer with the same transactional id fenced this one (PRODUCER_FENCED,
  INVALID_PRODUCER_EPOCH) or it is not authorized. Every later call raises `FatalProducerError`.

Requests: FindCoordinator (key type 1) finds the transaction coordinator and InitProducerId gets
the producer id and a bumped epoch from it (which fences older instances and aborts what they
left open). Before the sender sends the first batch of a transaction to a partition it adds every
partition new to the transaction in one AddPartitionsToTxn (`add_partitions`); a broker checks
this (KIP-890) and refuses transactional data for partitions it was not told about.
`send_offsets` is AddOffsetsToTxn to the transaction coordinator, then TxnOffsetCommit to the
group's coordinator; `end` is EndTxn. Coordinator errors (NOT_COORDINATOR,
COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE), CONCURRENT_TRANSACTIONS and broken
connections are retried, the coordinator looked up again, until `timeout_ms`.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import time
from collections.abc import Callable, Iterable, Mapping

from zkafka.client.accumulator import SequenceNumbers
from zkafka.client.cluster import Cluster
from zkafka.client.connection import ConnectionError_
from zkafka.client.errors import (
    BrokerUnavailableError,
    ClientTimeoutError,
    FatalProducerError,
    TransactionAbortableError,
    TransactionStateError,
)
from zkafka.client.group_admin import (
    COORDINATOR_ERRORS,
    GROUP_KEY,
    TRANSACTION_KEY,
    CoordinatorRetry,
    find_coordinator,
)
from zkafka.client.types import ConsumerGroupMetadata, OffsetAndMetadata, TopicPartition
from zkafka.protocol import ErrorCode, KafkaError, Message
from zkafka.protocol.messages import (
    AddOffsetsToTxnRequest,
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    EndTxnRequest,
    InitProducerIdRequest,
    InitProducerIdResponse,
    TxnOffsetCommitRequest,
    TxnOffsetCommitResponse,
)

log = logging.getLogger(__name__)

FATAL_ERRORS = frozenset(
    {
        ErrorCode.PRODUCER_FENCED,
        ErrorCode.INVALID_PRODUCER_EPOCH,
        ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
        ErrorCode.TRANSACTION_COORDINATOR_FENCED,
        ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
        ErrorCode.INVALID_TXN_STATE,
    }
)
_RETRY = COORDINATOR_ERRORS | {ErrorCode.CONCURRENT_TRANSACTIONS}
# The client speaks the producer-to-coordinator versions (v4+ of AddPartitionsToTxn is the
# brokers' batched verification; a newer EndTxn would hand back a bumped epoch, KIP-890 part 2).
_MAX = {
    InitProducerIdRequest: 2,
    AddPartitionsToTxnRequest: 3,
    AddOffsetsToTxnRequest: 3,
    TxnOffsetCommitRequest: 3,
    EndTxnRequest: 3,
}


class TxnState(enum.Enum):
    UNINITIALIZED = "UNINITIALIZED"
    INITIALIZING = "INITIALIZING"
    READY = "READY"
    IN_TRANSACTION = "IN_TRANSACTION"
    COMMITTING = "COMMITTING"
    ABORTING = "ABORTING"
    ABORTABLE_ERROR = "ABORTABLE_ERROR"
    FATAL_ERROR = "FATAL_ERROR"


class TransactionManager:
    """One transactional id's state; the `Producer` owns one and calls it from its API and sender."""

    def __init__(
        self,
        cluster: Cluster,
        sequences: SequenceNumbers,
        transactional_id: str,
        transaction_timeout_ms: int,
        timeout_ms: int,
    ) -> None:
        self.cluster = cluster
        self.sequences = sequences
        self.transactional_id = transactional_id
        self.transaction_timeout_ms = transaction_timeout_ms
        self.timeout = timeout_ms / 1000
        self.state = TxnState.UNINITIALIZED
        self.error: KafkaError | None = None
        """What put the manager in ABORTABLE_ERROR or FATAL_ERROR."""
        self.added: set[TopicPartition] = set()
        self.pending: set[TopicPartition] = set()
        """Partitions with records in the transaction but not yet added with AddPartitionsToTxn."""
        self._offsets_added = False
        self._coordinators: dict[tuple[int, str], int] = {}

    # -- checks the producer makes --------------------------------------------------------------
    def check_send(self) -> None:
        """Raise unless a record may be appended now."""
        self._raise_error_state()
        if self.state != TxnState.IN_TRANSACTION:
            raise TransactionStateError(
                f"cannot send in state {self.state.value}: call begin_transaction() first"
            )

    def record_partition(self, tp: TopicPartition) -> None:
        if tp not in self.added:
            self.pending.add(tp)

    def may_send(self, tp: TopicPartition) -> bool:
        return tp in self.added

    def on_send_failure(self, error: BaseException) -> None:
        """A batch of the open transaction failed: the transaction can only be aborted now."""
        if self.state in (TxnState.IN_TRANSACTION, TxnState.COMMITTING):
            code = error.code if isinstance(error, KafkaError) else ErrorCode.UNKNOWN_SERVER_ERROR
            self._transition_to_error(code, f"a send of the transaction failed: {error}")

    # -- the API ------------------------------------------------------------------------------------
    async def init(self) -> None:
        self._raise_fatal()
        if self.state != TxnState.UNINITIALIZED:
            raise TransactionStateError(f"init_transactions() was already called (state {self.state.value})")
        self.state = TxnState.INITIALIZING
        request = InitProducerIdRequest(
            transactional_id=self.transactional_id, transaction_timeout_ms=self.transaction_timeout_ms
        )
        try:
            resp = await self._call(request, lambda r: _code(r.error_code), what="InitProducerId", init=True)
        except BaseException:
            if self.state == TxnState.INITIALIZING:
                self.state = TxnState.UNINITIALIZED  # may be called again
            raise
        assert isinstance(resp, InitProducerIdResponse)
        self.sequences.set_identity(resp.producer_id, resp.producer_epoch)
        self.state = TxnState.READY
        log.debug("%s: producer id %d epoch %d", self.transactional_id, resp.producer_id, resp.producer_epoch)

    def begin(self) -> None:
        self._raise_error_state()
        if self.state != TxnState.READY:
            what = "call init_transactions() first" if self.state == TxnState.UNINITIALIZED else "one is open"
            raise TransactionStateError(f"cannot begin a transaction in state {self.state.value}: {what}")
        self.added.clear()
        self.pending.clear()
        self._offsets_added = False
        self.state = TxnState.IN_TRANSACTION

    async def add_partitions(self) -> None:
        """Add every pending partition to the transaction in one request (the sender's call)."""
        wanted = sorted(self.pending)
        if not wanted:
            return
        if self.state != TxnState.IN_TRANSACTION:
            # aborting after an error: these records were never part of the transaction
            raise self.error or TransactionStateError(f"no open transaction (state {self.state.value})")
        by_topic: dict[str, list[int]] = {}
        for tp in wanted:
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        request = AddPartitionsToTxnRequest(
            v3_and_below_transactional_id=self.transactional_id,
            v3_and_below_producer_id=self.sequences.producer_id,
            v3_and_below_producer_epoch=self.sequences.producer_epoch,
            v3_and_below_topics=[
                AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(name=t, partitions=ps)
                for t, ps in by_topic.items()
            ],
        )
        try:
            await self._call(request, _add_partitions_code, what=f"AddPartitionsToTxn {wanted}")
        except KafkaError as e:
            raise self._transition_to_error(e.code, e.message) from None
        self.added.update(wanted)
        self.pending.difference_update(wanted)

    async def send_offsets(
        self,
        offsets: Mapping[TopicPartition, int | OffsetAndMetadata],
        group: str | ConsumerGroupMetadata,
    ) -> None:
        self.check_send()
        meta = ConsumerGroupMetadata(group) if isinstance(group, str) else group
        if not meta.group_id:
            raise ValueError("send_offsets_to_transaction needs a group id")
        partitions = _offset_partitions(offsets)
        try:
            if not self._offsets_added:
                await self._call(
                    AddOffsetsToTxnRequest(
                        transactional_id=self.transactional_id,
                        producer_id=self.sequences.producer_id,
                        producer_epoch=self.sequences.producer_epoch,
                        group_id=meta.group_id,
                    ),
                    lambda r: _code(r.error_code),
                    what=f"AddOffsetsToTxn {meta.group_id!r}",
                )
                self._offsets_added = True
            request = TxnOffsetCommitRequest(
                transactional_id=self.transactional_id,
                group_id=meta.group_id,
                producer_id=self.sequences.producer_id,
                producer_epoch=self.sequences.producer_epoch,
                generation_id=meta.generation_id,
                member_id=meta.member_id,
                group_instance_id=meta.group_instance_id,
                topics=[
                    TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic(name=t, partitions=ps)
                    for t, ps in partitions.items()
                ],
            )
            await self._call(
                request,
                _txn_offset_commit_code,
                what=f"TxnOffsetCommit {meta.group_id!r}",
                coordinator=(GROUP_KEY, meta.group_id),
            )
        except KafkaError as e:
            raise self._transition_to_error(e.code, e.message) from None

    def check_commit(self) -> None:
        self._raise_error_state()
        if self.state != TxnState.IN_TRANSACTION:
            raise TransactionStateError(f"no transaction to commit (state {self.state.value})")

    def check_abort(self) -> None:
        self._raise_fatal()
        if self.state not in (TxnState.IN_TRANSACTION, TxnState.ABORTABLE_ERROR):
            raise TransactionStateError(f"no transaction to abort (state {self.state.value})")

    async def end(self, commit: bool) -> None:
        """EndTxn (the producer flushed first). A transaction that never reached the coordinator
        (no partition, no offsets) ends without a request."""
        if commit:
            self.check_commit()
        else:
            self.check_abort()
        self.state = TxnState.COMMITTING if commit else TxnState.ABORTING
        if self.added or self._offsets_added:
            request = EndTxnRequest(
                transactional_id=self.transactional_id,
                producer_id=self.sequences.producer_id,
                producer_epoch=self.sequences.producer_epoch,
                committed=commit,
            )
            try:
                await self._call(request, lambda r: _code(r.error_code), what="EndTxn")
            except KafkaError as e:
                # refused: fenced (fatal), or the transaction can only be aborted (again)
                raise self._transition_to_error(e.code, e.message) from None
            except BaseException as e:
                # a timeout: the outcome is unknown and the same call may be repeated (Kafka's rule)
                if commit:
                    self.state = TxnState.IN_TRANSACTION
                else:
                    self.state = TxnState.ABORTABLE_ERROR
                    self.error = self.error or TransactionAbortableError(
                        ErrorCode.REQUEST_TIMED_OUT, f"the abort did not complete: {e}"
                    )
                raise
        self.added.clear()
        self.pending.clear()
        self._offsets_added = False
        self.error = None
        self.state = TxnState.READY

    # -- errors ----------------------------------------------------------------------------------------
    def _raise_fatal(self) -> None:
        if self.state == TxnState.FATAL_ERROR:
            assert self.error is not None
            raise self.error

    def _raise_error_state(self) -> None:
        if self.state in (TxnState.FATAL_ERROR, TxnState.ABORTABLE_ERROR):
            assert self.error is not None
            raise self.error

    def _transition_to_error(self, code: ErrorCode, message: str) -> KafkaError:
        if self.state == TxnState.FATAL_ERROR:
            assert self.error is not None
            return self.error
        error: KafkaError
        if code in FATAL_ERRORS:
            error = FatalProducerError(
                code,
                f"transactional id {self.transactional_id!r}: {message}; "
                "the producer cannot be used any more, close it",
            )
            self.state = TxnState.FATAL_ERROR
        else:
            error = TransactionAbortableError(
                code, f"transactional id {self.transactional_id!r}: {message}; abort the transaction"
            )
            self.state = TxnState.ABORTABLE_ERROR
        self.error = error
        return error

    # -- requests ------------------------------------------------------------------------------------
    async def _call(
        self,
        request: Message,
        code_of: Callable[[Message], ErrorCode],
        *,
        what: str,
        coordinator: tuple[int, str] | None = None,
        init: bool = False,
    ) -> Message:
        """Send `request` to its coordinator (the transaction's unless `coordinator` names a
        group), retrying the retriable answers until the timeout. Raises KafkaError for the rest
        (FatalProducerError for the fatal codes during init)."""
        key = coordinator or (TRANSACTION_KEY, self.transactional_id)
        deadline = time.monotonic() + self.timeout
        max_version = _MAX[type(request)]
        while True:
            try:
                node = self._coordinators.get(key)
                if node is None:
                    node = self._coordinators[key] = await find_coordinator(self.cluster, key[1], key[0])
                resp = await self.cluster.send(node, request, max_version=max_version)
                code = code_of(resp)
                if code == ErrorCode.NONE:
                    return resp
                if code in COORDINATOR_ERRORS:
                    self._coordinators.pop(key, None)
                if code not in _RETRY and not code.retriable:
                    if init and code in FATAL_ERRORS:
                        raise self._transition_to_error(code, f"{what}: {code.message}")
                    raise KafkaError(code, f"{what}: {code.message}")
                last: BaseException = KafkaError(code, f"{what}: {code.message}")
            except (CoordinatorRetry, ConnectionError_, BrokerUnavailableError, ClientTimeoutError) as e:
                self._coordinators.pop(key, None)
                last = e
            if time.monotonic() >= deadline:
                raise ClientTimeoutError(
                    f"{what} did not succeed within {self.timeout:g} s: {last}"
                ) from last
            log.debug("%s: retrying after %s", what, last)
            await asyncio.sleep(self.cluster.retry_backoff)


def _code(raw: int) -> ErrorCode:
    return ErrorCode.lookup(raw)


def _worst(codes: Iterable[int]) -> ErrorCode:
    """The error to act on among per-partition codes (OPERATION_NOT_ATTEMPTED only says that
    another partition failed)."""
    found = ErrorCode.NONE
    for raw in codes:
        code = ErrorCode.lookup(raw)
        if code == ErrorCode.NONE:
            continue
        if code in FATAL_ERRORS:
            return code
        if found in (ErrorCode.NONE, ErrorCode.OPERATION_NOT_ATTEMPTED):
            found = code
    return found


def _add_partitions_code(resp: Message) -> ErrorCode:
    assert isinstance(resp, AddPartitionsToTxnResponse)
    return _worst(
        p.partition_error_code for t in resp.results_by_topic_v3_and_below for p in t.results_by_partition
    )


def _txn_offset_commit_code(resp: Message) -> ErrorCode:
    assert isinstance(resp, TxnOffsetCommitResponse)
    return _worst(p.error_code for t in resp.topics for p in t.partitions)


def _offset_partitions(
    offsets: Mapping[TopicPartition, int | OffsetAndMetadata],
) -> dict[str, list[TxnOffsetCommitRequest.TxnOffsetCommitRequestPartition]]:
    by_topic: dict[str, list[TxnOffsetCommitRequest.TxnOffsetCommitRequestPartition]] = {}
    for tp, value in sorted(offsets.items()):
        offset, metadata = (value, "") if isinstance(value, int) else (value.offset, value.metadata)
        if not isinstance(offset, int) or offset < 0:
            raise ValueError(f"{tp}: a committed offset is an int >= 0, got {offset!r}")
        by_topic.setdefault(tp.topic, []).append(
            TxnOffsetCommitRequest.TxnOffsetCommitRequestPartition(
                partition_index=tp.partition, committed_offset=offset, committed_metadata=metadata
            )
        )
    if not by_topic:
        raise ValueError("send_offsets_to_transaction needs at least one offset")
    return by_topic
