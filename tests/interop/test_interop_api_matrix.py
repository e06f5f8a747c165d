"""Every API version the broker advertises is served, checked with an independent codec.

kafka-python 3 builds its requests and responses from Kafka's own JSON message definitions. For each
(api key, version) in the broker's ApiVersions answer, a default request (every field at its default)
is encoded by kafka-python, sent to a real broker, and the broker's answer must decode with
kafka-python's response class of that version, carrying the request's correlation id: an
advertised version the broker cannot answer, or answers in a shape Kafka's schema does not
describe, fails here. The inter-broker APIs kafka-python does not define (LeaderAndIsr, StopReplica,
UpdateMetadata, ControlledShutdown) are covered by the controller tests with zkafka's own codec.
"""

from __future__ import annotations

import asyncio
import importlib
import pkgutil
import socket
import struct
from collections.abc import Iterator

import pytest

from zkafka.client.connection import BrokerConnection
from zkafka.local.launcher import LocalCluster
from zkafka.local.zookeeper import ZooKeeperServer
from zkafka.protocol.messages import ApiVersionsRequest, ApiVersionsResponse
from zkafka.testing.cluster import running_cluster

INTER_BROKER = {4, 5, 6, 7}


def _kafka_python_messages() -> tuple[dict[int, type], dict[int, type]]:
    import kafka.protocol as protocol
    from kafka.protocol.api_message import ApiMessage

    for module in pkgutil.walk_packages(protocol.__path__, "kafka.protocol."):
        try:
            importlib.import_module(module.name)
        except Exception:  # stubs generators and optional pieces
            continue

    def subclasses(cls: type) -> Iterator[type]:
        for sub in cls.__subclasses__():
            yield sub
            yield from subclasses(sub)

    requests: dict[int, type] = {}
    responses: dict[int, type] = {}
    for cls in subclasses(ApiMessage):
        if getattr(cls, "_class_version", None) is not None:
            continue
        try:
            (requests if cls.is_request() else responses)[cls.API_KEY] = cls
        except Exception:
            continue
    return requests, responses


@pytest.fixture(scope="module")
def cluster(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalCluster]:
    with running_cluster(zookeeper_server, tmp_path_factory.mktemp("api-matrix"), brokers=1) as c:
        yield c


def _advertised(cluster: LocalCluster) -> dict[int, tuple[int, int]]:
    async def ask() -> ApiVersionsResponse:
        conn = await BrokerConnection.open("127.0.0.1", cluster.brokers[1].port)
        try:
            return await conn.send(ApiVersionsRequest(), version=0)  # type: ignore[return-value]
        finally:
            conn.close()

    return {k.api_key: (k.min_version, k.max_version) for k in asyncio.run(ask()).api_keys}


def _exactly(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError("the broker closed the connection")
        data += chunk
    return data


def test_every_advertised_version_answers_in_kafkas_schema(cluster: LocalCluster) -> None:
    requests, responses = _kafka_python_messages()
    advertised = _advertised(cluster)
    checked: list[tuple[int, int]] = []
    failures: list[str] = []
    for key, (lo, hi) in sorted(advertised.items()):
        if key in INTER_BROKER:
            continue
        assert key in requests and key in responses, f"kafka-python knows no api key {key}"
        for version in range(lo, hi + 1):
            request = requests[key][version]()
            if not request.expect_response():
                continue  # acks=0 produce: nothing comes back
            correlation_id = key * 100 + version
            request.with_header(correlation_id=correlation_id, client_id="api-matrix")
            frame = request.encode(version=version, header=True, framed=True)
            with socket.create_connection(("127.0.0.1", cluster.brokers[1].port), timeout=20) as sock:
                sock.sendall(frame)
                try:
                    (size,) = struct.unpack(">i", _exactly(sock, 4))
                    body = _exactly(sock, size)
                    response = responses[key][version].decode(body, version=version, header=True)
                except Exception as e:
                    failures.append(f"{requests[key].__name__} v{version}: {type(e).__name__}: {e}")
                    continue
            if response.header.correlation_id != correlation_id:
                failures.append(
                    f"{requests[key].__name__} v{version}: correlation id {response.header.correlation_id}"
                )
            checked.append((key, version))
    print(f"{len(checked)} (api key, version) pairs answered in Kafka's schema")
    assert not failures, "\n".join(failures)
    assert len(checked) > 100
