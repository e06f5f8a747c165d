"""Everything the controller reacts to, as values on one queue.

Rule: ZooKeeper watches, session changes, broker responses, timers and API calls never act directly;
they put an event on the `EventQueue`, and the controller's single event task processes events one at
a time, in order. That is what lets the controller's state live without locks.

Events that someone waits for carry a future; if such an event is dropped without being processed
(shutdown, session expiry) `preempt()` answers it with NOT_CONTROLLER-style results.
"""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass, field
from typing import Any

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


class ControllerEvent:
    """Base class. `preempt` is called when the event is dropped unprocessed."""

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


@dataclass
class ControllerChange(ControllerEvent):
    """/controller was created, changed or deleted: resign if someone else won; elect if nobody has."""


@dataclass
class Expire(ControllerEvent):
    """The ZooKeeper session expired (or the client was closed): resign at once."""


@dataclass
class RegisterBrokerAndReelect(ControllerEvent):
    """A new ZooKeeper session: let the broker re-register, then run the election again."""


@dataclass
class Shutdown(ControllerEvent):
    """Resign and stop the event task."""


# -- ZooKeeper watches (active controller only) -----------------------------------------------------


@dataclass
class BrokerChange(ControllerEvent):
    """Children of /brokers/ids changed."""


@dataclass
class BrokerModification(ControllerEvent):
    """Data of /brokers/ids/<id> changed."""

    broker_id: int


@dataclass
class TopicChange(ControllerEvent):
    """Children of /brokers/topics changed."""


@dataclass
class PartitionModifications(ControllerEvent):
    """Data of /brokers/topics/<topic> changed (partitions added, or our own rewrite)."""

    topic: str


@dataclass
class TopicDeletion(ControllerEvent):
    """Children of /admin/delete_topics changed."""


@dataclass
class IsrChangeNotification(ControllerEvent):
    """Children of /isr_change_notification changed."""


@dataclass
class LogDirEventNotification(ControllerEvent):
    """Children of /log_dir_event_notification changed."""


@dataclass
class ZkPartitionReassignment(ControllerEvent):
    """/admin/reassign_partitions was created."""


@dataclass
class PartitionReassignmentIsrChange(ControllerEvent):
    """The state znode of a partition being reassigned changed."""

    partition: TopicPartition


@dataclass
class PreferredReplicaElectionZNode(ControllerEvent):
    """/admin/preferred_replica_election was created."""


# -- timers and broker responses --------------------------------------------------------------------


@dataclass
class AutoPreferredReplicaLeaderElection(ControllerEvent):
    """The periodic leader imbalance check."""


@dataclass
class LeaderAndIsrResponseReceived(ControllerEvent):
    broker_id: int
    broker_epoch: int
    response: LeaderAndIsrResponse


@dataclass
class TopicDeletionStopReplicaResponseReceived(ControllerEvent):
    broker_id: int
    partitions: frozenset[TopicPartition]
    response: StopReplicaResponse


# -- API calls (answered through a future) ----------------------------------------------------------


@dataclass
class ControlledShutdown(_Awaited):
    broker_id: int
    broker_epoch: int
    future: asyncio.Future[tuple[ErrorCode, set[TopicPartition]]] = field(repr=False)

    def preempted_result(self) -> tuple[ErrorCode, set[TopicPartition]]:
        return ErrorCode.NOT_CONTROLLER, set()


@dataclass
class ElectLeaders(_Awaited):
    partitions: frozenset[TopicPartition] | None
    """None = every partition (only allowed by the broker for the preferred election)."""
    unclean: bool
    future: asyncio.Future[dict[TopicPartition, tuple[ErrorCode, str | None]]] = field(repr=False)

    def preempted_result(self) -> dict[TopicPartition, tuple[ErrorCode, str | None]]:
        return {tp: (ErrorCode.NOT_CONTROLLER, None) for tp in self.partitions or ()}


@dataclass
class AlterPartitionReassignments(_Awaited):
    reassignments: dict[TopicPartition, tuple[int, ...] | None]
    """partition -> target replicas, or None to cancel its reassignment."""
    future: asyncio.Future[dict[TopicPartition, tuple[ErrorCode, str | None]]] = field(repr=False)

    def preempted_result(self) -> dict[TopicPartition, tuple[ErrorCode, str | None]]:
        return {tp: (ErrorCode.NOT_CONTROLLER, None) for tp in self.reassignments}


# -- the queue --------------------------------------------------------------------------------------


class EventQueue:
    """FIFO of events for the one task that processes them. Use on the event loop thread only."""

    def __init__(self) -> None:
        self._items: deque[ControllerEvent] = deque()
        self._ready = asyncio.Event()

    def __len__(self) -> int:
        return len(self._items)

    def put(self, event: ControllerEvent) -> None:
        self._items.append(event)
        self._ready.set()

    def clear_and_put(self, event: ControllerEvent) -> None:
        """Drop every queued event (answering waiters) and queue `event` alone: used when what is
        queued can no longer be acted on (shutdown, session expiry)."""
        while self._items:
            self._items.popleft().preempt()
        self.put(event)

    async def get(self) -> ControllerEvent:
        while not self._items:
            self._ready.clear()
            await self._ready.wait()
        return self._items.popleft()
