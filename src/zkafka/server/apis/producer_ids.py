"""InitProducerId: a fresh producer id at epoch 0 for an idempotent producer; for a transactional
id, the transaction coordinator's answer (the id's producer id with its epoch bumped, fencing the
previous instance of the producer).

v3+ (KIP-360) may carry the producer id and epoch the producer last had: for a transactional id
the coordinator then bumps that epoch (a retry gets the same answer) instead of treating the call as
a new instance, and answers PRODUCER_FENCED when the pair is stale; only one of the two set is
INVALID_REQUEST, as in Kafka. An idempotent producer (no transactional id) always gets a fresh
producer id, as Kafka gives it. Kafka answers PRODUCER_FENCED only to InitProducerId v4+
(KIP-588); older versions get INVALID_PRODUCER_EPOCH instead.
"""

from __future__ import annotations

import logging

from zkafka.protocol import ErrorCode
from zkafka.protocol.messages import InitProducerIdRequest, InitProducerIdResponse
from zkafka.server.dispatcher import RequestContext
from zkafka.transactions.metadata import NO_PRODUCER_EPOCH, NO_PRODUCER_ID

log = logging.getLogger(__name__)

FIRST_VERSION_WITH_PRODUCER_FENCED = 4


async def handle(ctx: RequestContext, request: InitProducerIdRequest) -> InitProducerIdResponse:
    if request.transactional_id is not None:
        return await _transactional(ctx, request)
    try:
        pid = await ctx.services.producer_ids.next_id()
    except Exception:
        log.exception("producer id allocation failed")
        return InitProducerIdResponse(error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE, producer_id=-1)
    return InitProducerIdResponse(error_code=ErrorCode.NONE, producer_id=pid, producer_epoch=0)


async def _transactional(ctx: RequestContext, request: InitProducerIdRequest) -> InitProducerIdResponse:
    transactions = ctx.services.transactions
    if transactions is None:
        return InitProducerIdResponse(error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE, producer_id=-1)
    expected: tuple[int, int] | None = None
    if ctx.api_version >= 3:
        pid, epoch = request.producer_id, request.producer_epoch
        if (pid == NO_PRODUCER_ID) != (epoch == NO_PRODUCER_EPOCH):
            return InitProducerIdResponse(error_code=ErrorCode.INVALID_REQUEST, producer_id=-1)
        if pid != NO_PRODUCER_ID:
            expected = (pid, epoch)
    try:
        result = await transactions.coordinator.init_producer_id(
            request.transactional_id or "", request.transaction_timeout_ms, expected
        )
    except Exception:
        log.exception("InitProducerId for %r failed", request.transactional_id)
        return InitProducerIdResponse(error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE, producer_id=-1)
    error = result.error
    if error == ErrorCode.PRODUCER_FENCED and ctx.api_version < FIRST_VERSION_WITH_PRODUCER_FENCED:
        error = ErrorCode.INVALID_PRODUCER_EPOCH
    return InitProducerIdResponse(
        error_code=error, producer_id=result.producer_id, producer_epoch=result.producer_epoch
    )
