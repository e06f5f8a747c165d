"""Preferred replica elections (znode, API, automatic rebalance) and partition reassignment."""

from __future__ import annotations

import asyncio

from controller_harness import Cluster, wait_until, wait_until_async

from zkafka.protocol import ErrorCode
from zkafka.zk.model import LeaderAndIsr, LeaderIsrAndControllerEpoch, TopicPartition
from zkafka.zk.znodes import PreferredReplicaElectionZNode, ReassignPartitionsZNode

P0 = TopicPartition("p", 0)
R0, R1 = TopicPartition("r", 0), TopicPartition("r", 1)


async def expand_isr(
    cluster: Cluster, tp: TopicPartition, isr: tuple[int, ...]
) -> LeaderIsrAndControllerEpoch:
    """What a leader does when followers catch up (old inter-broker protocol): rewrite the ISR in the
    state znode, then announce it with an ISR change notification. Like a leader, it re-reads the
    state and tries again when the controller wrote it in between (a new controller resuming a
    reassignment bumps the leader epoch, which changes the znode's version)."""
    admin = cluster.admin
    assert admin is not None
    written: list[LeaderIsrAndControllerEpoch] = []

    async def write() -> bool:
        state = await cluster.state(tp)
        assert state is not None
        lai = state.leader_and_isr
        new = LeaderAndIsr(lai.leader, lai.leader_epoch, isr, zk_version=lai.zk_version)
        ok, version = await cluster.zk(
            admin.conditional_update_partition_state, tp, new, state.controller_epoch
        )
        if ok:
            written.append(LeaderIsrAndControllerEpoch(new.with_zk_version(version), state.controller_epoch))
        return bool(ok)

    await wait_until_async(write, f"the ISR of {tp} written as {isr}")
    await cluster.zk(admin.create_isr_change_notification, [tp])
    return written[0]


async def leader_moved_off_preferred(cluster: Cluster, preferred: int, other: int) -> None:
    """p-0 = [preferred, other]: bounce the preferred broker so `other` leads, then let it catch up."""
    admin = cluster.admin
    assert admin is not None
    await cluster.zk(admin.create_topic_assignment, "p", {0: [preferred, other]})
    await cluster.wait_for_state(P0, lambda s: s.leader_and_isr.leader == preferred, "p-0 online")
    await cluster[preferred].crash()
    await cluster.wait_for_state(P0, lambda s: s.leader_and_isr.leader == other, "p-0 led by the other")
    await cluster[preferred].start(with_controller=False)
    await asyncio.sleep(0.2)
    await expand_isr(cluster, P0, (other, preferred))


def test_preferred_replica_election_znode(zk_connect: str) -> None:
    async def main() -> None:
        async with Cluster(zk_connect, [1, 2, 3]) as cluster:
            active = await cluster.wait_for_controller()
            preferred, other = (b for b in (1, 2, 3) if b != active.broker_id)
            await leader_moved_off_preferred(cluster, preferred, other)
            before = await cluster.state(P0)
            assert before is not None and before.leader_and_isr.leader == other
            admin = cluster.admin
            assert admin is not None
            await cluster.zk(admin.create_preferred_replica_election, [P0, TopicPartition("nope", 0)])
            after = await cluster.wait_for_state(
                P0, lambda s: s.leader_and_isr.leader == preferred, "preferred leads"
            )
            assert after.leader_and_isr.leader_epoch == before.leader_and_isr.leader_epoch + 1
            assert after.leader_and_isr.isr == (other, preferred)  # unchanged by a preferred election

            async def znode_gone() -> bool:
                return await cluster.zk(admin.exists, PreferredReplicaElectionZNode.path()) is None

            await wait_until_async(znode_gone, "the election znode deleted")

    asyncio.run(main())


