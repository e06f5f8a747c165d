"""Topic creation, partition increase, ISR change notifications and topic deletion, end to end."""

from __future__ import annotations

import asyncio

from controller_harness import Cluster, FakeBroker, wait_until, wait_until_async

from zkafka.protocol.messages import LeaderAndIsrRequest, StopReplicaRequest, UpdateMetadataRequest
from zkafka.zk.model import LeaderAndIsr, TopicPartition
from zkafka.zk.znodes import DeleteTopicsTopicZNode, TopicZNode

T0, T1, T2 = TopicPartition("t", 0), TopicPartition("t", 1), TopicPartition("t", 2)


def positions(broker: FakeBroker, kind: type, tp: TopicPartition) -> list[int]:
    """Indexes of the received requests of `kind` that mention `tp`."""
    return [
        i
        for i, r in enumerate(broker.received)
        if isinstance(r.request, kind)
        and any(
            (t.topic_name, p.partition_index) == tp
            for t in r.request.topic_states
            for p in t.partition_states
        )
    ]


def test_topic_creation_writes_state_znodes_and_sends_requests(zk_connect: str) -> None:
    async def main() -> None:
        async with Cluster(zk_connect, [1, 2, 3]) as cluster:
            active = await cluster.wait_for_controller()
            assert active.controller is not None
            epoch = active.controller.epoch
            admin = cluster.admin
            assert admin is not None
            created = await cluster.zk(admin.create_topic_assignment, "t", {0: [2, 3], 1: [3, 1]})
            s0 = await cluster.wait_for_state(T0, lambda s: True, "t-0 state")
            s1 = await cluster.wait_for_state(T1, lambda s: True, "t-1 state")
            assert s0.leader_and_isr == LeaderAndIsr(2, 0, (2, 3), zk_version=0)
            assert s1.leader_and_isr == LeaderAndIsr(3, 0, (3, 1), zk_version=0)
            assert s0.controller_epoch == s1.controller_epoch == epoch
            # The topic id written at creation survives.
            assignment = await cluster.zk(admin.get_topic_assignment, "t")
            assert assignment.topic_id == created.topic_id

            # LeaderAndIsr(is_new) to exactly the replicas, then UpdateMetadata for the partition to all.
            for broker_id, tp in [(2, T0), (3, T0), (3, T1), (1, T1)]:
                node = cluster[broker_id]
                await wait_until(
                    lambda n=node, p=tp: n.broker.leader_and_isr_states(p), f"LeaderAndIsr {tp}@{broker_id}"
                )
                request, state = node.broker.leader_and_isr_states(tp)[0]
                assert request.controller_id == active.broker_id
                assert request.controller_epoch == epoch
                assert request.broker_epoch == node.broker_epoch
                assert state.is_new and state.leader_epoch == 0 and state.zk_version == 0
                assert state.controller_epoch == epoch
                assert state.replicas == list(assignment.partitions[tp.partition])
                assert state.isr == state.replicas
                assert {(ll.broker_id, ll.port) for ll in request.live_leaders} >= {
                    (state.leader, cluster[state.leader].broker.port)
                }
            assert not cluster[1].broker.leader_and_isr_states(T0)
            for node in cluster.nodes.values():
                await wait_until(
                    lambda n=node: n.broker.metadata_states(T0) and n.broker.metadata_states(T1),
                    f"UpdateMetadata at {node.broker_id}",
                )
                _, um = node.broker.metadata_states(T0)[-1]
                assert (um.leader, um.leader_epoch, um.isr, um.replicas, um.offline_replicas) == (
                    2,
                    0,
                    [2, 3],
                    [2, 3],
                    [],
                )
                # On a replica's channel the LeaderAndIsr comes first, the UpdateMetadata after it.
                lai_at = positions(node.broker, LeaderAndIsrRequest, T0)
                um_at = positions(node.broker, UpdateMetadataRequest, T0)
                if lai_at:
                    assert um_at and um_at[0] > lai_at[0]

    asyncio.run(main())


def test_new_partitions_come_online_and_topic_id_is_backfilled(zk_connect: str) -> None:
    async def main() -> None:
        async with Cluster(zk_connect, [1, 2]) as cluster:
            await cluster.wait_for_controller()
            admin = cluster.admin
            assert admin is not None
            # A pre-2.8 tool writes a topic without id: the controller back-fills one.
            await cluster.zk(
                admin.create, TopicZNode.path("t"), b'{"version":1,"partitions":{"0":[1,2]}}', makepath=True
            )
            await cluster.wait_for_state(T0, lambda s: s.leader_and_isr.leader == 1, "t-0 online")

            async def has_id() -> bool:
                return (await cluster.zk(admin.get_topic_assignment, "t")).topic_id is not None

            await wait_until_async(has_id, "a back-filled topic id")
            topic_id = (await cluster.zk(admin.get_topic_assignment, "t")).topic_id
            # Partition increase: the admin rewrites the assignment with more partitions.
            await cluster.zk(admin.set_topic_assignment, "t", {0: [1, 2], 1: [2, 1], 2: [1, 2]})
            s1 = await cluster.wait_for_state(T1, lambda s: True, "t-1 created")
            s2 = await cluster.wait_for_state(T2, lambda s: True, "t-2 created")
            assert s1.leader_and_isr == LeaderAndIsr(2, 0, (2, 1), zk_version=0)
            assert s2.leader_and_isr == LeaderAndIsr(1, 0, (1, 2), zk_version=0)
            assert (await cluster.zk(admin.get_topic_assignment, "t")).topic_id == topic_id
            await wait_until(lambda: cluster[2].broker.leader_and_isr_states(T1), "LeaderAndIsr for t-1")
            assert cluster[2].broker.leader_and_isr_states(T1)[0][1].is_new

    asyncio.run(main())


