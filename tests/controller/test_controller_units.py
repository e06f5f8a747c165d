"""Pure pieces of the controller: reassignment arithmetic, the imbalance check, the event queue and
the state each event is timed under."""

from __future__ import annotations

import asyncio

from zkafka.controller.context import ReplicaAssignment
from zkafka.controller.events import (
    ControlledShutdown,
    ControllerEvent,
    ControllerState,
    EventQueue,
    Startup,
    TopicChange,
)
from zkafka.controller.leader_balance import imbalanced_partitions
from zkafka.protocol import ErrorCode
from zkafka.zk.model import TopicPartition


def test_reassign_to_orders_target_first_and_computes_adding_removing() -> None:
    current = ReplicaAssignment((1, 2, 3))
    moving = current.reassign_to([3, 4, 5])
    assert moving == ReplicaAssignment((3, 4, 5, 1, 2), adding=(4, 5), removing=(1, 2))
    assert moving.origin_replicas == (3, 1, 2)
    assert moving.target_replicas == (3, 4, 5)
    assert moving.is_being_reassigned
    # Changing the target of an in-flight reassignment keeps the original replicas as the origin.
    changed = moving.reassign_to([6, 1])
    assert changed == ReplicaAssignment((6, 1, 3, 2), adding=(6,), removing=(3, 2))
    # Cancelling = reassigning back to the origin.
    assert moving.reassign_to(moving.origin_replicas) == ReplicaAssignment((3, 1, 2))
    assert moving.remove_replica(4) == ReplicaAssignment((3, 5, 1, 2), adding=(5,), removing=(1, 2))


def test_imbalance_counts_per_preferred_broker() -> None:
    tps = [TopicPartition("t", p) for p in range(6)]
    assignments = {
        tps[0]: (1, 2),
        tps[1]: (1, 2),
        tps[2]: (1, 2),
        tps[3]: (1, 2),
        tps[4]: (2, 1),
        tps[5]: (2, 1),
    }
    leaders = {tps[0]: 2, tps[1]: 1, tps[2]: 1, tps[3]: 1, tps[4]: 2, tps[5]: 2}
    # Broker 1: 1 of 4 misplaced = 25 %.
    assert imbalanced_partitions(assignments, leaders, 10) == {1: [tps[0]]}
    assert imbalanced_partitions(assignments, leaders, 25) == {}
    # Partitions without a known leader are not counted as misplaced.
    assert imbalanced_partitions(assignments, {tps[4]: 1}, 10) == {2: [tps[4]]}


def test_event_queue_is_fifo_and_clear_answers_waiters() -> None:
    async def main() -> None:
        queue = EventQueue()
        future: asyncio.Future[tuple[ErrorCode, set[TopicPartition]]] = (
            asyncio.get_running_loop().create_future()
        )
        queue.put(TopicChange())
        queue.put(ControlledShutdown(1, 5, future))
        startup = Startup()
        queue.clear_and_put(startup)
        assert future.result() == (ErrorCode.NOT_CONTROLLER, set())
        assert len(queue) == 1
        assert await queue.get() is startup
        getter = asyncio.ensure_future(queue.get())
        await asyncio.sleep(0)
        assert not getter.done()
        change = TopicChange()
        queue.put(change)
        assert await asyncio.wait_for(getter, 1) is change

    asyncio.run(main())


def test_event_queue_tells_how_long_an_event_waited() -> None:
    async def main() -> None:
        queue = EventQueue()
        queue.put(TopicChange())
        await asyncio.sleep(0.05)
        event, waited_s = await queue.get_with_wait()
        assert isinstance(event, TopicChange) and 0.05 <= waited_s < 5
        assert event.state is ControllerState.TOPIC_CHANGE

    asyncio.run(main())


