"""How far behind a streaming query is: the metrics Spark's Kafka source puts in its progress
(`minOffsetsBehindLatest`, `maxOffsetsBehindLatest`, `avgOffsetsBehindLatest`), computed from what
a zkafka source's progress does carry.

Why not in `query.lastProgress["sources"][i]["metrics"]`: Spark fills that map only for a source
that implements the JVM interface `ReportsSourceMetrics` (ProgressContext.extractSourceProgress:
`case s: ReportsSourceMetrics => s.metrics(latestConsumedOffset); case _ => empty map`). A Python
data source runs behind `PythonMicroBatchStream*` (pyspark 4.3), which implement
`SupportsAdmissionControl` and `SupportsTriggerAvailableNow` but not `ReportsSourceMetrics`, and
the Python side's protocol (pyspark/sql/streaming/python_streaming_source_runner.py, function ids
884-892) has no call for metrics. So the map stays empty whatever the Python reader does.

What the progress does carry: `endOffset` (where the batch ended) and `latestOffset`, which Spark
takes from the reader's `reportLatestOffset()`: the latest offsets the broker reported when the
batch was planned. Spark's Kafka source computes its metrics from exactly these two (latest
available minus latest consumed, per partition), so `offsets_behind` gives the same numbers, and
`OffsetsBehindListener` has them for every progress event of every query, as a listener sees them.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from threading import Lock
from typing import Any

from pyspark.sql.streaming.listener import (
    QueryIdleEvent,
    QueryProgressEvent,
    QueryStartedEvent,
    QueryTerminatedEvent,
    StreamingQueryListener,
)

from zkafka.spark.offsets import from_spark

log = logging.getLogger("zkafka.spark.progress")

METRICS = ("minOffsetsBehindLatest", "maxOffsetsBehindLatest", "avgOffsetsBehindLatest")


def _offsets(value: Any) -> Any:
    # lastProgress (a dict) holds offsets as parsed JSON; a listener's SourceProgress as JSON text
    if isinstance(value, str):
        return json.loads(value) if value else None
    return value


def offsets_behind(source: Any) -> dict[str, str]:
    """Spark's Kafka source metrics for one source of a progress: `query.lastProgress["sources"][i]`
    or a listener's `event.progress.sources[i]`. Empty when the progress has no offsets yet (as
    Spark's), or when they are not a zkafka source's (topic -> partition -> offset)."""
    get = source.get if isinstance(source, Mapping) else lambda name: getattr(source, name, None)
    try:
        latest = from_spark(_offsets(get("latestOffset")))
        consumed = from_spark(_offsets(get("endOffset")))
    except (AttributeError, TypeError, ValueError):  # another source's offsets, not ours
        return {}
    behind = [offset - consumed[tp] for tp, offset in latest.items() if tp in consumed]
    if not behind:
        return {}
    # the texts Spark's Kafka source reports: longs, and the mean as a double
    return {
        "minOffsetsBehindLatest": str(min(behind)),
        "maxOffsetsBehindLatest": str(max(behind)),
        "avgOffsetsBehindLatest": str(sum(behind) / len(behind)),
    }


class OffsetsBehindListener(StreamingQueryListener):
    """A StreamingQueryListener that computes `offsets_behind` for every source of every progress
    event: `latest[query id]` holds the newest metrics (one dict per source, in the progress'
    order), and each is logged at INFO on the `zkafka.spark.progress` logger.

        listener = OffsetsBehindListener()
        spark.streams.addListener(listener)
        ...
        listener.latest[str(query.id)][0]["maxOffsetsBehindLatest"]
    """

    def __init__(self) -> None:
        self.latest: dict[str, list[dict[str, str]]] = {}
        self._lock = Lock()  # events arrive on the listener bus' thread

    def onQueryStarted(self, event: QueryStartedEvent) -> None:
        pass

    def onQueryProgress(self, event: QueryProgressEvent) -> None:
        progress = event.progress
        metrics = [offsets_behind(source) for source in progress.sources]
        with self._lock:
            self.latest[str(progress.id)] = metrics
        for source, found in zip(progress.sources, metrics, strict=True):
            if found:
                log.info("query %s batch %d %s: %s", progress.id, progress.batchId, source.description, found)

    def onQueryIdle(self, event: QueryIdleEvent) -> None:
        pass

    def onQueryTerminated(self, event: QueryTerminatedEvent) -> None:
        pass