def test_isr_change_notification_refreshes_metadata_and_is_deleted(zk_connect: str) -> None:
    async def main() -> None:
        async with Cluster(zk_connect, [1, 2]) as cluster:
            await cluster.wait_for_controller()
            admin = cluster.admin
            assert admin is not None
            await cluster.zk(admin.create_topic_assignment, "t", {0: [1, 2]})
            state = await cluster.wait_for_state(T0, lambda s: True, "t-0 online")
            # The leader shrinks the ISR itself (old inter-broker protocol) and announces it.
            shrunk = LeaderAndIsr(1, state.leader_and_isr.leader_epoch, (1,), zk_version=state.zk_version)
            ok, version = await cluster.zk(
                admin.conditional_update_partition_state, T0, shrunk, state.controller_epoch
            )
            assert ok
            await cluster.zk(admin.create_isr_change_notification, [T0])
            for node in cluster.nodes.values():
                await wait_until(
                    lambda n=node: any(
                        um.isr == [1] and um.zk_version == version for _, um in n.broker.metadata_states(T0)
                    ),
                    f"UpdateMetadata with the shrunk ISR at {node.broker_id}",
                )

            async def notifications_gone() -> bool:
                return not await cluster.zk(admin.get_isr_change_notifications)

            await wait_until_async(notifications_gone, "processed notifications deleted")

    asyncio.run(main())


def test_topic_deletion_waits_for_every_replica_and_pauses_while_one_is_down(zk_connect: str) -> None:
    async def main() -> None:
        async with Cluster(zk_connect, [1, 2, 3]) as cluster:
            active = await cluster.wait_for_controller()
            admin = cluster.admin
            assert admin is not None
            replicas = [b for b in (1, 2, 3) if b != active.broker_id]
            await cluster.zk(admin.create_topic_assignment, "t", {0: replicas, 1: replicas[::-1]})
            await cluster.wait_for_state(T1, lambda s: True, "t-1 online")
            first, second = (cluster[b] for b in replicas)
            # One replica broker is down when the deletion starts.
            await second.crash()
            await cluster.wait_for_state(
                T0, lambda s: s.leader_and_isr.isr == (first.broker_id,), "ISR shrunk"
            )
            first.broker.hold_deletes()
            await cluster.zk(admin.mark_topic_for_deletion, "t")
            # Brokers are told the topic is being deleted (leader -2) and the live replica is stopped twice.
            await wait_until(
                lambda: True in first.broker.stop_replicas(T0), "StopReplica(delete) to the live replica"
            )
            assert first.broker.stop_replicas(T0)[:2] == [False, True]
            assert any(um.leader == -2 for _, um in active.broker.metadata_states(T0))
            first.broker.release_deletes.set()
            await asyncio.sleep(0.4)
            # The offline replica has not acknowledged: nothing is deleted yet.
            assert await cluster.zk(admin.topic_exists, "t")
            assert await cluster.zk(admin.is_topic_marked_for_deletion, "t")

            # The broker comes back: deletion resumes and completes once it acknowledged too.
            second.broker.hold_deletes()
            await second.start(with_controller=False)
            await wait_until(
                lambda: True in second.broker.stop_replicas(T0), "StopReplica(delete) to the returning broker"
            )
            await asyncio.sleep(0.3)
            assert await cluster.zk(admin.topic_exists, "t"), "deleted before the last replica acknowledged"
            second.broker.release_deletes.set()

            async def gone() -> bool:
                return not await cluster.zk(admin.topic_exists, "t") and not await cluster.zk(
                    admin.is_topic_marked_for_deletion, "t"
                )

            await wait_until_async(gone, "topic znodes deleted")
            assert await cluster.zk(admin.get_entity_config, "topics", "t") == {}
            assert await cluster.zk(admin.exists, DeleteTopicsTopicZNode.path("t")) is None
            assert StopReplicaRequest in {type(r.request) for r in second.broker.received}

    asyncio.run(main())


def test_deletion_markers_of_unknown_topics_or_when_disabled_are_removed(zk_connect: str) -> None:
    async def main() -> None:
        async with Cluster(zk_connect, [1], delete_topic_enable="false") as cluster:
            await cluster.wait_for_controller()
            admin = cluster.admin
            assert admin is not None
            await cluster.zk(admin.create_topic_assignment, "t", {0: [1]})
            await cluster.wait_for_state(T0, lambda s: True, "t-0 online")
            await cluster.zk(admin.create, DeleteTopicsTopicZNode.path("t"), b"", makepath=True)
            await cluster.zk(admin.create, DeleteTopicsTopicZNode.path("ghost"), b"", makepath=True)

            async def markers_gone() -> bool:
                return not await cluster.zk(admin.get_topic_deletions)

            await wait_until_async(markers_gone, "deletion markers removed")
            assert await cluster.zk(admin.topic_exists, "t")

    asyncio.run(main())
