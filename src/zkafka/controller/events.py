"""Everything the controller reacts to, as values on one queue.

Rule: ZooKeeper watches, session changes, broker responses, timers and API calls never act directly;
they put an event on the `EventQueue`, and the controller's single event task processes events one at
a time, in order. That is what lets the controller's state live without locks.

Events that someone waits for carry a future; if such an event is dropped without being processed
(shutdown, session expiry) `preempt()` answers it with NOT_CONTROLLER-style results.

Each kind of event names the `ControllerState` the controller is in while it processes one: Kafka's
states, by which its metrics time the controller's work (`ControllerStats`).
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any, ClassVar

from zkafka.protocol import ErrorCode
from zkafka.protocol.messages import LeaderAndIsrResponse, StopReplicaResponse
from zkafka.zk.model import TopicPartition

__all__ = [
    "AlterPartitionReassignments",
    "AutoPreferredReplicaLeaderElection",
    "BrokerChange",
    "BrokerModification",
    "ControlledShutdown",
    "ControllerChange",
    "ControllerEvent",
    "ControllerState",
    "ElectLeaders",
    "EventQueue",
    "Expire",
    "IsrChangeNotification",
    "LeaderAndIsrResponseReceived",
    "LogDirEventNotification",
    "PartitionModifications",
    "PartitionReassignmentIsrChange",
    "PreferredReplicaElectionZNode",
    "RegisterBrokerAndReelect",
    "Shutdown",
    "Startup",
    "TopicChange",
    "TopicDeletion",
    "TopicDeletionStopReplicaResponseReceived",
    "ZkPartitionReassignment",
]


class ControllerState(IntEnum):
    """What the controller's event task is busy with: Kafka's `ControllerState` values (its
    `kafka.controller:type=KafkaController,name=ControllerState` gauge reads them)."""

    IDLE = 0
    CONTROLLER_CHANGE = 1
    BROKER_CHANGE = 2
    TOPIC_CHANGE = 3
    TOPIC_DELETION = 4
    ALTER_PARTITION_REASSIGNMENT = 5
    AUTO_LEADER_BALANCE = 6
    MANUAL_LEADER_BALANCE = 7
    CONTROLLED_SHUTDOWN = 8
    ISR_CHANGE = 9
    LEADER_AND_ISR_RESPONSE_RECEIVED = 10
    LOG_DIR_CHANGE = 11
    CONTROLLER_SHUTDOWN = 12


class ControllerEvent:
    """Base class. `preempt` is called when the event is dropped unprocessed; `state` is the
    controller's state while it processes one."""

    state: ClassVar[ControllerState]

    def preempt(self) -> None:
        pass


class _Awaited(ControllerEvent):
    """An event whose caller waits on `future` for a result."""

    future: asyncio.Future[Any]

    def preempted_result(self) -> Any:
        raise NotImplementedError

    def preempt(self) -> None:
        if not self.future.done():
            self.future.set_result(self.preempted_result())


# -- lifecycle and election -------------------------------------------------------------------------


@dataclass
class Startup(ControllerEvent):
    """Register the /controller watch (done by `start`) and try to become controller."""

    state = ControllerState.CONTROLLER_CHANGE


@dataclass
class ControllerChange(ControllerEvent):
    """/controller was created, changed or deleted: resign if someone else won; elect if nobody has."""

    state = ControllerState.CONTROLLER_CHANGE


@dataclass
class Expire(ControllerEvent):
    """The ZooKeeper session expired (or the client was closed): resign at once."""

    state = ControllerState.CONTROLLER_CHANGE


@dataclass
class RegisterBrokerAndReelect(ControllerEvent):
    """A new ZooKeeper session: let the broker re-register, then run the election again."""

    state = ControllerState.CONTROLLER_CHANGE


@dataclass
class Shutdown(ControllerEvent):
    """Resign and stop the event task."""

    state = ControllerState.CONTROLLER_SHUTDOWN


# -- ZooKeeper watches (active controller only) -----------------------------------------------------


@dataclass
class BrokerChange(ControllerEvent):
    """Children of /brokers/ids changed."""

    state = ControllerState.BROKER_CHANGE


@dataclass
class BrokerModification(ControllerEvent):
    """Data of /brokers/ids/<id> changed."""

    state = ControllerState.BROKER_CHANGE

    broker_id: int


@dataclass
class TopicChange(ControllerEvent):
    """Children of /brokers/topics changed."""

    state = ControllerState.TOPIC_CHANGE


@dataclass
class PartitionModifications(ControllerEvent):
    """Data of /brokers/topics/<topic> changed (partitions added, or our own rewrite)."""

    state = ControllerState.TOPIC_CHANGE

    topic: str