def test_elect_leaders_api_results(zk_connect: str) -> None:
    async def main() -> None:
        async with Cluster(zk_connect, [1, 2, 3]) as cluster:
            active = await cluster.wait_for_controller()
            controller = active.controller
            assert controller is not None
            preferred, other = (b for b in (1, 2, 3) if b != active.broker_id)
            await leader_moved_off_preferred(cluster, preferred, other)
            await wait_until(
                lambda: preferred in (controller._core.context.leadership[P0].leader_and_isr.isr),
                "the controller to see the expanded ISR",
            )
            ghost = TopicPartition("ghost", 0)
            results = await controller.elect_leaders([P0, ghost])
            assert results[P0] == (ErrorCode.NONE, None)
            assert results[ghost][0] is ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            assert (await controller.elect_leaders([P0]))[P0][0] is ErrorCode.ELECTION_NOT_NEEDED
            assert (await controller.elect_leaders([P0], unclean=True))[P0][
                0
            ] is ErrorCode.ELECTION_NOT_NEEDED
            state = await cluster.state(P0)
            assert state is not None and state.leader_and_isr.leader == preferred
            bystander = cluster[other].controller
            assert bystander is not None
            assert (await bystander.elect_leaders([P0]))[P0][0] is ErrorCode.NOT_CONTROLLER

    asyncio.run(main())


def test_automatic_leader_rebalance(zk_connect: str) -> None:
    async def main() -> None:
        async with Cluster(zk_connect, [1, 2, 3], auto_leader_rebalance_enable="true") as cluster:
            active = await cluster.wait_for_controller()
            preferred, other = (b for b in (1, 2, 3) if b != active.broker_id)
            await leader_moved_off_preferred(cluster, preferred, other)
            await cluster.wait_for_state(
                P0, lambda s: s.leader_and_isr.leader == preferred, "rebalanced leader"
            )

    asyncio.run(main())


def test_reassignment_through_the_znode(zk_connect: str) -> None:
    async def main() -> None:
        async with Cluster(zk_connect, [1, 2, 3, 4]) as cluster:
            active = await cluster.wait_for_controller()
            admin = cluster.admin
            assert admin is not None
            a, b, c = (x for x in (1, 2, 3, 4) if x != active.broker_id)
            await cluster.zk(admin.create_topic_assignment, "r", {0: [a, b], 1: [b, a]})
            before = await cluster.wait_for_state(R0, lambda s: s.leader_and_isr.leader == a, "r-0 online")
            await cluster.wait_for_state(R1, lambda s: True, "r-1 online")

            await cluster.zk(admin.create_partition_reassignment, {R0: [b, c]})

            # U1: the topic znode holds target + original with adding/removing.
            async def in_flight() -> bool:
                t = await cluster.zk(admin.get_topic_assignment, "r")
                return t.partitions[0] == (b, c, a) and t.adding_replicas.get(0) == (c,)

            await wait_until_async(in_flight, "the in-flight assignment in the topic znode")
            t = await cluster.zk(admin.get_topic_assignment, "r")
            assert t.removing_replicas == {0: (a,)} and t.partitions[1] == (b, a)
            # A1: new leader epoch, LeaderAndIsr(is_new) to the adding replica.
            bumped = await cluster.wait_for_state(
                R0,
                lambda s: s.leader_and_isr.leader_epoch == before.leader_and_isr.leader_epoch + 1,
                "epoch bump",
            )
            assert bumped.leader_and_isr.leader == a
            await wait_until(
                lambda: cluster[c].broker.leader_and_isr_states(R0), "LeaderAndIsr to the new replica"
            )
            _, state = cluster[c].broker.leader_and_isr_states(R0)[0]
            assert state.is_new and state.adding_replicas == [c] and state.removing_replicas == [a]
            assert state.replicas == [b, c, a]

            # Nothing completes until the target is in sync.
            await asyncio.sleep(0.3)
            assert await cluster.zk(admin.get_partition_reassignment) == {R0: (b, c)}

            await expand_isr(cluster, R0, (a, b, c))
            # B3: the old leader is not a target: leadership moves to the first in-sync target.
            done = await cluster.wait_for_state(
                R0, lambda s: s.leader_and_isr.leader == b and a not in s.leader_and_isr.isr, "leader moved"
            )
            assert set(done.leader_and_isr.isr) == {b, c}

            async def finished() -> bool:
                t = await cluster.zk(admin.get_topic_assignment, "r")
                gone = await cluster.zk(admin.exists, ReassignPartitionsZNode.path()) is None
                return (
                    gone and t.partitions[0] == (b, c) and not t.adding_replicas and not t.removing_replicas
                )

            await wait_until_async(finished, "the reassignment recorded as finished")
            # B4/B5: the removed replica is stopped, then deleted.
            await wait_until(
                lambda: True in cluster[a].broker.stop_replicas(R0), "StopReplica(delete) to the old replica"
            )
            assert cluster[a].broker.stop_replicas(R0)[0] is False
            assert (await cluster.zk(admin.get_topic_assignment, "r")).partitions[1] == (b, a)

    asyncio.run(main())


