"""The partitions this broker holds and their roles, as decided by the controller.

LeaderAndIsr requests make a replica leader or follower (only when they carry a newer leader
epoch), StopReplica stops (and optionally deletes) replicas. Followers are handed to the replica
fetchers; leaders serve produce and fetch. Everything runs on the broker's event loop.

The one acks=all write path lives here: `append_to_leader` appends to a partition this broker leads
and `wait_for_replication` waits (woken by high-watermark moves, never polling) until the ISR has
it; `when_replicated` is its callback form, which Produce uses (the response is built inside the
high-watermark move, no task per request). Produce and the group coordinator's
`__consumer_offsets` writes both go through them; the coordinator sees only `append_to_leader` and
`wait_for_replication` (`zkafka.coordinator.store.PartitionLeaders`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from zkafka.protocol import ErrorCode, KafkaError
from zkafka.records.batch import CONTROL_MASK, BatchHeader
from zkafka.runtime import collector
from zkafka.server.delayed import DelayedOperations, Waiter
from zkafka.server.partition import LeaderState, Partition
from zkafka.storage.errors import LogDirIOError, RecordBatchTooLargeError, RecordTooLargeError, StorageError
from zkafka.storage.log import AppendInfo, Log
from zkafka.storage.manager import LogManager
from zkafka.storage.naming import TopicPartition

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class PartitionStateChange:
    tp: TopicPartition
    state: LeaderState
    is_new: bool = False


def low_watermark_key(tp: TopicPartition) -> tuple[str, TopicPartition]:
    """The delayed-operation key woken when a follower reports a new log start offset."""
    return ("low-watermark", tp)


def check_min_isr(partition: Partition, required_acks: int) -> None:
    """acks=all needs `min.insync.replicas` in the ISR before anything is appended."""
    min_isr = partition.log.config.min_insync_replicas
    if required_acks == -1 and len(partition.isr) < min_isr:
        raise KafkaError(
            ErrorCode.NOT_ENOUGH_REPLICAS,
            f"ISR {list(partition.isr)} is smaller than min.insync.replicas={min_isr}",
        )


class FollowerHooks:
    """How the replica manager starts and stops replica fetchers (set by the broker)."""

    def add_followers(self, partitions: dict[TopicPartition, int]) -> None:  # tp -> leader id
        pass

    def remove_followers(self, partitions: Iterable[TopicPartition]) -> None:
        pass

    def log_starts_moved(self) -> None:
        """Retention moved some local logs' starts: followers tell their leaders again."""


def _sample(partitions: list[TopicPartition], shown: int = 3) -> str:
    """` (a-0, a-1, a-2 ...)`: a few names for the summary line ('' for none)."""
    if not partitions:
        return ""
    more = " ..." if len(partitions) > shown else ""
    return " (" + ", ".join(str(tp) for tp in partitions[:shown]) + more + ")"


