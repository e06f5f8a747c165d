"""The transaction versions a real broker advertises, and the broker-to-broker transaction APIs
refused to clients when an authorizer is on: AddPartitionsToTxn v4 (KIP-890) and WriteTxnMarkers
need Cluster:ClusterAction, as in Kafka; a broker principal's v4 `verify_only` is answered.

The secured one-broker cluster is the security tests' (`tests/security/secure_cluster.py`):
PLAINTEXT is the inter-broker listener whose ANONYMOUS principal is a super user, alice comes in
over SASL_PLAINTEXT with no ACLs.
"""

from __future__ import annotations

import asyncio
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "security"))

from secure_cluster import ALICE, ALICE_PASSWORD, SecureCluster, secure_cluster

from zkafka.client.connection import BrokerConnection
from zkafka.client.security import ClientSecurity
from zkafka.local.zookeeper import ZooKeeperServer
from zkafka.protocol import ErrorCode
from zkafka.protocol.messages import (
    AddPartitionsToTxnRequest,
    ApiVersionsRequest,
    CreateTopicsRequest,
    FindCoordinatorRequest,
    OffsetFetchRequest,
    WriteTxnMarkersRequest,
)

pytestmark = pytest.mark.timeout(180)

E = ErrorCode
AUTHORIZER = {
    "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
    "super.users": "User:ANONYMOUS;User:admin",
}
TOPIC = "txn-versions"


@pytest.fixture(scope="module")
def secured(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SecureCluster]:
    with secure_cluster(zookeeper_server, tmp_path_factory.mktemp("txn-versions"), AUTHORIZER) as sc:
        yield sc


async def _broker(sc: SecureCluster) -> BrokerConnection:
    return await BrokerConnection.open("127.0.0.1", sc.plaintext)


async def _alice(sc: SecureCluster) -> BrokerConnection:
    security = ClientSecurity(
        protocol="SASL_PLAINTEXT", mechanism="PLAIN", username=ALICE, password=ALICE_PASSWORD
    )
    return await BrokerConnection.open("127.0.0.1", sc.sasl_plaintext, security=security)


def _verify_request(txn_id: str, topic: str) -> AddPartitionsToTxnRequest:
    req = AddPartitionsToTxnRequest
    return req(
        transactions=[
            req.AddPartitionsToTxnTransaction(
                transactional_id=txn_id,
                producer_id=1234,
                producer_epoch=0,
                verify_only=True,
                topics=[req.AddPartitionsToTxnTopic(name=topic, partitions=[0])],
            )
        ]
    )


def _run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_transaction_versions_are_advertised(secured: SecureCluster) -> None:
    async def go() -> dict[int, tuple[int, int]]:
        conn = await _broker(secured)
        try:
            response = await conn.send(ApiVersionsRequest(), version=2)
            return {a.api_key: (a.min_version, a.max_version) for a in response.api_keys}
        finally:
            conn.close()

    table = _run(go())
    assert table[22] == (0, 4)  # InitProducerId
    assert table[24] == (0, 4)  # AddPartitionsToTxn
    assert table[25] == (0, 3) and table[26] == (0, 3) and table[28] == (0, 3)
    assert table[27] == (0, 1)  # WriteTxnMarkers
    assert table[9] == (0, 8)  # OffsetFetch with require_stable, several groups from v8


def test_add_partitions_v4_and_write_txn_markers_need_cluster_action(secured: SecureCluster) -> None:
    async def go() -> tuple[Any, Any]:
        conn = await _alice(secured)
        try:
            verify = await conn.send(_verify_request("anyone", TOPIC), version=4)
            marker = WriteTxnMarkersRequest.WritableTxnMarker
            markers = await conn.send(
                WriteTxnMarkersRequest(
                    markers=[
                        marker(
                            producer_id=1234,
                            producer_epoch=0,
                            transaction_result=False,
                            coordinator_epoch=0,
                            topics=[
                                WriteTxnMarkersRequest.WritableTxnMarkerTopic(
                                    name=TOPIC, partition_indexes=[0]
                                )
                            ],
                        )
                    ]
                ),
                version=1,
            )
            return verify, markers
        finally:
            conn.close()

    verify, markers = _run(go())
    assert verify.error_code == E.CLUSTER_AUTHORIZATION_FAILED
    assert verify.results_by_transaction == []
    codes = [p.error_code for m in markers.markers for t in m.topics for p in t.partitions]
    assert codes == [E.CLUSTER_AUTHORIZATION_FAILED]


def test_offset_fetch_v8_refuses_only_the_groups_not_describable(secured: SecureCluster) -> None:
    async def go() -> Any:
        conn = await _alice(secured)
        try:
            req = OffsetFetchRequest
            return await conn.send(
                req(groups=[req.OffsetFetchRequestGroup(group_id="not-alices", topics=None)]), version=8
            )
        finally:
            conn.close()

    response = _run(go())
    assert [(g.group_id, g.error_code) for g in response.groups] == [
        ("not-alices", E.GROUP_AUTHORIZATION_FAILED)
    ]


def test_a_broker_principal_gets_the_verification_answer(secured: SecureCluster) -> None:
    async def go() -> tuple[Any, Any]:
        conn = await _broker(secured)
        try:
            created = await conn.send(
                CreateTopicsRequest(
                    topics=[
                        CreateTopicsRequest.CreatableTopic(name=TOPIC, num_partitions=1, replication_factor=1)
                    ],
                    timeout_ms=10_000,
                ),
                version=4,
            )
            assert created.topics[0].error_code in (0, E.TOPIC_ALREADY_EXISTS), created
            txn_id = f"nobody-{uuid.uuid4().hex[:6]}"
            for _ in range(200):  # creates __transaction_state and waits for its coordinator
                found = await conn.send(FindCoordinatorRequest(key=txn_id, key_type=1), version=2)
                if found.error_code == 0:
                    break
                await asyncio.sleep(0.1)
            for _ in range(200):
                known = await conn.send(_verify_request(txn_id, TOPIC), version=4)
                result = known.results_by_transaction[0].topic_results[0].results_by_partition[0]
                if result.partition_error_code not in (E.COORDINATOR_LOAD_IN_PROGRESS, E.NOT_COORDINATOR):
                    break
                await asyncio.sleep(0.1)
            unknown = await conn.send(_verify_request(txn_id, "no-such-topic"), version=4)
            return known, unknown
        finally:
            conn.close()

    known, unknown = _run(go())
    assert known.error_code == 0
    result = known.results_by_transaction[0].topic_results[0].results_by_partition[0]
    assert result.partition_error_code == E.INVALID_PRODUCER_ID_MAPPING  # no such transactional id
    missing = unknown.results_by_transaction[0].topic_results[0].results_by_partition[0]
    assert missing.partition_error_code == E.UNKNOWN_TOPIC_OR_PARTITION
