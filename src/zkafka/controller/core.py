"""`ControllerCore`: what the state machines and event handlers of one controller share.

Thread affinity: everything here runs on the event loop, inside the controller's event task (watch
callbacks only build events and enqueue them). Blocking ZooKeeper calls go through `call`, which runs
them on the `ZkExecutor` thread; the event task awaits them, so events never interleave. A long
event also gives the rest of the loop (this controller's own broker) turns between its stages,
through `yield_to_broker`.

A "term" is one period as active controller: `begin_term` (after winning the election) creates the
channels and the request batch, `end_term` (resignation) closes them and forgets the context.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

from zkafka.client.security import ClientSecurity
from zkafka.config import BrokerConfig
from zkafka.controller.channel import DEFAULT_RETRY_BACKOFF_S, ControllerChannelManager
from zkafka.controller.context import ControllerContext
from zkafka.controller.events import (
    ControllerEvent,
    LeaderAndIsrResponseReceived,
    TopicDeletionStopReplicaResponseReceived,
)
from zkafka.controller.request_batch import ControllerBrokerRequestBatch
from zkafka.zk.client import KafkaZkClient
from zkafka.zk.model import ConfigType, LeaderIsrAndControllerEpoch, TopicPartition
from zkafka.zk.watch_bridge import AsyncWatcher, WatchHandle, ZkExecutor, ZkWatchEvent

__all__ = ["ControllerCore", "ControllerTimings", "WatchRegistry", "read_states"]

log = logging.getLogger(__name__)
state_change_log = logging.getLogger("zkafka.controller.state_change")

T = TypeVar("T")

UNCLEAN_LEADER_ELECTION_KEY = "unclean.leader.election.enable"

EventFactory = Callable[[ZkWatchEvent], ControllerEvent | None]


@dataclass(frozen=True)
class ControllerTimings:
    """Delays that Kafka hard-codes or takes from config; overridable so tests run fast."""

    first_rebalance_check_delay_s: float = 5.0
    """Kafka checks leader balance 5 s after failover, then every leader.imbalance.check.interval."""
    rebalance_check_interval_s: float | None = None
    """None: `leader.imbalance.check.interval.seconds`."""
    request_timeout_s: float | None = None
    """None: `controller.socket.timeout.ms`."""
    request_retry_backoff_s: float = DEFAULT_RETRY_BACKOFF_S


class WatchRegistry:
    """The controller's ZooKeeper subscriptions, keyed by (kind, path), each turning into an event."""

    def __init__(self, watcher: AsyncWatcher, emit: Callable[[ControllerEvent], None]) -> None:
        self._watcher = watcher
        self._emit = emit
        self._handles: dict[tuple[str, str], WatchHandle] = {}

    def _callback(self, make_event: EventFactory) -> Callable[[ZkWatchEvent], None]:
        def deliver(zk_event: ZkWatchEvent) -> None:
            event = make_event(zk_event)
            if event is not None:
                self._emit(event)

        return deliver

    def children(self, path: str, make_event: EventFactory) -> None:
        self._add("children", path, make_event)

    def data(self, path: str, make_event: EventFactory) -> None:
        self._add("data", path, make_event)

    def exists(self, path: str, make_event: EventFactory) -> None:
        self._add("exists", path, make_event)

    def _add(self, kind: str, path: str, make_event: EventFactory) -> None:
        key = (kind, path)
        if key in self._handles:
            return
        subscribe = {
            "children": self._watcher.watch_children,
            "data": self._watcher.watch_data,
            "exists": self._watcher.watch_exists,
        }[kind]
        # No initial delivery: whoever subscribes reads the current state itself, after subscribing,
        # so nothing that changes in between is missed.
        self._handles[key] = subscribe(path, self._callback(make_event), initial=False)

    def cancel(self, kind: str, path: str) -> None:
        handle = self._handles.pop((kind, path), None)
        if handle is not None:
            handle.cancel()

    def cancel_all(self) -> None:
        for handle in self._handles.values():
            handle.cancel()
        self._handles.clear()

    def is_watching(self, kind: str, path: str) -> bool:
        return (kind, path) in self._handles