@dataclass
class TopicDeletion(ControllerEvent):
    """Children of /admin/delete_topics changed."""

    state = ControllerState.TOPIC_DELETION


@dataclass
class IsrChangeNotification(ControllerEvent):
    """Children of /isr_change_notification changed."""

    state = ControllerState.ISR_CHANGE


@dataclass
class LogDirEventNotification(ControllerEvent):
    """Children of /log_dir_event_notification changed."""

    state = ControllerState.LOG_DIR_CHANGE


@dataclass
class ZkPartitionReassignment(ControllerEvent):
    """/admin/reassign_partitions was created."""

    state = ControllerState.ALTER_PARTITION_REASSIGNMENT


@dataclass
class PartitionReassignmentIsrChange(ControllerEvent):
    """The state znode of a partition being reassigned changed."""

    state = ControllerState.ALTER_PARTITION_REASSIGNMENT

    partition: TopicPartition


@dataclass
class PreferredReplicaElectionZNode(ControllerEvent):
    """/admin/preferred_replica_election was created."""

    state = ControllerState.MANUAL_LEADER_BALANCE


# -- timers and broker responses --------------------------------------------------------------------


@dataclass
class AutoPreferredReplicaLeaderElection(ControllerEvent):
    """The periodic leader imbalance check."""

    state = ControllerState.AUTO_LEADER_BALANCE


@dataclass
class LeaderAndIsrResponseReceived(ControllerEvent):
    state = ControllerState.LEADER_AND_ISR_RESPONSE_RECEIVED

    broker_id: int
    broker_epoch: int
    response: LeaderAndIsrResponse


@dataclass
class TopicDeletionStopReplicaResponseReceived(ControllerEvent):
    state = ControllerState.TOPIC_DELETION

    broker_id: int
    partitions: frozenset[TopicPartition]
    response: StopReplicaResponse


# -- API calls (answered through a future) ----------------------------------------------------------


@dataclass
class ControlledShutdown(_Awaited):
    state = ControllerState.CONTROLLED_SHUTDOWN

    broker_id: int
    broker_epoch: int
    future: asyncio.Future[tuple[ErrorCode, set[TopicPartition]]] = field(repr=False)

    def preempted_result(self) -> tuple[ErrorCode, set[TopicPartition]]:
        return ErrorCode.NOT_CONTROLLER, set()


@dataclass
class ElectLeaders(_Awaited):
    state = ControllerState.MANUAL_LEADER_BALANCE

    partitions: frozenset[TopicPartition] | None
    """None = every partition (only allowed by the broker for the preferred election)."""
    unclean: bool
    future: asyncio.Future[dict[TopicPartition, tuple[ErrorCode, str | None]]] = field(repr=False)

    def preempted_result(self) -> dict[TopicPartition, tuple[ErrorCode, str | None]]:
        return {tp: (ErrorCode.NOT_CONTROLLER, None) for tp in self.partitions or ()}


@dataclass
class AlterPartitionReassignments(_Awaited):
    state = ControllerState.ALTER_PARTITION_REASSIGNMENT

    reassignments: dict[TopicPartition, tuple[int, ...] | None]
    """partition -> target replicas, or None to cancel its reassignment."""
    future: asyncio.Future[dict[TopicPartition, tuple[ErrorCode, str | None]]] = field(repr=False)

    def preempted_result(self) -> dict[TopicPartition, tuple[ErrorCode, str | None]]:
        return {tp: (ErrorCode.NOT_CONTROLLER, None) for tp in self.reassignments}


# -- the queue --------------------------------------------------------------------------------------


class EventQueue:
    """FIFO of events for the one task that processes them. Use on the event loop thread only. Each
    event keeps the time it was queued, so the task can tell how long it waited (Kafka's
    `EventQueueTimeMs`)."""

    def __init__(self) -> None:
        self._items: deque[tuple[ControllerEvent, float]] = deque()
        self._ready = asyncio.Event()

    def __len__(self) -> int:
        return len(self._items)

    def put(self, event: ControllerEvent) -> None:
        self._items.append((event, time.monotonic()))
        self._ready.set()

    def clear_and_put(self, event: ControllerEvent) -> None:
        """Drop every queued event (answering waiters) and queue `event` alone: used when what is
        queued can no longer be acted on (shutdown, session expiry)."""
        while self._items:
            self._items.popleft()[0].preempt()
        self.put(event)

    async def get(self) -> ControllerEvent:
        return (await self.get_with_wait())[0]

    async def get_with_wait(self) -> tuple[ControllerEvent, float]:
        """The next event and the seconds it waited in the queue."""
        while not self._items:
            self._ready.clear()
            await self._ready.wait()
        event, queued_at = self._items.popleft()
        return event, time.monotonic() - queued_at