class ReplicaManager:
    def __init__(
        self,
        broker_id: int,
        log_manager: LogManager,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.broker_id = broker_id
        self.log_manager = log_manager
        self.partitions: dict[TopicPartition, Partition] = {}
        self.controller_epoch = -1
        self.delayed = DelayedOperations()
        self.followers: FollowerHooks = FollowerHooks()
        self.on_topic_gone: Callable[[str], None] | None = None
        """Told when the last local partition of a topic is deleted (its per-topic metrics go too)."""
        self.shutting_down = False
        """Set by the broker before it asks for its controlled shutdown: partitions it is then made
        a follower of get no fetcher. Kafka adds none once its replica manager shuts down; here
        it is from the request on, because the controller has just left this broker out of the
        new leaders' ISRs, and fetching would only have them add it back (an ISR write each)
        before its exit takes it out again (another), 33,000 of each at 100,000 partitions."""
        self.on_log_dir_failure: Callable[[LogDirIOError], None] | None = None
        """Told when a write to a log dir failed at the OS (`log_dir_failure.LogDirFailures`)."""
        self.listed: Callable[[TopicPartition], bool] = lambda tp: False
        """Whether the metadata cache lists a partition (set by the broker): one it lists but this
        broker does not hold is another broker's, not an unknown one (`leader_partition`)."""
        self._clock = clock
        self._change_listeners: list[Callable[[TopicPartition], None]] = []
        self._high_watermarks_touched: set[TopicPartition] = set()
        """Partitions whose high watermark may have moved since `high_watermark_changes` last took
        them (every change a fetcher could see: a superset). Touched and taken on the loop only."""

    def on_partition_change(self, listener: Callable[[TopicPartition], None]) -> None:
        """Tell `listener` of every change a fetcher of a partition could see (an append to a
        partition led here, its high watermark, log start, leader or ISR): the fetch sessions
        of followers read only what changed."""
        self._change_listeners.append(listener)

    def partition_changed(self, tp: TopicPartition) -> None:
        self._high_watermarks_touched.add(tp)
        for listener in self._change_listeners:
            listener(tp)

    def log_starts_moved(self) -> None:
        """Retention deleted segments (its pass runs in a worker thread: called back on the loop):
        every partition counts as changed, once per pass that deleted something."""
        if self._change_listeners:
            for tp in list(self.partitions):
                self.partition_changed(tp)
        self.followers.log_starts_moved()

    def log_dir_failed(self, error: LogDirIOError) -> None:
        if self.on_log_dir_failure is not None:
            self.on_log_dir_failure(error)

    def stop_replicas_in_dir(self, log_dir: str) -> list[TopicPartition]:
        """The replicas whose logs are in `log_dir` (a real path) stop after a write there failed:
        their fetchers are removed and their logs closed without writing anything more, so every
        request on them (and the controller's next LeaderAndIsr) answers KAFKA_STORAGE_ERROR."""
        stopped = self.log_manager.logs_in_dir(log_dir)
        self.followers.remove_followers(stopped)
        for tp in stopped:
            lg = self.log_manager.get_log(tp.topic, tp.partition)
            if lg is not None:
                lg.close_without_flush()
            self._leadership_changed(tp)  # parked fetches and acks=all produce requests re-check
        return stopped

    def now_ms(self) -> int:
        return int(self._clock() * 1000)

    def get_partition(self, tp: TopicPartition) -> Partition | None:
        return self.partitions.get(tp)

    def leader_log(self, tp: TopicPartition) -> Log | None:
        """The log of `tp` while this broker leads it."""
        p = self.partitions.get(tp)
        return p.log if p is not None and p.is_leader else None

    def leader_partition(self, tp: TopicPartition) -> Partition:
        """The partition if this broker leads it, else a KafkaError with the code clients expect:
        as Kafka's getPartitionOrError, a partition the cluster has but not on this broker (a client
        with stale metadata, a replica moved or not created here yet) is NOT_LEADER_OR_FOLLOWER,
        which sends clients to refresh their metadata, and only one nobody has is
        UNKNOWN_TOPIC_OR_PARTITION."""
        p = self.partitions.get(tp)
        if p is None:
            if self.listed(tp):
                raise KafkaError(ErrorCode.NOT_LEADER_OR_FOLLOWER, f"this broker holds no replica of {tp}")
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"{tp} is not hosted by this broker")
        if not p.is_leader:
            raise KafkaError(ErrorCode.NOT_LEADER_OR_FOLLOWER, f"this broker is not the leader of {tp}")
        return p

    # -- the write path -------------------------------------------------------------------------------
    def append_to_leader(
        self,
        tp: TopicPartition,
        batches: bytearray | memoryview,
        headers: list[BatchHeader],
        *,
        required_acks: int,
    ) -> tuple[AppendInfo, int]:
        """Append validated batches to `tp`, led here: (what was appended, the leader epoch it was
        appended in). KafkaError with the code a producer expects when it cannot be."""
        p = self.leader_partition(tp)
        check_min_isr(p, required_acks)
        epoch = p.leader_epoch
        try:
            info = p.append_as_leader(batches, headers)
        except RecordTooLargeError as e:
            raise KafkaError(ErrorCode.MESSAGE_TOO_LARGE, str(e)) from None
        except RecordBatchTooLargeError as e:
            raise KafkaError(ErrorCode.RECORD_LIST_TOO_LARGE, str(e)) from None
        except StorageError as e:
            log.error("append to %s failed: %s", tp, e)
            if isinstance(e, LogDirIOError):
                self.log_dir_failed(e)
            raise KafkaError(ErrorCode.KAFKA_STORAGE_ERROR, str(e)) from None
        # Only the followers' fetches long-polling for new data: an append alone never moves the
        # high watermark (`high_watermark_moved` wakes the acks=all waiters and consumers when it
        # does), and re-checking every parked produce request on every append made each append
        # cost O(waiters); woken once per loop turn (`notify_soon`), so one follower answer carries
        # every produce request read together. A transaction marker may move the last stable
        # offset below the high watermark, which read_committed consumers wait for.
        self.delayed.notify_soon(tp)
        for h in headers:
            if h.attributes & CONTROL_MASK:
                self.delayed.notify(stable_offset_key(tp))
                break
        return info, epoch

    async def wait_for_replication(
        self, required: Mapping[TopicPartition, tuple[int, int]], timeout_s: float
    ) -> dict[TopicPartition, ErrorCode]:
        """Wait until each partition's high watermark reaches its required offset (acks=all), for
        `required[tp] = (offset, leader epoch of the append)`; the outcome per partition as
        `when_replicated` gives it."""
        fut: asyncio.Future[dict[TopicPartition, ErrorCode]] = asyncio.get_running_loop().create_future()

        def settle(outcome: dict[TopicPartition, ErrorCode]) -> None:
            if not fut.done():
                fut.set_result(outcome)

        waiter = self.when_replicated(required, timeout_s, settle)
        if waiter is not None:
            fut.add_done_callback(lambda _f: self.delayed.cancel(waiter))
        return await fut

    def when_replicated(
        self,
        required: Mapping[TopicPartition, tuple[int, int]],
        timeout_s: float,
        on_done: Callable[[dict[TopicPartition, ErrorCode]], None],
    ) -> Waiter | None:
        """Call `on_done(outcome)` once each partition's high watermark reaches its required offset
        (acks=all), for `required[tp] = (offset, leader epoch of the append)`, or at the timeout:
        from inside the high-watermark move that completes it, so the response is built at once
        (no task, no event-loop turn). Per partition: NONE, or NOT_LEADER_OR_FOLLOWER (leadership
        moved, even if it came back: the append may be gone), REQUEST_TIMED_OUT,
        NOT_ENOUGH_REPLICAS_AFTER_APPEND (the ISR shrank below min.insync). The waiter, to
        `delayed.cancel` when nobody wants the outcome any more; None when already called."""
        partitions = self.partitions

        # (leadership checked inline, no helper call: each parked request runs these at least once)
        def done() -> bool:
            for tp, (offset, epoch) in required.items():
                p = partitions.get(tp)
                if p is not None and p.high_watermark < offset and p.is_leader and p.leader_epoch == epoch:
                    return False
            return True

        def outcome(_reached: bool) -> None:
            out: dict[TopicPartition, ErrorCode] = {}
            for tp, (offset, epoch) in required.items():
                p = partitions.get(tp)
                if p is None or not p.is_leader or p.leader_epoch != epoch:
                    out[tp] = ErrorCode.NOT_LEADER_OR_FOLLOWER
                elif p.high_watermark < offset:
                    out[tp] = ErrorCode.REQUEST_TIMED_OUT
                elif len(p.isr) < p.log.config.min_insync_replicas:
                    out[tp] = ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
                else:
                    out[tp] = ErrorCode.NONE
            on_done(out)

        if not required:
            on_done({})
            return None
        # marked with the offset each partition's high watermark must reach: a move checks only
        # the requests it may complete (`high_watermark_moved`); a leadership change checks all
        marks = {replication_key(tp): offset for tp, (offset, _epoch) in required.items()}
        return self.delayed.park(marks, done, timeout_s, outcome, marks)

    def high_watermark_moved(self, tp: TopicPartition) -> None:
        # consumers' fetches and acks=all produce requests; followers' fetches wait for appends
        self.delayed.notify(high_watermark_key(tp))
        p = self.partitions.get(tp)
        if p is not None:
            self.delayed.notify_up_to(replication_key(tp), p.high_watermark)
        else:
            self.delayed.notify(replication_key(tp))

    def _leadership_changed(self, tp: TopicPartition) -> None:
        """Wake everything parked on `tp`: fetches and acks=all produce requests re-check (and the
        latter answer NOT_LEADER_OR_FOLLOWER when the epoch they appended in is gone)."""
        self.delayed.notify(tp)
        self.delayed.notify(high_watermark_key(tp))
        self.delayed.notify(stable_offset_key(tp))
        self.delayed.notify(replication_key(tp))

    def _get_or_create(self, tp: TopicPartition) -> Partition:
        p = self.partitions.get(tp)
        if p is None:
            # The data dir is fsynced once per LeaderAndIsr (become_leader_or_follower), not per log.
            lg = self.log_manager.get_or_create_log(
                tp.topic, tp.partition, self.log_manager.config_for(tp.topic), sync_dir=False
            )
            p = Partition(
                tp,
                self.broker_id,
                lg,
                high_watermark=self.log_manager.high_watermark_checkpoint(tp.topic, tp.partition) or 0,
            )
            p.listener = self
            self.partitions[tp] = p
            self._high_watermarks_touched.add(tp)
        return p

    def create_logs(self, partitions: Iterable[TopicPartition]) -> None:
        """Create the logs of `partitions` that have none yet, then fsync their data dirs once
        (if any was made: a new log's directory waits for its first write). Meant for a worker
        thread before a LeaderAndIsr that brings new partitions is applied on the loop: thousands
        of new logs (a directory probe and the Python objects each) would otherwise stall every
        other request (and a controller on this broker) for longer. Touches only the log
        manager, which is locked; a log that cannot be created is left for
        `become_leader_or_follower` to report."""
        lm = self.log_manager
        with collector.paused():  # ~30 % of a new log's CPU was the collector walking the others
            for tp in partitions:
                if lm.get_log(tp.topic, tp.partition) is not None:
                    continue
                try:
                    lm.get_or_create_log(tp.topic, tp.partition, lm.config_for(tp.topic), sync_dir=False)
                except (OSError, ValueError, StorageError):
                    continue
        lm.sync_created_dirs()

    # -- controller requests --------------------------------------------------------------------
    def become_leader_or_follower(
        self, controller_epoch: int, changes: Iterable[PartitionStateChange]
    ) -> dict[TopicPartition, ErrorCode]:
        errors: dict[TopicPartition, ErrorCode] = {}
        self.controller_epoch = max(self.controller_epoch, controller_epoch)
        now = self.now_ms()
        new_followers: dict[TopicPartition, int] = {}
        stopped: list[TopicPartition] = []
        led: list[TopicPartition] = []
        followed: list[TopicPartition] = []
        for change in changes:
            tp, state = change.tp, change.state
            if self.broker_id not in state.replicas:
                errors[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                continue
            current = self.partitions.get(tp)
            if current is not None and current.log.closed:
                # offline (its log dir failed, or an I/O error closed it): Kafka answers this
                # first, whatever the epoch, and the controller then takes the replica as offline
                errors[tp] = ErrorCode.KAFKA_STORAGE_ERROR
                continue
            if (
                current is not None
                and current.state is not None
                and state.leader_epoch <= current.leader_epoch
            ):
                # Kafka applies a partition state only with a strictly newer leader epoch; an
                # equal epoch with a newer zkVersion is an ISR-only change worth recording.
                if state.leader_epoch == current.leader_epoch and state.zk_version > current.state.zk_version:
                    current.state = state
                    errors[tp] = ErrorCode.NONE
                else:
                    errors[tp] = ErrorCode.STALE_CONTROLLER_EPOCH
                continue
            try:
                p = self._get_or_create(tp)
            except (OSError, StorageError) as e:
                log.error("cannot open the log of %s: %s", tp, e)
                errors[tp] = ErrorCode.KAFKA_STORAGE_ERROR
                continue
            if state.leader == self.broker_id:
                try:
                    p.make_leader(state, now)
                except StorageError as e:  # its log was closed by an I/O error: this partition only
                    log.error("%s: cannot become leader: %s", tp, e)
                    errors[tp] = ErrorCode.KAFKA_STORAGE_ERROR
                    continue
                stopped.append(tp)
                led.append(tp)
                log.debug("%s: leader at epoch %d, ISR %s", tp, state.leader_epoch, list(state.isr))
            else:
                p.make_follower(state)
                if state.leader >= 0:
                    new_followers[tp] = state.leader
                else:
                    stopped.append(tp)
                followed.append(tp)
                log.debug("%s: follower of %d at epoch %d", tp, state.leader, state.leader_epoch)
            errors[tp] = ErrorCode.NONE
            self._leadership_changed(tp)
        self.log_manager.sync_created_dirs()
        if led or followed:
            # One line per request, not per partition: a LeaderAndIsr can carry 100,000 of them.
            log.info(
                "LeaderAndIsr (controller epoch %d): leader of %d partition(s)%s, follower of %d%s",
                controller_epoch,
                len(led),
                _sample(led),
                len(followed),
                _sample(followed),
            )
        if stopped:
            self.followers.remove_followers(stopped)
        if new_followers and not self.shutting_down:
            self.followers.add_followers(new_followers)
        return errors

    def stop_replicas(
        self, controller_epoch: int, partitions: Iterable[TopicPartition], delete: bool
    ) -> dict[TopicPartition, ErrorCode]:
        errors: dict[TopicPartition, ErrorCode] = {}
        self.controller_epoch = max(self.controller_epoch, controller_epoch)
        tps = list(partitions)
        self.followers.remove_followers(tps)
        for tp in tps:
            p = self.partitions.get(tp)
            if p is not None:
                p.state = None
                self._leadership_changed(tp)
            if delete:
                self.partitions.pop(tp, None)
            errors[tp] = ErrorCode.NONE
        if delete:
            # all at once: each data dir is checkpointed once, not once per deleted log
            for tp, outcome in self.log_manager.delete_logs(tps).items():
                if isinstance(outcome, OSError):
                    log.error("cannot delete the log of %s: %s", tp, outcome)
                    errors[tp] = ErrorCode.KAFKA_STORAGE_ERROR
        if delete and self.on_topic_gone is not None:
            remaining = {tp.topic for tp in self.partitions}
            for topic in {tp.topic for tp in tps} - remaining:
                self.on_topic_gone(topic)
        return errors

    # -- periodic work ------------------------------------------------------------------------------
    def high_watermarks(self) -> dict[TopicPartition, int]:
        """Every local log's high watermark: live partitions' own, else the last checkpointed one.
        Called every `replica.high.watermark.checkpoint.interval.ms` from a worker thread, over
        tens of thousands of replicas: one comprehension over a copy of the partitions (a dict
        copy is one C call, so no change from the loop lands in the middle, and unlike a list
        of its items it makes no object per entry for the collector to walk), the checkpointed
        values only for logs without a partition (none once every replica was assigned a
        role)."""
        logs = self.log_manager.all_logs()
        hws = {tp: p.high_watermark for tp, p in self.partitions.copy().items() if tp in logs}
        if len(hws) < len(logs):
            checkpointed = self.log_manager.high_watermark_checkpoint
            for tp in logs:
                if tp not in hws and (hw := checkpointed(tp.topic, tp.partition)) is not None:
                    hws[tp] = hw
        return hws

    def high_watermark_changes(self) -> dict[TopicPartition, int]:
        """The high watermarks of the partitions touched since the last call (on the loop): what
        the periodic checkpoint writes. With 66,000 idle replicas that is nothing, where reading
        every partition's took ~30 ms of the GIL (and the checkpoint's comparison ~50 ms more)
        every `replica.high.watermark.checkpoint.interval.ms`, on every broker."""
        touched, self._high_watermarks_touched = self._high_watermarks_touched, set()
        partitions = self.partitions
        return {tp: p.high_watermark for tp in touched if (p := partitions.get(tp)) is not None}

    def high_watermark(self, tp: TopicPartition) -> int | None:
        """One local log's high watermark (its partition's, else the checkpointed one): what
        retention may not delete past."""
        p = self.partitions.get(tp)
        if p is not None:
            return p.high_watermark
        return self.log_manager.high_watermark_checkpoint(tp.topic, tp.partition)

    def shutdown(self) -> None:
        self.delayed.cancel_all()
        for p in self.partitions.values():
            # No fsync each: the log manager's shutdown, which follows, syncs the filesystem once
            # before it writes the clean-shutdown marker.
            p.take_producer_snapshot(fsync=False)


def high_watermark_key(tp: TopicPartition) -> tuple[str, TopicPartition]:
    """The key consumers' long-poll fetches park under: woken when `tp`'s high watermark moves or
    its leadership changes (followers' fetches park under `tp` itself, woken by appends)."""
    return ("high-watermark", tp)


def stable_offset_key(tp: TopicPartition) -> tuple[str, TopicPartition]:
    """The key read_committed consumers' fetches also park under: woken when a transaction marker
    is appended to `tp` (their last stable offset may then move without the high watermark)."""
    return ("stable-offset", tp)


def replication_key(tp: TopicPartition) -> tuple[str, TopicPartition]:
    """The key acks=all produce requests park under: woken when `tp`'s high watermark moves or
    its leadership changes, never by an append alone (fetch waiters park under `tp` itself)."""
    return ("replication", tp)
