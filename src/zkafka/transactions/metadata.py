"""One transactional id's state and the coordinator's decisions on it, as pure functions.

Every change follows Kafka's two steps: a `prepare_*` call checks the request against the
current state and, when a record must be written, returns a `TxnTransit` (what the record will
say) and marks the metadata *pending*; once the record is replicated the coordinator calls
`complete(transit)`, or `abort_pending()` when the write failed. While a change is pending every
other request gets CONCURRENT_TRANSACTIONS (the client retries), so the in-memory state never runs
ahead of the log. A `prepare_*` call returns an `ErrorCode` instead when there is nothing to
write: NONE for a request already satisfied (a retry), or the error the client gets.

Producer epochs: a new transactional id starts at epoch 0; every InitProducerId bumps the epoch,
which fences the previous producer instance (its requests now carry an older epoch and get
PRODUCER_FENCED; the markers the coordinator writes carry the new epoch, so partition leaders
refuse the zombie's batches with INVALID_PRODUCER_EPOCH). An epoch that would reach 32767
(`Short.MAX_VALUE`) is exhausted: the id moves on to a new producer id at epoch 0.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from zkafka.protocol import ErrorCode
from zkafka.storage.naming import TopicPartition
from zkafka.transactions.state import TxnState, is_legal

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
MAX_EPOCH = (1 << 15) - 1  # Short.MAX_VALUE


def is_epoch_exhausted(epoch: int) -> bool:
    """Kafka keeps the last epoch free for fencing: bumping to 32766 is the last step."""
    return epoch >= MAX_EPOCH - 1


class IllegalTransitionError(Exception):
    """A transition the state machine forbids: a coordinator bug, never a client's doing."""


@dataclass(frozen=True, slots=True)
class TxnTransit:
    """What one `__transaction_state` record says: the metadata after the change."""

    producer_id: int
    last_producer_id: int
    producer_epoch: int
    last_producer_epoch: int
    timeout_ms: int
    state: TxnState
    partitions: frozenset[TopicPartition]
    start_ms: int
    update_ms: int


