"""The workload of a chaos run: idempotent acks=all producers writing `producer:seq` values
(zkafka's own client; `acks=1` without idempotence for a run that shows what that loses), a
consumer reading every partition as records arrive, the members of a consumer group committing
what they read after each poll, and the final read of the whole log. Everything it sees is recorded
for the checker (`checker.py`): acknowledgements, reads (a group member's reads start a new stretch
at each assignment) and acknowledged commits."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass, field

from zkafka.chaos.checker import Ack, Commit, Read, encode_value
from zkafka.client import Consumer, Producer, TopicPartition
from zkafka.client.errors import ClientError
from zkafka.client.group_consumer import GroupConsumer
from zkafka.protocol import KafkaError

log = logging.getLogger(__name__)


@dataclass
class Workload:
    bootstrap: str
    topic: str
    producers: int = 2
    rate: float = 200.0
    """Records per second per producer."""
    group_consumers: int = 2
    member_lifetime_s: float = 12.0
    """A group member leaves and joins again after about this long (member i after
    (1 + i/2) times it), so partitions change owners all through the run, faults or not."""
    acks: str = "all"
    """"all" (idempotent producers) or "1" (no idempotence: what a deliberately weak run uses)."""
    acked: list[Ack] = field(default_factory=list)
    reads: list[Read] = field(default_factory=list)
    commits: list[Commit] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    """Delivery failures: indeterminate writes, reported but not anomalies."""
    sent: int = 0

    async def run(self, stop: asyncio.Event) -> None:
        await asyncio.gather(
            *(self._produce(f"p{i}", stop) for i in range(self.producers)),
            self._consume(stop),
            *(self._group_member(i, stop) for i in range(self.group_consumers)),
        )

    @property
    def group(self) -> str:
        return f"{self.topic}-group"

    async def _produce(self, name: str, stop: asyncio.Event) -> None:
        loop = asyncio.get_running_loop()
        async with Producer(
            self.bootstrap,
            client_id=f"chaos-{name}",
            acks=self.acks,
            enable_idempotence=self.acks == "all",
            linger_ms=5,
            delivery_timeout_ms=180_000,
        ) as producer:
            started = loop.time()
            seq = 0
            while not stop.is_set():
                due = started + seq / self.rate
                if due > loop.time():
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(stop.wait(), due - loop.time())
                    continue
                value = encode_value(name, seq)
                try:
                    future = await producer.send(self.topic, value, key=b"%d" % seq)
                except (ClientError, KafkaError) as e:
                    self.errors.append(f"{name} seq {seq} not sent: {e}")
                    await asyncio.sleep(0.1)
                    continue
                future.add_done_callback(lambda f, v=value: self._delivered(f, v))
                seq += 1
                self.sent += 1
            await producer.flush(200)

    def _delivered(self, future: asyncio.Future, value: bytes) -> None:  # type: ignore[type-arg]
        if future.cancelled():
            self.errors.append(f"{value!r}: cancelled")
        elif future.exception() is not None:
            self.errors.append(f"{value!r}: {future.exception()}")
        else:
            meta = future.result()
            self.acked.append(Ack(meta.partition, meta.offset, value))

    async def _consume(self, stop: asyncio.Event) -> None:
        """One consumer over every partition; a failure that makes it start over begins a new
        stretch (its position may legitimately move then)."""
        stretch = 0
        while not stop.is_set():
            try:
                async with Consumer(
                    self.bootstrap, client_id="chaos-consumer", auto_offset_reset="earliest"
                ) as c:
                    await c.assign_topic(self.topic)
                    while not stop.is_set():
                        for r in await c.poll(200):
                            self.reads.append(Read("c0", stretch, r.partition, r.offset, r.value or b""))
            except (ClientError, KafkaError, OSError) as e:
                log.info("consumer restarts after: %s", e)
                stretch += 1
                await asyncio.sleep(0.5)

    async def _group_member(self, index: int, stop: asyncio.Event) -> None:
        """A member of the run's consumer group: commits what each poll returned once it is
        recorded; each assignment (and each restart after a failure) begins a new stretch. It
        leaves and joins again every so often (`member_lifetime_s`): rebalances move partitions
        to other owners, which must go on from the committed positions."""
        name = f"g{index}"
        loop = asyncio.get_running_loop()
        lifetime = self.member_lifetime_s * (1 + index / 2)  # staggered: not all leaving at once
        stretch = 0

        def assigned(_tps: set[TopicPartition]) -> None:
            nonlocal stretch
            stretch += 1

        while not stop.is_set():
            try:
                async with GroupConsumer(
                    self.bootstrap,
                    group_id=self.group,
                    topics=[self.topic],
                    client_id=f"chaos-{name}",
                    auto_offset_reset="earliest",
                    enable_auto_commit=False,
                    session_timeout_ms=10_000,
                    heartbeat_interval_ms=1_000,
                    on_assign=assigned,
                ) as member:
                    leave_at = loop.time() + lifetime
                    while not stop.is_set() and loop.time() < leave_at:
                        ends: dict[TopicPartition, int] = {}
                        for r in await member.poll(200):
                            self.reads.append(
                                Read(name, stretch, r.partition, r.offset, r.value or b"", group=self.group)
                            )
                            tp = TopicPartition(r.topic, r.partition)
                            ends[tp] = max(ends.get(tp, 0), r.offset + 1)
                        if ends:
                            await self._commit(member, name, ends)
                stretch += 1
            except (ClientError, KafkaError, OSError) as e:
                log.info("group member %s restarts after: %s", name, e)
                stretch += 1
                await asyncio.sleep(0.5)

    async def _commit(self, member: GroupConsumer, name: str, ends: dict[TopicPartition, int]) -> None:
        try:
            done = await member.commit(ends)
        except (ClientError, KafkaError, OSError) as e:  # a rebalance, a coordinator move: next poll
            log.info("group member %s: commit failed: %s", name, e)
            return
        self.commits.extend(Commit(self.group, name, tp.partition, offset) for tp, offset in done.items())


async def read_all(bootstrap: str, topic: str, timeout: float = 120.0) -> dict[int, list[tuple[int, bytes]]]:
    """Every record of `topic` up to each partition's end offset now: {partition: [(offset, value)]}."""
    async with Consumer(bootstrap, client_id="chaos-final-read", auto_offset_reset="earliest") as consumer:
        tps = await consumer.assign_topic(topic)
        ends = await consumer.end_offsets(tps)
        consumer.seek_to_beginning(*tps)
        out: dict[int, list[tuple[int, bytes]]] = {tp.partition: [] for tp in tps}
        pending = {tp for tp in tps if ends[tp] > 0}
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while pending:
            if loop.time() > deadline:
                raise TimeoutError(f"could not read {sorted(tp.partition for tp in pending)} to their end")
            for r in await consumer.poll(500):
                tp = TopicPartition(r.topic, r.partition)
                if r.offset < ends[tp]:
                    out[r.partition].append((r.offset, r.value or b""))
                if r.offset + 1 >= ends[tp]:
                    pending.discard(tp)
            for tp in list(pending):
                if await consumer.position(tp) >= ends[tp]:
                    pending.discard(tp)
        return out
