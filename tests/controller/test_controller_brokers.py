"""Brokers leaving, returning, bouncing and shutting down in a controlled way."""

from __future__ import annotations

import asyncio

from controller_harness import Cluster, wait_until

from zkafka.controller import Controller
from zkafka.protocol import ErrorCode
from zkafka.protocol.messages import UpdateMetadataRequest
from zkafka.zk.model import LeaderAndIsr, LeaderIsrAndControllerEpoch, TopicPartition

A0, A1 = TopicPartition("a", 0), TopicPartition("a", 1)
SOLO = TopicPartition("solo", 0)


async def announce_shrink_then_grow_silently(
    cluster: Cluster,
    controller: Controller,
    tp: TopicPartition,
    online: LeaderIsrAndControllerEpoch,
    follower: int,
) -> None:
    """What a leader may do before it dies: shrink the ISR to itself and announce it (the
    controller's copy says [leader]), then grow it back and be gone before announcing that
    (ZooKeeper says [leader, follower]: the controller's copy is stale)."""
    admin = cluster.admin
    assert admin is not None
    lai = online.leader_and_isr
    shrunk = LeaderAndIsr(lai.leader, lai.leader_epoch, (lai.leader,), zk_version=online.zk_version)
    ok, version = await cluster.zk(
        admin.conditional_update_partition_state, tp, shrunk, online.controller_epoch
    )
    assert ok
    await cluster.zk(admin.create_isr_change_notification, [tp])
    await wait_until(
        lambda: controller._core.context.leadership[tp].leader_and_isr.isr == (lai.leader,),
        f"the controller to see the shrunk ISR of {tp}",
    )
    grown = LeaderAndIsr(lai.leader, lai.leader_epoch, (lai.leader, follower), zk_version=version)
    ok, _ = await cluster.zk(admin.conditional_update_partition_state, tp, grown, online.controller_epoch)
    assert ok


def test_broker_leave_reelects_and_never_empties_the_isr(zk_connect: str) -> None:
    async def main() -> None:
        async with Cluster(zk_connect, [1, 2, 3]) as cluster:
            active = await cluster.wait_for_controller()
            admin = cluster.admin
            assert admin is not None
            victim, other = (b for b in (1, 2, 3) if b != active.broker_id)
            await cluster.zk(admin.create_topic_assignment, "a", {0: [victim, other], 1: [other, victim]})
            await cluster.zk(admin.create_topic_assignment, "solo", {0: [victim]})
            before = await cluster.wait_for_state(
                A0, lambda s: s.leader_and_isr.leader == victim, "a-0 online"
            )
            await cluster.wait_for_state(SOLO, lambda s: s.leader_and_isr.leader == victim, "solo online")

            await cluster[victim].crash()
            # It led a-0: the other in-sync replica takes over, epoch + 1, ISR without the victim.
            a0 = await cluster.wait_for_state(
                A0, lambda s: s.leader_and_isr.leader == other, "a-0 re-elected"
            )
            assert a0.leader_and_isr.leader_epoch == before.leader_and_isr.leader_epoch + 1
            assert a0.leader_and_isr.isr == (other,)
            # It followed a-1: removed from the ISR with a new epoch, leader unchanged.
            a1 = await cluster.wait_for_state(
                A1, lambda s: s.leader_and_isr.isr == (other,), "a-1 ISR shrunk"
            )
            assert (a1.leader_and_isr.leader, a1.leader_and_isr.leader_epoch) == (other, 1)
            # Its only replica is gone: no leader, but the ISR keeps its last member.
            solo = await cluster.wait_for_state(
                SOLO, lambda s: s.leader_and_isr.leader == -1, "solo leaderless"
            )
            assert solo.leader_and_isr.isr == (victim,) and solo.leader_and_isr.leader_epoch == 1

            surviving = cluster[other]
            await wait_until(
                lambda: any(
                    s.leader == other and s.leader_epoch == 1 and not s.is_new
                    for _, s in surviving.broker.leader_and_isr_states(A0)
                ),
                "LeaderAndIsr for the new leader",
            )
            for node in (active, surviving):
                await wait_until(
                    lambda n=node: any(
                        um.leader == -1 and um.offline_replicas == [victim]
                        for _, um in n.broker.metadata_states(SOLO)
                    ),
                    f"UpdateMetadata with the offline replica at {node.broker_id}",
                )

            # The broker returns: its replica leads the offline partition again, and it gets full metadata.
            returning = cluster[victim]
            returning.broker.received.clear()
            await returning.start(with_controller=False)
            back = await cluster.wait_for_state(
                SOLO, lambda s: s.leader_and_isr.leader == victim, "solo back online"
            )
            assert back.leader_and_isr == LeaderAndIsr(victim, 2, (victim,), zk_version=back.zk_version)
            await wait_until(
                lambda: any(
                    {t.topic_name for t in r.topic_states} >= {"a", "solo"}
                    and r.broker_epoch == returning.broker_epoch
                    for r in returning.broker.requests(UpdateMetadataRequest)
                ),
                "full UpdateMetadata to the returning broker",
            )
            await wait_until(
                lambda: returning.broker.leader_and_isr_states(A1), "LeaderAndIsr for its follower replica"
            )
            request, state = returning.broker.leader_and_isr_states(A1)[0]
            assert request.broker_epoch == returning.broker_epoch and state.leader == other

    asyncio.run(main())