def test_reassignment_api_and_cancel(zk_connect: str) -> None:
    async def main() -> None:
        async with Cluster(zk_connect, [1, 2, 3]) as cluster:
            active = await cluster.wait_for_controller()
            controller = active.controller
            assert controller is not None
            admin = cluster.admin
            assert admin is not None
            a, b = (x for x in (1, 2, 3) if x != active.broker_id)
            await cluster.zk(admin.create_topic_assignment, "r", {0: [a]})
            await cluster.wait_for_state(R0, lambda s: True, "r-0 online")

            bad = await controller.alter_partition_reassignments(
                {R0: [a, a], R1: [a], TopicPartition("r", 7): None}
            )
            assert bad[R0][0] is ErrorCode.INVALID_REPLICA_ASSIGNMENT
            assert bad[R1][0] is ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            assert bad[TopicPartition("r", 7)][0] is ErrorCode.NO_REASSIGNMENT_IN_PROGRESS
            assert (await controller.alter_partition_reassignments({R0: [a, 99]}))[R0][0] is (
                ErrorCode.INVALID_REPLICA_ASSIGNMENT
            )

            assert (await controller.alter_partition_reassignments({R0: [a, b]}))[R0] == (
                ErrorCode.NONE,
                None,
            )
            ongoing = controller.list_partition_reassignments()
            assert ongoing[R0].replicas == (a, b) and ongoing[R0].adding == (b,)
            t = await cluster.zk(admin.get_topic_assignment, "r")
            assert t.adding_replicas == {0: (b,)}

            # Cancel: back to the original replicas; the added replica is stopped and removed.
            assert (await controller.alter_partition_reassignments({R0: None}))[R0] == (ErrorCode.NONE, None)
            assert controller.list_partition_reassignments() == {}
            t = await cluster.zk(admin.get_topic_assignment, "r")
            assert t.partitions[0] == (a,) and not t.adding_replicas
            await wait_until(lambda: True in cluster[b].broker.stop_replicas(R0), "the added replica deleted")

    asyncio.run(main())


def test_new_controller_resumes_a_reassignment(zk_connect: str) -> None:
    async def main() -> None:
        async with Cluster(zk_connect, [1, 2, 3, 4]) as cluster:
            first = await cluster.wait_for_controller()
            admin = cluster.admin
            assert admin is not None
            a, b, c = (x for x in (1, 2, 3, 4) if x != first.broker_id)
            await cluster.zk(admin.create_topic_assignment, "r", {0: [a, b]})
            await cluster.wait_for_state(R0, lambda s: True, "r-0 online")
            await cluster.zk(admin.create_partition_reassignment, {R0: [b, c]})

            async def in_flight() -> bool:
                return (await cluster.zk(admin.get_topic_assignment, "r")).adding_replicas == {0: (c,)}

            await wait_until_async(in_flight, "the reassignment started")
            await first.crash()
            second = await cluster.wait_for_controller()
            assert second.controller is not None
            await wait_until(
                lambda: R0 in second.controller.list_partition_reassignments(), "reassignment resumed"
            )
            await expand_isr(cluster, R0, (a, b, c))

            async def finished() -> bool:
                t = await cluster.zk(admin.get_topic_assignment, "r")
                return t.partitions[0] == (b, c) and not t.adding_replicas and not t.removing_replicas

            await wait_until_async(finished, "the reassignment completed by the new controller")
            state = await cluster.state(R0)
            assert state is not None and state.leader_and_isr.leader == b
            assert state.controller_epoch == second.controller.epoch

            async def admin_znode_gone() -> bool:
                # B7 follows B6 (the topic znode `finished` saw): a read may fall in between.
                return await cluster.zk(admin.get_partition_reassignment) is None

            await wait_until_async(admin_znode_gone, "the partition dropped from /admin/reassign_partitions")

    asyncio.run(main())
