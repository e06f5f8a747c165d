"""Hand-assembled bytes for the controller-to-broker APIs, which kafka-python (built on Kafka 4's
JSON, where these APIs no longer exist) cannot check. Layouts from Kafka 2.8's message specs."""

from __future__ import annotations

import struct
import uuid

from zkafka.protocol import decode_body, encode_body
from zkafka.protocol.messages import (
    ControlledShutdownRequest,
    ControlledShutdownResponse,
    LeaderAndIsrRequest,
    LeaderAndIsrResponse,
    StopReplicaRequest,
    UpdateMetadataRequest,
)


def s(text: str) -> bytes:
    """A classic string: int16 length + UTF-8."""
    return struct.pack(">h", len(text)) + text.encode()


def i32s(*values: int) -> bytes:
    """A classic int32 array."""
    return struct.pack(f">i{len(values)}i", len(values), *values)


def check(message: object, version: int, expected: bytes) -> None:
    assert bytes(encode_body(message, version)) == expected  # type: ignore[arg-type]
    kind = type(message).KIND  # type: ignore[attr-defined]
    assert decode_body(type(message).API_KEY, kind, version, expected) == message  # type: ignore[attr-defined]


LAI = LeaderAndIsrRequest


def state(**kw: object) -> LeaderAndIsrRequest.LeaderAndIsrPartitionState:
    base = dict(partition_index=1, controller_epoch=2, leader=3, leader_epoch=4, isr=[3, 5], zk_version=6,
                replicas=[3, 5, 7])  # fmt: skip
    base.update(kw)
    return LAI.LeaderAndIsrPartitionState(**base)  # type: ignore[arg-type]


def test_leader_and_isr_v1_ungrouped() -> None:
    request = LAI(
        controller_id=9,
        controller_epoch=2,
        ungrouped_partition_states=[state(topic_name="t", is_new=True)],
        live_leaders=[LAI.LeaderAndIsrLiveLeader(broker_id=3, host_name="h", port=9092)],
    )
    partition = (
        s("t")
        + struct.pack(">iiii", 1, 2, 3, 4)
        + i32s(3, 5)
        + struct.pack(">i", 6)
        + i32s(3, 5, 7)
        + b"\x01"
    )
    expected = struct.pack(">ii", 9, 2) + struct.pack(">i", 1) + partition + struct.pack(">i", 1)
    expected += struct.pack(">i", 3) + s("h") + struct.pack(">i", 9092)
    check(request, 1, expected)


def test_leader_and_isr_v3_grouped_with_reassignment() -> None:
    request = LAI(
        controller_id=9,
        controller_epoch=2,
        broker_epoch=77,
        topic_states=[
            LAI.LeaderAndIsrTopicState(
                topic_name="t", partition_states=[state(adding_replicas=[7], removing_replicas=[])]
            )
        ],
    )
    partition = struct.pack(">iiii", 1, 2, 3, 4) + i32s(3, 5) + struct.pack(">i", 6) + i32s(3, 5, 7)
    partition += i32s(7) + i32s() + b"\x00"
    expected = (
        struct.pack(">iiq", 9, 2, 77) + struct.pack(">i", 1) + s("t") + struct.pack(">i", 1) + partition
    )
    expected += struct.pack(">i", 0)  # no live leaders
    check(request, 3, expected)


def test_leader_and_isr_v5_flexible_with_topic_ids() -> None:
    topic_id = uuid.UUID(int=0x0102030405060708090A0B0C0D0E0F10)
    request = LAI(
        controller_id=1,
        controller_epoch=1,
        broker_epoch=5,
        type=1,
        topic_states=[LAI.LeaderAndIsrTopicState(topic_name="t", topic_id=topic_id, partition_states=[])],
    )
    expected = struct.pack(">iiqb", 1, 1, 5, 1)
    expected += b"\x02" + b"\x02t" + topic_id.bytes + b"\x01" + b"\x00"  # one topic, no partitions, no tags
    expected += b"\x01" + b"\x00"  # no live leaders, top-level tags
    check(request, 5, expected)
    response = LeaderAndIsrResponse(
        topics=[
            LeaderAndIsrResponse.LeaderAndIsrTopicError(
                topic_id=topic_id,
                partition_errors=[
                    LeaderAndIsrResponse.LeaderAndIsrPartitionError(partition_index=0, error_code=6)
                ],
            )
        ]
    )
    check(
        response,
        5,
        b"\x00\x00" + b"\x02" + topic_id.bytes + b"\x02" + struct.pack(">ih", 0, 6) + b"\x00\x00\x00",
    )


