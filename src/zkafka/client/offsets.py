"""ListOffsets: a partition's earliest or latest offset, or the first offset at a timestamp.

Shared by the admin client (`list_offsets`) and the consumer (position resets,
`offsets_for_times`). Requests go to each partition's leader, one request per leader; partitions
whose leader moved are retried after a metadata refresh until the deadline.
"""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict
from collections.abc import Mapping

from zkafka.client.cluster import METADATA_ERRORS, NO_LEADER, Cluster
from zkafka.client.connection import ConnectionError_
from zkafka.client.errors import BrokerUnavailableError, ClientTimeoutError
from zkafka.client.types import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, OffsetAndTimestamp, TopicPartition
from zkafka.protocol import ErrorCode, KafkaError
from zkafka.protocol.messages import ListOffsetsRequest, ListOffsetsResponse

READ_UNCOMMITTED = 0
READ_COMMITTED = 1
_CONSUMER_REPLICA_ID = -1


def offset_spec(spec: str | int) -> int:
    """ "earliest" / "latest" / a timestamp in ms as the ListOffsets timestamp value."""
    if spec == "earliest":
        return EARLIEST_TIMESTAMP
    if spec == "latest":
        return LATEST_TIMESTAMP
    if isinstance(spec, int) and not isinstance(spec, bool) and spec >= LATEST_TIMESTAMP - 1:
        return spec
    raise ValueError(f"offset spec must be 'earliest', 'latest' or a timestamp >= 0, got {spec!r}")


async def list_offsets(
    cluster: Cluster,
    specs: Mapping[TopicPartition, int],
    *,
    isolation_level: int = READ_UNCOMMITTED,
    timeout: float | None = None,
) -> dict[TopicPartition, OffsetAndTimestamp | None]:
    """For each partition, the offset for its spec (EARLIEST_TIMESTAMP, LATEST_TIMESTAMP or a
    timestamp). None means no record has a timestamp >= the one asked."""
    deadline = time.monotonic() + (cluster.request_timeout if timeout is None else timeout)
    pending = dict(specs)
    results: dict[TopicPartition, OffsetAndTimestamp | None] = {}
    cluster.add_topics({tp.topic for tp in pending})
    refresh = False
    while pending:
        if refresh:
            await cluster.refresh({tp.topic for tp in pending})
        else:
            await cluster.bootstrap()
            missing = {tp.topic for tp in pending if tp.topic not in cluster.metadata.topics}
            if missing:
                await cluster.refresh(missing)
        retry: dict[TopicPartition, int] = {}
        last_error: Exception | None = None
        by_leader: dict[int, dict[TopicPartition, int]] = defaultdict(dict)
        for tp, spec in pending.items():
            topic = cluster.metadata.topics.get(tp.topic)
            if topic is not None and tp.partition not in topic.partitions and topic.partitions:
                raise KafkaError(
                    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                    f"{tp} does not exist ({tp.topic} has {topic.partition_count} partitions)",
                )
            leader = cluster.metadata.leader(tp)
            if leader == NO_LEADER:
                retry[tp] = spec
                last_error = KafkaError(
                    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if topic is None else ErrorCode.LEADER_NOT_AVAILABLE,
                    f"no leader for {tp}" if topic is not None else f"topic {tp.topic!r} does not exist",
                )
            else:
                by_leader[leader][tp] = spec
        answers = await asyncio.gather(
            *(_ask_leader(cluster, leader, group, isolation_level) for leader, group in by_leader.items()),
            return_exceptions=True,
        )
        for group, answer in zip(by_leader.values(), answers, strict=True):
            if isinstance(answer, ConnectionError_ | ClientTimeoutError | BrokerUnavailableError):
                retry.update(group)
                last_error = answer
                continue
            if isinstance(answer, BaseException):
                raise answer
            for tp, outcome in answer.items():
                if isinstance(outcome, KafkaError):
                    if outcome.code in METADATA_ERRORS:
                        retry[tp] = group[tp]
                        last_error = outcome
                        continue
                    raise outcome
                results[tp] = outcome
        pending = retry
        if pending:
            if time.monotonic() >= deadline:
                assert last_error is not None
                raise last_error
            refresh = True
            await asyncio.sleep(cluster.retry_backoff)
    return results


async def _ask_leader(
    cluster: Cluster, leader: int, specs: dict[TopicPartition, int], isolation_level: int
) -> dict[TopicPartition, OffsetAndTimestamp | KafkaError | None]:
    conn = await cluster.connection(leader)
    # v0 is the legacy "up to N offsets before a time" form; every broker we talk to has v1+.
    version = conn.pick_version(ListOffsetsRequest.API_KEY)
    by_topic: dict[str, list[ListOffsetsRequest.ListOffsetsPartition]] = defaultdict(list)
    for tp, spec in specs.items():
        by_topic[tp.topic].append(
            ListOffsetsRequest.ListOffsetsPartition(
                partition_index=tp.partition, current_leader_epoch=-1, timestamp=spec, max_num_offsets=1
            )
        )
    request = ListOffsetsRequest(
        replica_id=_CONSUMER_REPLICA_ID,
        isolation_level=isolation_level,
        topics=[ListOffsetsRequest.ListOffsetsTopic(name=t, partitions=ps) for t, ps in by_topic.items()],
    )
    resp = await cluster.send(leader, request, version=version)
    assert isinstance(resp, ListOffsetsResponse)
    out: dict[TopicPartition, OffsetAndTimestamp | KafkaError | None] = {}
    for topic in resp.topics:
        for p in topic.partitions:
            tp = TopicPartition(topic.name, p.partition_index)
            if tp not in specs:
                continue
            if p.error_code != ErrorCode.NONE:
                out[tp] = KafkaError(
                    p.error_code, f"ListOffsets {tp}: {ErrorCode.lookup(p.error_code).message}"
                )
                continue
            if version == 0:
                offset = p.old_style_offsets[0] if p.old_style_offsets else -1
                timestamp = -1
            else:
                offset, timestamp = p.offset, p.timestamp
            out[tp] = None if offset < 0 else OffsetAndTimestamp(offset, timestamp)
    for tp in specs:
        if tp not in out:
            out[tp] = KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR, f"ListOffsets answer did not mention {tp}")
    return out
