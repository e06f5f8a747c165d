"""The transaction coordinator of the `__transaction_state` partitions this broker leads.

It owns a partition's transactional ids from the moment it has replayed the partition
(`loading`) until leadership moves away, as the shared `coordinator.runtime.CoordinatorRuntime`
decides (this class is its `CoordinatorShards`): requests for an id of a partition still loading
get COORDINATOR_LOAD_IN_PROGRESS, for one not led here NOT_COORDINATOR (the client looks the
coordinator up again). Every change is decided by `metadata` (pure), written as one record with
acks=all through the runtime's `write`, and applied in memory only once the record is replicated
-- and only if this broker still owns the partition under the same load, so a coordinator that
lost leadership mid-write never acts on it (fencing).

Ending a transaction: EndTxn writes PrepareCommit/PrepareAbort and answers the client; the
markers then go to every partition of the transaction (`MarkerWriter`, the broker's
WriteTxnMarkers path) and, once all are written, CompleteCommit/CompleteAbort is recorded. A
coordinator that takes over a partition with a transaction in a Prepare state finishes it the
same way. An InitProducerId that meets an ongoing transaction, and the periodic timeout check
(`transaction.abort.timed.out.transaction.cleanup.interval.ms`), bump the epoch and abort it.
Ids idle longer than `transactional.id.expiration.ms` with no transaction open are removed
(a tombstone) every `transaction.remove.expired.transaction.cleanup.interval.ms`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from zkafka.coordinator.runtime import CoordinatorRuntime, PartitionLoad
from zkafka.coordinator.store import CoordinatorLogStore, group_append_error
from zkafka.protocol import ErrorCode
from zkafka.storage.naming import TopicPartition
from zkafka.transactions.loading import LoadedTransactions, replay_batch
from zkafka.transactions.log_records import encode_key, encode_value, transaction_partition_for
from zkafka.transactions.metadata import (
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    TransactionMetadata,
    TxnTransit,
    from_transit,
    new_metadata,
)
from zkafka.transactions.state import TxnState

log = logging.getLogger(__name__)

MARKER_RETRY_BACKOFF_S = 0.1
MAX_MARKER_BACKOFF_S = 2.0


@dataclass(frozen=True, slots=True)
class TxnConfig:
    """Kafka's `transaction.*` broker keys the coordinator uses."""

    num_partitions: int = 50
    max_timeout_ms: int = 900_000
    abort_timed_out_interval_ms: int = 10_000
    id_expiration_ms: int = 604_800_000
    remove_expired_interval_ms: int = 3_600_000

    @classmethod
    def from_broker(cls, cfg: Any) -> TxnConfig:
        return cls(
            num_partitions=cfg.transaction_state_log_num_partitions,
            max_timeout_ms=cfg.transaction_max_timeout_ms,
            abort_timed_out_interval_ms=cfg.transaction_abort_timed_out_transaction_cleanup_interval_ms,
            id_expiration_ms=cfg.transactional_id_expiration_ms,
            remove_expired_interval_ms=cfg.transaction_remove_expired_transaction_cleanup_interval_ms,
        )


@dataclass(frozen=True, slots=True)
class ProducerIdAndEpoch:
    error: ErrorCode
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH


class MarkerWriter(Protocol):
    """Writes a transaction's COMMIT/ABORT markers to its partitions (on their leaders)."""

    async def write_markers(
        self,
        producer_id: int,
        producer_epoch: int,
        coordinator_epoch: int,
        commit: bool,
        partitions: frozenset[TopicPartition],
    ) -> frozenset[TopicPartition]:
        """Returns the partitions still to be written (retried by the coordinator)."""
        ...