def test_every_event_names_a_state_and_every_state_a_catalogued_timer() -> None:
    """Kafka's ControllerStats: one `<State>RateAndTimeMs` timer per controller state but idle."""
    from zkafka.controller import events
    from zkafka.metrics.catalogue import BY_NAME, STATE_TIMERS
    from zkafka.server.broker_metrics import state_timer

    kinds = [c for c in vars(events).values() if isinstance(c, type) and issubclass(c, ControllerEvent)]
    concrete = [c for c in kinds if c.__name__ not in ("ControllerEvent", "_Awaited")]
    assert len(concrete) == 21
    assert all(isinstance(c.state, ControllerState) and c.state is not ControllerState.IDLE for c in concrete)
    timers = [state_timer(s) for s in ControllerState if s is not ControllerState.IDLE]
    assert all(t in BY_NAME for t in timers)
    assert sorted(timers) == sorted(f"kafka_controller_controllerstats_{n}" for n, _ in STATE_TIMERS)
    assert state_timer(ControllerState.BROKER_CHANGE).endswith("_leaderelectionrateandtimems")
    assert state_timer(ControllerState.TOPIC_CHANGE).endswith("_topicchangerateandtimems")


def test_replicas_and_partitions_on_brokers_walk_the_assignments_in_topic_and_partition_order() -> None:
    from zkafka.controller.context import ControllerContext
    from zkafka.controller.states import PartitionAndReplica

    ctx = ControllerContext()
    # inserted out of order, and a partition added after all_partitions was built
    for topic, p, replicas in [("b", 1, (2, 3)), ("a", 2, (1, 2)), ("b", 0, (3, 1)), ("a", 0, (3, 2))]:
        ctx.update_partition_full_replica_assignment(TopicPartition(topic, p), ReplicaAssignment(replicas))
    assert ctx.all_partitions == [
        TopicPartition("a", 0),
        TopicPartition("a", 2),
        TopicPartition("b", 0),
        TopicPartition("b", 1),
    ]
    ctx.update_partition_full_replica_assignment(TopicPartition("a", 1), ReplicaAssignment((1,)))
    naive = [
        PartitionAndReplica(tp, r)
        for tp in ctx.all_partitions
        for r in ctx.partition_replica_assignment(tp)
        if r in {1, 3}
    ]
    assert ctx.replicas_on_brokers([1, 3]) == naive
    assert ctx.partitions_on_broker(2) == [
        TopicPartition("a", 0),
        TopicPartition("a", 2),
        TopicPartition("b", 1),
    ]
    assert ctx.replicas_on_brokers([9]) == [] and ctx.partitions_on_broker(9) == []


def test_online_replicas_of_many_partitions_agrees_with_one_at_a_time() -> None:
    """Partitions with the same assignment share one set of online replicas, until a replica is
    on a failed log dir: then each partition gets its own (a shared set would hide that replica's
    failure from the partitions beside it, or spread it to them)."""
    from zkafka.controller.context import ControllerContext

    ctx = ControllerContext()
    ctx.live_brokers = dict.fromkeys([1, 2, 3])  # type: ignore[arg-type]
    ctx.shutting_down_broker_ids = {3}
    tps = [TopicPartition("t", p) for p in range(6)]
    for tp in tps:
        ctx.update_partition_full_replica_assignment(tp, ReplicaAssignment((tp.partition % 4 + 1, 2, 3)))

    def one_at_a_time() -> list[set[int]]:
        return [ctx.online_replicas(tp) for tp in tps]

    assert ctx.online_replicas_of(tps) == one_at_a_time()
    assert ctx.online_replicas_of(tps, include_shutting_down=True) == [
        ctx.online_replicas(tp, include_shutting_down=True) for tp in tps
    ]
    shared = ctx.online_replicas_of(tps)
    assert shared[0] is shared[4]  # same assignment (1, 2, 3): one set
    ctx.replicas_on_offline_dirs[2] = {tps[4]}
    assert ctx.online_replicas_of(tps) == one_at_a_time()
    assert ctx.online_replicas_of(tps, include_shutting_down=True) == [
        ctx.online_replicas(tp, include_shutting_down=True) for tp in tps
    ]
    assert 2 in ctx.online_replicas_of(tps)[0] and 2 not in ctx.online_replicas_of(tps)[4]


