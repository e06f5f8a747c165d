"""Exactly-once streaming writes (sink option ``transactional.id.prefix``): who a task is and how it
knows that its work is already done.

A streaming task writes its rows in one Kafka transaction. In the same transaction it commits a
progress marker: in a consumer group of its own (one per query and task partition, never read
by a consumer), the offset ``batch id + 1`` with metadata naming the batch. The marker becomes
visible exactly when the rows do. When Spark runs the task again (a retried task, an executor
lost, or a restarted driver replaying the last micro-batch from its offset log), the new attempt:

1. uses the same transactional id (prefix + "-" + task partition): its `init_transactions`
   fences any earlier attempt still running, and aborts what that attempt left open, or waits
   for the commit it had started to complete;
2. then reads the marker (OffsetFetch): if it says the batch is written, the task writes nothing.

Only Spark tells the task its batch and query: the local properties ``streaming.sql.batchId``
and ``sql.streaming.queryId`` (the query id is kept in the checkpoint, so it survives a restart;
a new checkpoint gets a new id and therefore fresh markers).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from zkafka.client.group_admin import GroupAdmin
from zkafka.client.types import OffsetAndMetadata, TopicPartition
from zkafka.spark.errors import OptionError
from zkafka.spark.options import TRANSACTIONAL_ID_PREFIX, ClientSpec

BATCH_ID = "streaming.sql.batchId"
QUERY_ID = "sql.streaming.queryId"


@dataclass(frozen=True)
class TaskIdentity:
    transactional_id: str
    """Stable across every attempt of the task partition, in every micro-batch."""
    marker_group: str
    batch_id: int


def task_identity(prefix: str, context: Any) -> TaskIdentity:
    """The identity of the running task (`context`: pyspark's TaskContext)."""
    batch, query = context.getLocalProperty(BATCH_ID), context.getLocalProperty(QUERY_ID)
    if batch is None or query is None:
        raise OptionError(f"Option '{TRANSACTIONAL_ID_PREFIX}' is for streaming writes (writeStream)")
    partition = context.partitionId()
    return TaskIdentity(f"{prefix}-{partition}", f"{prefix}-{query}-{partition}", int(batch))


async def written_up_to(client: ClientSpec, identity: TaskIdentity) -> int:
    """The first batch id the task partition has not written yet (0 when it has no marker).
    Ask only after `init_transactions`: an attempt's commit is complete by then."""
    async with GroupAdmin(**client.admin_kwargs()) as admin:
        committed = await admin.committed_offsets(identity.marker_group)
    return max(committed.values(), default=0)


def marker(identity: TaskIdentity, topic: str) -> dict[TopicPartition, OffsetAndMetadata]:
    """The progress marker to send with the transaction; it names a partition of a topic the task
    writes to, since a coordinator accepts offsets of existing partitions only."""
    return {
        TopicPartition(topic, 0): OffsetAndMetadata(
            identity.batch_id + 1, f"zkafka spark sink: batch {identity.batch_id} written"
        )
    }