@dataclass(slots=True)
class TransactionMetadata:
    transactional_id: str
    producer_id: int
    timeout_ms: int
    producer_epoch: int = NO_PRODUCER_EPOCH
    last_producer_id: int = NO_PRODUCER_ID
    last_producer_epoch: int = NO_PRODUCER_EPOCH
    state: TxnState = TxnState.EMPTY
    partitions: set[TopicPartition] = field(default_factory=set)
    start_ms: int = -1
    update_ms: int = -1
    pending: TxnState | None = None

    # -- the two steps ------------------------------------------------------------------------------
    def _prepare(
        self,
        state: TxnState,
        *,
        producer_id: int | None = None,
        epoch: int | None = None,
        last_epoch: int | None = None,
        timeout_ms: int | None = None,
        partitions: Iterable[TopicPartition] | None = None,
        start_ms: int | None = None,
        now_ms: int,
    ) -> TxnTransit:
        if self.pending is not None:
            raise IllegalTransitionError(f"{self.transactional_id}: {self.pending.kafka_name} is pending")
        if not is_legal(self.state, state):
            raise IllegalTransitionError(
                f"{self.transactional_id}: {self.state.kafka_name} -> {state.kafka_name} is illegal"
            )
        self.pending = state
        pid = self.producer_id if producer_id is None else producer_id
        return TxnTransit(
            producer_id=pid,
            last_producer_id=self.producer_id if pid != self.producer_id else self.last_producer_id,
            producer_epoch=self.producer_epoch if epoch is None else epoch,
            last_producer_epoch=self.last_producer_epoch if last_epoch is None else last_epoch,
            timeout_ms=self.timeout_ms if timeout_ms is None else timeout_ms,
            state=state,
            partitions=frozenset(self.partitions if partitions is None else partitions),
            start_ms=self.start_ms if start_ms is None else start_ms,
            update_ms=now_ms,
        )

    def complete(self, transit: TxnTransit) -> None:
        """The transit's record is replicated: make it the current state."""
        if self.pending != transit.state:
            raise IllegalTransitionError(
                f"{self.transactional_id}: completing {transit.state.kafka_name} but "
                f"{self.pending.kafka_name if self.pending else 'nothing'} is pending"
            )
        self.pending = None
        self.producer_id = transit.producer_id
        self.last_producer_id = transit.last_producer_id
        self.producer_epoch = transit.producer_epoch
        self.last_producer_epoch = transit.last_producer_epoch
        self.timeout_ms = transit.timeout_ms
        self.state = transit.state
        self.partitions = set(transit.partitions)
        self.start_ms = transit.start_ms
        self.update_ms = transit.update_ms

    def abort_pending(self) -> None:
        """The transit's record could not be written: forget it (a fence's epoch bump stays,
        as in Kafka, so the fenced producer stays fenced)."""
        self.pending = None

    # -- InitProducerId ---------------------------------------------------------------------------
    def prepare_init_producer_id(
        self,
        timeout_ms: int,
        now_ms: int,
        new_producer_id: int | None,
        expected: tuple[int, int] | None = None,
    ) -> TxnTransit | ErrorCode:
        """InitProducerId on an existing id. `new_producer_id` is used only when the epoch is
        exhausted (the caller allocates it up front when `needs_new_producer_id`). `expected` is
        KIP-360's (producer id, epoch) the client last had, or None. An ongoing transaction is not
        handled here: see `prepare_fence`."""
        if self.pending is not None or self.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
            return ErrorCode.CONCURRENT_TRANSACTIONS
        if self.state == TxnState.DEAD:
            return ErrorCode.CONCURRENT_TRANSACTIONS
        if expected is not None and not self.is_expected_producer(*expected):
            return ErrorCode.PRODUCER_FENCED
        if self.state == TxnState.ONGOING:
            raise IllegalTransitionError("an ongoing transaction is fenced first (prepare_fence)")
        if self.needs_new_producer_id(expected):
            if new_producer_id is None:
                raise IllegalTransitionError("the epoch is exhausted: a new producer id is needed")
            last_epoch = self.producer_epoch if expected is not None else NO_PRODUCER_EPOCH
            return self._prepare(
                TxnState.EMPTY,
                producer_id=new_producer_id,
                epoch=0,
                last_epoch=last_epoch,
                timeout_ms=timeout_ms,
                partitions=(),
                start_ms=-1,
                now_ms=now_ms,
            )
        bumped = self.producer_epoch + 1
        if expected is None:
            epoch, last_epoch = bumped, NO_PRODUCER_EPOCH
        elif self.producer_epoch == NO_PRODUCER_EPOCH or expected[1] == self.producer_epoch:
            epoch, last_epoch = bumped, self.producer_epoch
        elif expected[1] == self.last_producer_epoch:
            # a retry of an InitProducerId that already bumped: answer the same epoch again
            epoch, last_epoch = self.producer_epoch, self.last_producer_epoch
        else:
            return ErrorCode.PRODUCER_FENCED
        return self._prepare(
            TxnState.EMPTY,
            epoch=epoch,
            last_epoch=last_epoch,
            timeout_ms=timeout_ms,
            partitions=(),
            start_ms=-1,
            now_ms=now_ms,
        )

    def needs_new_producer_id(self, expected: tuple[int, int] | None = None) -> bool:
        return is_epoch_exhausted(self.producer_epoch) and (
            expected is None or expected[1] == self.producer_epoch
        )

    def is_expected_producer(self, producer_id: int, epoch: int) -> bool:
        """KIP-360: may a producer that last had (`producer_id`, `epoch`) re-initialise? Yes for
        an id with no epoch yet (a producer moving to this transactional id), for the current
        producer id (the epoch is checked when it is bumped), and for the previous one at an
        exhausted epoch (a retry of the InitProducerId that rotated it)."""
        if self.producer_epoch == NO_PRODUCER_EPOCH or producer_id == self.producer_id:
            return True
        # after a rotation, the previous id at its last epoch is the same producer retrying
        return producer_id == self.last_producer_id and is_epoch_exhausted(epoch)

    def prepare_fence(self) -> None:
        """InitProducerId (or the timeout) meets an ongoing transaction: bump the epoch now, so
        the old producer is fenced, and mark PrepareEpochFence pending; the caller then aborts the
        transaction with `prepare_end(abort, from_client=False)` using the new epoch."""
        if self.pending is not None:
            raise IllegalTransitionError(f"{self.transactional_id}: {self.pending.kafka_name} is pending")
        if not is_legal(self.state, TxnState.PREPARE_EPOCH_FENCE):
            raise IllegalTransitionError(f"{self.transactional_id}: cannot fence in {self.state.kafka_name}")
        if self.producer_epoch < MAX_EPOCH:
            self.producer_epoch += 1
        self.pending = TxnState.PREPARE_EPOCH_FENCE

    # -- AddPartitionsToTxn ------------------------------------------------------------------------
    def _check_producer(self, producer_id: int, epoch: int) -> ErrorCode:
        if producer_id != self.producer_id:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING
        if epoch != self.producer_epoch:
            return ErrorCode.PRODUCER_FENCED
        return ErrorCode.NONE

    def verify_producer(self, producer_id: int, epoch: int) -> ErrorCode:
        """KIP-890's verification: NONE when the producer's current transaction may take data
        (its partitions are then checked one by one), else the error the leader is told."""
        error = self._check_producer(producer_id, epoch)
        if error == ErrorCode.NONE and self.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
            return ErrorCode.CONCURRENT_TRANSACTIONS
        return error

    def prepare_add_partitions(
        self, producer_id: int, epoch: int, partitions: Iterable[TopicPartition], now_ms: int
    ) -> TxnTransit | ErrorCode:
        error = self._check_producer(producer_id, epoch)
        if error != ErrorCode.NONE:
            return error
        if self.pending is not None or self.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
            return ErrorCode.CONCURRENT_TRANSACTIONS
        if self.state == TxnState.DEAD:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING
        wanted = set(partitions)
        if self.state == TxnState.ONGOING and wanted <= self.partitions:
            return ErrorCode.NONE
        start = now_ms if self.state != TxnState.ONGOING else self.start_ms
        return self._prepare(
            TxnState.ONGOING, partitions=self.partitions | wanted, start_ms=start, now_ms=now_ms
        )

    # -- EndTxn -----------------------------------------------------------------------------------
    def prepare_end(
        self, producer_id: int, epoch: int, commit: bool, now_ms: int, *, from_client: bool = True
    ) -> TxnTransit | ErrorCode:
        """EndTxn from the client, or the coordinator's own abort after `prepare_fence`
        (`from_client=False`, with the bumped epoch)."""
        if producer_id != self.producer_id:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING
        fencing = not from_client and self.pending == TxnState.PREPARE_EPOCH_FENCE
        if epoch != self.producer_epoch:
            return ErrorCode.PRODUCER_FENCED
        if self.pending is not None and not fencing:
            return ErrorCode.CONCURRENT_TRANSACTIONS
        state = self.state
        if state == TxnState.ONGOING:
            target = TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT
            if fencing:
                if commit:
                    raise IllegalTransitionError("a fence only ever aborts")
                self.pending = None  # PrepareEpochFence gives way to PrepareAbort (never written)
            return self._prepare(target, now_ms=now_ms)
        if state == TxnState.COMPLETE_COMMIT:
            return ErrorCode.NONE if commit else ErrorCode.INVALID_TXN_STATE
        if state == TxnState.COMPLETE_ABORT:
            return ErrorCode.INVALID_TXN_STATE if commit else ErrorCode.NONE
        if state == TxnState.PREPARE_COMMIT:
            return ErrorCode.CONCURRENT_TRANSACTIONS if commit else ErrorCode.INVALID_TXN_STATE
        if state == TxnState.PREPARE_ABORT:
            return ErrorCode.INVALID_TXN_STATE if commit else ErrorCode.CONCURRENT_TRANSACTIONS
        return ErrorCode.INVALID_TXN_STATE  # Empty (nothing begun), Dead

    def prepare_complete(self, now_ms: int) -> TxnTransit:
        """Every marker is written: PrepareCommit -> CompleteCommit, PrepareAbort -> CompleteAbort."""
        if self.state == TxnState.PREPARE_COMMIT:
            target = TxnState.COMPLETE_COMMIT
        elif self.state == TxnState.PREPARE_ABORT:
            target = TxnState.COMPLETE_ABORT
        else:
            raise IllegalTransitionError(
                f"{self.transactional_id}: no markers to complete in {self.state.kafka_name}"
            )
        return self._prepare(target, partitions=(), now_ms=now_ms)

    # -- expiry -----------------------------------------------------------------------------------
    def is_expired(self, now_ms: int, expiration_ms: int) -> bool:
        """Idle past `transactional.id.expiration.ms` with no transaction open: may be removed."""
        return self.pending is None and self.state.is_complete and now_ms - self.update_ms >= expiration_ms

    def prepare_dead(self, now_ms: int) -> TxnTransit:
        """The id is removed: its record becomes a tombstone."""
        return self._prepare(TxnState.DEAD, partitions=(), now_ms=now_ms)

    # -- timeouts ---------------------------------------------------------------------------------
    def has_timed_out(self, now_ms: int) -> bool:
        return (
            self.state == TxnState.ONGOING
            and self.pending is None
            and now_ms > self.start_ms + self.timeout_ms
        )


def new_metadata(
    transactional_id: str, producer_id: int, timeout_ms: int, now_ms: int
) -> TransactionMetadata:
    """A transactional id seen for the first time: epoch -1, so its first InitProducerId bump
    gives epoch 0 (Kafka's order)."""
    return TransactionMetadata(transactional_id, producer_id, timeout_ms, update_ms=now_ms)


def from_transit(transactional_id: str, transit: TxnTransit) -> TransactionMetadata:
    """The metadata a loaded record describes."""
    md = TransactionMetadata(transactional_id, transit.producer_id, transit.timeout_ms)
    md.pending = transit.state
    md.complete(transit)
    return md