def test_bounced_broker_is_treated_as_failure_and_startup(zk_connect: str) -> None:
    async def main() -> None:
        async with Cluster(zk_connect, [1, 2]) as cluster:
            active = await cluster.wait_for_controller()
            admin = cluster.admin
            assert admin is not None
            other = 3 - active.broker_id
            await cluster.zk(admin.create_topic_assignment, "a", {0: [other]})
            await cluster.wait_for_state(A0, lambda s: s.leader_and_isr.leader == other, "a-0 online")
            node = cluster[other]
            old_epoch = node.broker_epoch
            # Same session re-registers: same id, larger czxid (what a broker does after a session loss).
            await node.reregister()
            assert node.broker_epoch > old_epoch
            await wait_until(
                lambda: any(
                    r.broker_epoch == node.broker_epoch for r, _ in node.broker.leader_and_isr_states(A0)
                ),
                "LeaderAndIsr addressed to the new incarnation",
            )
            state = await cluster.state(A0)
            assert state is not None and state.leader_and_isr.leader == other
            assert state.leader_and_isr.leader_epoch == 2  # failure (leader -1) then startup (re-elected)
            # The failure half takes the old incarnation's replicas OFFLINE, whose StopReplica is
            # for no live broker (Kafka's batch sends none): the new incarnation, whose channel is
            # already open, must not be told to stop the replica it is about to lead. Had it been
            # sent, it would have arrived before the startup's LeaderAndIsr (one channel, in order).
            assert False not in node.broker.stop_replicas(A0)

    asyncio.run(main())


def test_unclean_election_follows_the_topic_override(zk_connect: str) -> None:
    async def main() -> None:
        async with Cluster(zk_connect, [1, 2, 3]) as cluster:
            active = await cluster.wait_for_controller()
            admin = cluster.admin
            assert admin is not None
            x, y = (b for b in (1, 2, 3) if b != active.broker_id)
            for topic in ("clean", "dirty"):
                await cluster.zk(
                    admin.create_topic_assignment,
                    topic,
                    {0: [x, y]},
                    config={"unclean.leader.election.enable": "true"} if topic == "dirty" else {},
                )
                await cluster.wait_for_state(TopicPartition(topic, 0), lambda s: True, f"{topic} online")
            # y falls out of the ISR, then x (the only in-sync replica) dies while y is alive.
            for topic in ("clean", "dirty"):
                tp = TopicPartition(topic, 0)
                state = await cluster.state(tp)
                assert state is not None
                shrunk = LeaderAndIsr(x, state.leader_and_isr.leader_epoch, (x,), zk_version=state.zk_version)
                assert (
                    await cluster.zk(
                        admin.conditional_update_partition_state, tp, shrunk, state.controller_epoch
                    )
                )[0]
            await cluster[x].crash()
            dirty = await cluster.wait_for_state(
                TopicPartition("dirty", 0), lambda s: s.leader_and_isr.leader == y, "unclean election of y"
            )
            assert dirty.leader_and_isr.isr == (y,)
            clean = await cluster.wait_for_state(
                TopicPartition("clean", 0),
                lambda s: s.leader_and_isr.leader == -1,
                "clean partition leaderless",
            )
            assert clean.leader_and_isr.isr == (x,)

    asyncio.run(main())