class ControllerCore:
    def __init__(
        self,
        broker_id: int,
        config: BrokerConfig,
        zk: KafkaZkClient,
        executor: ZkExecutor,
        watcher: AsyncWatcher,
        emit: Callable[[ControllerEvent], None],
        *,
        client_id: str,
        timings: ControllerTimings,
        security: ClientSecurity | None = None,
    ) -> None:
        self.unclean_election_observer: Callable[[int], None] | None = None
        """Told how many leaders an election round took from outside their ISR (the broker's metrics)."""
        self.broker_id = broker_id
        self.config = config
        self.zk = zk
        self.executor = executor
        self.emit = emit
        self.client_id = client_id
        self.timings = timings
        self.security = security
        """How to reach the brokers' inter-broker listener (None: PLAINTEXT)."""
        self.context = ControllerContext()
        self.watches = WatchRegistry(watcher, emit)
        self.channels = self._new_channels()
        self.batch = self._new_batch()

    def _new_channels(self) -> ControllerChannelManager:
        timeout = self.timings.request_timeout_s
        if timeout is None:
            timeout = self.config.controller_socket_timeout_ms / 1000
        return ControllerChannelManager(
            self.config.inter_broker_listener_name,
            client_id=self.client_id,
            request_timeout_s=timeout,
            retry_backoff_s=self.timings.request_retry_backoff_s,
            security=self.security,
        )

    def _new_batch(self) -> ControllerBrokerRequestBatch:
        return ControllerBrokerRequestBatch(
            self.broker_id,
            self.context,
            self.channels,
            on_leader_and_isr_response=lambda b, e, r: self.emit(LeaderAndIsrResponseReceived(b, e, r)),
            on_stop_replica_response=lambda b, ps, r: self.emit(
                TopicDeletionStopReplicaResponseReceived(b, ps, r)
            ),
        )

    # -- terms ----------------------------------------------------------------------------------------
    def begin_term(self, epoch: int, epoch_zk_version: int) -> None:
        self.context = ControllerContext(epoch=epoch, epoch_zk_version=epoch_zk_version)
        self.channels = self._new_channels()
        self.batch = self._new_batch()

    async def end_term(self) -> None:
        self.watches.cancel_all()
        self.batch.clear()
        await self.channels.shutdown()
        self.context = ControllerContext()

    # -- helpers --------------------------------------------------------------------------------------
    def forget_topic(self, topic: str) -> None:
        """Drop a deleted topic from the context, after capturing what the pending UpdateMetadata
        still has to say about it."""
        self.batch.capture_topic(topic)
        self.context.remove_topic(topic)

    async def yield_to_broker(self) -> None:
        """One event-loop turn for the rest of this loop: the broker this controller runs in (its
        clients, and the requests this controller has just queued for it) and the channels, which
        encode and write those requests. Called between the stages of an event that walks tens of
        thousands of partitions (each a tenth of a second of this loop or more at 100,000), so no
        stage holds the broker for the whole event."""
        await asyncio.sleep(0)

    async def call(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        """Run a blocking KafkaZkClient method on the ZooKeeper thread."""
        return await self.executor.call(fn, *args, **kwargs)

    def send_update_metadata(self, broker_ids: Iterable[int], partitions: Iterable[TopicPartition]) -> None:
        """UpdateMetadata for `partitions` (possibly none: brokers list only) to `broker_ids`, now."""
        self.batch.add_update_metadata(broker_ids, partitions)
        self.batch.flush()

    async def unclean_election_enabled(self, topics: Iterable[str]) -> dict[str, bool]:
        """Per topic: its `unclean.leader.election.enable` override, else the broker's setting."""
        topics = sorted(set(topics))
        default = self.config.unclean_leader_election_enable
        if not topics:
            return {}
        configs = await self.call(self.zk.get_entity_configs, ConfigType.TOPIC, topics)
        out = {}
        for topic in topics:
            value = configs.get(topic, {}).get(UNCLEAN_LEADER_ELECTION_KEY)
            out[topic] = default if value is None else value.strip().lower() == "true"
        return out


async def read_states(
    core: ControllerCore, partitions: list[TopicPartition], *, from_context: bool
) -> dict[TopicPartition, LeaderIsrAndControllerEpoch]:
    """The partitions' states to decide from: the context's copies (`from_context`; partitions
    it has none for are read), else ZooKeeper's. A decision taken from a copy is safe only
    because its write is conditional on the copy's zkVersion (BADVERSION: read again)."""
    ctx = core.context
    if not from_context:
        states = await core.call(core.zk.get_partition_states, partitions)
        ctx.verified.update(partitions)
        return states
    leadership = ctx.leadership
    known = {tp: leadership[tp] for tp in partitions if tp in leadership}
    missing = [tp for tp in partitions if tp not in known]
    if missing:
        known.update(await core.call(core.zk.get_partition_states, missing))
        ctx.verified.update(missing)
    return known
