"""A request body encoded once and sent to many brokers (`encode_once`): the frame each broker
gets is exactly the frame of the request encoded for it, its own int64 patched in."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from zkafka.protocol import EncodeError, RequestHeader, decode_request, encode_once, encode_request
from zkafka.protocol.messages import ProduceRequest, UpdateMetadataRequest

UM = UpdateMetadataRequest


def _update_metadata(broker_epoch: int) -> UpdateMetadataRequest:
    state = UM.UpdateMetadataPartitionState(
        topic_name="t",
        partition_index=3,
        controller_epoch=7,
        leader=2,
        leader_epoch=11,
        isr=[2, 1],
        zk_version=5,
        replicas=[1, 2],
        offline_replicas=[],
    )
    return UM(
        controller_id=1,
        controller_epoch=7,
        broker_epoch=broker_epoch,
        topic_states=[
            UM.UpdateMetadataTopicState(topic_name="t", topic_id=uuid.uuid4(), partition_states=[state])
        ],
        live_brokers=[
            UM.UpdateMetadataBroker(
                id=b,
                endpoints=[
                    UM.UpdateMetadataEndpoint(
                        port=9092 + b, host="127.0.0.1", listener="PLAINTEXT", security_protocol=0
                    )
                ],
                rack=None,
            )
            for b in (1, 2)
        ],
    )


@given(epoch=st.integers(min_value=-1, max_value=2**63 - 1))
def test_the_patched_body_is_the_request_encoded_for_that_broker(epoch: int) -> None:
    request = _update_metadata(broker_epoch=epoch)
    once = encode_once(_reepoch(request, -1), 7)
    header = RequestHeader(UM.API_KEY, 7, 42, "controller")
    patched = encode_request(header, once.with_int64_at(8, epoch))
    assert patched == encode_request(header, request)
    _, decoded = decode_request(bytes(patched[4:]))
    assert isinstance(decoded, UM) and decoded.broker_epoch == epoch


def _reepoch(request: UpdateMetadataRequest, epoch: int) -> UpdateMetadataRequest:
    return UM(
        controller_id=request.controller_id,
        controller_epoch=request.controller_epoch,
        broker_epoch=epoch,
        topic_states=request.topic_states,
        live_brokers=request.live_brokers,
    )


def test_an_encoded_request_reads_as_the_request_it_was_made_from() -> None:
    once = encode_once(_update_metadata(-1), 7)
    assert type(once).API_KEY == UM.API_KEY and type(once).API_NAME == UM.API_NAME
    assert type(encode_once(_update_metadata(5), 6)) is type(once)  # one class per api key
    assert once.with_int64_at(8, 9) == once.with_int64_at(8, 9) != once


def test_mismatches_are_encode_errors() -> None:
    once = encode_once(_update_metadata(-1), 7)
    with pytest.raises(EncodeError, match="encoded at v7"):
        encode_request(RequestHeader(UM.API_KEY, 6, 1, "c"), once)
    with pytest.raises(EncodeError, match="does not match api key"):
        encode_request(RequestHeader(ProduceRequest.API_KEY, 7, 1, "c"), once)
    with pytest.raises(EncodeError, match="no int64"):
        once.with_int64_at(len(once.body) - 7, 1)
    with pytest.raises(EncodeError, match="no int64"):
        once.with_int64_at(-1, 1)
    with pytest.raises(EncodeError):
        encode_once(UM.UpdateMetadataBroker(id=1, endpoints=[], rack=None), 7)  # not a request