def test_controlled_shutdown_moves_leadership_away(zk_connect: str) -> None:
    async def main() -> None:
        async with Cluster(zk_connect, [1, 2, 3]) as cluster:
            active = await cluster.wait_for_controller()
            controller = active.controller
            assert controller is not None
            admin = cluster.admin
            assert admin is not None
            leaving, staying = (b for b in (1, 2, 3) if b != active.broker_id)
            await cluster.zk(
                admin.create_topic_assignment, "a", {0: [leaving, staying], 1: [staying, leaving]}
            )
            await cluster.zk(admin.create_topic_assignment, "solo", {0: [leaving]})
            await cluster.wait_for_state(SOLO, lambda s: True, "solo online")
            await cluster.wait_for_state(A1, lambda s: True, "a-1 online")
            node = cluster[leaving]

            assert await controller.controlled_shutdown(leaving, node.broker_epoch - 1) == (
                ErrorCode.STALE_BROKER_EPOCH,
                set(),
            )
            assert await controller.controlled_shutdown(42, -1) == (ErrorCode.BROKER_NOT_AVAILABLE, set())
            # A broker that is not the controller answers NOT_CONTROLLER.
            bystander = cluster[staying].controller
            assert bystander is not None
            assert (await bystander.controlled_shutdown(leaving, node.broker_epoch))[
                0
            ] is ErrorCode.NOT_CONTROLLER

            error, remaining = await controller.controlled_shutdown(leaving, node.broker_epoch)
            assert error is ErrorCode.NONE
            assert (
                remaining == set()
            )  # everything replicated moved; solo (RF 1) cannot move and does not count
            assert (await cluster.state(SOLO)).leader_and_isr.leader == leaving
            a0 = await cluster.state(A0)
            a1 = await cluster.state(A1)
            assert a0 is not None and a1 is not None
            assert (a0.leader_and_isr.leader, a0.leader_and_isr.isr, a0.leader_and_isr.leader_epoch) == (
                staying,
                (staying,),
                1,
            )
            assert (a1.leader_and_isr.leader, a1.leader_and_isr.isr) == (staying, (staying,))
            await wait_until(
                lambda: False in node.broker.stop_replicas(A1), "StopReplica for the followed partition"
            )
            assert True not in node.broker.stop_replicas(A1)  # stopped, never deleted

    asyncio.run(main())


def test_election_retries_after_a_concurrent_state_write(zk_connect: str) -> None:
    async def main() -> None:
        async with Cluster(zk_connect, [1, 2, 3]) as cluster:
            active = await cluster.wait_for_controller()
            admin = cluster.admin
            zk = active.zk
            assert admin is not None and zk is not None
            x, y = (b for b in (1, 2, 3) if b != active.broker_id)
            await cluster.zk(admin.create_topic_assignment, "a", {0: [x, y]})
            before = await cluster.wait_for_state(A0, lambda s: s.leader_and_isr.leader == x, "a-0 online")
            # The leader rewrites the state znode (as an ISR update would) right between the controller's
            # read and its conditional write: the write fails with BADVERSION and must be retried.
            original = zk.update_leader_and_isr
            raced: list[bool] = []

            def racing_update(states, controller_epoch, epoch_zk_version):  # type: ignore[no-untyped-def]
                states = dict(states)  # the controller hands its decisions over as they are made
                if A0 in states and not raced:
                    raced.append(True)
                    ok, _ = admin.conditional_update_partition_state(
                        A0, before.leader_and_isr, before.controller_epoch
                    )
                    assert ok
                return original(states, controller_epoch, epoch_zk_version)

            zk.update_leader_and_isr = racing_update  # type: ignore[method-assign]
            await cluster[x].crash()
            after = await cluster.wait_for_state(A0, lambda s: s.leader_and_isr.leader == y, "a-0 re-elected")
            assert raced
            assert after.leader_and_isr.leader_epoch == before.leader_and_isr.leader_epoch + 1
            assert after.zk_version == before.zk_version + 2  # the racing write, then ours
            assert after.leader_and_isr.isr == (y,)

    asyncio.run(main())


