"""Followers copy their leaders' logs: one fetcher task per (source broker, fetcher index).

`num.replica.fetchers` fetchers per leader broker share that leader's partitions (by hash).
A partition added to a fetcher first reconciles its log with the leader's (KIP-101/279):
OffsetForLeaderEpoch with the follower's latest epoch tells where the two logs diverge, and the
follower truncates there, so a replica that was leader in an older epoch never keeps records the
new leader does not have. One request asks for every partition waiting for it; a partition the
leader cannot answer for yet waits `replica.fetch.backoff.ms` alone while the others fetch. Then
it fetches from its log end: Fetch with `replica_id` = our broker
id (the leader learns our log end offset from it and advances the high watermark), appends the
leader's batches verbatim (offsets and epochs kept), and takes over the leader's high watermark
and log start offset. OFFSET_OUT_OF_RANGE means the leader's log is shorter (truncate to its end)
or starts later (start over at its log start).

Each fetcher keeps an incremental fetch session (KIP-227) with its leader: after the first, full
fetch a request lists only the partitions whose fetch offset, log start or leader epoch changed
(a partition fetches from a new offset once data came), and the leader answers only what has
something new; at tens of thousands of idle replicas a round trip no longer carries them all.
Nor does a round look at them all: only a partition added, answered, truncated or whose log start
moved (`log_starts_moved`, after retention) can have changed its fetch position, so only those
are looked at; a full fetch (the first, and after any session error) lists them all.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from zkafka.client.connection import BrokerConnection
from zkafka.client.fetch_session import (
    FINAL_EPOCH,
    FIRST_SESSION_VERSION,
    INVALID_SESSION_ID,
    FetchSessionHandler,
)
from zkafka.client.security import ClientSecurity
from zkafka.config import BrokerConfig
from zkafka.metrics.broker import TopicMetrics
from zkafka.protocol import ErrorCode
from zkafka.protocol.messages import (
    FetchRequest,
    FetchResponse,
    ListOffsetsRequest,
    OffsetForLeaderEpochRequest,
)
from zkafka.quotas.replication import ReplicationQuota
from zkafka.records.batch import CorruptRecordError, validate_whole_batches
from zkafka.server.metadata_cache import MetadataCache
from zkafka.server.replica_manager import FollowerHooks, ReplicaManager
from zkafka.storage.errors import LogDirIOError, StorageError
from zkafka.storage.naming import TopicPartition

if TYPE_CHECKING:
    from zkafka.server.partition import Partition

log = logging.getLogger(__name__)

MAX_TRUNCATION_ROUNDS = 10


@dataclass(frozen=True, slots=True)
class FollowerContext:
    """What a fetcher needs of its broker: who we are (the `replica_id` of our fetches), the
    replica.* settings, where the leaders listen and how to connect there (the inter-broker
    listener's TLS/SASL; None for PLAINTEXT), and the local replicas to append to."""

    broker_id: int
    config: BrokerConfig
    metadata: MetadataCache
    replicas: ReplicaManager
    throttle: ReplicationQuota | None = None
    """The follower side of the replication throttles (`follower.replication.throttled.*`)."""
    security: ClientSecurity | None = None
    metrics: TopicMetrics | None = None
    """Replication bytes in by topic; None when metrics are off."""


@dataclass(slots=True)
class _FetchState:
    needs_truncation: bool = True
    """Not fetched until its log was reconciled with the leader's (OffsetForLeaderEpoch)."""
    retry_at: float = 0.0
    """After an error of the leader for it: not asked again before this (time.monotonic())."""


class _Asked(NamedTuple):
    """A partition in an OffsetForLeaderEpoch round: the epoch of ours asked about, and the fetch
    state it was asked for (a LeaderAndIsr that re-adds the partition makes a new one)."""

    partition: Partition
    epoch: int
    state: _FetchState


class ReplicaFetcher:
    def __init__(self, local: FollowerContext, leader_id: int, index: int) -> None:
        self.local = local
        self.leader_id = leader_id
        self.index = index
        self.partitions: dict[TopicPartition, _FetchState] = {}
        self._dirty: set[TopicPartition] = set()
        """Partitions whose fetch position may have changed since the last request."""
        self._removed: set[TopicPartition] = set()
        """Partitions no longer fetched from this leader since the last request (forgotten)."""
        self._unreconciled: set[TopicPartition] = set()
        """Partitions whose state `needs_truncation` (an index of them: see `_truncate_if_needed`)."""
        self._wakeup = asyncio.Event()
        self._conn: BrokerConnection | None = None
        self._session = FetchSessionHandler()
        self._task = asyncio.create_task(self._run(), name=f"replica-fetcher-{leader_id}-{index}")

    def add(self, tp: TopicPartition) -> None:
        self.partitions[tp] = _FetchState()
        self._unreconciled.add(tp)
        self._dirty.add(tp)
        self._removed.discard(tp)
        self._wakeup.set()

    def remove(self, tp: TopicPartition) -> None:
        if self.partitions.pop(tp, None) is not None:
            self._dirty.discard(tp)
            self._unreconciled.discard(tp)
            self._removed.add(tp)

    def _reconciled(self, tp: TopicPartition, st: _FetchState) -> None:
        """`tp`'s log agrees with the leader's (or cannot have diverged): fetched from now on."""
        st.needs_truncation = False
        self._unreconciled.discard(tp)
        self._dirty.add(tp)

    def log_starts_moved(self) -> None:
        self._dirty.update(self.partitions)

    async def stop(self) -> None:
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)
        if self._conn is not None:
            self._conn.close()

    # -- the loop ---------------------------------------------------------------------------------
    async def _run(self) -> None:
        backoff = self.local.config.replica_fetch_backoff_ms / 1000
        while True:
            if not self.partitions:
                self._wakeup.clear()
                await self._wakeup.wait()
                continue
            try:
                conn = await self._connection()
                await self._truncate_if_needed(conn)
                await self._fetch_once(conn)
            except asyncio.CancelledError:
                raise
            except Exception as e:
                log.info("fetcher %d-%d: %s; retrying in %.1fs", self.leader_id, self.index, e, backoff)
                # an answer lost or half handled: the next fetch is full (and closes the session)
                self._session.handle_error()
                if self._conn is not None:
                    self._conn.close()
                    self._conn = None
                await asyncio.sleep(backoff)

    async def _connection(self) -> BrokerConnection:
        if self._conn is not None and not self._conn.is_closed:
            return self._conn
        listener = self.local.config.inter_broker_listener_name
        leader = self.local.metadata.brokers.get(self.leader_id)
        endpoint = leader.endpoint(listener) if leader is not None else None
        if endpoint is None:
            raise ConnectionError(f"no {listener} endpoint known for broker {self.leader_id} yet")
        self._conn = await BrokerConnection.open(
            endpoint.host,
            endpoint.port,
            client_id=f"broker-{self.local.broker_id}-fetcher-{self.index}",
            security=self.local.security,
        )
        return self._conn

    def _partition(self, tp: TopicPartition) -> Partition | None:
        p = self.local.replicas.get_partition(tp)
        if p is None or p.state is None or p.state.leader != self.leader_id:
            self.remove(tp)
            return None
        return p

    # -- truncation (KIP-101/279) -----------------------------------------------------------------
    async def _truncate_if_needed(self, conn: BrokerConnection) -> None:
        """Reconcile every partition that needs it with the leader's log, all in one
        OffsetForLeaderEpoch per round (as Kafka's fetcher): a broker restarted with thousands of
        replicas asked one partition per round trip and fetched nothing until all were done. A
        partition the leader cannot answer for yet (it has not applied the controller's
        LeaderAndIsr, or knows an older epoch) is asked again after `replica.fetch.backoff.ms`;
        the others go on to fetch."""
        now = time.monotonic()
        asked: dict[TopicPartition, _Asked] = {}
        # the partitions still to reconcile, not all of them: every fetch round passes here, and a
        # broker follows tens of thousands of partitions at 100,000 (a third of its idle CPU)
        for tp in list(self._unreconciled):
            st = self.partitions.get(tp)
            if st is None or not st.needs_truncation:
                self._unreconciled.discard(tp)
                continue
            if st.retry_at > now:
                continue
            p = self._partition(tp)
            if p is None:
                continue
            epoch = p.log.epochs.latest_epoch
            if epoch is None:  # empty log or no epochs: nothing can have diverged
                self._reconciled(tp, st)
            else:
                asked[tp] = _Asked(p, epoch, st)
        for _ in range(MAX_TRUNCATION_ROUNDS):
            if not asked:
                return
            asked = await self._truncation_round(conn, asked)
        for tp in asked:  # no answer settled it within the rounds: fetch from where we are
            st = self.partitions.get(tp)
            if st is not None:
                self._reconciled(tp, st)

    async def _truncation_round(
        self, conn: BrokerConnection, asked: dict[TopicPartition, _Asked]
    ) -> dict[TopicPartition, _Asked]:
        """One OffsetForLeaderEpoch for `asked` (partition -> our epoch to ask about); truncates
        each answered partition, returns those to ask again with an older epoch (KIP-279)."""
        by_topic: dict[str, list[OffsetForLeaderEpochRequest.OffsetForLeaderPartition]] = {}
        for tp, a in asked.items():
            by_topic.setdefault(tp.topic, []).append(
                OffsetForLeaderEpochRequest.OffsetForLeaderPartition(
                    partition=tp.partition,
                    current_leader_epoch=a.partition.leader_epoch,
                    leader_epoch=a.epoch,
                )
            )
        req = OffsetForLeaderEpochRequest(
            replica_id=self.local.broker_id,
            topics=[
                OffsetForLeaderEpochRequest.OffsetForLeaderTopic(topic=t, partitions=ps)
                for t, ps in by_topic.items()
            ],
        )
        resp = await conn.send(
            req,
            version=min(3, conn.pick_version(req.API_KEY)),
            timeout=self.local.config.replica_socket_timeout_ms / 1000,
        )
        again: dict[TopicPartition, _Asked] = {}
        failed: dict[int, int] = {}
        retry_at = time.monotonic() + self.local.config.replica_fetch_backoff_ms / 1000
        for t in resp.topics:
            for r in t.partitions:
                a = asked.get(TopicPartition(t.topic, r.partition))
                # re-added meanwhile (a new LeaderAndIsr) or gone: asked again for the new state
                if a is None or self.partitions.get(a.partition.tp) is not a.state:
                    continue
                if r.error_code != ErrorCode.NONE:
                    failed[r.error_code] = failed.get(r.error_code, 0) + 1
                    a.state.retry_at = retry_at
                    continue
                older = self._truncate(a.partition, r.leader_epoch, r.end_offset)
                if older is None:
                    self._reconciled(a.partition.tp, a.state)
                else:
                    again[a.partition.tp] = a._replace(epoch=older)
        if failed:
            log.info(
                "fetcher %d-%d: OffsetForLeaderEpoch errors %s (code: partitions); asking again in %d ms",
                self.leader_id,
                self.index,
                failed,
                self.local.config.replica_fetch_backoff_ms,
            )
        return again

    def _truncate(self, p: Partition, leader_epoch: int, leader_end: int) -> int | None:
        """Truncate `p` where its log diverges from the leader's, which answered that `leader_epoch`
        (the largest it knows at or below ours) ends at `leader_end`. Returns an older epoch of ours
        to ask about instead when our history of `leader_epoch` ends earlier (KIP-279)."""
        leo = p.log.log_end_offset
        if leader_end < 0:
            target = min(p.high_watermark, leo)
        else:
            own_epoch, own_end = p.log.epochs.end_offset_for(leader_epoch, leo)
            if own_epoch == leader_epoch:
                target = min(own_end, leader_end, leo)
            elif 0 <= own_epoch < leader_epoch:
                p.truncate_to(min(own_end, leo))
                return own_epoch
            else:
                target = min(leader_end, leo)
        if target < leo:
            log.info(
                "%s: truncating from %d to %d (leader epoch %d ends at %d)",
                p.tp,
                leo,
                target,
                leader_epoch,
                leader_end,
            )
        p.truncate_to(target)
        return None

    # -- fetching ---------------------------------------------------------------------------------
    def _position(self, p: Partition) -> FetchRequest.FetchPartition:
        return FetchRequest.FetchPartition(
            partition=p.tp.partition,
            current_leader_epoch=p.leader_epoch,
            fetch_offset=p.log.log_end_offset,
            log_start_offset=p.log.log_start_offset,
            partition_max_bytes=self.local.config.replica_fetch_max_bytes,
        )

    def _all_positions(self) -> tuple[dict[TopicPartition, FetchRequest.FetchPartition], bool]:
        """Every partition's fetch position (a full fetch, or KIP-73 throttling), and whether some
        were held back by the throttle."""
        wanted: dict[TopicPartition, FetchRequest.FetchPartition] = {}
        throttle = self.local.throttle
        now_ms = time.monotonic_ns() // 1_000_000
        over = throttle is not None and throttle.active and throttle.is_exceeded(now_ms)
        held_back = False
        for tp, st in list(self.partitions.items()):
            if st.needs_truncation:  # waits for the leader's OffsetForLeaderEpoch answer
                held_back = True
                continue
            p = self._partition(tp)
            if p is None:
                continue
            # KIP-73: a throttled replica that is not in the ISR waits while the rate is over
            if over and _throttled(throttle, tp) and self.local.broker_id not in p.isr:
                held_back = True
                continue
            wanted[tp] = self._position(p)
        return wanted, held_back

    def _changed_positions(self) -> dict[TopicPartition, FetchRequest.FetchPartition]:
        """The positions of the partitions that may have moved since the last request."""
        changed: dict[TopicPartition, FetchRequest.FetchPartition] = {}
        for tp in list(self._dirty):
            st = self.partitions.get(tp)
            if st is not None and st.needs_truncation:
                continue  # sent once truncated (the truncation marks it dirty again)
            p = self._partition(tp)
            if p is not None:
                changed[tp] = self._position(p)
        return changed

    async def _fetch_once(self, conn: BrokerConnection) -> None:
        cfg = self.local.config
        throttle = self.local.throttle
        version = min(11, conn.pick_version(FetchRequest.API_KEY))
        session = self._session if version >= FIRST_SESSION_VERSION else None
        if session is not None and not session.needs_full and not (throttle is not None and throttle.active):
            # KIP-227 after a full fetch: only what may have changed is looked at, and only what
            # did is sent (a partition's fetch offset moves when data came); the leader reads the
            # rest from its session and answers what is new
            plan = session.build_changes(self._changed_positions(), self._removed)
            to_send = plan.to_send
        else:
            wanted, held_back = self._all_positions()
            if not wanted:
                if held_back:  # everything is throttled: wait, as Kafka's fetcher backs off
                    await asyncio.sleep(cfg.replica_fetch_backoff_ms / 1000)
                return
            plan = session.build(wanted) if session is not None else None
            to_send = wanted if plan is None else plan.to_send
        self._dirty.clear()
        self._removed.clear()
        req = FetchRequest(
            replica_id=self.local.broker_id,
            max_wait_ms=cfg.replica_fetch_wait_max_ms,
            min_bytes=cfg.replica_fetch_min_bytes,
            max_bytes=cfg.replica_fetch_response_max_bytes,
            session_id=INVALID_SESSION_ID if plan is None else plan.session_id,
            session_epoch=FINAL_EPOCH if plan is None else plan.epoch,
            topics=_by_topic(to_send, FetchRequest.FetchTopic),
            forgotten_topics_data=[
                FetchRequest.ForgottenTopic(topic=t, partitions=[p.partition for p in ps])
                for t, ps in _grouped(plan.to_forget if plan is not None else []).items()
            ],
        )
        resp = await conn.send(
            req,
            version=version,
            timeout=cfg.replica_socket_timeout_ms / 1000 + cfg.replica_fetch_wait_max_ms / 1000,
        )
        if plan is not None:
            answered = [
                TopicPartition(t.topic, r.partition_index) for t in resp.responses for r in t.partitions
            ]
            if not self._session.handle_response(plan, resp.error_code, resp.session_id, answered):
                return
        backoff = False
        for t in resp.responses:
            for r in t.partitions:
                tp = TopicPartition(t.topic, r.partition_index)
                st = self.partitions.get(tp)
                if st is not None and st.needs_truncation:
                    # the leader's session answered from the position it last had; this replica
                    # may yet truncate below it: sent again, with its position, once reconciled
                    continue
                p = self._partition(tp)
                if p is not None:
                    self._dirty.add(tp)  # an answer may move its position (data, log start)
                    if _throttled(throttle, tp):
                        throttle.record(len(r.records or b""), time.monotonic_ns() // 1_000_000)
                    backoff |= await self._handle(conn, p, r)
        if backoff:  # once per round, not per partition: thousands may answer it at once
            await asyncio.sleep(cfg.replica_fetch_backoff_ms / 1000)

    async def _handle(self, conn: BrokerConnection, p: Partition, r: FetchResponse.PartitionData) -> bool:
        """Apply one partition's answer; True when the leader is not (yet) ready for it: the round
        ends with a back-off."""
        tp = p.tp
        if r.error_code == ErrorCode.OFFSET_OUT_OF_RANGE:
            await self._handle_out_of_range(conn, p)
            return False
        if r.error_code in (
            ErrorCode.FENCED_LEADER_EPOCH,
            ErrorCode.NOT_LEADER_OR_FOLLOWER,
            ErrorCode.UNKNOWN_LEADER_EPOCH,
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ):
            # the leader moved on or has not caught up with the controller: wait for LeaderAndIsr
            return True
        if r.error_code != ErrorCode.NONE:
            log.info("%s: fetch error %d from leader %d", tp, r.error_code, self.leader_id)
            return False
        records = r.records
        if records is not None and len(records):
            data = bytearray(records)
            try:
                # the leader may cut the last batch at the byte limit: only whole batches, each
                # parsed and CRC-checked once (hundreds of one-record batches per answer under load)
                headers = validate_whole_batches(data)
                leo = p.log.log_end_offset
                if headers and headers[-1].next_offset > leo:
                    last = headers[-1]
                    del data[last.position + last.size :]
                    if headers[0].next_offset <= leo:  # overlap after a concurrent truncation
                        kept = [h for h in headers if h.next_offset > leo]
                        cut = kept[0].position
                        del data[:cut]
                        headers = [h._replace(position=h.position - cut) for h in kept]
                    p.append_as_follower(data, headers)
                    if self.local.metrics is not None:
                        self.local.metrics.replicated(tp.topic, len(data))
            except (CorruptRecordError, StorageError) as e:
                log.error("%s: cannot append the leader's data: %s", tp, e)
                if isinstance(e, LogDirIOError):
                    self.local.replicas.log_dir_failed(e)
                return False
        p.update_follower_high_watermark(r.high_watermark)
        if r.log_start_offset > p.log.log_start_offset:
            p.log.increment_log_start_offset(min(r.log_start_offset, p.high_watermark))
        return False

    async def _handle_out_of_range(self, conn: BrokerConnection, p: Partition) -> None:
        latest = await self._leader_offset(conn, p, -1)
        leo = p.log.log_end_offset
        if latest < leo:
            log.warning("%s: leader's log ends at %d, below ours (%d): truncating", p.tp, latest, leo)
            p.truncate_to(latest)
            return
        earliest = await self._leader_offset(conn, p, -2)
        log.warning("%s: leader's log starts at %d, after our end %d: starting over", p.tp, earliest, leo)
        p.start_over_at(earliest)

    async def _leader_offset(self, conn: BrokerConnection, p: Partition, timestamp: int) -> int:
        req = ListOffsetsRequest(
            replica_id=self.local.broker_id,
            topics=[
                ListOffsetsRequest.ListOffsetsTopic(
                    name=p.tp.topic,
                    partitions=[
                        ListOffsetsRequest.ListOffsetsPartition(
                            partition_index=p.tp.partition,
                            current_leader_epoch=p.leader_epoch,
                            timestamp=timestamp,
                        )
                    ],
                )
            ],
        )
        resp = await conn.send(req)
        r = resp.topics[0].partitions[0]
        if r.error_code != ErrorCode.NONE:
            raise ConnectionError(f"ListOffsets for {p.tp}: error {r.error_code}")
        return r.offset


def _grouped(partitions: Iterable[TopicPartition]) -> dict[str, list[TopicPartition]]:
    by_topic: dict[str, list[TopicPartition]] = {}
    for tp in partitions:
        by_topic.setdefault(tp.topic, []).append(tp)
    return by_topic


def _by_topic(parts: dict[TopicPartition, Any], topic_cls: Any) -> list[Any]:
    """Fetch topics of `parts`, grouped by topic in first-seen order."""
    by_topic: dict[str, list[Any]] = {}
    for tp, p in parts.items():
        by_topic.setdefault(tp.topic, []).append(p)
    return [topic_cls(topic=t, partitions=ps) for t, ps in by_topic.items()]


def _throttled(throttle: ReplicationQuota | None, tp: TopicPartition) -> bool:
    return throttle is not None and throttle.active and throttle.is_throttled(tp.topic, tp.partition)


class ReplicaFetcherManager(FollowerHooks):
    def __init__(self, local: FollowerContext) -> None:
        self.local = local
        self.fetchers: dict[tuple[int, int], ReplicaFetcher] = {}
        self.assigned: dict[TopicPartition, tuple[int, int]] = {}

    def _key(self, leader: int, tp: TopicPartition) -> tuple[int, int]:
        n = max(1, self.local.config.num_replica_fetchers)
        return leader, hash(tp) % n

    def add_followers(self, partitions: dict[TopicPartition, int]) -> None:
        self.remove_followers(partitions)
        for tp, leader in partitions.items():
            key = self._key(leader, tp)
            fetcher = self.fetchers.get(key)
            if fetcher is None:
                fetcher = self.fetchers[key] = ReplicaFetcher(self.local, *key)
            fetcher.add(tp)
            self.assigned[tp] = key

    def remove_followers(self, partitions: object) -> None:
        for tp in list(partitions):  # type: ignore[call-overload]
            key = self.assigned.pop(tp, None)
            if key is not None and key in self.fetchers:
                self.fetchers[key].remove(tp)

    def log_starts_moved(self) -> None:
        for fetcher in self.fetchers.values():
            fetcher.log_starts_moved()

    async def shutdown(self) -> None:
        await asyncio.gather(*(f.stop() for f in self.fetchers.values()), return_exceptions=True)
        self.fetchers.clear()
        self.assigned.clear()
