"""The coordinator runtime: what the group coordinator (`__consumer_offsets`) and the transaction
coordinator (`__transaction_state`) share about the partitions of their internal topic.

Per partition it keeps one `PartitionLoad`: LOADING from the moment this broker becomes the
partition's leader until the log has been replayed into the coordinator's state, then LOADED
(owned) until leadership moves away, when it is UNLOADED and the coordinator drops what the
partition held. A partition this broker does not lead has no load at all.

The runtime sees the broker only through `store.CoordinatorLogStore` (which wraps the narrow
`store.PartitionLeaders` the replica manager implements): whether this broker leads a partition,
its log, and the one acks=all append path.

Fencing: a load object never comes back once unloaded; a partition led again gets a new one. An
operation captures the load it starts under (`current`) and may apply its result only if that load
is still LOADED when it completes (`PartitionLoad.owned`); `write` does this for one record batch,
so a coordinator that lost the partition mid-write never acts on it. The load's `epoch` is the
partition's leader epoch when it was loaded (Kafka's coordinator epoch, which transaction markers
carry so partition leaders can refuse an older coordinator).

Loading reads the log from its start off the event loop and hands every batch, in log order, to
the coordinator's `replay_batch` into a fresh accumulator (`new_load`; the last record per key
wins); the result is installed on the loop only if the load is still current and the partition
still led here.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

from zkafka.coordinator.store import AppendResult, CoordinatorLogStore, KeyValue
from zkafka.protocol import ErrorCode
from zkafka.records import BatchHeader
from zkafka.storage.log import Log
from zkafka.storage.naming import TopicPartition

log = logging.getLogger(__name__)

L = TypeVar("L")


class LoadState(enum.Enum):
    LOADING = "loading"
    LOADED = "loaded"
    UNLOADED = "unloaded"


@dataclass(eq=False, slots=True)
class PartitionLoad:
    """One leadership of one partition, as this broker's coordinator holds it."""

    partition: int
    state: LoadState = LoadState.LOADING
    epoch: int = -1
    """The partition's leader epoch once loaded (-1 while loading)."""
    started: float = field(default_factory=time.monotonic)
    task: asyncio.Task[None] | None = field(default=None, repr=False)
    """The replay of this load (done once it is installed, dropped, or found stale)."""

    @property
    def owned(self) -> bool:
        """Still the loaded leadership: what was started under it may be applied."""
        return self.state is LoadState.LOADED


class CoordinatorShards(Protocol[L]):
    """What a coordinator does when a partition's replayed state (`L`, the accumulator of one
    replay) becomes its own, and when it stops being so."""

    def install(self, load: PartitionLoad, loaded: L) -> None:
        """On the loop: the partition is now owned (`load` is LOADED); its replayed state is live."""
        ...

    def unload(self, partition: int) -> None:
        """On the loop: the partition, loading or loaded, is no longer this broker's."""
        ...


