"""One partition replica on this broker: its log, its role, and (as leader) the high watermark.

The leader knows every follower's log end offset from the fetch offsets they send (a follower
fetching offset N holds everything below N). The high watermark is the smallest log end offset
among the in-sync replicas, leader included; it only moves forward. acks=all produce requests
and consumer fetches wait on it (`zkafka.server.delayed`).

Idempotent-producer state (`zkafka.storage.producer_state`) is rebuilt when the replica is
created and after a truncation: latest snapshot at or below the log end, then a replay of the batch
headers after it (and of the markers in control batches).

Transactions: a COMMIT/ABORT marker (a control batch, from WriteTxnMarkers on the leader, fetched
as is by followers) closes its producer's open transaction; an aborted one is recorded in the
marker segment's `.txnindex`, on leader and followers alike. `last_stable_offset` (LSO) is the
first offset of the earliest transaction not yet settled, capped by the high watermark:
read_committed consumers read below it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Protocol

from zkafka.protocol import ErrorCode, KafkaError
from zkafka.records.batch import CONTROL_MASK, BatchHeader, CorruptRecordError, iter_headers
from zkafka.records.record import end_txn_marker
from zkafka.storage.log import AppendInfo, Log
from zkafka.storage.naming import TopicPartition
from zkafka.storage.producer_state import (
    BatchMetadata,
    CompletedTxn,
    ProducerStateError,
    ProducerStateManager,
)
from zkafka.storage.txn_index import AbortedTxn

Marker = tuple[bool, int]
"""A transaction marker's (commit, coordinator epoch)."""


def _marker(buf: bytearray | memoryview | bytes, header: BatchHeader) -> Marker | None:
    if not header.is_control:
        return None
    try:
        return end_txn_marker(buf, header)
    except (CorruptRecordError, ValueError, IndexError) as e:
        raise KafkaError(ErrorCode.CORRUPT_MESSAGE, f"control batch at {header.base_offset}: {e}") from None


log = logging.getLogger(__name__)

_NO_FOLLOWERS: dict[int, FollowerState] = {}
"""Never written: `update_follower_fetch` replaces it with a dict of the partition's own."""


class CaughtUpClock(Protocol):
    """A follower's fetch-session round time (`fetch_sessions.ChangeTracking`): every follower
    position parked on it was caught up at `ms`."""

    ms: int


class FollowerState:
    """What the leader knows of one follower's replica. A follower whose fetch session (KIP-227)
    leaves a caught-up partition out of its rounds has that position parked on the session's
    clock (`attach`): it is caught up as of the session's last round, with no work per round."""

    __slots__ = ("_caught_up_ms", "clock", "last_fetch_ms", "log_end_offset", "log_start_offset")

    def __init__(
        self, log_end_offset: int = -1, log_start_offset: int = -1, last_caught_up_ms: int = 0
    ) -> None:
        self.log_end_offset = log_end_offset
        self.log_start_offset = log_start_offset
        """As the follower last reported it in a fetch (-1: unknown, before Fetch v5)."""
        self.last_fetch_ms = 0
        self._caught_up_ms = last_caught_up_ms
        self.clock: CaughtUpClock | None = None

    @property
    def last_caught_up_ms(self) -> int:
        clock = self.clock
        return self._caught_up_ms if clock is None else max(self._caught_up_ms, clock.ms)

    @last_caught_up_ms.setter
    def last_caught_up_ms(self, ms: int) -> None:
        self.detach()
        self._caught_up_ms = ms

    def attach(self, clock: CaughtUpClock) -> None:
        """Caught up from now on as of `clock.ms`, until `detach` (the next read of the partition)."""
        if self.clock is not clock:
            self.detach()
            self.clock = clock

    def detach(self) -> None:
        clock = self.clock
        if clock is not None:
            self._caught_up_ms = max(self._caught_up_ms, clock.ms)
            self.clock = None