def test_election_sees_an_isr_the_leader_grew_behind_the_controllers_back(zk_connect: str) -> None:
    """The controller decides first from its own copy of each state and only writes conditionally on
    the copy's zkVersion; a copy that leads to *no* write (no live in-sync replica) must still be
    checked against ZooKeeper, or a partition whose ISR the leader grew (announcement not yet
    processed) would stay offline although an in-sync replica is alive."""

    async def main() -> None:
        async with Cluster(zk_connect, [1, 2, 3]) as cluster:
            active = await cluster.wait_for_controller()
            admin = cluster.admin
            controller = active.controller
            assert admin is not None and controller is not None
            x, y = (b for b in (1, 2, 3) if b != active.broker_id)
            await cluster.zk(admin.create_topic_assignment, "a", {0: [x, y]})
            first = await cluster.wait_for_state(A0, lambda s: s.leader_and_isr.leader == x, "a-0 online")
            # It shrinks the ISR, announced, grows it back, not announced, and dies.
            await announce_shrink_then_grow_silently(cluster, controller, A0, first, y)
            await cluster[x].crash()
            after = await cluster.wait_for_state(A0, lambda s: s.leader_and_isr.leader == y, "a-0 re-elected")
            assert after.leader_and_isr.isr == (y,)
            assert after.leader_and_isr.leader_epoch == first.leader_and_isr.leader_epoch + 1

    asyncio.run(main())


def test_controlled_shutdown_rereads_only_the_refusals_an_isr_change_could_overturn(zk_connect: str) -> None:
    """Leaders are decided from the controller's copies of the states; a refusal (no eligible
    leader) writes nothing, so a stale copy would go unnoticed and it is read again from
    ZooKeeper. Not when no replica of the partition is live but the one leaving: no ISR can
    change that (a cluster going down has tens of thousands of those on its last brokers)."""
    b0, pair0 = TopicPartition("b", 0), TopicPartition("pair", 0)

    async def main() -> None:
        async with Cluster(zk_connect, [1, 2, 3, 4]) as cluster:
            active = await cluster.wait_for_controller()
            controller, zk, admin = active.controller, active.zk, cluster.admin
            assert controller is not None and zk is not None and admin is not None
            leaving, staying, gone = (b for b in (1, 2, 3, 4) if b != active.broker_id)
            await cluster.zk(admin.create_topic_assignment, "pair", {0: [leaving, gone]})
            await cluster.zk(admin.create_topic_assignment, "b", {0: [leaving, staying]})
            await cluster.wait_for_state(pair0, lambda s: s.leader_and_isr.leader == leaving, "pair-0")
            online = await cluster.wait_for_state(
                b0, lambda s: s.leader_and_isr.isr == (leaving, staying), "b-0"
            )
            # pair-0's partner dies: it keeps its leader, which has nobody left to hand over to.
            await cluster[gone].crash()
            await cluster.wait_for_state(pair0, lambda s: s.leader_and_isr.isr == (leaving,), "pair-0 shrunk")
            # The controller's copy of b-0 is stale: ISR [leaving] where ZooKeeper has both.
            await announce_shrink_then_grow_silently(cluster, controller, b0, online, staying)

            read: list[TopicPartition] = []
            original = zk.get_partition_states

            def counting(partitions):  # type: ignore[no-untyped-def]
                read.extend(partitions)
                return original(partitions)

            zk.get_partition_states = counting  # type: ignore[method-assign]
            error, remaining = await controller.controlled_shutdown(leaving, cluster[leaving].broker_epoch)
            assert error is ErrorCode.NONE and remaining == {pair0}
            # b-0 was refused on the stale copy, read again, and moved; pair-0 was refused for good.
            assert b0 in read and pair0 not in read
            assert (await cluster.state(b0)).leader_and_isr.leader == staying  # type: ignore[union-attr]
            assert (await cluster.state(pair0)).leader_and_isr.leader == leaving  # type: ignore[union-attr]

    asyncio.run(main())