class CoordinatorRuntime(Generic[L]):
    """The partitions of one coordinator topic: loading, ownership, fencing, appends, and which
    partition a key lives in."""

    def __init__(
        self,
        store: CoordinatorLogStore,
        shards: CoordinatorShards[L],
        *,
        new_load: Callable[[str], L],
        replay_batch: Callable[[L, BatchHeader, bytes], None],
        partition_of: Callable[[str, int], int],
        num_partitions: Callable[[], int],
    ) -> None:
        """`new_load(name)`: an empty accumulator for replaying partition `name` (`<topic>-<n>`,
        for log lines); `replay_batch(loaded, header, data)`: one batch, control batches included,
        into it (both off the loop); `partition_of(key, partitions)`: Kafka's partition of a key."""
        self.store = store
        self.topic = store.topic
        self._shards = shards
        self._new_load = new_load
        self._replay_batch = replay_batch
        self._partition_of = partition_of
        self._num_partitions = num_partitions
        self._loads: dict[int, PartitionLoad] = {}
        self._tasks: set[asyncio.Task[Any]] = set()

    # -- which partition, and whose ----------------------------------------------------------------------
    def partition_for(self, key: str) -> int:
        """The partition of `key` (a group id, a transactional id): Kafka's hash of the key."""
        return self._partition_of(key, self._num_partitions())

    def current(self, partition: int) -> PartitionLoad | None:
        """The load of `partition` now (LOADING or LOADED), None when it is not led here."""
        return self._loads.get(partition)

    @property
    def owned(self) -> set[int]:
        return {p for p, load in self._loads.items() if load.state is LoadState.LOADED}

    @property
    def loading(self) -> set[int]:
        return {p for p, load in self._loads.items() if load.state is LoadState.LOADING}

    def check(self, partition: int) -> ErrorCode:
        """What a request for a key of `partition` gets: COORDINATOR_LOAD_IN_PROGRESS while it
        loads, NOT_COORDINATOR unless it is owned here (a partition whose leadership went without
        a LeaderAndIsr naming it, e.g. StopReplica, is unloaded on the spot), else NONE."""
        load = self._loads.get(partition)
        if load is None:
            return ErrorCode.NOT_COORDINATOR
        if load.state is LoadState.LOADING:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        if self.store.leader(partition) is None:
            self.partition_lost(partition)
            return ErrorCode.NOT_COORDINATOR
        return ErrorCode.NONE

    # -- leadership ----------------------------------------------------------------------------------------
    def leadership_changed(self, changes: Iterable[TopicPartition]) -> None:
        """After LeaderAndIsr: load the partitions of this topic now led here, unload those no
        longer led here (also any that lost their leadership without being named)."""
        for tp in changes:
            if tp.topic != self.topic:
                continue
            if self.store.leader(tp.partition) is not None:
                self.partition_led(tp.partition)
            else:
                self.partition_lost(tp.partition)
        for partition in list(self._loads):
            if self.store.leader(partition) is None:
                self.partition_lost(partition)

    def partition_led(self, partition: int) -> None:
        """This broker now leads `partition`: load it (requests for its keys get
        COORDINATOR_LOAD_IN_PROGRESS until done). A partition loading or owned already stays."""
        if partition in self._loads:
            return
        load = self._loads[partition] = PartitionLoad(partition)
        task = load.task = asyncio.ensure_future(self._load(load))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def partition_lost(self, partition: int) -> None:
        """Leadership moved away: the partition's load is fenced and its state dropped."""
        load = self._loads.pop(partition, None)
        if load is None:
            return
        load.state = LoadState.UNLOADED
        self._shards.unload(partition)

    async def _load(self, load: PartitionLoad) -> None:
        partition = load.partition
        leader = self.store.leader(partition)
        if leader is None:
            self._drop(load)
            return
        try:
            loaded = await asyncio.get_running_loop().run_in_executor(None, self._replay, partition, leader)
        except Exception:
            log.exception("loading %s-%d failed", self.topic, partition)
            self._drop(load)
            return
        if self._loads.get(partition) is not load:
            return  # lost (and maybe regained) while reading: that newer event decides
        if self.store.leader(partition) is None:
            self.partition_lost(partition)
            return
        load.epoch = leader.epochs.latest_epoch or 0
        load.state = LoadState.LOADED
        try:
            self._shards.install(load, loaded)
        except Exception:
            log.exception("installing %s-%d failed", self.topic, partition)
            self.partition_lost(partition)

    def _replay(self, partition: int, leader: Log) -> L:
        loaded = self._new_load(f"{self.topic}-{partition}")
        for header, data in leader.iter_batches():
            self._replay_batch(loaded, header, data)
        return loaded

    def _drop(self, load: PartitionLoad) -> None:
        """A load that could not be done is forgotten (no state was installed)."""
        if self._loads.get(load.partition) is load:
            del self._loads[load.partition]
            load.state = LoadState.UNLOADED

    # -- writing ---------------------------------------------------------------------------------------
    async def write(
        self,
        partition: int,
        records: Sequence[KeyValue],
        *,
        wait: bool = True,
        producer: tuple[int, int] | None = None,
        load: PartitionLoad | None = None,
    ) -> AppendResult:
        """Append one batch to an owned partition (`store.append`) under `load`, the leadership the
        operation started under (default: the partition's current one). NOT_COORDINATOR, and nothing
        to apply, when that load was not owned when the write started or stopped being owned by
        the time it completed."""
        load = load if load is not None else self._loads.get(partition)
        if load is None or load.partition != partition or not load.owned:
            return AppendResult(ErrorCode.NOT_COORDINATOR)
        result = await self.store.append(partition, records, wait=wait, producer=producer)
        if not load.owned:
            return AppendResult(ErrorCode.NOT_COORDINATOR)
        return result

    # -- lifecycle -------------------------------------------------------------------------------------
    async def stop(self) -> None:
        """Unload every partition and end the loads still reading."""
        for partition in list(self._loads):
            self.partition_lost(partition)
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
