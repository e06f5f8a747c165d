"""Controller election, failover and fencing with real controllers on a real ZooKeeper."""

from __future__ import annotations

import asyncio

from controller_harness import Cluster, expire_session, wait_until, wait_until_async

from zkafka.protocol.messages import LeaderAndIsrRequest, UpdateMetadataRequest
from zkafka.zk.model import TopicPartition
from zkafka.zk.ops import CreateOp, DeleteOp, SetDataOp
from zkafka.zk.znodes import ControllerEpochZNode, ControllerZNode

T0 = TopicPartition("t", 0)


def test_exactly_one_controller_and_updates_to_every_broker(zk_connect: str) -> None:
    async def main() -> None:
        async with Cluster(zk_connect, [1, 2, 3]) as cluster:
            active = await cluster.wait_for_controller()
            assert active.controller is not None
            epoch = active.controller.epoch
            assert epoch >= 1
            assert await cluster.zk(cluster.admin.get_controller_id) == active.broker_id
            assert (await cluster.zk(cluster.admin.get_controller_epoch))[0] == epoch
            # Every other broker's controller sees who won (once its own startup read /controller).
            for node in cluster.nodes.values():
                controller = node.controller
                assert controller is not None
                await wait_until(
                    lambda c=controller: c.active_controller_id == active.broker_id,
                    f"broker {node.broker_id} to know the controller",
                )
            # Every broker learns the live brokers from UpdateMetadata carrying its own broker epoch.
            for node in cluster.nodes.values():
                await wait_until(
                    lambda n=node: any(
                        {b.id for b in r.live_brokers} == {1, 2, 3} and r.broker_epoch == n.broker_epoch
                        for r in n.broker.requests(UpdateMetadataRequest)
                    ),
                    f"UpdateMetadata with all brokers at {node.broker_id}",
                )
            await asyncio.sleep(0.2)
            assert len(cluster.active()) == 1

    asyncio.run(main())


def test_failover_when_the_active_controller_crashes(zk_connect: str) -> None:
    async def main() -> None:
        async with Cluster(zk_connect, [1, 2, 3]) as cluster:
            first = await cluster.wait_for_controller()
            assert first.controller is not None
            old_epoch = first.controller.epoch
            others = [b for b in (1, 2, 3) if b != first.broker_id]
            await cluster.zk(cluster.admin.create_topic_assignment, "t", {0: others})
            before = await cluster.wait_for_state(
                T0, lambda s: s.leader_and_isr.isr == tuple(others), "t-0 online"
            )
            assert before.controller_epoch == old_epoch

            await first.crash()
            second = await cluster.wait_for_controller()
            assert second.broker_id in others and second.controller is not None
            assert second.controller.epoch == old_epoch + 1
            assert (await cluster.zk(cluster.admin.get_controller_epoch))[0] == old_epoch + 1
            # The crashed broker held no replica: failover re-reads the state znode and leaves it alone.
            await asyncio.sleep(0.3)
            assert await cluster.state(T0) == before

            # The next decision is written with the new controller epoch.
            follower = cluster[next(b for b in others if b != second.broker_id)]
            await follower.crash()
            after = await cluster.wait_for_state(
                T0,
                lambda s: s.leader_and_isr.isr == (second.broker_id,),
                "the ISR without the crashed follower",
            )
            assert after.controller_epoch == old_epoch + 1
            assert after.leader_and_isr.leader == second.broker_id
            assert after.leader_and_isr.leader_epoch == before.leader_and_isr.leader_epoch + 1

    asyncio.run(main())


