"""`Controller`: Kafka's ZooKeeper-mode controller, one per broker, at most one active in the cluster.

Theory of operation:
* Every broker runs one. All of them watch /controller; whoever manages to create it (in one multi
  with the increment of /controller_epoch) is the active controller for that epoch. The new
  zkVersion of /controller_epoch fences every later write: a controller that lost its position can
  no longer change anything (ControllerMovedError), and resigns when it notices.
* One event queue, one task: ZooKeeper watches, session changes, timers, broker answers and API calls
  all become events (`events.py`) that the task processes one at a time. Handlers await ZooKeeper
  calls (run on the ZkExecutor thread) and may queue requests to brokers; nothing else touches the
  controller's state, so there are no locks.
* Winning the election runs the failover: register the active watches, clear stale notifications,
  rebuild the context from ZooKeeper, tell every broker the live brokers (UpdateMetadata before any
  LeaderAndIsr), elect leaders for the partitions without a live one, then tell every broker all
  the metadata and every replica its partition's state, take the dead brokers' replicas out of
  the ISRs (Kafka's state machine start-up, with its elections moved first), resume
  reassignments, topic deletions and preferred elections, schedule the leader rebalance check.
* Resigning (another controller, session expiry, fencing, shutdown) drops all of that again.

Session expiry: the controller resigns as soon as the session is reported expired. When the new
session is up it awaits `on_new_session` (the broker's re-registration of /brokers/ids/<id>, so the
cluster knows the broker again before this controller can win) and then runs the election again.
Without a hook it re-elects straight away. A ZooKeeper call retried across the expiry can still
complete an election after the resignation; a /controller naming this broker without a running term
is therefore adopted (its epoch is ours: nobody can bump it while /controller exists).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import TypeVar

from zkafka.client.security import ClientSecurity
from zkafka.config import BrokerConfig
from zkafka.controller.backoff import ElectionBackoff
from zkafka.controller.broker_events import BrokerEvents
from zkafka.controller.context import ReplicaAssignment
from zkafka.controller.core import ControllerCore, ControllerTimings
from zkafka.controller.events import (
    AlterPartitionReassignments,
    AutoPreferredReplicaLeaderElection,
    BrokerChange,
    BrokerModification,
    ControlledShutdown,
    ControllerChange,
    ControllerEvent,
    ControllerState,
    ElectLeaders,
    EventQueue,
    Expire,
    IsrChangeNotification,
    LeaderAndIsrResponseReceived,
    LogDirEventNotification,
    PartitionModifications,
    PartitionReassignmentIsrChange,
    PreferredReplicaElectionZNode,
    RegisterBrokerAndReelect,
    Shutdown,
    Startup,
    TopicChange,
    TopicDeletion,
    TopicDeletionStopReplicaResponseReceived,
    ZkPartitionReassignment,
)
from zkafka.controller.leader_balance import LeaderBalancer
from zkafka.controller.partition_state_machine import PartitionStateMachine
from zkafka.controller.reassignment import Reassignments
from zkafka.controller.replica_state_machine import ReplicaStateMachine
from zkafka.controller.topic_deletion import TopicDeletionManager
from zkafka.controller.topic_events import TopicEvents
from zkafka.protocol import ErrorCode
from zkafka.runtime import collector
from zkafka.zk.client import KafkaZkClient
from zkafka.zk.errors import ControllerMovedError
from zkafka.zk.model import LeaderAndIsr, TopicPartition
from zkafka.zk.watch_bridge import (
    AsyncWatcher,
    SessionEvent,
    SessionState,
    WatchHandle,
    ZkExecutor,
    ZkWatchEvent,
)
from zkafka.zk.znodes import (
    BrokerIdsZNode,
    ControllerZNode,
    DeleteTopicsZNode,
    IsrChangeNotificationZNode,
    LogDirEventNotificationZNode,
    TopicsZNode,
)

__all__ = ["Controller"]

log = logging.getLogger(__name__)

NO_CONTROLLER = -1

NewSessionHook = Callable[[], Awaitable[object]]
EventObserver = Callable[[ControllerState, float, float], None]
"""Told (the event's state, ms it waited in the queue, ms it took) of every event processed."""
R = TypeVar("R")


class Controller:
    def __init__(
        self,
        broker_id: int,
        zk: KafkaZkClient,
        executor: ZkExecutor,
        watcher: AsyncWatcher,
        config: BrokerConfig,
        *,
        client_id: str = "zkafka-controller",
        timings: ControllerTimings | None = None,
        on_new_session: NewSessionHook | None = None,
        security: ClientSecurity | None = None,
    ) -> None:
        self.broker_id = broker_id
        self._watcher = watcher
        self._on_new_session = on_new_session
        self._queue = EventQueue()
        core = ControllerCore(
            broker_id,
            config,
            zk,
            executor,
            watcher,
            self._queue.put,
            client_id=client_id,
            timings=timings or ControllerTimings(),
            security=security,
        )
        self._core = core
        self._psm = PartitionStateMachine(core)
        self._rsm = ReplicaStateMachine(core)
        self._deletion = TopicDeletionManager(core, self._psm, self._rsm)
        self._reassignments = Reassignments(core, self._psm, self._rsm, self._deletion)
        self._balancer = LeaderBalancer(core, self._psm, self._deletion)
        self._topics = TopicEvents(core, self._psm, self._rsm, self._deletion, self._reassignments)
        self._brokers = BrokerEvents(core, self._psm, self._rsm, self._deletion, self._reassignments)
        self._active_controller_id = NO_CONTROLLER
        self._in_term = False
        self._task: asyncio.Task[None] | None = None
        self._controller_watch: WatchHandle | None = None
        self._remove_session_listener: Callable[[], None] | None = None
        self._rebalance_timer: asyncio.TimerHandle | None = None
        self._awaiting_reregistration = False
        self._stopping = False
        self._backoff = ElectionBackoff(broker_id)
        self._campaign_not_before = 0.0
        self._campaign_timer: asyncio.TimerHandle | None = None
        self._state = ControllerState.IDLE
        self._event_observer: EventObserver | None = None

    # -- public API -----------------------------------------------------------------------------------
    @property
    def is_active(self) -> bool:
        """True while this broker is the controller (between winning the election and resigning)."""
        return self._in_term

    @property
    def epoch(self) -> int:
        """The controller epoch this broker was elected with while active; 0 otherwise."""
        return self._core.context.epoch if self.is_active else 0

    @property
    def active_controller_id(self) -> int:
        """The controller last seen in /controller by this broker's controller (-1: none known)."""
        return self._active_controller_id

    def metrics_counts(self) -> tuple[int, int, int, int] | None:
        """(offline partitions, preferred-replica imbalance, partitions, topics) while active, else
        None: Kafka's KafkaController gauges, which only the active controller knows."""
        if not self.is_active:
            return None
        ctx = self._core.context
        offline = len(ctx.partitions_with_offline_leader())
        imbalance = partitions = 0
        for tp, assignment in ctx.iter_topic_partitions():
            if ctx.is_topic_queued_up_for_deletion(tp.topic):
                continue
            partitions += 1
            leader = ctx.leader(tp)
            if assignment.replicas and leader is not None and leader != assignment.replicas[0]:
                imbalance += 1
        return offline, imbalance, partitions, len(ctx.all_topics)

    @property
    def state(self) -> ControllerState:
        """What the event task is processing now (IDLE between events)."""
        return self._state

    @property
    def queue_size(self) -> int:
        """Events waiting for the event task."""
        return len(self._queue)

    def set_observers(
        self, events: EventObserver | None, unclean_elections: Callable[[int], None] | None
    ) -> None:
        """Metrics: `events(state, queued_ms, processing_ms)` after every event processed, and
        `unclean_elections(n)` whenever n leaders were elected from outside their ISR."""
        self._event_observer = events
        self._core.unclean_election_observer = unclean_elections

    async def start(self) -> None:
        """Watch /controller and try to become controller. Call after the broker registered itself."""
        if self._task is not None:
            raise RuntimeError("controller already started")
        self._task = asyncio.get_running_loop().create_task(self._run(), name=f"controller-{self.broker_id}")
        self._remove_session_listener = self._watcher.add_session_listener(self._on_session_event)
        self._controller_watch = self._watcher.watch_data(
            ControllerZNode.path(), self._on_controller_znode, initial=False
        )
        self._queue.put(Startup())

    async def stop(self) -> None:
        """Resign if active (deleting /controller so another broker takes over at once), close the
        channels, end the event task. Queued events are dropped; waiting callers get NOT_CONTROLLER."""
        if self._task is None:
            return
        if not self._stopping:
            self._stopping = True
            if self._remove_session_listener is not None:
                self._remove_session_listener()
            if self._controller_watch is not None:
                self._controller_watch.cancel()
            self._queue.clear_and_put(Shutdown())
        await asyncio.shield(self._task)

    async def controlled_shutdown(
        self, broker_id: int, broker_epoch: int
    ) -> tuple[ErrorCode, set[TopicPartition]]:
        """ControlledShutdown: (error, partitions the broker still leads). NOT_CONTROLLER when this broker
        is not the controller, STALE_BROKER_EPOCH / BROKER_NOT_AVAILABLE for a bad request. `broker_epoch`
        -1 (requests before v2) skips the epoch check."""
        return await self._ask(lambda f: ControlledShutdown(broker_id, broker_epoch, f))

    async def elect_leaders(
        self, partitions: Iterable[TopicPartition] | None, *, unclean: bool = False
    ) -> dict[TopicPartition, tuple[ErrorCode, str | None]]:
        """ElectLeaders: preferred (default) or unclean elections; per partition (error, message).
        `partitions` None = all partitions."""
        wanted = None if partitions is None else frozenset(partitions)
        return await self._ask(lambda f: ElectLeaders(wanted, unclean, f))

    async def alter_partition_reassignments(
        self, reassignments: Mapping[TopicPartition, Sequence[int] | None]
    ) -> dict[TopicPartition, tuple[ErrorCode, str | None]]:
        """AlterPartitionReassignments: target replicas per partition, None cancels."""
        requested = {tp: None if r is None else tuple(r) for tp, r in reassignments.items()}
        return await self._ask(lambda f: AlterPartitionReassignments(requested, f))

    def list_partition_reassignments(
        self, partitions: Iterable[TopicPartition] | None = None
    ) -> dict[TopicPartition, ReplicaAssignment]:
        """Reassignments in progress (empty when not active): replicas, adding, removing."""
        if not self.is_active:
            return {}
        ongoing = self._reassignments.ongoing()
        if partitions is None:
            return ongoing
        return {tp: ongoing[tp] for tp in partitions if tp in ongoing}

    async def _ask(self, make: Callable[[asyncio.Future[R]], ControllerEvent]) -> R:
        future: asyncio.Future[R] = asyncio.get_running_loop().create_future()
        event = make(future)
        if self._task is None or self._stopping:
            event.preempt()
        else:
            self._queue.put(event)
        return await future

    # -- callbacks from the watch bridge (loop thread): only enqueue ----------------------------------
    def _on_controller_znode(self, _event: ZkWatchEvent | None) -> None:
        if not self._stopping:
            self._queue.put(ControllerChange())

    def _on_session_event(self, event: SessionEvent) -> None:
        if self._stopping:
            return
        if event.state in (SessionState.EXPIRED, SessionState.LOST):
            # Nothing queued can be acted on with a dead session.
            self._awaiting_reregistration = (
                event.state is SessionState.EXPIRED and self._on_new_session is not None
            )
            self._queue.clear_and_put(Expire())
        elif event.state is SessionState.CONNECTED and event.new_session:
            self._queue.put(RegisterBrokerAndReelect())

    # -- the event task -------------------------------------------------------------------------------
    async def _run(self) -> None:
        while True:
            event, waited_s = await self._queue.get_with_wait()
            self._state = event.state
            began = time.perf_counter()
            if isinstance(event, Shutdown):
                try:
                    await self._shutdown()
                finally:
                    self._done(event, waited_s, began)
                return
            try:
                await self._process(event)
            except ControllerMovedError as e:
                log.info("controller %d: %s; checking whether to resign", self.broker_id, e)
                self._core.batch.clear()
                await self._safely(self._maybe_resign())
            except Exception as e:
                self._after_failure(event, e)
            finally:
                event.preempt()
                self._done(event, waited_s, began)

    def _done(self, event: ControllerEvent, waited_s: float, began: float) -> None:
        self._state = ControllerState.IDLE
        if self._event_observer is not None:
            self._event_observer(event.state, waited_s * 1000, (time.perf_counter() - began) * 1000)

    def _after_failure(self, event: ControllerEvent, error: Exception) -> None:
        if isinstance(event, Startup | ControllerChange | RegisterBrokerAndReelect) and not self.is_active:
            # The election itself failed (ZooKeeper unreachable...): nobody else may ever poke us, so
            # try again after a while.
            self._campaign_later(self._backoff.failed("controller election", error))
            return
        log.error("controller %d failed to process %s", self.broker_id, type(event).__name__, exc_info=error)
        try:
            # The context already holds the decisions made so far: let the brokers know them.
            self._core.batch.flush()
        except Exception:
            log.exception("controller %d could not send its pending requests", self.broker_id)
            self._core.batch.clear()

    async def _safely(self, step: Awaitable[None]) -> None:
        try:
            await step
        except Exception:
            log.exception("controller %d: error while changing controller state", self.broker_id)

    async def _process(self, event: ControllerEvent) -> None:
        match event:
            case Startup():
                await self._elect()
                return
            case ControllerChange():
                await self._maybe_resign()
                await self._elect()
                return
            case Expire():
                await self._on_resignation()
                return
            case RegisterBrokerAndReelect():
                try:
                    if self._on_new_session is not None:
                        await self._on_new_session()
                finally:
                    # Even if re-registration failed, later /controller events may elect again.
                    self._awaiting_reregistration = False
                await self._maybe_resign()
                await self._elect()
                return
        if not self.is_active:
            return  # events of a former term; waiting callers get NOT_CONTROLLER from preempt()
        self._core.context.verified.clear()
        await self._process_active(event)
        self._core.batch.flush()

    async def _process_active(self, event: ControllerEvent) -> None:
        match event:
            case BrokerChange():
                # A broker's death re-elects and rewrites thousands of partitions: objects the
                # context keeps, which young collections would only walk and promote (~15 % of
                # the controller's CPU from the death to its last election at 30,000).
                with collector.paused():
                    await self._brokers.process_broker_change()
            case BrokerModification(broker_id=broker_id):
                await self._brokers.process_broker_modification(broker_id)
            case TopicChange():
                with collector.paused():  # new partitions: states and requests kept, as above
                    await self._topics.process_topic_change()
            case PartitionModifications(topic=topic):
                with collector.paused():
                    await self._topics.process_partition_modifications(topic)
            case TopicDeletion():
                await self._deletion.process_deletion_requests()
            case IsrChangeNotification():
                await self._topics.process_isr_change_notification()
            case LogDirEventNotification():
                await self._brokers.process_log_dir_event_notification()
            case ZkPartitionReassignment():
                await self._reassignments.process_zk_reassignment()
            case PartitionReassignmentIsrChange(partition=tp):
                await self._reassignments.maybe_complete(tp)
            case PreferredReplicaElectionZNode():
                await self._balancer.process_zk_election()
            case AutoPreferredReplicaLeaderElection():
                try:
                    await self._balancer.check_and_rebalance()
                finally:
                    self._schedule_rebalance(self._rebalance_interval_s())
            case LeaderAndIsrResponseReceived(broker_id=b, broker_epoch=e, response=r):
                await self._brokers.process_leader_and_isr_response(b, e, r)
            case TopicDeletionStopReplicaResponseReceived(broker_id=b, partitions=ps, response=r):
                await self._deletion.process_stop_replica_response(b, ps, r)
            case ControlledShutdown(broker_id=b, broker_epoch=e, future=f):
                result = await self._brokers.controlled_shutdown(b, e)
                if not f.done():
                    f.set_result(result)
            case ElectLeaders(partitions=ps, unclean=unclean, future=f):
                results = await self._balancer.elect(ps, unclean=unclean)
                if not f.done():
                    f.set_result(results)
            case AlterPartitionReassignments(reassignments=r, future=f):
                results = await self._reassignments.alter(r)
                if not f.done():
                    f.set_result(results)
            case _:
                log.warning("controller %d: unknown event %r", self.broker_id, event)

    # -- election, failover, resignation --------------------------------------------------------------
    async def _read_controller_id(self) -> int | None:
        controller_id = await self._core.call(self._core.zk.get_controller_id)
        self._active_controller_id = NO_CONTROLLER if controller_id is None else controller_id
        return controller_id

    async def _elect(self) -> None:
        if self._awaiting_reregistration:
            return  # the session expired: RegisterBrokerAndReelect elects once the broker is back
        core = self._core
        controller_id = await self._read_controller_id()
        if controller_id == self.broker_id and not self._in_term:
            await self._adopt_registration()
            return
        # Re-checked after the await: an event that was in flight during a session expiry must not win
        # an election in the new session before the broker re-registered.
        if controller_id is not None or self._awaiting_reregistration:
            return
        wait = self._campaign_not_before - asyncio.get_running_loop().time()
        if wait > 0:
            self._campaign_later(wait)  # a recent term of ours failed to start: let others try first
            return
        try:
            epoch, epoch_zk_version = await core.call(
                core.zk.register_controller_and_increment_epoch, self.broker_id
            )
        except ControllerMovedError:
            await self._maybe_resign()
            return
        except Exception as e:
            delay = self._backoff.failed("controller election", e)
            await self._trigger_controller_move()
            self._campaign_later(delay)
            return
        await self._become_controller(epoch, epoch_zk_version)

    def _campaign_later(self, delay_s: float) -> None:
        """Run the election again in `delay_s` (and not before): nothing else may prompt it."""
        loop = asyncio.get_running_loop()
        self._campaign_not_before = loop.time() + delay_s
        if self._campaign_timer is not None:
            self._campaign_timer.cancel()
        self._campaign_timer = loop.call_later(delay_s, self._on_controller_znode, None)

    async def _adopt_registration(self) -> None:
        """/controller names this broker but no term is running: an election whose outcome arrived
        after a resignation (e.g. a ZooKeeper call retried across a session expiry). The epoch written
        with it is ours (nobody can bump it while /controller exists), so take up the term."""
        if self._awaiting_reregistration:
            return
        core = self._core
        current = await core.call(core.zk.get_controller_epoch)
        if current is None or await self._read_controller_id() != self.broker_id:
            return
        log.info(
            "broker %d finds itself registered as controller: resuming with epoch %d",
            self.broker_id,
            current[0],
        )
        await self._become_controller(*current)

    async def _become_controller(self, epoch: int, epoch_zk_version: int) -> None:
        self._core.begin_term(epoch, epoch_zk_version)
        self._in_term = True
        self._active_controller_id = self.broker_id
        log.info("broker %d is the controller, epoch %d", self.broker_id, epoch)
        try:
            await self._on_controller_failover()
        except ControllerMovedError:
            raise
        except Exception as e:
            # Give the role up so another broker can try, and stay out of the next elections for a
            # while: winning again at once would only fail again and bump the epoch for nothing.
            delay = self._backoff.failed("controller failover", e)
            await self._trigger_controller_move()
            self._campaign_later(delay)
            return
        self._backoff.succeeded()

    async def _maybe_resign(self) -> None:
        controller_id = await self._read_controller_id()
        if self._in_term and controller_id != self.broker_id:
            log.info("broker %d is no longer the controller (now %s)", self.broker_id, controller_id)
            await self._on_resignation()

    async def _trigger_controller_move(self) -> None:
        """Resign on purpose after an internal error, deleting /controller so anyone can take over."""
        core = self._core
        controller_id = await self._read_controller_id()
        if not self._in_term:
            return
        expected = core.context.epoch_zk_version
        await self._on_resignation()
        if controller_id != self.broker_id:
            return
        self._active_controller_id = NO_CONTROLLER
        try:
            await core.call(core.zk.delete_controller, expected)
        except ControllerMovedError:
            log.info("controller already moved while broker %d was resigning", self.broker_id)

    async def _on_resignation(self, *, announce: bool = True) -> None:
        announce = announce and self._in_term
        self._in_term = False
        if self._active_controller_id == self.broker_id:
            self._active_controller_id = NO_CONTROLLER
        if self._rebalance_timer is not None:
            self._rebalance_timer.cancel()
            self._rebalance_timer = None
        await self._core.end_term()
        if announce:
            log.info("broker %d resigned as controller", self.broker_id)

    async def _shutdown(self) -> None:
        if self._campaign_timer is not None:
            self._campaign_timer.cancel()
        core = self._core
        was_active = self._in_term
        expected = core.context.epoch_zk_version
        await self._on_resignation()
        if was_active:
            try:
                await core.call(core.zk.delete_controller, expected)
            except Exception as e:  # fenced, or ZooKeeper gone: the ephemeral dies with the session anyway
                log.info("broker %d did not delete /controller on shutdown: %s", self.broker_id, e)

    async def _on_controller_failover(self) -> None:
        # A new controller makes a few objects per partition and keeps most (the context): the
        # collector's passes over them were 15-25 % of a failover's CPU at 30,000 partitions
        # (`benchmarks/controller_failover_load.py`).
        with collector.paused():
            await self._fail_over()

    async def _fail_over(self) -> None:
        core, ctx = self._core, self._core.context
        watches = core.watches
        watches.children(BrokerIdsZNode.path(), lambda _e: BrokerChange())
        watches.children(TopicsZNode.path(), lambda _e: TopicChange())
        watches.children(DeleteTopicsZNode.path(), lambda _e: TopicDeletion())
        watches.children(LogDirEventNotificationZNode.path(), lambda _e: LogDirEventNotification())
        watches.children(IsrChangeNotificationZNode.path(), lambda _e: IsrChangeNotification())
        self._reassignments.watch()
        self._balancer.watch()
        await core.call(core.zk.delete_log_dir_event_notifications, None, ctx.epoch_zk_version)
        await core.call(core.zk.delete_isr_change_notifications, None, ctx.epoch_zk_version)
        began = time.perf_counter()
        await self._initialize_context()
        loaded = time.perf_counter()
        to_delete, ineligible = await self._fetch_topic_deletions()
        await self._deletion.init(to_delete, ineligible)
        self._psm.initialize()
        # Kafka sends UpdateMetadata and a LeaderAndIsr for every replica, then elects the
        # partitions without a live leader. Here those elections come first: at 100,000
        # partitions the full requests take seconds to build, and the partitions of a dead
        # controller stay without a leader meanwhile. Nothing is decided differently: every
        # decision is a fenced write from the state just read, and the new leaders' LeaderAndIsr
        # (with UpdateMetadata for their partitions to every live broker) go out first; the full
        # UpdateMetadata and the LeaderAndIsr of every other partition follow.
        # The live brokers first, as Kafka does (a broker told to follow must know its leader):
        # no partitions in it, so it costs nothing to build.
        core.send_update_metadata(ctx.live_or_shutting_down_broker_ids, [])
        elected = await self._psm.trigger_online_partition_state_change()
        elections_done = time.perf_counter()
        core.send_update_metadata(ctx.live_or_shutting_down_broker_ids, ctx.partitions_with_leaders())
        told = {tp for tp, outcome in elected.items() if isinstance(outcome, LeaderAndIsr)}
        # The replica states only after the elections, which do not read them: 200,000 replicas
        # at 100,000 partitions that the dead controller's partitions need not wait for.
        online, offline = self._rsm.initialize()
        await self._rsm.startup(online, offline, told=told)
        log.info(
            "controller %d epoch %d ready: brokers %s, %d topics, %d partitions "
            "(context loaded in %.2f s, %d leader(s) elected %.2f s later, every replica told %.2f s after)",
            self.broker_id,
            ctx.epoch,
            sorted(ctx.live_brokers),
            len(ctx.all_topics),
            len(ctx.leadership),
            loaded - began,
            len(told),
            elections_done - loaded,
            time.perf_counter() - elections_done,
        )
        await self._reassignments.initialize()
        await self._deletion.try_topic_deletion()
        await self._balancer.process_zk_election()
        if core.config.auto_leader_rebalance_enable:
            self._schedule_rebalance(core.timings.first_rebalance_check_delay_s)

    async def _initialize_context(self) -> None:
        core, ctx = self._core, self._core.context
        brokers = await core.call(core.zk.get_all_brokers_and_epochs)
        ctx.set_live_brokers(brokers)
        topics = await core.call(core.zk.get_all_topics)
        ctx.all_topics = set(topics)
        for topic in topics:
            self._topics.watch_topic(topic)
        await self._topics.load_assignments(topics)
        ctx.shutting_down_broker_ids.clear()
        for broker_id in brokers:
            self._brokers.watch_broker(broker_id)
        ctx.leadership = dict(await core.call(core.zk.get_partition_states, ctx.all_partitions))
        ctx.verified.update(ctx.leadership)  # the failover's decisions follow from this very read
        for info, _ in brokers.values():
            core.channels.add_broker(info)

    async def _fetch_topic_deletions(self) -> tuple[set[str], set[str]]:
        core, ctx = self._core, self._core.context
        to_delete = set(await core.call(core.zk.get_topic_deletions))
        # Only topics queued for deletion can be ineligible for it (`TopicDeletionManager.init`
        # keeps the intersection): looking at every replica of every topic cost 200,000 replica
        # checks at 100,000 partitions before the first election.
        with_offline_replicas = {
            topic
            for topic in (to_delete | ctx.topics_to_be_deleted) & ctx.all_topics
            if any(not ctx.is_replica_online(r.replica, r.partition) for r in ctx.replicas_for_topic(topic))
        }
        reassigning = {tp.topic for tp in ctx.partitions_being_reassigned}
        return to_delete, with_offline_replicas | reassigning

    def _rebalance_interval_s(self) -> float:
        configured = self._core.timings.rebalance_check_interval_s
        return (
            configured
            if configured is not None
            else self._core.config.leader_imbalance_check_interval_seconds
        )

    def _schedule_rebalance(self, delay_s: float) -> None:
        if self._rebalance_timer is not None:
            self._rebalance_timer.cancel()
        if not (self.is_active and self._core.config.auto_leader_rebalance_enable):
            self._rebalance_timer = None
            return
        self._rebalance_timer = asyncio.get_running_loop().call_later(
            delay_s, self._queue.put, AutoPreferredReplicaLeaderElection()
        )
