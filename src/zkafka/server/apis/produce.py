"""Produce: the batch-level write path.

Per partition: validate the batches' framing and CRC-32C on the header level
(`zkafka.records.batch.validate_batches`), run the idempotent-producer checks on the headers,
let the log assign offsets by patching the headers in place, append. Records are decoded only where a
topic's config demands it: a compacted topic refuses keyless records (Kafka's LogValidator: they would
be dropped by the cleaner later, a silent loss) with INVALID_RECORD and per-record `record_errors`
(KIP-467). acks=0 gets no response,
acks=1 is answered at once, acks=all (-1) waits (no polling) until the high watermark covers
the appended offsets or `timeout_ms` passes. With a `producer_byte_rate` quota the request's bytes
are recorded and the response carries the KIP-219 throttle time (`zkafka.server.client_quotas`).

Transactional batches (KIP-98) go through the same producer-state checks; their producer's
transaction stays open in the partition's state until the coordinator's marker closes it.
Control batches from clients are refused: only WriteTxnMarkers writes markers. A transactional
batch that would open its producer's transaction on a partition waits for the transaction
coordinator to confirm the partition was added (KIP-890, `server.txn_verification`); the
request's other partitions are appended at once, and later batches of the open transaction go
straight to the log.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable
from dataclasses import dataclass

from zkafka.protocol import ErrorCode, KafkaError
from zkafka.protocol.messages import ProduceRequest, ProduceResponse
from zkafka.records.batch import (
    COMPRESSION_MASK,
    CONTROL_MASK,
    TRANSACTIONAL_MASK,
    BatchHeader,
    CorruptRecordError,
    InvalidRecordError,
    validate_batches,
)
from zkafka.records.compression import ZSTD
from zkafka.records.legacy import decode_message_set, is_legacy_message_set, to_records, wrapper_codec
from zkafka.records.record import build_batch, iter_records
from zkafka.server.dispatcher import RequestContext
from zkafka.server.network import NO_RESPONSE, _NoResponse
from zkafka.server.partition import Partition
from zkafka.server.replica_manager import check_min_isr
from zkafka.storage.config import INT64_MAX, LogConfig
from zkafka.storage.naming import TopicPartition
from zkafka.zk.topic_names import is_internal_topic

log = logging.getLogger(__name__)

Resp = ProduceResponse
_ACKS = (-1, 0, 1)
MAX_RECORD_ERRORS = 100
"""Per-record errors listed in one partition's answer (the count is in the message)."""


class RejectedRecordsError(KafkaError):
    """Some records of a partition's batches break the topic's rules: nothing of it is appended."""

    def __init__(
        self, message: str, record_errors: list[tuple[int, str]], code: ErrorCode = ErrorCode.INVALID_RECORD
    ) -> None:
        super().__init__(code, message)
        self.record_errors = record_errors


@dataclass(slots=True)
class _Verifying:
    """A partition whose batches wait for the coordinator (KIP-890): validated, not appended."""

    tp: TopicPartition
    partition: Partition
    batches: bytearray | memoryview
    headers: list[BatchHeader]
    producer: tuple[int, int]
    leader_epoch: int
    guard: object
    out: Resp.PartitionProduceResponse


def handle(
    ctx: RequestContext, request: ProduceRequest
) -> Resp | _NoResponse | Awaitable[Resp | _NoResponse]:
    replicas = ctx.services.replicas
    acks = request.acks
    results: dict[TopicPartition, Resp.PartitionProduceResponse] = {}
    waiting: dict[TopicPartition, tuple[int, int]] = {}  # tp -> (required HW, leader epoch)
    verifying: list[_Verifying] = []
    for t in request.topic_data:
        for pd in t.partition_data:
            tp = TopicPartition(t.name, pd.index)
            out = Resp.PartitionProduceResponse(index=pd.index, base_offset=-1)
            results[tp] = out
            try:
                if acks not in _ACKS:
                    raise KafkaError(ErrorCode.INVALID_REQUIRED_ACKS, f"acks={acks} is not -1, 0 or 1")
                if is_internal_topic(t.name):
                    raise KafkaError(
                        ErrorCode.INVALID_TOPIC_EXCEPTION, f"cannot produce to internal topic {t.name}"
                    )
                partition = replicas.leader_partition(tp)
                batches, headers = _validate(ctx, partition, pd.records)
                pending = _needs_verification(ctx, request, partition, batches, headers, out)
                if pending is not None:
                    verifying.append(pending)
                    continue
                required = _append(ctx, partition, batches, headers, acks, out)
                if required is not None:
                    waiting[tp] = required
            except Exception as e:
                _partition_failed(ctx, tp, out, e)
    throttle = _produce_quota(ctx, request)
    if verifying:
        return _verify_then_append(ctx, request, results, waiting, verifying, throttle)
    return _respond(ctx, results, waiting, request, throttle)


