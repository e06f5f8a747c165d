"""InitProducerId for idempotent (non-transactional) producers; epoch 0 for a fresh id."""

from __future__ import annotations

import logging

from zkafka.protocol import ErrorCode
from zkafka.protocol.messages import InitProducerIdRequest, InitProducerIdResponse
from zkafka.server.dispatcher import RequestContext

log = logging.getLogger(__name__)


async def handle(ctx: RequestContext, request: InitProducerIdRequest) -> InitProducerIdResponse:
    if request.transactional_id is not None:
        # Transactions need a transaction coordinator, which zkafka does not have: refuse clearly.
        log.info("refused InitProducerId for transactional id %r", request.transactional_id)
        return InitProducerIdResponse(
            error_code=ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, producer_id=-1
        )
    try:
        pid = await ctx.services.producer_ids.next_id()
    except Exception:
        log.exception("producer id allocation failed")
        return InitProducerIdResponse(error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE, producer_id=-1)
    return InitProducerIdResponse(error_code=ErrorCode.NONE, producer_id=pid, producer_epoch=0)
