"""Controller-to-broker channels: retries while a broker is unreachable, endpoint changes, replicas on
failed log directories."""

from __future__ import annotations

import asyncio

from controller_harness import Cluster, FakeBroker, wait_until, wait_until_async

from zkafka.protocol.messages import LeaderAndIsrRequest, UpdateMetadataRequest
from zkafka.zk.model import TopicPartition

T0 = TopicPartition("t", 0)


def test_requests_are_retried_until_the_broker_answers(zk_connect: str) -> None:
    async def main() -> None:
        async with Cluster(zk_connect, [1, 2]) as cluster:
            active = await cluster.wait_for_controller()
            admin = cluster.admin
            assert admin is not None
            node = cluster[3 - active.broker_id]
            await node.broker.stop()  # registered, but nobody listens
            node.broker.received.clear()
            await cluster.zk(admin.create_topic_assignment, "t", {0: [node.broker_id]})
            await cluster.wait_for_state(
                T0, lambda s: s.leader_and_isr.leader == node.broker_id, "t-0 online"
            )
            await asyncio.sleep(0.3)
            await node.broker.start()  # same port
            await wait_until(
                lambda: node.broker.leader_and_isr_states(T0), "the LeaderAndIsr, delivered late"
            )
            request, state = node.broker.leader_and_isr_states(T0)[0]
            assert state.is_new and request.broker_epoch == node.broker_epoch

    asyncio.run(main())


def test_endpoint_change_is_announced_and_followed(zk_connect: str) -> None:
    async def main() -> None:
        async with Cluster(zk_connect, [1, 2]) as cluster:
            active = await cluster.wait_for_controller()
            admin = cluster.admin
            assert admin is not None
            node = cluster[3 - active.broker_id]
            old = node.broker
            moved = FakeBroker(node.broker_id)
            await moved.start()
            node.broker = moved
            try:
                await cluster.zk(admin.update_broker_info, node.info)

                def announces_new_port(broker: FakeBroker) -> bool:
                    return any(
                        e.port == moved.port
                        for r in broker.requests(UpdateMetadataRequest)
                        for b in r.live_brokers
                        if b.id == node.broker_id
                        for e in b.endpoints
                    )

                await wait_until(
                    lambda: announces_new_port(active.broker), "UpdateMetadata with the new endpoint"
                )
                await cluster.zk(admin.create_topic_assignment, "t", {0: [node.broker_id]})
                await wait_until(lambda: moved.leader_and_isr_states(T0), "LeaderAndIsr at the new endpoint")
                assert not old.leader_and_isr_states(T0)
            finally:
                await old.stop()

    asyncio.run(main())


def test_replica_on_failed_log_dir_goes_offline(zk_connect: str) -> None:
    async def main() -> None:
        async with Cluster(zk_connect, [1, 2, 3]) as cluster:
            active = await cluster.wait_for_controller()
            admin = cluster.admin
            assert admin is not None
            x, y = (b for b in (1, 2, 3) if b != active.broker_id)
            await cluster.zk(admin.create_topic_assignment, "t", {0: [x, y]})
            before = await cluster.wait_for_state(T0, lambda s: s.leader_and_isr.leader == x, "t-0 online")
            lai_before = len(cluster[x].broker.requests(LeaderAndIsrRequest))
            cluster[x].broker.storage_errors.add(T0)
            await cluster.zk(admin.create_log_dir_event_notification, x)
            # The controller asks x about its replicas; x reports the failed dir; leadership moves to y.
            after = await cluster.wait_for_state(
                T0, lambda s: s.leader_and_isr.leader == y, "leader moved off x"
            )
            assert after.leader_and_isr.isr == (y,)
            assert after.leader_and_isr.leader_epoch == before.leader_and_isr.leader_epoch + 1
            assert len(cluster[x].broker.requests(LeaderAndIsrRequest)) > lai_before

            async def notifications_gone() -> bool:
                return not await cluster.zk(admin.get_log_dir_event_notifications)

            await wait_until_async(notifications_gone, "log dir notifications deleted")
            await wait_until(
                lambda: any(um.offline_replicas == [x] for _, um in active.broker.metadata_states(T0)),
                "UpdateMetadata listing the offline replica",
            )
            # the dir repaired, the next notification's LeaderAndIsr is answered without the error:
            # the replica counts as online again
            assert active.controller is not None
            offline_dirs = active.controller._core.context.replicas_on_offline_dirs
            assert offline_dirs.get(x) == {T0}
            cluster[x].broker.storage_errors.discard(T0)
            await cluster.zk(admin.create_log_dir_event_notification, x)
            await wait_until(lambda: not offline_dirs.get(x), "the replica back online")

    asyncio.run(main())
