"""A group coordinator over a real log manager and replica manager (no network): this broker
leads every `__consumer_offsets` partition with an ISR of itself, so appends commit at once."""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Coroutine
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

from zkafka.coordinator.coordinator import GroupConfig, GroupCoordinator, JoinResult
from zkafka.coordinator.store import OffsetsTopicStore, offsets_tp
from zkafka.records import iter_records
from zkafka.server.partition import LeaderState
from zkafka.server.replica_manager import PartitionStateChange, ReplicaManager
from zkafka.storage.config import LogConfig
from zkafka.storage.manager import LogManager

T = TypeVar("T")

FAST = GroupConfig(
    num_partitions=3,
    min_session_timeout_ms=10,
    max_session_timeout_ms=60_000,
    initial_rebalance_delay_ms=0,
)


def run(coro: Coroutine[Any, Any, T], timeout: float = 20) -> T:
    return asyncio.run(asyncio.wait_for(coro, timeout))


class Harness:
    def __init__(self, directory: Path, config: GroupConfig = FAST, **overrides: Any) -> None:
        self.config = replace(config, **overrides)
        self.log_manager = LogManager([directory], LogConfig(), broker_id=1)
        self.replicas = ReplicaManager(1, self.log_manager)
        self.lead_all(epoch=0)
        self.store = OffsetsTopicStore(self.replicas, commit_timeout_ms=2000)
        self.coordinator = self.new_coordinator()

    def lead_all(self, epoch: int) -> None:
        self.replicas.become_leader_or_follower(
            1,
            [
                PartitionStateChange(
                    offsets_tp(p),
                    LeaderState(
                        leader=1,
                        leader_epoch=epoch,
                        isr=(1,),
                        replicas=(1,),
                        zk_version=0,
                        controller_epoch=1,
                    ),
                )
                for p in range(self.config.num_partitions)
            ],
        )

    def new_coordinator(self) -> GroupCoordinator:
        return GroupCoordinator(1, self.config, self.store)

    async def start(self, coordinator: GroupCoordinator | None = None) -> GroupCoordinator:
        c = coordinator or self.coordinator
        c.start()
        for p in range(self.config.num_partitions):
            c.runtime.partition_led(p)
        while c.runtime.loading:
            await asyncio.sleep(0.005)
        return c

    def close(self) -> None:
        self.replicas.shutdown()
        self.log_manager.shutdown()

    def records(self, partition: int) -> list[tuple[bytes | None, bytes | None]]:
        log = self.replicas.get_partition(offsets_tp(partition)).log  # type: ignore[union-attr]
        return [(r.key, r.value) for _, batch in log.iter_batches() for r in iter_records(batch)]


async def join(
    c: GroupCoordinator,
    group: str,
    member_id: str = "",
    *,
    protocols: tuple[tuple[str, bytes], ...] = (("range", b"sub"),),
    session_ms: int = 10_000,
    rebalance_ms: int = 2_000,
    instance_id: str | None = None,
    require_known_member_id: bool = False,
    client_id: str = "client",
    protocol_type: str = "consumer",
) -> JoinResult:
    return await c.join_group(
        group,
        member_id,
        instance_id,
        require_known_member_id=require_known_member_id,
        client_id=client_id,
        client_host="/127.0.0.1",
        rebalance_timeout_ms=rebalance_ms,
        session_timeout_ms=session_ms,
        protocol_type=protocol_type,
        protocols=list(protocols),
    )


# -- an independent decoder of __consumer_offsets records, written from reference §3 ------------------


class Bytes:
    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def unpack(self, fmt: str) -> Any:
        size = struct.calcsize(fmt)
        (value,) = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += size
        return value

    def string(self) -> str | None:
        n = self.unpack(">h")
        if n < 0:
            return None
        out = self.data[self.pos : self.pos + n].decode()
        self.pos += n
        return out

    def blob(self) -> bytes:
        n = self.unpack(">i")
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    @property
    def done(self) -> bool:
        return self.pos == len(self.data)


def decode_record(key: bytes, value: bytes | None) -> dict[str, Any]:
    """Kafka's layouts by hand: key v0/v1 offset commit, key v2 group; values as Burrow reads them."""
    k = Bytes(key)
    key_version = k.unpack(">h")
    out: dict[str, Any] = {"key_version": key_version}
    if key_version in (0, 1):
        out.update(group=k.string(), topic=k.string(), partition=k.unpack(">i"))
    elif key_version == 2:
        out.update(group=k.string())
    else:
        raise AssertionError(f"unknown key version {key_version}")
    assert k.done, "trailing bytes in key"
    if value is None:
        out["tombstone"] = True
        return out
    v = Bytes(value)
    out["value_version"] = vv = v.unpack(">h")
    if key_version in (0, 1):
        assert vv in (1, 3), f"zkafka must write offset value v1 or v3, got v{vv}"
        out["offset"] = v.unpack(">q")
        if vv == 3:
            out["leader_epoch"] = v.unpack(">i")
        out["metadata"] = v.string()
        out["commit_timestamp"] = v.unpack(">q")
        if vv == 1:
            out["expire_timestamp"] = v.unpack(">q")
    else:
        assert vv in (1, 3), f"group metadata value v{vv}"
        out.update(
            protocol_type=v.string(), generation=v.unpack(">i"), protocol=v.string(), leader=v.string()
        )
        if vv >= 2:
            out["current_state_timestamp"] = v.unpack(">q")
        members = []
        for _ in range(v.unpack(">i")):
            m: dict[str, Any] = {"member_id": v.string()}
            if vv >= 3:
                m["group_instance_id"] = v.string()
            m.update(client_id=v.string(), client_host=v.string(), rebalance_timeout=v.unpack(">i"))
            m.update(session_timeout=v.unpack(">i"), subscription=v.blob(), assignment=v.blob())
            members.append(m)
        out["members"] = members
    assert v.done, "trailing bytes in value"
    return out