def _respond(
    ctx: RequestContext,
    results: dict[TopicPartition, Resp.PartitionProduceResponse],
    waiting: dict[TopicPartition, tuple[int, int]],
    request: ProduceRequest,
    throttle: int,
) -> Resp | _NoResponse | Awaitable[Resp]:
    if request.acks == 0:
        ctx.connection.throttle(throttle)  # no response to carry it: the mute alone slows the client
        return NO_RESPONSE
    if not waiting:
        return _response(results, throttle)
    return _await_replication(ctx, results, waiting, request.timeout_ms, throttle)


def _partition_failed(
    ctx: RequestContext, tp: TopicPartition, out: Resp.PartitionProduceResponse, e: Exception
) -> None:
    """A partition's failure becomes its answer (and its error metric); the others go on. (A plain
    function called from an `except`, not a context manager: this is every produce request's path.)"""
    if isinstance(e, RejectedRecordsError):
        out.error_code, out.error_message = e.code, e.message
        out.record_errors = [
            Resp.BatchIndexAndErrorMessage(batch_index=i, batch_index_error_message=m)
            for i, m in e.record_errors
        ]
    elif isinstance(e, KafkaError):
        out.error_code, out.error_message = e.code, e.message
    else:
        log.error("produce to %s failed", tp, exc_info=e)
        out.error_code = ErrorCode.UNKNOWN_SERVER_ERROR
    if out.error_code and ctx.services.metrics is not None:
        ctx.services.metrics.partition_error("Produce", tp.topic, out.error_code, produce=True)


# -- KIP-890: the coordinator vouches for a transaction's first batch on a partition --------------------


def _needs_verification(
    ctx: RequestContext,
    request: ProduceRequest,
    partition: Partition,
    batches: bytearray | memoryview,
    headers: list[BatchHeader],
    out: Resp.PartitionProduceResponse,
) -> _Verifying | None:
    """The partition's pending verification when its transactional batch would open a transaction
    here; None when it may be appended now (not transactional, verification off, or the producer's
    transaction is already open here at this epoch: the per-partition cache, free)."""
    for first in headers:
        if first.attributes & TRANSACTIONAL_MASK:
            break
    else:
        return None  # not transactional: every plain produce request leaves here
    service = ctx.services.transactions
    if service is None or service.verifier is None:
        return None
    pid, epoch = first.producer_id, first.producer_epoch
    psm = partition.producer_state
    if psm.has_ongoing_txn(pid, epoch):
        return None
    if request.transactional_id is None:
        # Kafka refuses transactional records without their id: nothing to verify them against
        raise KafkaError(
            ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, "transactional records need a transactional_id"
        )
    if any(h.producer_id != pid or h.producer_epoch != epoch for h in headers):
        raise KafkaError(ErrorCode.INVALID_PRODUCER_ID_MAPPING, "batches of more than one producer")
    guard = psm.start_verification(pid, epoch)
    return _Verifying(
        partition.tp, partition, batches, headers, (pid, epoch), partition.leader_epoch, guard, out
    )


async def _verify_then_append(
    ctx: RequestContext,
    request: ProduceRequest,
    results: dict[TopicPartition, Resp.PartitionProduceResponse],
    waiting: dict[TopicPartition, tuple[int, int]],
    verifying: list[_Verifying],
    throttle: int,
) -> Resp | _NoResponse:
    service = ctx.services.transactions
    assert service is not None and service.verifier is not None and request.transactional_id is not None
    by_producer: dict[tuple[int, int], list[_Verifying]] = {}
    for v in verifying:
        by_producer.setdefault(v.producer, []).append(v)
    answers: dict[TopicPartition, ErrorCode] = {}
    for (pid, epoch), items in by_producer.items():
        tps = [v.tp for v in items]
        try:
            answers.update(await service.verifier.verify(request.transactional_id, pid, epoch, tps))
        except Exception:
            log.exception("verifying %r failed", request.transactional_id)
            answers.update(dict.fromkeys(tps, ErrorCode.UNKNOWN_SERVER_ERROR))
    replicas = ctx.services.replicas
    for v in verifying:
        psm = v.partition.producer_state
        try:
            partition = replicas.leader_partition(v.tp)
            error = answers.get(v.tp, ErrorCode.UNKNOWN_SERVER_ERROR)
            if error != ErrorCode.NONE:
                message = (
                    "the partition is not in the transaction"
                    if error == ErrorCode.INVALID_TXN_STATE
                    else None
                )
                raise KafkaError(error, message or f"transaction verification failed: {error.name}")
            if partition is not v.partition or partition.leader_epoch != v.leader_epoch:
                raise KafkaError(ErrorCode.NOT_LEADER_OR_FOLLOWER, "leadership changed during verification")
            pid, epoch = v.producer
            if not (psm.is_verified(pid, epoch, v.guard) or psm.has_ongoing_txn(pid, epoch)):
                # a marker landed while the coordinator was asked: that transaction is over
                raise KafkaError(ErrorCode.INVALID_TXN_STATE, "the transaction ended during verification")
            required = _append(ctx, partition, v.batches, v.headers, request.acks, v.out)
            if required is not None:
                waiting[v.tp] = required
        except Exception as e:
            _partition_failed(ctx, v.tp, v.out, e)
        finally:
            psm.end_verification(v.producer[0], v.guard)
    response = _respond(ctx, results, waiting, request, throttle)
    if isinstance(response, (Resp, _NoResponse)):
        return response
    return await response


