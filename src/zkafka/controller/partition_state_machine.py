"""The partition state machine: leader election and the partition state znodes.

States and valid previous states are in `states.py`. What each transition does:

* -> NEW: remember the partition (its assignment is already in the context). Nothing is written.
* NEW -> ONLINE: create `partitions/<p>/state` (fenced) with leader = first live replica, ISR = all
  live replicas, leader epoch 0; LeaderAndIsr(is_new=true) to those replicas (and so UpdateMetadata to
  every broker). Fails if no replica is live (the partition stays NEW). A state znode that already
  exists (a previous controller died right after creating it) is adopted and elected normally.
* ONLINE/OFFLINE -> ONLINE: re-read the state znode, elect with the given strategy (`election.py`),
  write the new leader/ISR conditionally on the zkVersion read (BADVERSION: re-read and retry; a
  controller epoch newer than ours: give up on that partition), LeaderAndIsr to the strategy's
  recipients. Fails per partition when no replica qualifies (the partition keeps its state).
* -> OFFLINE, OFFLINE -> NON_EXISTENT: only the in-memory state changes.

`handle_state_changes` returns, per partition that was asked to go ONLINE, the new LeaderAndIsr or the
exception that stopped it; ControllerMovedError propagates (the controller resigns). The request batch
is flushed when a call completes.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Iterable, Iterator, Sequence

from kazoo.exceptions import NodeExistsError

from zkafka.controller.context import ControllerContext
from zkafka.controller.core import ControllerCore, read_states, state_change_log
from zkafka.controller.election import (
    ControlledShutdownElection,
    ElectionResult,
    ElectionStrategy,
    OfflineElection,
    PreferredElection,
    ReassignElection,
    initial_leader_and_isr,
    leader_for_preferred,
    leader_for_reassign,
    leaders_for_controlled_shutdown,
    leaders_for_offline,
)
from zkafka.controller.states import PARTITION_VALID_PREVIOUS, PartitionState, StateChangeFailedError
from zkafka.zk.model import LeaderAndIsr, LeaderIsrAndControllerEpoch, TopicPartition

__all__ = ["ElectionOutcome", "PartitionStateMachine"]

log = logging.getLogger(__name__)

ElectionOutcome = dict[TopicPartition, LeaderAndIsr | Exception]
FAILURES_SHOWN = 3


class PartitionStateMachine:
    def __init__(self, core: ControllerCore) -> None:
        self.core = core

    def initialize(self) -> None:
        """After failover, every partition's state from the context, sending nothing (Kafka's
        initializePartitionState): NEW without a state znode, ONLINE with a live leader, else
        OFFLINE. `trigger_online_partition_state_change` then elects the NEW and OFFLINE ones."""
        ctx = self.core.context
        for tp in ctx.all_partitions:
            leadership = ctx.leadership.get(tp)
            if leadership is None:
                ctx.partition_states[tp] = PartitionState.NEW
            elif ctx.is_replica_online(leadership.leader_and_isr.leader, tp):
                ctx.partition_states[tp] = PartitionState.ONLINE
            else:
                ctx.partition_states[tp] = PartitionState.OFFLINE

    async def trigger_online_partition_state_change(self) -> ElectionOutcome:
        """Try to bring every NEW or OFFLINE partition online (topics being deleted excepted)."""
        ctx = self.core.context
        partitions = [
            tp
            for tp in ctx.partitions_in_states(PartitionState.NEW, PartitionState.OFFLINE)
            if not ctx.is_topic_queued_up_for_deletion(tp.topic)
        ]
        return await self.handle_state_changes(partitions, PartitionState.ONLINE, OfflineElection())

    async def handle_state_changes(
        self,
        partitions: Iterable[TopicPartition],
        target: PartitionState,
        strategy: ElectionStrategy | None = None,
        *,
        send: bool = True,
    ) -> ElectionOutcome:
        """`send=False` leaves the requests the changes queued in the batch, for the caller's next
        flush (a stage that follows and queues nothing of its own need not hold them back)."""
        partitions = list(dict.fromkeys(partitions))
        if not partitions:
            return {}
        results = await self._do_handle_state_changes(partitions, target, strategy)
        if send and self.core.batch.flush():
            # The channels encode and write what was just queued before this event goes on: after
            # a broker's death it takes the broker out of tens of thousands of ISRs next, and the
            # new leaders' LeaderAndIsr waited for that (0.8 s at 33,000 leaders).
            await self.core.yield_to_broker()
        return results

    async def _do_handle_state_changes(
        self, partitions: list[TopicPartition], target: PartitionState, strategy: ElectionStrategy | None
    ) -> ElectionOutcome:
        ctx = self.core.context
        states, allowed, absent = (
            ctx.partition_states,
            PARTITION_VALID_PREVIOUS[target],
            PartitionState.NON_EXISTENT,
        )
        valid = []
        uninitialized = []  # NEW ones among them
        for tp in partitions:
            current = states.get(tp, absent)
            if current in allowed:
                valid.append(tp)
                if current is PartitionState.NEW:
                    uninitialized.append(tp)
            else:
                state_change_log.warning(
                    "controller %d epoch %d: invalid partition state change of %s from %s to %s",
                    self.core.broker_id,
                    ctx.epoch,
                    tp,
                    current.value,
                    target.value,
                )
        if target is not PartitionState.ONLINE:
            self._change_states(valid, target)
            return {}
        results: ElectionOutcome = {}
        to_elect = valid
        if uninitialized:
            new = set(uninitialized)
            to_elect = [tp for tp in valid if tp not in new]
            results.update(await self._initialize_leader_and_isr(uninitialized))
        if to_elect:
            if strategy is None:
                raise ValueError("electing leaders needs an election strategy")
            results.update(await self._elect_leaders(to_elect, strategy))
        failed: list[tuple[TopicPartition, Exception]] = []
        online = []
        for tp, outcome in results.items():
            if isinstance(outcome, LeaderAndIsr):
                online.append(tp)
            else:
                failed.append((tp, outcome))
        self._change_states(online, PartitionState.ONLINE)
        if failed:
            self._report_failures(failed)
        return results

    def _report_failures(self, failed: list[tuple[TopicPartition, Exception]]) -> None:
        """One line per event, not per partition: a dead broker can leave thousands offline, and
        every later broker change tries them all again. The full list is at DEBUG."""
        ctx = self.core.context
        shown = "; ".join(f"{tp}: {error}" for tp, error in failed[:FAILURES_SHOWN])
        more = f" (and {len(failed) - FAILURES_SHOWN:,} more)" if len(failed) > FAILURES_SHOWN else ""
        state_change_log.warning(
            "controller %d epoch %d: %d partition(s) failed to go online: %s%s",
            self.core.broker_id,
            ctx.epoch,
            len(failed),
            shown,
            more,
        )
        if len(failed) > FAILURES_SHOWN and state_change_log.isEnabledFor(logging.DEBUG):
            for tp, error in failed[FAILURES_SHOWN:]:
                state_change_log.debug("%s failed to go online: %s", tp, error)

    def _change_states(self, partitions: list[TopicPartition], target: PartitionState) -> None:
        """`_change_state` of many: one dict update when DEBUG is off (33,000 partitions go
        OFFLINE and then ONLINE after a broker's death at 100,000)."""
        if state_change_log.isEnabledFor(logging.DEBUG):
            for tp in partitions:
                self._change_state(tp, target)
        else:
            self.core.context.partition_states.update(dict.fromkeys(partitions, target))

    def _change_state(self, tp: TopicPartition, target: PartitionState) -> None:
        ctx = self.core.context
        previous = ctx.partition_state(tp)
        # the check first: the enums' `.value` arguments cost more than the disabled call, and
        # this runs per replica and partition of every new topic
        if previous is not target and state_change_log.isEnabledFor(logging.DEBUG):
            state_change_log.debug("partition %s: %s -> %s", tp, previous.value, target.value)
        ctx.partition_states[tp] = target

    # -- NEW -> ONLINE --------------------------------------------------------------------------------
    async def _initialize_leader_and_isr(self, partitions: list[TopicPartition]) -> ElectionOutcome:
        core, ctx = self.core, self.core.context
        results: ElectionOutcome = {}
        initial: dict[TopicPartition, LeaderIsrAndControllerEpoch] = {}
        for tp in partitions:
            assignment = ctx.partition_replica_assignment(tp)
            lai = initial_leader_and_isr(assignment, ctx.online_replicas(tp))
            if lai is None:
                results[tp] = StateChangeFailedError(f"no replica of {tp} in {list(assignment)} is alive")
            else:
                initial[tp] = LeaderIsrAndControllerEpoch(lai, ctx.epoch)
        if not initial:
            return results
        created = await core.call(core.zk.create_topic_partition_states, initial, ctx.epoch_zk_version)
        for tp, zk_version in created.created.items():
            state = LeaderIsrAndControllerEpoch(
                initial[tp].leader_and_isr.with_zk_version(zk_version), ctx.epoch
            )
            ctx.leadership[tp] = state
            ctx.verified.add(tp)
            core.batch.add_leader_and_isr(
                state.leader_and_isr.isr, tp, state, ctx.partition_full_replica_assignment(tp), is_new=True
            )
            results[tp] = state.leader_and_isr
        existing = [tp for tp, e in created.failed.items() if isinstance(e, NodeExistsError)]
        for tp, error in created.failed.items():
            if tp not in existing:
                results[tp] = error
        if existing:
            # A previous controller created the state znode and died before it could announce it:
            # adopt what it wrote and bring the partition online with a normal election.
            states = await core.call(core.zk.get_partition_states, existing)
            for tp in existing:
                if tp in states:
                    ctx.leadership[tp] = states[tp]
                    self._change_state(tp, PartitionState.OFFLINE)
                else:
                    results[tp] = StateChangeFailedError(
                        f"the state znode of {tp} exists but vanished or does not decode"
                    )
            adopted = [tp for tp in existing if tp in states]
            if adopted:
                results.update(await self._elect_leaders(adopted, OfflineElection()))
        return results

    # -- ONLINE/OFFLINE -> ONLINE ---------------------------------------------------------------------
    async def _elect_leaders(
        self, partitions: Sequence[TopicPartition], strategy: ElectionStrategy
    ) -> ElectionOutcome:
        results: ElectionOutcome = {}
        remaining = list(partitions)
        # The first round decides from the context's copy of each state (read from, or written
        # to, ZooKeeper with its zkVersion); every write is conditional on that zkVersion, so a
        # state changed behind the controller's back (a leader's ISR write) fails with BADVERSION
        # and only those partitions are read again. Re-reading every partition first, as Kafka's
        # controller does, costs a ZooKeeper read per partition: 100,000 at failover.
        from_context = True
        while remaining:
            finished, remaining = await self._try_elect(remaining, strategy, from_context=from_context)
            results.update(finished)
            from_context = False
        return results

    async def _try_elect(
        self, partitions: list[TopicPartition], strategy: ElectionStrategy, *, from_context: bool
    ) -> tuple[ElectionOutcome, list[TopicPartition]]:
        """One round: (finished partitions, partitions to decide again from a fresh read: after
        a BADVERSION, or refused on the context's copy)."""
        core, ctx = self.core, self.core.context
        results: ElectionOutcome = {}
        current = await read_states(core, partitions, from_context=from_context)
        valid: list[tuple[TopicPartition, LeaderAndIsr]] = []
        for tp in partitions:
            state = current.get(tp)
            if state is None:
                results[tp] = StateChangeFailedError(f"the state znode of {tp} does not exist")
            elif state.controller_epoch > ctx.epoch:
                results[tp] = StateChangeFailedError(
                    f"aborted election for {tp}: its state was written by a newer controller "
                    f"(epoch {state.controller_epoch} > {ctx.epoch})"
                )
            else:
                valid.append((tp, state.leader_and_isr))
        if not valid:
            return results, []
        decisions = await self._decide(valid, strategy)
        to_write: dict[TopicPartition, LeaderAndIsr] = {}
        recipients: dict[TopicPartition, tuple[int, ...]] = {}
        unclean: set[TopicPartition] = set()
        refused: list[TopicPartition] = []

        def writes() -> Iterator[tuple[TopicPartition, LeaderAndIsr]]:
            # Taken on the ZooKeeper thread as it sends the multis, so the bulk elections' decisions
            # (pure functions of what `_decide` read on the loop) are made while ZooKeeper applies
            # the first writes: 33,000 after a broker's death at 100,000 partitions took ~0.16 s
            # before the first write left. It fills only these four, read once the call is back.
            for decision in decisions:
                new = decision.leader_and_isr
                if new is None:
                    refused.append(decision.partition)
                    continue
                to_write[decision.partition] = new
                recipients[decision.partition] = decision.recipients
                if decision.unclean:
                    unclean.add(decision.partition)
                yield decision.partition, new

        written = await core.call(core.zk.update_leader_and_isr, writes(), ctx.epoch, ctx.epoch_zk_version)
        # A refusal writes nothing, so no zkVersion can tell that the copy it came from was stale
        # (an ISR the leader grew meanwhile): decided from the context, it is decided again from
        # ZooKeeper before it stands.
        verify: list[TopicPartition] = []
        for tp in refused:
            if from_context and tp not in ctx.verified and not _refusal_is_certain(ctx, tp, strategy):
                verify.append(tp)
            else:
                results[tp] = StateChangeFailedError(
                    f"no eligible leader for {tp} with {type(strategy).__name__}"
                )
        unclean_written = unclean & written.successful.keys()
        for tp in unclean_written:
            state_change_log.warning(
                "unclean leader election for %s: %d leads from outside the ISR", tp, to_write[tp].leader
            )
        for tp, zk_version in written.successful.items():
            state = LeaderIsrAndControllerEpoch(to_write[tp].with_zk_version(zk_version), ctx.epoch)
            ctx.leadership[tp] = state
            ctx.verified.add(tp)
            core.batch.add_leader_and_isr(
                recipients[tp], tp, state, ctx.partition_full_replica_assignment(tp), is_new=False
            )
            results[tp] = state.leader_and_isr
        if unclean_written and core.unclean_election_observer is not None:
            core.unclean_election_observer(len(unclean_written))
        results.update(written.failed)
        return results, [*verify, *written.bad_version]

    async def _decide(
        self, partitions: list[tuple[TopicPartition, LeaderAndIsr]], strategy: ElectionStrategy
    ) -> Iterable[ElectionResult]:
        """The decisions for `partitions`: what they need from the context is read here, on the
        loop; the bulk strategies' (offline, controlled shutdown) are then made as they are taken."""
        ctx = self.core.context
        match strategy:
            case OfflineElection(allow_unclean=allow_unclean):
                # Each partition's live replicas once, for both the unclean check and the choice
                # (33,000 partitions to elect after a controller dies at 100,000).
                tps = [tp for tp, _ in partitions]
                online = ctx.online_replicas_of(tps)
                unclean = await self._unclean_allowed(partitions, online, allow_unclean)
                assignments = [ctx.partition_replica_assignment(tp) for tp in tps]
                return leaders_for_offline(partitions, assignments, online, unclean)
            case ReassignElection():
                out = []
                for tp, lai in partitions:
                    target = ctx.partition_full_replica_assignment(tp).target_replicas
                    out.append(leader_for_reassign(tp, lai, target, ctx.online_replicas(tp, target)))
                return out
            case PreferredElection():
                return [
                    leader_for_preferred(
                        tp, lai, ctx.partition_replica_assignment(tp), ctx.online_replicas(tp)
                    )
                    for tp, lai in partitions
                ]
            case ControlledShutdownElection():
                tps = [tp for tp, _ in partitions]
                return leaders_for_controlled_shutdown(
                    partitions,
                    [ctx.partition_replica_assignment(tp) for tp in tps],
                    ctx.online_replicas_of(tps, include_shutting_down=True),
                    frozenset(ctx.shutting_down_broker_ids),  # a copy: taken on another thread
                )
        raise TypeError(f"unknown election strategy {strategy!r}")

    async def _unclean_allowed(
        self,
        partitions: list[tuple[TopicPartition, LeaderAndIsr]],
        online: Sequence[Collection[int]],
        allow_unclean: bool,
    ) -> dict[str, bool]:
        """Topic -> may elect uncleanly (`online`: each partition's live replicas). Configs are read
        only for topics that need it: those with a partition whose ISR has no live member."""
        topics = {tp.topic for tp, _ in partitions}
        if allow_unclean:
            return dict.fromkeys(topics, True)
        without_live_isr = {
            tp.topic for (tp, lai), live in zip(partitions, online, strict=True) if live.isdisjoint(lai.isr)
        }
        decided = await self.core.unclean_election_enabled(without_live_isr)
        return {t: decided.get(t, False) for t in topics}


def _refusal_is_certain(ctx: ControllerContext, tp: TopicPartition, strategy: ElectionStrategy) -> bool:
    """Whether a refusal decided from the context's copy of the state stands without reading the
    state again. The copy can be stale only in what a leader wrote behind the controller's back,
    its ISR, and an offline or controlled-shutdown election refused for want of an eligible live
    replica stays refused whatever the ISR when no replica of the partition is live outside the
    brokers shutting down. The last brokers of a cluster going down lead tens of thousands of
    such partitions each (their partners already gone): re-reading every one cost a controlled
    shutdown ~5 s at 100,000 partitions, to move nothing."""
    if not isinstance(strategy, (OfflineElection, ControlledShutdownElection)):
        return False
    return not ctx.online_replicas(tp)
