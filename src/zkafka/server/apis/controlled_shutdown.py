"""ControlledShutdown (a broker about to stop asks the controller to move its leaderships away).

Only the active controller answers it; any other broker says NOT_CONTROLLER and the caller
retries against the controller named in its metadata."""

from __future__ import annotations

import logging

from zkafka.protocol import ErrorCode
from zkafka.protocol.messages import ControlledShutdownRequest, ControlledShutdownResponse
from zkafka.server.dispatcher import RequestContext

log = logging.getLogger(__name__)

Resp = ControlledShutdownResponse


async def handle(ctx: RequestContext, request: ControlledShutdownRequest) -> Resp:
    controller = ctx.services.controller
    if not controller.is_active:
        return Resp(error_code=ErrorCode.NOT_CONTROLLER)
    try:
        error, remaining = await controller.controlled_shutdown(request.broker_id, request.broker_epoch)
    except Exception:
        log.exception("controlled shutdown of broker %d failed", request.broker_id)
        return Resp(error_code=ErrorCode.UNKNOWN_SERVER_ERROR)
    return Resp(
        error_code=error,
        remaining_partitions=[
            Resp.RemainingPartition(topic_name=tp.topic, partition_index=tp.partition)
            for tp in sorted(remaining)
        ],
    )
