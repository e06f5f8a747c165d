"""In-process test cluster for the controller: real ZooKeeper sessions, real controllers, and small fake
brokers that are real asyncio TCP servers speaking zkafka's protocol codec.

Each `Node` is one broker id: its own KafkaZkClient session (used, as in a real broker, both for its
/brokers/ids registration and by its controller), a ZkExecutor, an AsyncWatcher, a `FakeBroker`
endpoint and a `Controller`. Closing a node's session makes both its registration and (if active) its
/controller znode disappear, exactly like a crashed broker.
"""

from __future__ import annotations

import asyncio
import contextlib
import struct
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from kazoo.client import KazooClient

from zkafka.config import BrokerConfig
from zkafka.controller.controller import Controller
from zkafka.controller.core import ControllerTimings
from zkafka.protocol import Message, decode_request, encode_response
from zkafka.protocol.api_keys import ApiKey
from zkafka.protocol.api_versions import api_versions_response
from zkafka.protocol.messages import (
    LeaderAndIsrRequest,
    LeaderAndIsrResponse,
    StopReplicaRequest,
    StopReplicaResponse,
    UpdateMetadataRequest,
    UpdateMetadataResponse,
)
from zkafka.zk.client import KafkaZkClient
from zkafka.zk.model import (
    BrokerInfo,
    EndPoint,
    LeaderIsrAndControllerEpoch,
    SecurityProtocol,
    TopicPartition,
)
from zkafka.zk.watch_bridge import AsyncWatcher, ZkExecutor

TIMEOUT = 15.0
FAST = ControllerTimings(
    first_rebalance_check_delay_s=0.3,
    rebalance_check_interval_s=0.3,
    request_timeout_s=3.0,
    request_retry_backoff_s=0.05,
)

_SIZE = struct.Struct(">i")
KAFKA_STORAGE_ERROR = 56


@dataclass
class Received:
    api_key: int
    version: int
    request: Message


