"""The seeds' ZooKeeper consumer (Kafka's 0.8 - 1.1 high-level consumer): group membership,
partition ownership and offsets all live in ZooKeeper under `/consumers/<group>`.

    async with ZookeeperConsumer("g", topics={"events": 2}, zookeeper="127.0.0.1:2181/kafka") as c:
        async for record in c:
            ...

How it works (reference zk-layout §4; seeds 001/002):

* Identity: consumer id `<group>_<hostname>-<epoch ms>-<8 hex of a random UUID>` (or
  `<group>_<consumer_id>` when configured), thread ids `<consumer id>-<n>` per stream. The
  ephemeral `/consumers/<g>/ids/<id>` holds the subscription: `{"<topic>": streams}` with pattern
  `static`, or `{"<regex>": streams}` with pattern `white_list` / `black_list`.
* Triggers: membership (children of `ids`), partition changes of each subscribed topic (its
  `/brokers/topics/<t>` znode), new topics for wildcard subscriptions (children of
  `/brokers/topics`), brokers (children of `/brokers/ids`), and a new ZooKeeper session (the old
  one's ephemerals are gone: register again). Every trigger runs a rebalance; triggers arriving
  during one run another afterwards.
* Rebalance, each consumer on its own: stop fetching (committing first with auto-commit),
  delete its owner znodes, compute the whole group's assignment from ZooKeeper (range by
  default, or roundrobin), read the committed offsets, and claim the ephemeral
  `/consumers/<g>/owners/<t>/<p>` of every partition it got. If a previous owner has not
  released one yet, it drops what it claimed, waits `rebalance_backoff_ms` and retries, up to
  `rebalance_max_retries` times. Only after every claim succeeded does it fetch again, so no two
  consumers ever fetch the same partition at the same time.
* Offsets: the next offset to read, as decimal text in `/consumers/<g>/offsets/<t>/<p>`,
  committed every `auto_commit_interval_ms`, before every rebalance and on close (with
  auto-commit), or by `commit()`. Without a committed offset a partition starts at the
  `auto_offset_reset` end ("smallest" or "largest").

Records come from the brokers with zkafka's `Consumer` (Fetch to each partition's leader).
Delivery is at-least-once: automatic and rebalance commits never pass a record the application
may still be processing -- the records of the last `poll` until poll is called again, the last
record the iterator handed out until the next is asked for -- nor a record fetched but not yet
handed out. An explicit `commit()` covers everything handed out so far.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import socket
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Self

from zkafka.client.cluster import METADATA_ERRORS
from zkafka.client.consumer import Consumer
from zkafka.client.errors import ClientClosedError, ClientError, ConfigError
from zkafka.client.types import ConsumedRecord, TopicPartition
from zkafka.protocol import KafkaError
from zkafka.protocol.groups.partitioning import java_string_hashcode
from zkafka.zk.client import KafkaZkClient
from zkafka.zk.model import ConsumerRegistration, SubscriptionPattern
from zkafka.zk.model import TopicPartition as ZkTopicPartition
from zkafka.zk.topic_names import is_internal_topic
from zkafka.zk.watch_bridge import (
    AsyncWatcher,
    SessionEvent,
    SessionState,
    WatchHandle,
    ZkExecutor,
    ZkWatchEvent,
)
from zkafka.zk.znodes import BrokerIdsZNode, ConsumerGroupZNodes, TopicsZNode, TopicZNode

log = logging.getLogger(__name__)

_RESETS = {"smallest": "earliest", "largest": "latest", "earliest": "earliest", "latest": "latest"}
STRATEGIES = ("range", "roundrobin")

Assignment = dict[TopicPartition, str]
"""Partition -> owning thread id."""


class ConsumerRebalanceFailedError(ClientError):
    """Every rebalance attempt found a partition still owned by someone else (Kafka's
    ConsumerRebalanceFailedException). The consumer keeps watching and tries again on the next
    trigger."""


# -- identity and subscriptions --------------------------------------------------------------------


def new_consumer_id(group: str, configured: str | None = None) -> str:
    """`<group>_<configured id>`, or `<group>_<hostname>-<epoch ms>-<8 hex>` as Kafka makes it."""
    if configured:
        return f"{group}_{configured}"
    # Java prints the UUID's most significant 64 bits with Long.toHexString and keeps 8 digits
    hex8 = f"{uuid.uuid4().int >> 64:x}"[:8]
    return f"{group}_{socket.gethostname()}-{int(time.time() * 1000)}-{hex8}"


def thread_ids(consumer_id: str, streams: int) -> list[str]:
    return [f"{consumer_id}-{i}" for i in range(streams)]


def topic_filter_regex(raw: str) -> re.Pattern[str]:
    """Kafka's TopicFilter: commas mean alternation, spaces and surrounding quotes are dropped,
    and the pattern must match the whole topic name."""
    cleaned = re.sub(r"[\"']+$", "", re.sub(r"^[\"']+", "", raw.strip().replace(",", "|").replace(" ", "")))
    try:
        return re.compile(cleaned)
    except re.error as e:
        raise ConfigError(f"bad topic filter {raw!r}: {e}") from None


@dataclass(frozen=True, slots=True)
class Subscription:
    """One consumer's registration, resolved against the topics that exist."""

    consumer_id: str
    registration: ConsumerRegistration

    def threads_per_topic(
        self, all_topics: Iterable[str], exclude_internal: bool = True
    ) -> dict[str, list[str]]:
        reg = self.registration
        if reg.pattern is SubscriptionPattern.STATIC:
            return {t: thread_ids(self.consumer_id, n) for t, n in reg.subscription.items()}
        out: dict[str, list[str]] = {}
        for raw, n in reg.subscription.items():
            regex = topic_filter_regex(raw)
            for topic in all_topics:
                if exclude_internal and is_internal_topic(topic):
                    continue
                matches = regex.fullmatch(topic) is not None
                if matches == (reg.pattern is SubscriptionPattern.WHITE_LIST):
                    out[topic] = thread_ids(self.consumer_id, n)
        return out


