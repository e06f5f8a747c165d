"""OffsetForLeaderEpoch: where a leader epoch ended in this log (KIP-101/279/320).

Followers use it to truncate a divergent log; librdkafka and kafka-python validate consumer
positions with it after a leader change."""

from __future__ import annotations

from zkafka.protocol import KafkaError
from zkafka.protocol.messages import OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse
from zkafka.server.apis.common import error_of, leader_for
from zkafka.server.dispatcher import RequestContext

Resp = OffsetForLeaderEpochResponse


def handle(ctx: RequestContext, request: OffsetForLeaderEpochRequest) -> OffsetForLeaderEpochResponse:
    replicas = ctx.services.replicas
    topics = []
    for t in request.topics:
        parts = []
        for p in t.partitions:
            out = Resp.EpochEndOffset(partition=p.partition)
            try:
                part = leader_for(replicas, t.topic, p.partition, p.current_leader_epoch)
                epoch, end = part.log.epochs.end_offset_for(p.leader_epoch, part.log.log_end_offset)
                out.leader_epoch, out.end_offset = epoch, end
            except KafkaError as e:
                out.error_code = e.code
            except Exception as e:
                out.error_code = error_of(e)
            parts.append(out)
        topics.append(Resp.OffsetForLeaderTopicResult(topic=t.topic, partitions=parts))
    return Resp(topics=topics)
