"""The driver's view of the cluster: which partitions a query reads, and their offsets.

One `OffsetReader` lives in each driver-side process that plans reads: the planner worker of a
batch read, or the long-lived Python process Spark keeps for a streaming source (where it stays
open between micro-batches). It is created lazily and never pickled (pitfall P2).

Each question is retried (Spark's fetchOffset.numRetries, fetchOffset.retryIntervalMs) when the
cluster answers with a transient error, e.g. while a dead broker's partitions move: the client
already retries within its request timeout, this covers what outlasts it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from typing import TypeVar

from zkafka.client.errors import BrokerUnavailableError, ClientTimeoutError
from zkafka.client.sync import SyncAdminClient
from zkafka.client.types import TopicPartition
from zkafka.protocol import ErrorCode, KafkaError
from zkafka.spark.errors import OptionError
from zkafka.spark.options import Assign, SourceOptions

log = logging.getLogger("zkafka.spark")
T = TypeVar("T")


def _transient(error: Exception) -> bool:
    if isinstance(error, KafkaError):
        return error.retriable
    return isinstance(error, BrokerUnavailableError | ClientTimeoutError | ConnectionError | TimeoutError)


class OffsetReader:
    def __init__(self, options: SourceOptions) -> None:
        self.strategy = options.strategy
        self.isolation_level = options.client.isolation_level
        self.retries = options.fetch_offset_retries
        self.retry_interval = options.fetch_offset_retry_interval_ms / 1000
        self._admin = SyncAdminClient(**options.client.admin_kwargs())

    def close(self) -> None:
        self._admin.close()

    def _retrying(self, what: str, call: Callable[[], T]) -> T:
        attempt = 0
        while True:
            try:
                return call()
            except Exception as e:
                attempt += 1
                if attempt > self.retries or not _transient(e):
                    raise
                log.warning("error in attempt %d getting Kafka %s: %s; retrying", attempt, what, e)
                time.sleep(self.retry_interval)

    def partitions(self) -> list[TopicPartition]:
        """The partitions the query reads now: every partition of the subscribed (or matching)
        topics that exist, or the assigned ones. New topics and partitions appear here as soon as
        the cluster's metadata shows them."""
        if isinstance(self.strategy, Assign):
            return self._retrying("partitions", lambda: self._assigned(self.strategy))
        topics = self._retrying("topics", lambda: self._admin.describe_topics(None))  # one Metadata request
        return sorted(
            TopicPartition(name, p)
            for name, meta in topics.items()
            if not meta.is_internal and self.strategy.matches(name) and meta.error == ErrorCode.NONE
            for p in meta.partitions
        )

    def _assigned(self, strategy: Assign) -> list[TopicPartition]:
        topics = {tp.topic for tp in strategy.partitions}
        try:
            meta = self._admin.describe_topics(sorted(topics))
        except KafkaError as e:
            if e.code != ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                raise
            raise OptionError(f"assign: {e.message}") from None
        missing = sorted(tp for tp in strategy.partitions if tp.partition not in meta[tp.topic].partitions)
        if missing:
            counts = ", ".join(
                f"{t} has {meta[t].partition_count}" for t in sorted({tp.topic for tp in missing})
            )
            raise OptionError(f"assign: partitions {', '.join(map(str, missing))} do not exist ({counts})")
        return sorted(strategy.partitions)

    def earliest(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        return self._offsets(tps, "earliest")

    def latest(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        """High watermarks (last stable offsets with kafka.isolation.level=read_committed)."""
        return self._offsets(tps, "latest")

    def _offsets(self, tps: Iterable[TopicPartition], spec: str) -> dict[TopicPartition, int]:
        wanted = list(tps)
        if not wanted:
            return {}
        found = self._retrying(
            f"{spec} offsets",
            lambda: self._admin.list_offsets(
                {tp: spec for tp in wanted}, isolation_level=self.isolation_level
            ),
        )
        return {tp: (0 if r is None else r.offset) for tp, r in found.items()}

    def offsets_for_times(self, timestamps: Mapping[TopicPartition, int]) -> dict[TopicPartition, int | None]:
        """The first offset whose record timestamp is >= the given one; None where no record is."""
        if not timestamps:
            return {}
        found = self._retrying(
            "offsets by timestamp",
            lambda: self._admin.list_offsets(dict(timestamps), isolation_level=self.isolation_level),
        )
        return {tp: (None if r is None else r.offset) for tp, r in found.items()}