# -- assignment (pure functions: the seeds' worked examples test these directly) -----------------------


def range_assignment(
    partitions: Mapping[str, Sequence[int]], threads: Mapping[str, Sequence[str]]
) -> Assignment:
    """Kafka's old RangeAssignor for the whole group: per topic, partitions sorted numerically,
    thread ids sorted as strings; with n = |P| div |T| and r = |P| mod |T|, thread i gets the
    n + (1 if i < r) consecutive partitions starting at n*i + min(i, r)."""
    out: Assignment = {}
    for topic, topic_threads in threads.items():
        parts = sorted(partitions.get(topic, ()))
        ordered = sorted(topic_threads)
        if not parts or not ordered:
            continue
        n, r = divmod(len(parts), len(ordered))
        for i, thread in enumerate(ordered):
            start = n * i + min(i, r)
            for p in parts[start : start + n + (1 if i < r else 0)]:
                out[TopicPartition(topic, p)] = thread
    return out


def roundrobin_assignment(
    partitions: Mapping[str, Sequence[int]], threads: Mapping[str, Sequence[str]]
) -> Assignment:
    """Kafka's old RoundRobinAssignor (as in 1.x): every partition of every subscribed topic,
    ordered by the Java hashCode of its "[topic,partition]" name, dealt in turn over the sorted
    ids of all the group's threads, passing over a thread not subscribed to that partition's
    topic (0.8.2 refused groups whose consumers subscribed differently; 1.x deals around them)."""
    ordered = sorted({thread for ts in threads.values() for thread in ts})
    tps = sorted(
        (TopicPartition(t, p) for t, ts in threads.items() if ts for p in partitions.get(t, ())),
        key=lambda tp: (java_string_hashcode(f"[{tp.topic},{tp.partition}]"), tp.topic, tp.partition),
    )
    out: Assignment = {}
    turn = 0
    for tp in tps:
        subscribed = set(threads[tp.topic])
        while ordered[turn % len(ordered)] not in subscribed:  # ends: the topic has a subscriber
            turn += 1
        out[tp] = ordered[turn % len(ordered)]
        turn += 1
    return out