def test_update_metadata_v0_and_v5() -> None:
    um = UpdateMetadataRequest
    v0 = um(
        controller_id=1,
        controller_epoch=2,
        live_brokers=[um.UpdateMetadataBroker(id=1, v0_host="h", v0_port=9)],
    )
    check(
        v0,
        0,
        struct.pack(">ii", 1, 2)
        + struct.pack(">i", 0)
        + struct.pack(">ii", 1, 1)
        + s("h")
        + b"\x00\x00\x00\x09",
    )
    endpoint = um.UpdateMetadataEndpoint(port=9092, host="h", listener="PLAINTEXT", security_protocol=0)
    v5 = um(
        controller_id=1,
        controller_epoch=2,
        broker_epoch=3,
        topic_states=[
            um.UpdateMetadataTopicState(
                topic_name="t",
                partition_states=[
                    um.UpdateMetadataPartitionState(
                        partition_index=0,
                        controller_epoch=2,
                        leader=1,
                        leader_epoch=0,
                        isr=[1],
                        zk_version=0,
                        replicas=[1],
                        offline_replicas=[],
                    )
                ],
            )
        ],
        live_brokers=[um.UpdateMetadataBroker(id=1, endpoints=[endpoint], rack=None)],
    )
    partition = struct.pack(">iiii", 0, 2, 1, 0) + i32s(1) + struct.pack(">i", 0) + i32s(1) + i32s()
    topics = struct.pack(">i", 1) + s("t") + struct.pack(">i", 1) + partition
    brokers = (
        struct.pack(">ii", 1, 1) + struct.pack(">i", 1) + struct.pack(">i", 9092) + s("h") + s("PLAINTEXT")
    )
    brokers += struct.pack(">h", 0) + b"\xff\xff"
    check(v5, 5, struct.pack(">iiq", 1, 2, 3) + topics + brokers)


def test_stop_replica_v0_and_v3() -> None:
    sr = StopReplicaRequest
    v0 = sr(
        controller_id=1,
        controller_epoch=2,
        delete_partitions=True,
        ungrouped_partitions=[sr.StopReplicaPartitionV0(topic_name="t", partition_index=4)],
    )
    check(v0, 0, struct.pack(">ii?", 1, 2, True) + struct.pack(">i", 1) + s("t") + struct.pack(">i", 4))
    v3 = sr(
        controller_id=1,
        controller_epoch=2,
        broker_epoch=9,
        topic_states=[
            sr.StopReplicaTopicState(
                topic_name="t",
                partition_states=[
                    sr.StopReplicaPartitionState(partition_index=4, leader_epoch=3, delete_partition=True)
                ],
            )
        ],
    )
    expected = struct.pack(">iiq", 1, 2, 9) + b"\x02" + b"\x02t" + b"\x02" + struct.pack(">ii?", 4, 3, True)
    expected += b"\x00" + b"\x00" + b"\x00"  # partition, topic and top-level tag sections
    check(v3, 3, expected)


def test_controlled_shutdown() -> None:
    check(ControlledShutdownRequest(broker_id=3, broker_epoch=8), 2, struct.pack(">iq", 3, 8))
    check(ControlledShutdownRequest(broker_id=3), 1, struct.pack(">i", 3))
    response = ControlledShutdownResponse(
        remaining_partitions=[
            ControlledShutdownResponse.RemainingPartition(topic_name="t", partition_index=1)
        ]
    )
    check(response, 1, struct.pack(">hi", 0, 1) + s("t") + struct.pack(">i", 1))