def test_partitions_with_offline_leader_with_and_without_failed_log_dirs() -> None:
    """A leader counts as offline when its broker is gone or shutting down, or (only while some
    replica is on a failed log dir) when its own replica is on one; topics queued for deletion are
    left out either way."""
    from zkafka.controller.context import ControllerContext
    from zkafka.zk.model import LeaderAndIsr, LeaderIsrAndControllerEpoch

    ctx = ControllerContext()
    ctx.live_brokers = dict.fromkeys([1, 2, 3])  # type: ignore[arg-type]
    ctx.shutting_down_broker_ids = {3}
    tps = [TopicPartition("t", p) for p in range(5)] + [TopicPartition("doomed", 0)]
    for tp, leader in zip(tps, [1, 2, 3, 4, 1, 4], strict=True):
        ctx.leadership[tp] = LeaderIsrAndControllerEpoch(LeaderAndIsr(leader, 0, (leader,)), 1)
    ctx.topics_to_be_deleted = {"doomed"}
    expected = [tp for tp in tps if not ctx.is_replica_online(ctx.leadership[tp].leader_and_isr.leader, tp)]
    assert ctx.partitions_with_offline_leader() == [t for t in expected if t.topic != "doomed"]
    assert ctx.partitions_with_offline_leader() == [TopicPartition("t", 2), TopicPartition("t", 3)]
    ctx.replicas_on_offline_dirs[1] = {TopicPartition("t", 4)}
    assert ctx.partitions_with_offline_leader() == [
        TopicPartition("t", 2),
        TopicPartition("t", 3),
        TopicPartition("t", 4),
    ]


def test_the_controllers_own_broker_is_sent_its_requests_first() -> None:
    """Clients send CreateTopics to the controller, which answers once its own broker's metadata
    has the new leaders: that broker's LeaderAndIsr and UpdateMetadata are queued first, the
    others in broker order."""
    from types import SimpleNamespace

    from zkafka.controller.context import ControllerContext
    from zkafka.controller.request_batch import ControllerBrokerRequestBatch
    from zkafka.zk.model import (
        BrokerInfo,
        EndPoint,
        LeaderAndIsr,
        LeaderIsrAndControllerEpoch,
        SecurityProtocol,
    )

    sent: list[tuple[int, str]] = []
    channels = SimpleNamespace(
        listener_name="PLAINTEXT",
        send=lambda broker_id, request, version, callback: sent.append((broker_id, type(request).__name__)),
    )
    ctx = ControllerContext(epoch=1, epoch_zk_version=0)
    ctx.set_live_brokers(
        {
            b: (BrokerInfo(b, (EndPoint("PLAINTEXT", "127.0.0.1", 9000 + b, SecurityProtocol.PLAINTEXT),)), b)
            for b in (1, 2, 3)
        }
    )
    batch = ControllerBrokerRequestBatch(2, ctx, channels)  # type: ignore[arg-type]
    tp = TopicPartition("t", 0)
    assignment = ReplicaAssignment((1, 2, 3))
    ctx.update_partition_full_replica_assignment(tp, assignment)
    state = LeaderIsrAndControllerEpoch(LeaderAndIsr.initial(1, [1, 2, 3]), 1)
    ctx.leadership[tp] = state
    batch.add_leader_and_isr([1, 2, 3], tp, state, assignment, is_new=True)
    assert batch.flush()
    assert sent == [
        (2, "LeaderAndIsrRequest"),
        (1, "LeaderAndIsrRequest"),
        (3, "LeaderAndIsrRequest"),
        (2, "EncodedUpdateMetadataRequest"),
        (1, "EncodedUpdateMetadataRequest"),
        (3, "EncodedUpdateMetadataRequest"),
    ]