def _produce_quota(ctx: RequestContext, request: ProduceRequest) -> int:
    """`producer_byte_rate`: the request's record bytes, recorded as Kafka does whatever the
    partitions' outcome; the throttle time (0 without a quota)."""
    quotas = ctx.services.quotas
    if quotas is None or not quotas.enabled():
        return 0
    size = sum(len(p.records) for t in request.topic_data for p in t.partition_data if p.records is not None)
    return quotas.produce(ctx.principal, ctx.header.client_id, size)


def _validate(
    ctx: RequestContext, partition: Partition, records: object
) -> tuple[bytearray | memoryview, list[BatchHeader]]:
    """One partition's batches checked at the header level (and per record where the topic's
    config asks): the batches to append and their headers."""
    if records is None or len(records) == 0:  # type: ignore[arg-type]
        raise KafkaError(ErrorCode.CORRUPT_MESSAGE, "empty record set")
    # The network layer hands us a frame we own: the records are a writable view into it, so
    # offsets are patched in place and the same bytes go to the log. Copy only if read-only.
    batches = records if isinstance(records, memoryview) and not records.readonly else bytearray(records)  # type: ignore[arg-type]
    if is_legacy_message_set(batches):
        batches = _up_convert(batches)
    try:
        headers = validate_batches(batches)
    except CorruptRecordError as e:
        raise KafkaError(ErrorCode.CORRUPT_MESSAGE, str(e)) from None
    except InvalidRecordError as e:
        raise KafkaError(ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT, str(e)) from None
    for h in headers:
        attributes = h.attributes  # the bits themselves, not the header's properties: per batch
        if attributes & CONTROL_MASK:
            # markers come from the transaction coordinator (WriteTxnMarkers), never from clients
            raise KafkaError(ErrorCode.INVALID_RECORD, "a producer cannot write control batches")
        if attributes & TRANSACTIONAL_MASK and (h.producer_id < 0 or h.base_sequence < 0):
            raise KafkaError(
                ErrorCode.INVALID_RECORD, "a transactional batch needs a producer id and sequence"
            )
        if (attributes & COMPRESSION_MASK) == ZSTD and ctx.api_version < 7:
            raise KafkaError(ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, "zstd needs Produce v7 or later")
    config = partition.log.config
    if config.compact or _limits_timestamps(config):
        _check_records(batches, headers, config, ctx.services.replicas.now_ms())
    return batches, headers


def _append(
    ctx: RequestContext,
    partition: Partition,
    batches: bytearray | memoryview,
    headers: list[BatchHeader],
    acks: int,
    out: Resp.PartitionProduceResponse,
) -> tuple[int, int] | None:
    """Append one partition's validated batches; for acks=all, (the high watermark to wait for,
    the leader epoch it must be reached in)."""
    check_min_isr(partition, acks)  # before the duplicate check, as Kafka orders them
    duplicate = partition.check_producer_state(headers)
    if duplicate is not None:
        out.base_offset = duplicate.first_offset
        out.log_start_offset = partition.log.log_start_offset
        return (duplicate.last_offset + 1, partition.leader_epoch) if acks == -1 else None
    info, epoch = ctx.services.replicas.append_to_leader(partition.tp, batches, headers, required_acks=acks)
    metrics = ctx.services.metrics
    if metrics is not None:  # per partition, from the batch headers: no record is decoded
        records = 0
        for h in headers:
            records += h.records_count
        metrics.topics.produced(partition.tp.topic, records, len(batches))
    out.base_offset = info.first_offset
    out.log_append_time_ms = info.log_append_time
    out.log_start_offset = info.log_start_offset
    return (info.last_offset + 1, epoch) if acks == -1 else None