def test_failover_elects_the_dead_controllers_partitions_first_and_takes_it_out_of_every_isr(
    zk_connect: str,
) -> None:
    """The new controller elects the partitions the crashed controller led before it sends the
    failover's LeaderAndIsr for every replica (at 100,000 partitions those take seconds to build),
    and takes the crashed broker's follower replicas out of their ISRs (Kafka's replica state
    machine start-up) instead of leaving that to the leaders' lag check."""
    led, followed, apart = (TopicPartition("f", p) for p in range(3))

    async def main() -> None:
        async with Cluster(zk_connect, [1, 2, 3]) as cluster:
            first = await cluster.wait_for_controller()
            assert first.controller is not None
            old_epoch = first.controller.epoch
            dead = first.broker_id
            x, y = (b for b in (1, 2, 3) if b != dead)
            await cluster.zk(
                cluster.admin.create_topic_assignment, "f", {0: [dead, x], 1: [x, dead], 2: [x, y]}
            )
            for tp in (led, followed, apart):
                await cluster.wait_for_state(tp, lambda s: len(s.leader_and_isr.isr) == 2, f"{tp} online")
            before = {tp: await cluster.state(tp) for tp in (led, followed, apart)}
            survivor = cluster[x]
            survivor.broker.received.clear()

            await first.crash()
            second = await cluster.wait_for_controller()
            assert second.controller is not None and second.controller.epoch == old_epoch + 1
            now = await cluster.wait_for_state(
                led, lambda s: s.leader_and_isr.leader == x, "the dead controller's partition re-elected"
            )
            assert now.leader_and_isr.isr == (x,)
            assert now.leader_and_isr.leader_epoch == before[led].leader_and_isr.leader_epoch + 1
            shrunk = await cluster.wait_for_state(
                followed, lambda s: s.leader_and_isr.isr == (x,), "the dead follower out of the ISR"
            )
            assert shrunk.leader_and_isr.leader == x
            assert shrunk.leader_and_isr.leader_epoch == before[followed].leader_and_isr.leader_epoch + 1
            assert shrunk.controller_epoch == old_epoch + 1
            await asyncio.sleep(0.3)
            assert await cluster.state(apart) == before[apart]  # nothing of it died: left alone

            def this_term(kind: type) -> list:
                return [r for r in survivor.broker.requests(kind) if r.controller_epoch == old_epoch + 1]

            await wait_until(
                lambda: any(
                    p.partition_index == 2
                    for r in this_term(LeaderAndIsrRequest)
                    for t in r.topic_states
                    for p in t.partition_states
                ),
                "the failover's LeaderAndIsr for every replica",
            )
            # the live brokers first, then the election alone, then everything
            assert [
                p.partition_index
                for t in this_term(LeaderAndIsrRequest)[0].topic_states
                for p in t.partition_states
            ] == [0]
            first_um = this_term(UpdateMetadataRequest)[0]
            assert not first_um.topic_states and {b.id for b in first_um.live_brokers} == {x, y}
            told = [
                (r, p)
                for r, p in survivor.broker.leader_and_isr_states(led)
                if r.controller_epoch == old_epoch + 1
            ]
            assert len(told) == 1  # the election's; the failover's full request does not repeat it

    asyncio.run(main())


def test_superseded_controller_is_fenced_and_resigns(zk_connect: str) -> None:
    async def main() -> None:
        async with Cluster(zk_connect, [1]) as cluster:
            node = await cluster.wait_for_controller()
            controller = node.controller
            assert controller is not None
            epoch = controller.epoch
            # Deafen it to /controller so it cannot notice the takeover by itself: only a failed write can
            # tell it.
            assert controller._controller_watch is not None
            controller._controller_watch.cancel()
            # Another "controller" (broker 99) takes over the way a real election does.
            admin = cluster.admin
            assert admin is not None
            _, version = await cluster.zk(admin.get_controller_epoch)
            await cluster.zk(
                admin.multi,
                [
                    DeleteOp(ControllerZNode.path()),
                    CreateOp(ControllerZNode.path(), ControllerZNode.encode(99)),
                    SetDataOp(ControllerEpochZNode.path(), ControllerEpochZNode.encode(epoch + 1), version),
                ],
            )
            await cluster.zk(admin.create_topic_assignment, "t", {0: [1]})
            await wait_until(lambda: not controller.is_active, "the fenced controller to resign")
            assert controller.active_controller_id == 99
            # Its fenced write was refused: no partition state exists.
            await asyncio.sleep(0.2)
            assert await cluster.state(T0) is None

    asyncio.run(main())


def test_session_expiry_resigns_then_reelects_after_reregistration(zk_connect: str) -> None:
    async def main() -> None:
        async with Cluster(zk_connect, [1]) as cluster:
            node = await cluster.wait_for_controller()
            controller = node.controller
            assert controller is not None and node.zk is not None
            old_epoch = controller.epoch
            old_broker_epoch = node.broker_epoch
            await asyncio.to_thread(expire_session, node.zk)
            # The hook re-registers the broker before the controller runs the election again.
            await wait_until(
                lambda: controller.is_active and controller.epoch == old_epoch + 1, "re-election after expiry"
            )
            assert node.broker_epoch > old_broker_epoch
            brokers = await cluster.zk(cluster.admin.get_all_brokers_and_epochs)
            assert brokers[1][1] == node.broker_epoch

            async def knows_new_epoch() -> bool:
                return any(
                    r.broker_epoch == node.broker_epoch and r.controller_epoch == old_epoch + 1
                    for r in node.broker.requests(UpdateMetadataRequest)
                )

            await wait_until_async(knows_new_epoch, "UpdateMetadata to the re-registered broker")

    asyncio.run(main())