class FakeBroker:
    """Answers controller requests with success and records them. StopReplica(delete=true) answers can
    be held back (`hold_deletes`) to test that deletion waits for them."""

    def __init__(self, broker_id: int) -> None:
        self.broker_id = broker_id
        self.received: list[Received] = []
        self.changed = asyncio.Event()
        self.release_deletes = asyncio.Event()
        self.release_deletes.set()
        self.stop_replica_error = 0
        self.storage_errors: set[TopicPartition] = set()
        """Partitions answered with KAFKA_STORAGE_ERROR in LeaderAndIsr (replica on a failed log dir)."""
        self._server: asyncio.Server | None = None
        self._stopped = False
        self._writers: set[asyncio.StreamWriter] = set()
        self._handlers: set[asyncio.Task[None]] = set()
        self.port = 0

    async def start(self) -> None:
        self._stopped = False
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", self.port)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        """Stop listening and drop every connection, including ones accepted a moment ago whose
        handler has not started yet (they close themselves as soon as it does)."""
        self._stopped = True
        if self._server is not None:
            self._server.close()
            self._server = None
        for _ in range(50):
            for writer in list(self._writers):
                writer.close()
            for task in list(self._handlers):
                task.cancel()
            await asyncio.gather(*self._handlers, return_exceptions=True)
            await asyncio.sleep(0.01)
            if not self._handlers:
                break

    def hold_deletes(self) -> None:
        self.release_deletes.clear()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        if self._stopped:
            writer.close()
            return
        self._handlers.add(task)
        self._writers.add(writer)
        try:
            while True:
                size = _SIZE.unpack(await reader.readexactly(4))[0]
                frame = await reader.readexactly(size)
                header, request = decode_request(frame)
                response = await self._answer(header.api_key, header.api_version, request)
                writer.write(
                    encode_response(header.api_key, header.api_version, header.correlation_id, response)
                )
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            pass
        finally:
            self._writers.discard(writer)
            self._handlers.discard(task)
            writer.close()

    async def _answer(self, api_key: int, version: int, request: Message) -> Message:
        if api_key == ApiKey.API_VERSIONS:
            return api_versions_response()
        self.received.append(Received(api_key, version, request))
        self.changed.set()
        if isinstance(request, LeaderAndIsrRequest):
            errors = [
                LeaderAndIsrResponse.LeaderAndIsrPartitionError(
                    topic_name=t.topic_name,
                    partition_index=p.partition_index,
                    error_code=KAFKA_STORAGE_ERROR
                    if TopicPartition(t.topic_name, p.partition_index) in self.storage_errors
                    else 0,
                )
                for t in request.topic_states
                for p in t.partition_states
            ]
            return LeaderAndIsrResponse(error_code=0, partition_errors=errors)
        if isinstance(request, UpdateMetadataRequest):
            return UpdateMetadataResponse(error_code=0)
        if isinstance(request, StopReplicaRequest):
            if request.delete_partitions:
                await self.release_deletes.wait()
            errors = [
                StopReplicaResponse.StopReplicaPartitionError(
                    topic_name=t.name, partition_index=p, error_code=self.stop_replica_error
                )
                for t in request.topics
                for p in t.partition_indexes
            ]
            return StopReplicaResponse(error_code=0, partition_errors=errors)
        raise AssertionError(f"fake broker got unexpected request {request!r}")

    # -- inspection -----------------------------------------------------------------------------------
    def requests(self, kind: type[Message]) -> list[Any]:
        return [r.request for r in self.received if isinstance(r.request, kind)]

    def leader_and_isr_states(self, tp: TopicPartition) -> list[tuple[LeaderAndIsrRequest, Any]]:
        out = []
        for req in self.requests(LeaderAndIsrRequest):
            for t in req.topic_states:
                for p in t.partition_states:
                    if (t.topic_name, p.partition_index) == tp:
                        out.append((req, p))
        return out

    def metadata_states(self, tp: TopicPartition) -> list[tuple[UpdateMetadataRequest, Any]]:
        out = []
        for req in self.requests(UpdateMetadataRequest):
            for t in req.topic_states:
                for p in t.partition_states:
                    if (t.topic_name, p.partition_index) == tp:
                        out.append((req, p))
        return out

    def stop_replicas(self, tp: TopicPartition) -> list[bool]:
        """delete flags of the StopReplica requests that named `tp`, in order."""
        return [
            req.delete_partitions
            for req in self.requests(StopReplicaRequest)
            for t in req.topics
            for p in t.partition_indexes
            if (t.name, p) == tp
        ]


def config_for(zk_connect: str, broker_id: int, **overrides: object) -> BrokerConfig:
    props: dict[str, object] = {
        "zookeeper.connect": zk_connect,
        "broker.id": broker_id,
        "auto.leader.rebalance.enable": "false",
    }
    props.update({k.replace("_", "."): v for k, v in overrides.items()})
    return BrokerConfig.from_properties(props)


@dataclass
class Node:
    broker_id: int
    zk_connect: str
    config: BrokerConfig
    timings: ControllerTimings = FAST
    broker: FakeBroker = field(init=False)
    zk: KafkaZkClient | None = None
    executor: ZkExecutor | None = None
    watcher: AsyncWatcher | None = None
    controller: Controller | None = None
    broker_epoch: int = -1

    def __post_init__(self) -> None:
        self.broker = FakeBroker(self.broker_id)

    @property
    def info(self) -> BrokerInfo:
        endpoint = EndPoint("PLAINTEXT", "127.0.0.1", self.broker.port, SecurityProtocol.PLAINTEXT)
        return BrokerInfo(self.broker_id, (endpoint,))

    async def start(self, *, with_controller: bool = True) -> None:
        if self.broker.port == 0 or self.broker._server is None:
            await self.broker.start()
        self.zk = await asyncio.to_thread(KafkaZkClient, self.zk_connect, session_timeout_ms=6000)
        await asyncio.to_thread(self.zk.create_top_level_paths)
        self.executor = ZkExecutor(f"zk-{self.broker_id}")
        self.watcher = AsyncWatcher(self.zk, asyncio.get_running_loop())
        self.broker_epoch = await self.executor.call(self.zk.register_broker, self.info)
        if with_controller:
            self.controller = Controller(
                self.broker_id,
                self.zk,
                self.executor,
                self.watcher,
                self.config,
                timings=self.timings,
                on_new_session=self.reregister,
            )
            await self.controller.start()

    async def reregister(self) -> None:
        assert self.zk is not None and self.executor is not None
        self.broker_epoch = await self.executor.call(self.zk.register_broker, self.info)

    async def crash(self) -> None:
        """Close the ZooKeeper session (registration and /controller vanish) and stop the controller."""
        if self.zk is not None:
            await asyncio.to_thread(self.zk.close)
        await self.stop()

    async def stop(self) -> None:
        if self.controller is not None:
            await self.controller.stop()
            self.controller = None
        if self.watcher is not None:
            self.watcher.close()
            self.watcher = None
        if self.zk is not None:
            await asyncio.to_thread(self.zk.close)
            self.zk = None
        if self.executor is not None:
            self.executor.shutdown(wait=False)
            self.executor = None

    async def close(self) -> None:
        await self.stop()
        await self.broker.stop()


class Cluster:
    def __init__(self, zk_connect: str, broker_ids: Iterable[int], **config: object) -> None:
        self.zk_connect = zk_connect
        self.nodes = {b: Node(b, zk_connect, config_for(zk_connect, b, **config)) for b in broker_ids}
        self.admin: KafkaZkClient | None = None

    async def __aenter__(self) -> Cluster:
        self.admin = await asyncio.to_thread(KafkaZkClient, self.zk_connect, session_timeout_ms=6000)
        await asyncio.to_thread(self.admin.create_top_level_paths)
        for node in self.nodes.values():
            await node.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        for node in self.nodes.values():
            with contextlib.suppress(Exception):
                await node.close()
        if self.admin is not None:
            await asyncio.to_thread(self.admin.close)

    def __getitem__(self, broker_id: int) -> Node:
        return self.nodes[broker_id]

    async def zk(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run an admin KafkaZkClient call off the loop."""
        return await asyncio.to_thread(fn, *args, **kwargs)

    def active(self) -> list[Node]:
        return [n for n in self.nodes.values() if n.controller is not None and n.controller.is_active]

    async def wait_for_controller(self) -> Node:
        await wait_until(lambda: len(self.active()) == 1, "exactly one active controller")
        return self.active()[0]

    async def state(self, tp: TopicPartition) -> LeaderIsrAndControllerEpoch | None:
        assert self.admin is not None
        return await self.zk(self.admin.get_partition_state, tp)

    async def wait_for_state(
        self, tp: TopicPartition, predicate: Callable[[LeaderIsrAndControllerEpoch], bool], what: str
    ) -> LeaderIsrAndControllerEpoch:
        found: list[LeaderIsrAndControllerEpoch] = []

        async def check() -> bool:
            state = await self.state(tp)
            if state is not None and predicate(state):
                found.append(state)
                return True
            return False

        await wait_until_async(check, what)
        return found[0]


async def wait_until(condition: Callable[[], object], what: str, timeout: float = TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


async def wait_until_async(
    condition: Callable[[], Awaitable[object]], what: str, timeout: float = TIMEOUT
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if await condition():
            return
        await asyncio.sleep(0.03)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def expire_session(zk: KafkaZkClient) -> None:
    """Make the server expire `zk`'s session: connect a twin with the same session id and password
    and close it (blocking; run in a thread)."""
    client_id = zk.kazoo.client_id
    assert client_id is not None
    twin = KazooClient(hosts=zk.connect_string.hosts, client_id=client_id, timeout=10)
    twin.start(timeout=10)
    twin.stop()
    twin.close()