class PartitionListener(Protocol):
    """Who hears of a partition's changes (the replica manager): high-watermark moves wake parked
    requests; any change a fetcher could see (leader appends, high watermark, log start, leader
    and ISR state) is what a follower's fetch session reads again."""

    def high_watermark_moved(self, tp: TopicPartition) -> None: ...

    def partition_changed(self, tp: TopicPartition) -> None: ...


@dataclass(frozen=True, slots=True)
class LeaderState:
    """What the controller decided for this partition (a LeaderAndIsr partition state)."""

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    replicas: tuple[int, ...]
    zk_version: int
    controller_epoch: int
    adding_replicas: tuple[int, ...] = ()
    removing_replicas: tuple[int, ...] = ()


class Partition:
    # slots: a broker holds tens of thousands of these
    __slots__ = (
        "_state",
        "broker_id",
        "followers",
        "high_watermark",
        "listener",
        "log",
        "producer_state",
        "tp",
    )

    def __init__(
        self,
        tp: TopicPartition,
        broker_id: int,
        log: Log,
        state: LeaderState | None = None,
        high_watermark: int = 0,
        listener: PartitionListener | None = None,
    ) -> None:
        self.tp = tp
        self.broker_id = broker_id
        self.log = log
        self._state = state
        self.high_watermark = high_watermark
        self.followers: dict[int, FollowerState] = _NO_FOLLOWERS
        """Leader only (a follower shares one empty dict: nothing per idle follower replica)."""
        self.listener = listener
        self.producer_state = ProducerStateManager(self.log.directory)
        self.log.first_unstable_offset = self.producer_state.first_unstable_offset
        self.log.last_producer_records = self.producer_state.last_records
        self.log.on_roll = self._on_roll
        self._rebuild_producer_state()
        self._set_high_watermark(
            min(max(self.high_watermark, self.log.log_start_offset), self.log.log_end_offset)
        )

    def _on_roll(self, _base: int) -> None:
        self.take_producer_snapshot()

    @property
    def state(self) -> LeaderState | None:
        return self._state

    @state.setter
    def state(self, state: LeaderState | None) -> None:
        self._state = state
        self._changed()

    def _changed(self) -> None:
        if self.listener is not None:
            self.listener.partition_changed(self.tp)

    def _set_high_watermark(self, hw: int) -> None:
        moved = hw != self.high_watermark
        self.high_watermark = hw
        self.producer_state.on_high_watermark(hw)
        if moved:
            self._changed()

    @property
    def last_stable_offset(self) -> int:
        """Where read_committed consumers stop: no unsettled transaction below it."""
        first_unstable = self.producer_state.first_unstable_offset()
        hw = self.high_watermark
        return hw if first_unstable is None else min(first_unstable, hw)

    # -- role -------------------------------------------------------------------------------------
    # (read `_state` itself: these run several times per produce request and follower fetch)
    @property
    def is_leader(self) -> bool:
        state = self._state
        return state is not None and state.leader == self.broker_id

    @property
    def leader_epoch(self) -> int:
        state = self._state
        return state.leader_epoch if state is not None else -1

    @property
    def isr(self) -> tuple[int, ...]:
        state = self._state
        return state.isr if state is not None else ()

    def make_leader(self, state: LeaderState, now_ms: int) -> None:
        """Become leader: record the new epoch at the log end (so followers truncate correctly)
        and start tracking every other assigned replica."""
        self.log.assign_leader_epoch(state.leader_epoch)  # first: a closed log raises, nothing changed
        self.state = state
        old = self.followers
        self.followers = {
            r: old.get(r, FollowerState(last_caught_up_ms=now_ms if r in state.isr else 0))
            for r in state.replicas
            if r != self.broker_id
        }
        self.maybe_increment_high_watermark()

    def make_follower(self, state: LeaderState) -> None:
        self.state = state
        self.followers = _NO_FOLLOWERS

    # -- leader: append ---------------------------------------------------------------------------
    def check_producer_state(self, headers: list[BatchHeader]) -> BatchMetadata | None:
        """Sequence checks before offsets are assigned; a duplicate returns the original batch."""
        dup: BatchMetadata | None = None
        for h in headers:
            try:
                found = self.producer_state.check(h)
            except ProducerStateError as e:
                raise KafkaError(getattr(ErrorCode, e.error), str(e)) from e
            if found is not None:
                dup = found
        if dup is not None and len(headers) != 1:
            # Kafka only answers single-batch retries from the cache; a multi-batch request that
            # repeats one of its batches is a client bug.
            raise KafkaError(
                ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, "duplicate batch inside a larger request"
            )
        return dup

    def append_as_leader(self, batches: bytearray | memoryview, headers: list[BatchHeader]) -> AppendInfo:
        """Append as leader. Control batches (transaction markers: only the WriteTxnMarkers path
        builds them) are checked against the producer's and coordinator's epochs first, and
        transactional batches against the producer's epoch (Produce checked them already; the
        group coordinator's TxnOffsetCommit batches are checked here)."""
        markers = {h.position: _marker(batches, h) for h in headers if h.is_control}
        for h in headers:
            if not h.is_transactional:
                continue
            m = markers.get(h.position)
            try:
                if m is not None:
                    self.producer_state.check_marker(h.producer_id, h.producer_epoch, m[1])
                elif not h.is_control:  # no zombie writes, also through a coordinator (TxnOffsetCommit)
                    self.producer_state.check_epoch(h)
            except ProducerStateError as e:
                raise KafkaError(getattr(ErrorCode, e.error), str(e)) from e
        info = self.log.append(batches, headers, leader_epoch=self.leader_epoch, assign_offsets=True)
        if headers[0].producer_id >= 0:
            # `headers` still hold the producer's base offsets; re-read the patched ones
            for h in iter_headers(batches):
                self._update_producer_state(h, markers.get(h.position))
        self.producer_state.map_end_offset = info.last_offset + 1
        if not self.maybe_increment_high_watermark():
            self._changed()  # the log end moved: followers' sessions read it again
        return info

    def _update_producer_state(self, header: BatchHeader, marker: Marker | None) -> None:
        psm = self.producer_state
        completed = psm.update(header, marker)
        if completed is not None:
            self._index_if_aborted(completed)

    def _index_if_aborted(self, completed: CompletedTxn) -> None:
        if completed.is_aborted:
            self.log.append_aborted_txn(
                AbortedTxn(
                    completed.producer_id,
                    completed.first_offset,
                    completed.last_offset,
                    self.producer_state.last_stable_offset_after(completed),
                )
            )

    # -- follower: append ------------------------------------------------------------------------
    def append_as_follower(self, batches: bytearray | memoryview, headers: list[BatchHeader]) -> AppendInfo:
        markers = {h.position: _marker(batches, h) for h in headers if h.attributes & CONTROL_MASK}
        info = self.log.append(batches, headers, leader_epoch=None, assign_offsets=False)
        psm = self.producer_state
        if markers or any(h.producer_id >= 0 for h in headers):
            for h in headers:
                self._update_producer_state(h, markers.get(h.position))
        else:
            # no producer ids, no markers (plain producers): nothing for the producer state but how
            # far the log is mapped, as `update` would record batch by batch (hundreds per fetch)
            psm.map_end_offset = max(psm.map_end_offset, headers[-1].next_offset)
        return info

    def increment_log_start_offset(self, offset: int) -> bool:
        """DeleteRecords on the leader: move the log start (followers' sessions hear of it)."""
        moved = self.log.increment_log_start_offset(offset)
        if moved:
            self._changed()
        return moved

    def update_follower_high_watermark(self, leader_hw: int) -> None:
        new = min(leader_hw, self.log.log_end_offset)
        if new > self.high_watermark:
            self._set_high_watermark(new)

    def start_over_at(self, offset: int) -> None:
        """A follower behind its leader's log start: drop the whole log and start empty at
        `offset` (Kafka's truncateFullyAndStartAt), the high watermark with it."""
        self.log.truncate_fully_and_start_at(offset)
        self.producer_state.clear(offset)
        self._set_high_watermark(offset)

    def truncate_to(self, offset: int) -> None:
        if offset < self.log.log_end_offset:
            self.log.truncate_to(offset)
            self.producer_state.delete_snapshots(above=offset)
            # rebuilt rather than trimmed: a transaction whose marker was cut is open again
            self._rebuild_producer_state()
        self._set_high_watermark(min(self.high_watermark, self.log.log_end_offset))

    # -- leader: followers and the high watermark -------------------------------------------------
    def update_follower_fetch(
        self, replica_id: int, fetch_offset: int, now_ms: int, log_start_offset: int = -1
    ) -> bool:
        """Record a follower's fetch; True when its log start offset moved (DeleteRecords waits
        on that)."""
        f = self.followers.get(replica_id)
        if f is None:
            if self.followers is _NO_FOLLOWERS:
                self.followers = {}
            f = self.followers[replica_id] = FollowerState()
        f.detach()  # read again: caught up only as this fetch says from here on
        start_moved = log_start_offset > f.log_start_offset
        f.log_start_offset = max(f.log_start_offset, log_start_offset)
        f.log_end_offset = fetch_offset
        f.last_fetch_ms = now_ms
        if fetch_offset >= self.log.log_end_offset:
            f.last_caught_up_ms = now_ms
        self.maybe_increment_high_watermark()
        return start_moved

    def low_watermark(self) -> int:
        """The smallest log start offset of the in-sync replicas: what DeleteRecords answers, and
        how far every in-sync copy has really let go of old records."""
        leader = self.state.leader if self.state is not None else -1
        starts = [self.log.log_start_offset]
        for r in self.isr:
            if r != leader:
                f = self.followers.get(r)
                starts.append(f.log_start_offset if f is not None else -1)
        return min(starts)

    def maybe_increment_high_watermark(self) -> bool:
        if not self.is_leader:
            return False
        new_hw = self.log.log_end_offset
        for r in self.isr:
            if r == self.broker_id:
                continue
            f = self.followers.get(r)
            new_hw = min(new_hw, f.log_end_offset if f is not None and f.log_end_offset >= 0 else 0)
        if new_hw > self.high_watermark:
            self._set_high_watermark(new_hw)
            if self.listener is not None:
                self.listener.high_watermark_moved(self.tp)
            return True
        return False

    # -- producer state ---------------------------------------------------------------------------
    def _rebuild_producer_state(self) -> None:
        leo = self.log.log_end_offset
        psm = self.producer_state
        # after an unclean shutdown, replay from below the re-validated segments and re-add their
        # aborted transactions to the `.txnindex` (it may have lost entries; re-adding one it
        # holds is a no-op), as Kafka's recoverSegment rebuilds it
        recovered, self.log.recovered_from = self.log.recovered_from, None
        listed, self.log.snapshots_at_load = self.log.snapshots_at_load, None
        if leo == 0 and recovered is None:
            # an empty log from offset 0: no snapshot can hold producers (none had a batch), so a
            # new replica (thousands at topic creation) does not list its directory for them
            psm.clear()
            start = None
        else:
            start = psm.load_latest_snapshot(leo if recovered is None else recovered, listed)
        from_offset = start if start is not None else self.log.log_start_offset
        psm.map_end_offset = from_offset
        on_completed = None
        if recovered is not None:

            def on_completed(done: CompletedTxn) -> None:
                if done.last_offset >= recovered:
                    self._index_if_aborted(done)

        if from_offset < leo:
            psm.replay(
                (
                    (h, None if data is None else _marker(data, h._replace(position=0)))
                    for h, data in self.log.iter_batch_headers(max(from_offset, self.log.log_start_offset))
                ),
                on_completed,
            )
        psm.on_high_watermark(self.high_watermark)

    def take_producer_snapshot(self, *, fsync: bool = True) -> None:
        try:
            self.producer_state.take_snapshot(fsync=fsync)
            self.producer_state.delete_snapshots(at_or_below=self.log.log_start_offset - 1)
        except OSError as e:  # a snapshot is an optimisation: never fail shutdown for it
            log.warning("%s: producer snapshot failed: %s", self.tp, e)