def assign(
    strategy: str, partitions: Mapping[str, Sequence[int]], threads: Mapping[str, Sequence[str]]
) -> Assignment:
    if strategy == "range":
        return range_assignment(partitions, threads)
    if strategy == "roundrobin":
        return roundrobin_assignment(partitions, threads)
    raise ConfigError(f"partition_assignment_strategy must be one of {STRATEGIES}, got {strategy!r}")


@dataclass(frozen=True, slots=True)
class GroupView:
    """What one rebalance read from ZooKeeper."""

    threads: dict[str, list[str]]
    """topic -> every thread id of the group subscribed to it."""
    partitions: dict[str, list[int]]
    my_topics: frozenset[str]
    brokers: int


# -- the consumer ------------------------------------------------------------------------------------------


class ZookeeperConsumer:
    def __init__(
        self,
        group: str,
        *,
        zookeeper: str,
        topics: Mapping[str, int] | None = None,
        whitelist: str | None = None,
        blacklist: str | None = None,
        streams: int = 1,
        consumer_id: str | None = None,
        client_id: str | None = None,
        auto_commit_enable: bool = True,
        auto_commit_interval_ms: int = 60_000,
        auto_offset_reset: str = "largest",
        rebalance_max_retries: int = 4,
        rebalance_backoff_ms: int = 2000,
        partition_assignment_strategy: str = "range",
        exclude_internal_topics: bool = True,
        zookeeper_session_timeout_ms: int = 6000,
        zookeeper_connection_timeout_ms: int | None = None,
        on_assign: Callable[[Assignment], Any] | None = None,
        on_revoke: Callable[[Assignment], Any] | None = None,
        **consumer_options: Any,
    ) -> None:
        if not group:
            raise ConfigError("a group id is required")
        chosen = [x is not None for x in (topics, whitelist, blacklist)]
        if sum(chosen) != 1:
            raise ConfigError("give exactly one of topics, whitelist or blacklist")
        if topics is not None:
            if not topics or any(not isinstance(n, int) or n < 1 for n in topics.values()):
                raise ConfigError(f"topics must map topic names to stream counts >= 1, got {topics!r}")
            subscription, pattern = dict(topics), SubscriptionPattern.STATIC
        else:
            if streams < 1:
                raise ConfigError(f"streams must be >= 1, got {streams}")
            raw = whitelist if whitelist is not None else blacklist
            assert raw is not None
            topic_filter_regex(raw)  # fail now on a bad pattern
            subscription = {raw: streams}
            pattern = (
                SubscriptionPattern.WHITE_LIST if whitelist is not None else SubscriptionPattern.BLACK_LIST
            )
        if auto_offset_reset not in _RESETS:
            raise ConfigError(f"auto_offset_reset must be smallest or largest, got {auto_offset_reset!r}")
        if partition_assignment_strategy not in STRATEGIES:
            raise ConfigError(
                "partition_assignment_strategy must be range or roundrobin, "
                f"got {partition_assignment_strategy!r}"
            )
        for name, value in (
            ("auto_commit_interval_ms", auto_commit_interval_ms),
            ("rebalance_max_retries", rebalance_max_retries),
        ):
            if value < 1:
                raise ConfigError(f"{name} must be >= 1, got {value}")
        if rebalance_backoff_ms < 0:
            raise ConfigError(f"rebalance_backoff_ms must be >= 0, got {rebalance_backoff_ms}")
        self.group = group
        self.zookeeper = zookeeper
        self.consumer_id = new_consumer_id(group, consumer_id)
        self.client_id = client_id or group
        self.registration = ConsumerRegistration(subscription, pattern, int(time.time() * 1000))
        self.auto_commit_enable = auto_commit_enable
        self.auto_commit_interval_ms = auto_commit_interval_ms
        self.auto_offset_reset = _RESETS[auto_offset_reset]
        self.rebalance_max_retries = rebalance_max_retries
        self.rebalance_backoff_ms = rebalance_backoff_ms
        self.strategy = partition_assignment_strategy
        self.exclude_internal_topics = exclude_internal_topics
        self.session_timeout_ms = zookeeper_session_timeout_ms
        self.connection_timeout_ms = zookeeper_connection_timeout_ms
        self.on_assign = on_assign
        self.on_revoke = on_revoke
        self._consumer_options = consumer_options
        self.zk: KafkaZkClient | None = None
        self._executor = ZkExecutor(f"zk-consumer-{group}")
        self._watcher: AsyncWatcher | None = None
        self._watches: dict[str, WatchHandle] = {}
        self._remove_session_listener: Callable[[], None] | None = None
        self.consumer: Consumer | None = None
        self._owned: Assignment = {}
        self._committed: dict[TopicPartition, int] = {}
        self._trigger = asyncio.Event()
        self._rebalanced = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._error: BaseException | None = None
        self._iter_buffer: list[ConsumedRecord] = []
        # Records the application holds but may not have finished: what the last poll() returned
        # (finished when poll is called again) or the record the iterator handed out last
        # (finished when the next is asked for). Automatic and rebalance commits stop before
        # them, so a crash in the middle of processing never skips a record (at-least-once).
        self._in_flight: dict[TopicPartition, int] = {}
        self._started = False
        self._closed = False
        self.rebalances = 0

    # -- lifecycle -------------------------------------------------------------------------------------
    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, *exc: object) -> None:
        # leaving the block because processing failed: the record in hand is not done
        await self.close(processed=exc_type is None)

    async def _zk(self, fn: Callable[..., Any], *args: Any) -> Any:
        return await self._executor.call(fn, *args)

    async def start(self, timeout_s: float = 60.0) -> None:
        """Connect, register, run the first rebalance (waiting for it) and start watching."""
        if self._started:
            return
        self._started = True
        self.zk = await self._zk(
            lambda: KafkaZkClient(
                self.zookeeper,
                session_timeout_ms=self.session_timeout_ms,
                connection_timeout_ms=self.connection_timeout_ms,
                create_chroot=False,
            )
        )
        bootstrap = await self._zk(self._bootstrap_servers)
        self.consumer = Consumer(
            bootstrap,
            client_id=self.client_id,
            auto_offset_reset=self.auto_offset_reset,
            **self._consumer_options,
        )
        loop = asyncio.get_running_loop()
        self._watcher = AsyncWatcher(self.zk, loop)
        self._remove_session_listener = self._watcher.add_session_listener(self._on_session)
        await self._zk(self.zk.register_consumer, self.group, self.consumer_id, self.registration)
        log.info("consumer %s registered in group %s", self.consumer_id, self.group)
        self._watch(ConsumerGroupZNodes.ids_path(self.group), children=True)
        self._watch(BrokerIdsZNode.path(), children=True)
        if self.registration.pattern is not SubscriptionPattern.STATIC:
            self._watch(TopicsZNode.path(), children=True)
        self._tasks.append(loop.create_task(self._rebalance_loop(), name=f"rebalance-{self.consumer_id}"))
        if self.auto_commit_enable:
            self._tasks.append(loop.create_task(self._auto_commit_loop(), name=f"commit-{self.consumer_id}"))
        self._trigger.set()
        await asyncio.wait_for(self._rebalanced.wait(), timeout_s)
        self._raise_pending()

    def _bootstrap_servers(self) -> list[str]:
        assert self.zk is not None
        out = []
        for info in self.zk.get_all_brokers():
            ep = next((e for e in info.endpoints if e.security_protocol.name == "PLAINTEXT"), None)
            ep = ep or (info.endpoints[0] if info.endpoints else None)
            if ep is not None:
                out.append(f"{ep.host or 'localhost'}:{ep.port}")
        if not out:
            raise ClientError(f"no brokers registered in ZooKeeper at {self.zookeeper}")
        return out

    async def close(self, *, processed: bool = True) -> None:
        """Commit (with auto-commit), stop, and end the ZooKeeper session -- which removes the
        registration and the owner znodes at once, so the rest of the group rebalances. The
        final commit covers every record handed out, unless `processed` is false (the
        application stops in the middle of one): then it stops before the ones in hand."""
        if self._closed:
            return
        if processed:
            self._in_flight = {}
        self._closed = True
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        try:
            if self.auto_commit_enable and self.zk is not None and self._owned:
                await self._commit()
        except Exception as e:
            log.warning("final commit of %s failed: %s", self.consumer_id, e)
        owned, self._owned = self._owned, {}
        await self._stop_fetching()
        if owned and self.on_revoke is not None:
            self.on_revoke(dict(owned))
        for handle in self._watches.values():
            handle.cancel()
        if self._remove_session_listener is not None:
            self._remove_session_listener()
        if self._watcher is not None:
            self._watcher.close()
        if self.consumer is not None:
            await self.consumer.close()
        if self.zk is not None:
            await self._zk(self.zk.close)
        self._executor.shutdown(wait=False)

    # -- what the application sees -----------------------------------------------------------------------
    def owned(self) -> Assignment:
        """The partitions this consumer owns now, with the owning thread id."""
        return dict(self._owned)

    def seek(self, tp: TopicPartition, offset: int) -> None:
        """Read an owned partition from `offset` on (e.g. to hand back records not processed);
        the next commit writes the new position."""
        if tp not in self._owned or self.consumer is None:
            raise ValueError(f"{tp} is not owned by this consumer")
        self.consumer.seek(tp, offset)

    async def poll(self, timeout_ms: float = 1000) -> list[ConsumedRecord]:
        """Records of the owned partitions; waits up to `timeout_ms` for some. Calling poll again
        says the previous records are processed: automatic commits cover them from then on."""
        self._in_flight = {}
        records = await self._poll(timeout_ms)
        for record in reversed(records):  # in offset order per partition: keep each one's first
            self._in_flight[TopicPartition(record.topic, record.partition)] = record.offset
        return records

    async def _poll(self, timeout_ms: float) -> list[ConsumedRecord]:
        if self._closed:
            raise ClientClosedError("consumer closed")
        if self.consumer is None:
            raise ClientError("call start() first")
        deadline = time.monotonic() + timeout_ms / 1000
        while True:
            self._raise_pending()
            remaining = deadline - time.monotonic()
            if not self._owned:
                # nothing owned (yet): wait in short steps so a rebalance is noticed quickly
                if remaining <= 0:
                    return []
                await asyncio.sleep(min(remaining, 0.05))
                continue
            try:
                records = await self.consumer.poll(max(min(remaining, 0.1), 0) * 1000)
            except KafkaError as e:
                if e.code not in METADATA_ERRORS:
                    raise
                # ZooKeeper can show a new partition before the brokers' metadata has it: wait
                # for the metadata, as Kafka's leader finder does
                log.debug("%s: %s; refreshing metadata", self.consumer_id, e)
                self.consumer.cluster.request_refresh()
                await asyncio.sleep(self.consumer.cluster.retry_backoff)
                records = []
            if records or remaining <= 0:
                return records

    def __aiter__(self) -> AsyncIterator[ConsumedRecord]:
        return self

    async def __anext__(self) -> ConsumedRecord:
        self._in_flight = {}  # asking for the next record says the last one is processed
        while not self._iter_buffer:
            if self._closed:
                raise StopAsyncIteration
            self._iter_buffer.extend(reversed(await self._poll(1000)))
        record = self._iter_buffer.pop()
        self._in_flight = {TopicPartition(record.topic, record.partition): record.offset}
        return record

    def _raise_pending(self) -> None:
        if self._error is not None:
            error, self._error = self._error, None
            raise error

    async def commit(self, offsets: Mapping[TopicPartition, int] | None = None) -> dict[TopicPartition, int]:
        """Write the next offset to read of every owned partition (or `offsets`) to ZooKeeper,
        skipping unchanged ones. Returns what was written. Without `offsets` this covers every
        record handed to the application so far (the caller says it is done with them); records
        fetched but not yet handed out are never covered."""
        self._in_flight = {}
        return await self._commit(offsets)

    async def _commit(self, offsets: Mapping[TopicPartition, int] | None = None) -> dict[TopicPartition, int]:
        """commit() for the consumer's own automatic and rebalance commits: they stop before the
        records the application may still be processing."""
        assert self.zk is not None
        if offsets is None:
            offsets = await self._positions()
        written = {}
        for tp, offset in offsets.items():
            if self._committed.get(tp) == offset:
                continue
            await self._zk(self.zk.commit_consumer_offset, self.group, ZkTopicPartition(*tp), offset)
            self._committed[tp] = offset
            written[tp] = offset
        return written

    async def _positions(self) -> dict[TopicPartition, int]:
        out: dict[TopicPartition, int] = {}
        consumer = self.consumer
        if consumer is None:
            return out
        not_handed_out: dict[TopicPartition, int] = {}
        for record in self._iter_buffer:  # newest first: the last seen per partition is its first
            not_handed_out[TopicPartition(record.topic, record.partition)] = record.offset
        for tp in list(self._owned):
            try:
                position = await consumer.position(tp)
            except (ValueError, ClientError, KafkaError) as e:  # unassigned meanwhile, or no broker
                log.debug("%s: no position for %s: %s", self.consumer_id, tp, e)
                continue
            out[tp] = min(position, self._in_flight.get(tp, position), not_handed_out.get(tp, position))
        return out

    # -- triggers ------------------------------------------------------------------------------------------
    def _watch(self, path: str, *, children: bool) -> None:
        if path in self._watches or self._watcher is None:
            return
        subscribe = self._watcher.watch_children if children else self._watcher.watch_data
        self._watches[path] = subscribe(path, self._on_watch, initial=False)

    def _on_watch(self, event: ZkWatchEvent) -> None:
        log.debug("%s: %s changed (%s): rebalancing", self.consumer_id, event.path, event.type.value)
        self._trigger.set()

    def _on_session(self, event: SessionEvent) -> None:
        if event.state is SessionState.EXPIRED:
            # Our registration and owner znodes are gone: others may take our partitions any
            # moment, so stop fetching now (and commit nothing: a new owner's commit wins).
            log.warning("%s: ZooKeeper session expired; stopping until re-registered", self.consumer_id)
            self._owned = {}
            if self.consumer is not None:
                self.consumer.assign([])
        elif event.state is SessionState.CONNECTED and event.new_session:
            self._tasks.append(asyncio.get_running_loop().create_task(self._reregister()))

    async def _reregister(self) -> None:
        assert self.zk is not None
        try:
            await self._zk(self.zk.register_consumer, self.group, self.consumer_id, self.registration)
            log.info("%s: registered again after a new ZooKeeper session", self.consumer_id)
        except Exception as e:
            log.error("%s: re-registration failed: %s", self.consumer_id, e)
        self._trigger.set()

    # -- rebalancing ---------------------------------------------------------------------------------------
    async def _rebalance_loop(self) -> None:
        while not self._closed:
            await self._trigger.wait()
            self._trigger.clear()
            try:
                await self._synced_rebalance()
            except asyncio.CancelledError:
                raise
            except Exception as e:  # surfaces from the next poll
                log.exception("%s: rebalance failed", self.consumer_id)
                self._error = e
            self._rebalanced.set()

    async def _synced_rebalance(self) -> None:
        for attempt in range(1, self.rebalance_max_retries + 1):
            try:
                if await self._rebalance_once():
                    self.rebalances += 1
                    return
                log.info(
                    "%s: rebalance attempt %d could not claim every partition", self.consumer_id, attempt
                )
            except (ConsumerRebalanceFailedError, ConfigError):
                raise
            except Exception as e:
                log.warning("%s: rebalance attempt %d failed: %s", self.consumer_id, attempt, e)
                await self._stop_fetching()
            await asyncio.sleep(self.rebalance_backoff_ms / 1000)
        raise ConsumerRebalanceFailedError(
            f"{self.consumer_id} cannot rebalance after {self.rebalance_max_retries} retries"
        )

    def _read_group(self) -> GroupView:
        """One consistent-enough snapshot of the group (blocking, on the ZooKeeper thread)."""
        zk = self.zk
        assert zk is not None
        registrations = zk.get_consumer_registrations(self.group)
        registrations[self.consumer_id] = self.registration  # our own view is authoritative
        wildcard = any(r.pattern is not SubscriptionPattern.STATIC for r in registrations.values())
        all_topics = zk.get_all_topics() if wildcard else []
        threads: dict[str, list[str]] = {}
        mine: frozenset[str] = frozenset()
        for cid, reg in registrations.items():
            per_topic = Subscription(cid, reg).threads_per_topic(all_topics, self.exclude_internal_topics)
            for topic, ids in per_topic.items():
                threads.setdefault(topic, []).extend(ids)
            if cid == self.consumer_id:
                mine = frozenset(per_topic)
        assignments = zk.get_topic_assignments(sorted(threads))
        partitions = {t: sorted(a.partitions) for t, a in assignments.items()}
        return GroupView(threads, partitions, mine, len(zk.get_all_broker_ids()))

    async def _rebalance_once(self) -> bool:
        assert self.zk is not None
        view = await self._zk(self._read_group)
        for topic in view.my_topics:
            self._watch(TopicZNode.path(topic), children=False)
        await self._release_all()
        if view.brokers == 0:
            log.warning("%s: no brokers registered; waiting for one", self.consumer_id)
            return True
        mine = {
            tp: thread
            for tp, thread in assign(self.strategy, view.partitions, view.threads).items()
            if thread.rsplit("-", 1)[0] == self.consumer_id
        }
        claimed = await self._zk(self._claim, mine)
        if claimed is None:
            return False
        offsets = await self._zk(self._read_offsets, list(mine))
        self._owned = mine
        self._start_fetching(offsets)
        log.info(
            "%s: owns %s",
            self.consumer_id,
            ", ".join(f"{tp.topic}-{tp.partition}:{t.rsplit('-', 1)[1]}" for tp, t in sorted(mine.items()))
            or "nothing",
        )
        if self.on_assign is not None:
            self.on_assign(dict(mine))
        return True

    def _claim(self, wanted: Assignment) -> Assignment | None:
        """Create every owner znode; on the first one still held by someone else, delete the
        ones created here and give up (None)."""
        zk = self.zk
        assert zk is not None
        done: Assignment = {}
        for tp, thread in sorted(wanted.items()):
            if zk.claim_partition_owner(self.group, ZkTopicPartition(*tp), thread):
                done[tp] = thread
                continue
            log.info("%s: %s is still owned by another consumer", self.consumer_id, tp)
            for got, t in done.items():
                zk.release_partition_owner(self.group, ZkTopicPartition(*got), t)
            return None
        return done

    def _read_offsets(self, tps: list[TopicPartition]) -> dict[TopicPartition, int | None]:
        zk = self.zk
        assert zk is not None
        return {tp: zk.get_consumer_offset(self.group, ZkTopicPartition(*tp)) for tp in tps}

    async def _release_all(self) -> None:
        """Stop fetching (committing first), then delete our owner znodes."""
        if self.auto_commit_enable and self._owned:
            try:
                await self._commit()
            except Exception as e:
                log.warning("%s: commit before rebalance failed: %s", self.consumer_id, e)
        owned, self._owned = self._owned, {}
        # records of released partitions not yet handed out go back: their next owner starts at
        # the offset just committed, which is at or before them
        self._iter_buffer = [
            r for r in self._iter_buffer if TopicPartition(r.topic, r.partition) not in owned
        ]
        await self._stop_fetching()
        if owned and self.on_revoke is not None:
            self.on_revoke(dict(owned))
        if owned:
            zk = self.zk
            assert zk is not None

            def release() -> None:
                for tp, thread in owned.items():
                    zk.release_partition_owner(self.group, ZkTopicPartition(*tp), thread)

            await self._zk(release)

    async def _stop_fetching(self) -> None:
        if self.consumer is not None:
            self.consumer.assign([])

    def _start_fetching(self, offsets: Mapping[TopicPartition, int | None]) -> None:
        consumer = self.consumer
        assert consumer is not None
        consumer.assign(list(offsets))
        reset = []
        for tp, offset in offsets.items():
            if offset is None:
                reset.append(tp)
            else:
                consumer.seek(tp, offset)
                self._committed[tp] = offset
        if reset:
            if self.auto_offset_reset == "earliest":
                consumer.seek_to_beginning(*reset)
            else:
                consumer.seek_to_end(*reset)

    async def _auto_commit_loop(self) -> None:
        while True:
            await asyncio.sleep(self.auto_commit_interval_ms / 1000)
            with contextlib.suppress(Exception):
                if self._owned:
                    await self._commit()
