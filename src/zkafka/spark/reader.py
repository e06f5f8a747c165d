"""The batch reader and the micro-batch stream reader.

Where each call runs (measured, see docs/spark.md): the batch reader plans in a short-lived
planner process on the driver, and is then pickled to the executors; the stream reader's driver
calls (`initialOffset`, `latestOffset`, `partitions`, `commit`) all run in one long-lived Python
process per query, while `read` runs on pickled copies in executor workers. So: `__init__` only
keeps the parsed options, the driver's `OffsetReader` is created lazily and left out of pickles
(pitfall P2), and `read` uses nothing but the options and the partition it is given.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    ReadMinRows,
    SupportsTriggerAvailableNow,
)

from zkafka.client.types import TopicPartition
from zkafka.spark.errors import OffsetError, data_loss_message, format_partitions
from zkafka.spark.fetch import read_range, report_data_loss
from zkafka.spark.metadata import OffsetReader
from zkafka.spark.offsets import (
    OffsetRange,
    PartitionOffsets,
    canonical,
    from_spark,
    pending,
    rate_limit,
    split_ranges,
)
from zkafka.spark.options import (
    EARLIEST,
    LATEST,
    EarliestOffsets,
    GlobalTimestamp,
    LatestOffsets,
    OffsetLimit,
    SourceOptions,
    SpecificOffsets,
    SpecificTimestamps,
)

log = logging.getLogger("zkafka.spark")


@dataclass
class RangePartition(InputPartition):
    """One Spark task: records [start, until) of one topic-partition."""

    topic: str
    partition: int
    start: int
    until: int

    @property
    def range(self) -> OffsetRange:
        return OffsetRange(self.topic, self.partition, self.start, self.until)


def _read(options: SourceOptions, partition: InputPartition) -> Iterator[pa.RecordBatch]:
    if not isinstance(partition, RangePartition):  # Spark's stand-in when there is nothing to read
        return iter(())
    return read_range(options, partition.range)


def _input_partitions(ranges: list[OffsetRange], options: SourceOptions) -> list[RangePartition]:
    pieces = split_ranges(ranges, options.min_partitions, options.max_records_per_partition)
    return [RangePartition(r.topic, r.partition, r.start, r.until) for r in pieces]


# -- resolving start and end offsets ---------------------------------------------------------------


def resolve(
    reader: OffsetReader, limit: OffsetLimit, tps: list[TopicPartition], *, position: str
) -> PartitionOffsets:
    """`limit` as offsets of `tps` (position is "start" or "end", for messages)."""
    if isinstance(limit, EarliestOffsets):
        return reader.earliest(tps)
    if isinstance(limit, LatestOffsets):
        return reader.latest(tps)
    if isinstance(limit, SpecificOffsets):
        _check_same_partitions(limit.offsets, tps, f"Kafka {position} offsets")
        earliest = reader.earliest([tp for tp, o in limit.offsets.items() if o == EARLIEST])
        latest = reader.latest([tp for tp, o in limit.offsets.items() if o == LATEST])
        return {tp: earliest.get(tp, latest.get(tp, o)) for tp, o in limit.offsets.items()}
    if isinstance(limit, SpecificTimestamps):
        _check_same_partitions(limit.timestamps, tps, f"Kafka timestamp based {position}")
        timestamps = dict(limit.timestamps)
    elif isinstance(limit, GlobalTimestamp):
        timestamps = dict.fromkeys(tps, limit.timestamp)
    else:
        raise TypeError(f"not an offset limit: {limit!r}")
    found = reader.offsets_for_times(timestamps)
    unmatched = [tp for tp, offset in found.items() if offset is None]
    if unmatched and getattr(limit, "fail_on_no_match", False):
        tp = min(unmatched)
        raise OffsetError(
            f"No offset matched from request of topic-partition {tp} and timestamp {timestamps[tp]}."
        )
    latest = reader.latest(unmatched)  # no record at or after the time: the partition's end
    return {tp: (latest[tp] if offset is None else offset) for tp, offset in found.items()}


def _check_same_partitions(
    specified: Mapping[TopicPartition, int], assigned: list[TopicPartition], what: str
) -> None:
    if set(specified) != set(assigned):
        raise OffsetError(
            f"Partitions specified for {what} don't match what are assigned. Maybe topic partitions are "
            "created or deleted while the query is running. Use -1 for latest, -2 for earliest. "
            f"Specified: {format_partitions(specified)} Assigned: {format_partitions(assigned)}"
        )


# -- batch -------------------------------------------------------------------------------------------


class ZkafkaBatchReader(DataSourceReader):
    def __init__(self, options: SourceOptions) -> None:
        self.options = options

    def partitions(self) -> list[RangePartition]:
        """Resolved once, on the driver: the ranges are exact, not late-bound as in Spark."""
        options = self.options
        reader = OffsetReader(options)
        try:
            tps = reader.partitions()
            start = resolve(reader, options.starting, tps, position="start")
            end = resolve(reader, options.ending, tps, position="end")
        finally:
            reader.close()
        ranges = []
        for tp in tps:
            if start[tp] > end[tp]:
                where = f"for topic {tp.topic} partition {tp.partition}"
                raise OffsetError(
                    "[RESOLVED_START_OFFSET_GREATER_THAN_END_OFFSET] The resolved start offset "
                    f"{start[tp]} is greater than the resolved end offset {end[tp]} {where}."
                )
            ranges.append(OffsetRange(tp.topic, tp.partition, start[tp], end[tp]))
        return _input_partitions(ranges, options)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return _read(self.options, partition)


# -- streaming ---------------------------------------------------------------------------------------


class ZkafkaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self._reader: OffsetReader | None = None
        self._initial: dict[str, dict[str, int]] | None = None
        self._latest: PartitionOffsets | None = None
        self._available_now = False
        self._target: PartitionOffsets | None = None
        self._last_trigger_ms = 0.0  # as in Spark: the first trigger never waits for minOffsetsPerTrigger

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_reader"] = None  # sockets and a loop thread: never pickled (P2)
        return state

    @property
    def offset_reader(self) -> OffsetReader:
        if self._reader is None:
            self._reader = OffsetReader(self.options)
        return self._reader

    def _fetch_latest(self) -> PartitionOffsets:
        reader = self.offset_reader
        return reader.latest(reader.partitions())

    def initialOffset(self) -> dict[str, dict[str, int]]:
        # Spark calls this twice for a new query; answering differently the second time would
        # plan batch 0 on a range other than the one written to the offset log (pitfall P3).
        if self._initial is None:
            reader = self.offset_reader
            offsets = resolve(reader, self.options.starting, reader.partitions(), position="start")
            self._initial = canonical(offsets)
        return self._initial

    def getDefaultReadLimit(self) -> ReadLimit:
        # Python has no composite limit (P8): with both options, the minimum is applied here
        if self.options.max_offsets_per_trigger is not None:
            return ReadMaxRows(self.options.max_offsets_per_trigger)
        if self.options.min_offsets_per_trigger is not None:
            return ReadMinRows(self.options.min_offsets_per_trigger)
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self._available_now = True

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict[str, dict[str, int]]:
        begin = from_spark(start)
        if self._available_now:
            if self._target is None:  # the end of this run: never read past it (P7)
                self._target = self._fetch_latest()
            latest = dict(self._target)
        else:
            latest = self._fetch_latest()
        self._latest = latest
        if isinstance(limit, ReadAllAvailable):
            return canonical(latest)
        new = [tp for tp in latest if tp not in begin]
        if new:  # partitions that appeared since `start` are read from their beginning
            begin = {**self.offset_reader.earliest(new), **begin}
        if self._hold_back(begin, latest, limit):
            return canonical(from_spark(start))
        if isinstance(limit, ReadMaxRows):
            return canonical(rate_limit(limit.max_rows, begin, latest))
        return canonical(latest)

    def _hold_back(self, begin: PartitionOffsets, latest: PartitionOffsets, limit: ReadLimit) -> bool:
        """minOffsetsPerTrigger with maxTriggerDelay: wait for enough records, unless the delay
        passed. Never under AvailableNow, which must reach its target."""
        if isinstance(limit, ReadMinRows):
            minimum = limit.min_rows
        elif isinstance(limit, ReadMaxRows) and self.options.min_offsets_per_trigger is not None:
            minimum = self.options.min_offsets_per_trigger
        else:
            return False
        if self._available_now:
            return False
        now = time.time() * 1000
        if now - self._last_trigger_ms >= self.options.max_trigger_delay_ms:
            self._last_trigger_ms = now
            return False
        if pending(begin, latest) < minimum:
            return True
        self._last_trigger_ms = now
        return False

    def reportLatestOffset(self) -> dict[str, dict[str, int]] | None:
        return canonical(self._latest) if self._latest else None

    def partitions(self, start: dict, end: dict) -> list[RangePartition]:
        begin, until = from_spark(start), from_spark(end)
        new = [tp for tp in until if tp not in begin]
        if new:
            earliest = self.offset_reader.earliest(new)
            gone = [tp for tp in new if tp not in earliest]
            if gone:
                report_data_loss(
                    self.options,
                    data_loss_message("INITIAL_OFFSET_NOT_FOUND_FOR_PARTITIONS", tps=format_partitions(gone)),
                )
            for tp, offset in sorted(earliest.items()):
                if offset != 0:
                    report_data_loss(
                        self.options,
                        data_loss_message(
                            "ADDED_PARTITION_DOES_NOT_START_FROM_OFFSET_ZERO", tp=tp, start=offset
                        ),
                    )
            begin = {**earliest, **begin}
        deleted = [tp for tp in begin if tp not in until and tp not in new]
        if deleted:
            report_data_loss(
                self.options, data_loss_message("PARTITIONS_DELETED", tps=format_partitions(deleted))
            )
        ranges = []
        for tp in sorted(until):
            if tp not in begin:
                continue
            if until[tp] < begin[tp]:
                report_data_loss(
                    self.options,
                    data_loss_message("PARTITION_OFFSET_CHANGED", tp=tp, start=begin[tp], end=until[tp]),
                )
                continue
            ranges.append(OffsetRange(tp.topic, tp.partition, begin[tp], until[tp]))
        return _input_partitions(ranges, self.options)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return _read(self.options, partition)

    def commit(self, end: dict) -> None:
        """Nothing to do: the source never commits to the broker (Spark's offsets live in its
        checkpoint, which is what makes restarts exactly-once)."""

    def stop(self) -> None:
        # rarely called (P5); nothing depends on it
        if self._reader is not None:
            self._reader.close()
            self._reader = None