class TransactionCoordinator:
    def __init__(
        self,
        broker_id: int,
        config: TxnConfig,
        store: CoordinatorLogStore,
        new_producer_id: Callable[[], Awaitable[int]],
        markers: MarkerWriter | None = None,
        *,
        num_partitions: Callable[[], int] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.broker_id = broker_id
        self.config = config
        self.store = store
        self.markers = markers
        self._new_producer_id = new_producer_id
        self._clock = clock
        self.transactions: dict[int, dict[str, TransactionMetadata]] = {}
        """partition -> transactional id -> metadata, for the partitions owned (loaded)."""
        self.runtime = CoordinatorRuntime(
            store,
            self,
            new_load=LoadedTransactions,
            replay_batch=replay_batch,
            partition_of=transaction_partition_for,
            num_partitions=num_partitions or (lambda: config.num_partitions),
        )
        self._tasks: set[asyncio.Task[Any]] = set()
        self._periodic: list[asyncio.Task[None]] = []

    # -- lifecycle ----------------------------------------------------------------------------------
    def start(self) -> None:
        cfg = self.config
        self._periodic = [
            asyncio.ensure_future(self._every(cfg.abort_timed_out_interval_ms, self._abort_timed_out_once)),
            asyncio.ensure_future(self._every(cfg.remove_expired_interval_ms, self.remove_expired)),
        ]

    async def stop(self) -> None:
        await self.runtime.stop()
        tasks = [*self._tasks, *self._periodic]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def _now_ms(self) -> int:
        return int(self._clock() * 1000)

    def _spawn(self, coro: Awaitable[Any]) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def partition_for(self, transactional_id: str) -> int:
        return self.runtime.partition_for(transactional_id)

    # -- the runtime's CoordinatorShards: a partition's ids in and out --------------------------------
    def install(self, load: PartitionLoad, loaded: LoadedTransactions) -> None:
        txns = {tid: from_transit(tid, t) for tid, t in loaded.transactions.items()}
        self.transactions[load.partition] = txns
        log.info("loaded %s: %d transactional ids from %d records", loaded.name, len(txns), loaded.records)
        for md in txns.values():
            if md.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
                self._spawn(self._complete(load, md))

    def unload(self, partition: int) -> None:
        if self.transactions.pop(partition, None) is not None:
            log.info("unloaded %s-%d", self.store.topic, partition)

    def _owned(self, transactional_id: str) -> tuple[ErrorCode, int]:
        partition = self.partition_for(transactional_id)
        return self.runtime.check(partition), partition

    # -- writing a change ---------------------------------------------------------------------------
    async def _write(
        self, partition: int, md: TransactionMetadata, transit: TxnTransit, load: PartitionLoad | None = None
    ) -> ErrorCode:
        """Append the transit's record (acks=all); apply it if this broker still owns the id (under
        `load`, when the change began under an earlier await)."""
        record = (encode_key(md.transactional_id), encode_value(transit))
        result = await self.runtime.write(partition, [record], load=load)  # NOT_COORDINATOR once fenced
        if result.error != ErrorCode.NONE:
            md.abort_pending()
            return group_append_error(result.error)  # Kafka maps both coordinators' appends alike
        md.complete(transit)
        return ErrorCode.NONE

    # -- InitProducerId ---------------------------------------------------------------------------------
    async def init_producer_id(
        self, transactional_id: str, timeout_ms: int, expected: tuple[int, int] | None = None
    ) -> ProducerIdAndEpoch:
        if not transactional_id:
            return ProducerIdAndEpoch(ErrorCode.INVALID_REQUEST)
        if timeout_ms <= 0 or timeout_ms > self.config.max_timeout_ms:
            return ProducerIdAndEpoch(ErrorCode.INVALID_TRANSACTION_TIMEOUT)
        error, partition = self._owned(transactional_id)
        if error != ErrorCode.NONE:
            return ProducerIdAndEpoch(error)
        md = self.transactions[partition].get(transactional_id)
        if md is None:
            pid = await self._new_producer_id()
            error, partition = self._owned(transactional_id)  # re-checked after the wait
            if error != ErrorCode.NONE:
                return ProducerIdAndEpoch(error)
            md = self.transactions[partition].setdefault(
                transactional_id, new_metadata(transactional_id, pid, timeout_ms, self._now_ms())
            )
        if expected is not None and md.pending is None and not md.is_expected_producer(*expected):
            return ProducerIdAndEpoch(ErrorCode.PRODUCER_FENCED)  # KIP-360: a stale instance
        if md.state == TxnState.ONGOING and md.pending is None:
            # a new instance of the producer: fence the old one and abort what it left open;
            # the client retries and gets the next epoch once the abort is complete
            self._fence_and_abort(partition, md)
            return ProducerIdAndEpoch(ErrorCode.CONCURRENT_TRANSACTIONS)
        new_pid = None
        if md.pending is None and md.needs_new_producer_id(expected):
            new_pid = await self._new_producer_id()
        result = md.prepare_init_producer_id(timeout_ms, self._now_ms(), new_pid, expected)
        if isinstance(result, ErrorCode):
            return ProducerIdAndEpoch(result)
        error = await self._write(partition, md, result)
        if error != ErrorCode.NONE:
            return ProducerIdAndEpoch(error)
        return ProducerIdAndEpoch(ErrorCode.NONE, md.producer_id, md.producer_epoch)

    # -- AddPartitionsToTxn -----------------------------------------------------------------------------
    async def add_partitions(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Iterable[TopicPartition],
    ) -> ErrorCode:
        if not transactional_id:
            return ErrorCode.INVALID_REQUEST
        error, partition = self._owned(transactional_id)
        if error != ErrorCode.NONE:
            return error
        md = self.transactions[partition].get(transactional_id)
        if md is None:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING
        result = md.prepare_add_partitions(producer_id, producer_epoch, partitions, self._now_ms())
        if isinstance(result, ErrorCode):
            return result
        return await self._write(partition, md, result)

    def verify_partitions(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Iterable[TopicPartition],
    ) -> dict[TopicPartition, ErrorCode]:
        """AddPartitionsToTxn v4 `verify_only` (KIP-890): is each partition in the producer's
        transaction? Nothing is written. A pending change is not waited for, as in Kafka: the
        partitions a transaction holds are those of its last replicated record, and the leader
        checks again when it appends."""
        wanted = list(partitions)
        if not transactional_id:
            return dict.fromkeys(wanted, ErrorCode.INVALID_REQUEST)
        error, partition = self._owned(transactional_id)
        if error != ErrorCode.NONE:
            return dict.fromkeys(wanted, error)
        md = self.transactions[partition].get(transactional_id)
        if md is None:
            return dict.fromkeys(wanted, ErrorCode.INVALID_PRODUCER_ID_MAPPING)
        error = md.verify_producer(producer_id, producer_epoch)
        if error != ErrorCode.NONE:
            return dict.fromkeys(wanted, error)
        return {tp: ErrorCode.NONE if tp in md.partitions else ErrorCode.INVALID_TXN_STATE for tp in wanted}

    # -- EndTxn -------------------------------------------------------------------------------------
    async def end_transaction(
        self, transactional_id: str, producer_id: int, producer_epoch: int, commit: bool
    ) -> ErrorCode:
        if not transactional_id:
            return ErrorCode.INVALID_REQUEST
        error, partition = self._owned(transactional_id)
        if error != ErrorCode.NONE:
            return error
        md = self.transactions[partition].get(transactional_id)
        if md is None:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING
        result = md.prepare_end(producer_id, producer_epoch, commit, self._now_ms())
        if isinstance(result, ErrorCode):
            return result
        load = self.runtime.current(partition)
        error = await self._write(partition, md, result)
        if error == ErrorCode.NONE and load is not None:
            self._spawn(self._complete(load, md))
        return error

    def _fence_and_abort(self, partition: int, md: TransactionMetadata) -> None:
        md.prepare_fence()
        load = self.runtime.current(partition)

        async def abort() -> None:
            result = md.prepare_end(
                md.producer_id, md.producer_epoch, False, self._now_ms(), from_client=False
            )
            if isinstance(result, ErrorCode):
                log.warning("%s: the fencing abort was refused: %s", md.transactional_id, result.name)
                md.abort_pending()
                return
            if await self._write(partition, md, result, load) == ErrorCode.NONE and load is not None:
                await self._complete(load, md)

        self._spawn(abort())

    async def _complete(self, load: PartitionLoad, md: TransactionMetadata) -> None:
        """Write the markers of a PrepareCommit/PrepareAbort transaction, then its Complete record;
        retried until done or the partition moves away."""
        partition = load.partition
        commit = md.state == TxnState.PREPARE_COMMIT
        remaining = frozenset(md.partitions)
        backoff = MARKER_RETRY_BACKOFF_S
        while True:
            if not load.owned:
                return  # the next coordinator finishes it
            if remaining and self.markers is not None:
                remaining = await self.markers.write_markers(
                    md.producer_id,
                    md.producer_epoch,
                    load.epoch,
                    commit,
                    remaining,
                )
            elif remaining:
                log.error("%s: no marker writer; the transaction stays open", md.transactional_id)
                return
            done = not remaining and md.pending is None
            now = self._now_ms()
            if done and await self._write(partition, md, md.prepare_complete(now), load) == ErrorCode.NONE:
                return
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, MAX_MARKER_BACKOFF_S)

    # -- DescribeTransactions / ListTransactions (KIP-664) ------------------------------------------------
    def describe(self, transactional_id: str) -> tuple[ErrorCode, TransactionMetadata | None]:
        error, partition = self._owned(transactional_id)
        if error != ErrorCode.NONE:
            return error, None
        md = self.transactions[partition].get(transactional_id)
        return (ErrorCode.TRANSACTIONAL_ID_NOT_FOUND, None) if md is None else (ErrorCode.NONE, md)

    def list_transactions(
        self, states: Iterable[TxnState] = (), producer_ids: Iterable[int] = (), min_duration_ms: int = -1
    ) -> tuple[ErrorCode, list[TransactionMetadata]]:
        """The ids of the partitions owned here, filtered as ListTransactions asks (an empty filter
        passes everything; the duration counts from the transaction's start)."""
        wanted_states, wanted_pids = set(states), set(producer_ids)
        now = self._now_ms()
        found = [
            md
            for txns in self.transactions.values()
            for md in txns.values()
            if (not wanted_states or md.state in wanted_states)
            and (not wanted_pids or md.producer_id in wanted_pids)
            and (min_duration_ms < 0 or now - md.start_ms >= min_duration_ms)
        ]
        return (ErrorCode.COORDINATOR_LOAD_IN_PROGRESS if self.runtime.loading else ErrorCode.NONE), found

    # -- timeouts -----------------------------------------------------------------------------------
    def abort_timed_out(self) -> int:
        """Fence and abort every ongoing transaction older than its timeout; returns how many."""
        now = self._now_ms()
        n = 0
        for partition, txns in list(self.transactions.items()):
            for md in txns.values():
                if md.has_timed_out(now):
                    log.info("aborting %s: open longer than %d ms", md.transactional_id, md.timeout_ms)
                    self._fence_and_abort(partition, md)
                    n += 1
        return n

    async def _abort_timed_out_once(self) -> None:
        self.abort_timed_out()

    async def _every(self, interval_ms: int, job: Callable[[], Awaitable[Any]]) -> None:
        while True:
            await asyncio.sleep(interval_ms / 1000)
            try:
                await job()
            except Exception:
                log.exception("periodic transaction coordinator task failed")

    # -- transactional-id expiry ------------------------------------------------------------------------
    async def remove_expired(self) -> int:
        """Remove the ids idle past `transactional.id.expiration.ms` (Dead, then a tombstone in
        `__transaction_state`); returns how many went."""
        now = self._now_ms()
        removed = 0
        for partition, txns in list(self.transactions.items()):
            load = self.runtime.current(partition)
            for md in [m for m in txns.values() if m.is_expired(now, self.config.id_expiration_ms)]:
                md.prepare_dead(now)
                tombstone = [(encode_key(md.transactional_id), None)]
                result = await self.runtime.write(partition, tombstone, load=load)
                if result.error == ErrorCode.NONE:
                    txns.pop(md.transactional_id, None)
                    removed += 1
                else:
                    md.abort_pending()
        if removed:
            log.info("removed %d expired transactional ids", removed)
        return removed