def _up_convert(message_set: bytearray | memoryview) -> bytearray:
    """A magic 0/1 message set (Produce v0-v2 clients, e.g. kafka-go 0.2) as one RecordBatch v2 with
    the producer's codec, as Kafka's LogValidator converts it: every message's CRC-32 checked, wrappers
    opened, keys, values and (magic 1) timestamps kept; magic 0 has none (-1)."""
    try:
        messages = decode_message_set(message_set)
        if not messages:
            raise CorruptRecordError("the message set holds no complete message")
        codec = wrapper_codec(message_set)
        return bytearray(build_batch(to_records(messages), base_offset=0, compression=codec))
    except CorruptRecordError as e:
        raise KafkaError(ErrorCode.CORRUPT_MESSAGE, str(e)) from None
    except InvalidRecordError as e:
        raise KafkaError(ErrorCode.INVALID_RECORD, str(e)) from None


def _limits_timestamps(config: LogConfig) -> bool:
    limited = config.message_timestamp_difference_max_ms < INT64_MAX
    return limited and config.message_timestamp_type == "CreateTime"


def _check_records(batches: object, headers: list[BatchHeader], config: LogConfig, now_ms: int) -> None:
    """Kafka's per-record rules, applied only where the topic's config asks for them (the ordinary
    path decodes no record). A compacted topic keeps the latest record per key, so a record without
    a key could never be kept (INVALID_RECORD); with `message.timestamp.difference.max.ms` a
    CreateTime timestamp must be that close to the broker's clock (INVALID_TIMESTAMP). The
    partition's records are refused, each bad one named by its index across the request's records
    for this partition (Kafka's batch index for the usual one batch)."""
    keyless: list[int] = []
    off_clock: list[int] = []
    max_diff = config.message_timestamp_difference_max_ms if _limits_timestamps(config) else None
    index = 0
    try:
        for header in headers:
            for record in iter_records(batches, header):  # type: ignore[arg-type]
                if config.compact and record.key is None:
                    keyless.append(index)
                if max_diff is not None and abs(record.timestamp - now_ms) > max_diff:
                    off_clock.append(index)
                index += 1
    except (ValueError, IndexError) as e:  # a record area that does not decode
        raise KafkaError(ErrorCode.CORRUPT_MESSAGE, f"records do not decode: {e}") from None
    if keyless:
        errors = [(i, "Compacted topic cannot accept message without key.") for i in keyless]
        raise RejectedRecordsError(
            f"{len(keyless)} of {index} records have no key, which a compacted topic cannot accept",
            errors[:MAX_RECORD_ERRORS],
        )
    if off_clock:
        reason = f"timestamp more than message.timestamp.difference.max.ms={max_diff} off the broker's clock"
        raise RejectedRecordsError(
            f"{len(off_clock)} of {index} records have a timestamp out of range",
            [(i, reason) for i in off_clock[:MAX_RECORD_ERRORS]],
            ErrorCode.INVALID_TIMESTAMP,
        )


def _await_replication(
    ctx: RequestContext,
    results: dict[TopicPartition, Resp.PartitionProduceResponse],
    waiting: dict[TopicPartition, tuple[int, int]],
    timeout_ms: int,
    throttle_ms: int,
) -> asyncio.Future[Resp]:
    """The response once the ISR has the appended batches: a future completed from inside the
    high-watermark move that reaches them (no task per request: every acks=all produce takes this)."""
    fut: asyncio.Future[Resp] = asyncio.get_running_loop().create_future()

    def replicated(errors: dict[TopicPartition, ErrorCode]) -> None:
        if fut.done():  # the connection went away meanwhile
            return
        metrics = ctx.services.metrics
        for tp, error in errors.items():
            results[tp].error_code = error
            if error and metrics is not None:
                metrics.partition_error("Produce", tp.topic, error, produce=True)
        fut.set_result(_response(results, throttle_ms))

    # A request whose connection closes stays parked until its offsets are replicated (moments,
    # normally) or it times out: forgetting it at once would cost every request a callback.
    ctx.services.replicas.when_replicated(waiting, timeout_ms / 1000, replicated)
    return fut


def _response(results: dict[TopicPartition, Resp.PartitionProduceResponse], throttle_ms: int = 0) -> Resp:
    by_topic: dict[str, list[Resp.PartitionProduceResponse]] = {}
    for tp, out in results.items():
        by_topic.setdefault(tp.topic, []).append(out)
    return Resp(
        responses=[Resp.TopicProduceResponse(name=t, partition_responses=ps) for t, ps in by_topic.items()],
        throttle_time_ms=throttle_ms,
    )
