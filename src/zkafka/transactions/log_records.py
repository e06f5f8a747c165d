"""`__transaction_state` records in Kafka's byte formats, and which partition holds an id.

Key: int16 version 0, then TransactionLogKey (the transactional id). Value: int16 version, then
TransactionLogValue: producer id and epoch, timeout, the state's byte, the partitions of the
transaction grouped by topic, last-update and start timestamps. zkafka writes value **v0** (what
Kafka 2.x-3.x write and read) and reads v0 and v1. A null value is a tombstone: the id expired
and was removed. The previous producer id/epoch are not in v0 and load as -1, as in Kafka.

Anything that is not a record of a known version raises `CorruptTransactionRecordError`.

The partition: `Utils.abs(transactionalId.hashCode()) % transaction.state.log.num.partitions`,
the same Java hashing as a group's partition (`zkafka.protocol.groups.partitioning`).
"""

from __future__ import annotations

import struct
from typing import Final

from zkafka.protocol.codec import data_decoder, data_encoder
from zkafka.protocol.groups.formats import DECODE_FAILURES
from zkafka.protocol.groups.partitioning import java_abs, java_string_hashcode
from zkafka.protocol.messages.data.transaction_records import TransactionLogKey, TransactionLogValue
from zkafka.storage.naming import TopicPartition
from zkafka.transactions.metadata import NO_PRODUCER_EPOCH, NO_PRODUCER_ID, TxnTransit
from zkafka.transactions.state import TxnState, state_from_byte

KEY_VERSION = 0
VALUE_VERSION = 0
_VALUE_VERSIONS: Final = (0, 1)
_I16: Final = struct.Struct(">h")


class CorruptTransactionRecordError(ValueError):
    """Bytes in `__transaction_state` that are not a record of a known version."""


def transaction_partition_for(transactional_id: str, num_partitions: int) -> int:
    if num_partitions <= 0:
        raise ValueError(f"__transaction_state needs at least one partition, got {num_partitions}")
    return java_abs(java_string_hashcode(transactional_id)) % num_partitions


# -- writing ----------------------------------------------------------------------------------------


def encode_key(transactional_id: str) -> bytes:
    out = bytearray(_I16.pack(KEY_VERSION))
    key = TransactionLogKey(transactional_id=transactional_id)
    return bytes(data_encoder("TransactionLogKey", KEY_VERSION)(key, out, None))  # type: ignore[arg-type]


_Partitions = TransactionLogValue.PartitionsSchema


def encode_value(transit: TxnTransit, version: int = VALUE_VERSION) -> bytes:
    if transit.state == TxnState.PREPARE_EPOCH_FENCE:
        raise ValueError("PrepareEpochFence is never written to __transaction_state")
    by_topic: dict[str, list[int]] = {}
    for tp in sorted(transit.partitions, key=lambda tp: (tp.topic, tp.partition)):
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    value = TransactionLogValue(
        producer_id=transit.producer_id,
        producer_epoch=transit.producer_epoch,
        transaction_timeout_ms=transit.timeout_ms,
        transaction_status=int(transit.state),
        transaction_partitions=[_Partitions(topic=t, partition_ids=ps) for t, ps in by_topic.items()],
        transaction_last_update_timestamp_ms=transit.update_ms,
        transaction_start_timestamp_ms=transit.start_ms,
    )
    out = bytearray(_I16.pack(version))
    return bytes(data_encoder("TransactionLogValue", version)(value, out, None))  # type: ignore[arg-type]


# -- reading ----------------------------------------------------------------------------------------


def _view(data: bytes | bytearray | memoryview) -> memoryview:
    view = data if isinstance(data, memoryview) else memoryview(data)
    return view if view.format == "B" and view.ndim == 1 else view.cast("B")


def _version(buf: memoryview, what: str) -> int:
    if len(buf) < 2:
        raise CorruptTransactionRecordError(f"{what}: {len(buf)} bytes cannot hold a version")
    return int(_I16.unpack_from(buf)[0])


def decode_key(data: bytes | memoryview | None) -> str:
    if data is None:
        raise CorruptTransactionRecordError("a __transaction_state record needs a key")
    buf = _view(data)
    version = _version(buf, "key")
    if version != KEY_VERSION:
        raise CorruptTransactionRecordError(f"unknown __transaction_state key version {version}")
    try:
        key, _ = data_decoder("TransactionLogKey", version)(buf, 2)
    except DECODE_FAILURES as e:
        raise CorruptTransactionRecordError(f"transaction log key: {e}") from None
    assert isinstance(key, TransactionLogKey)
    return key.transactional_id


def decode_value(data: bytes | memoryview) -> TxnTransit:
    buf = _view(data)
    version = _version(buf, "value")
    if version not in _VALUE_VERSIONS:
        raise CorruptTransactionRecordError(f"unknown __transaction_state value version {version}")
    try:
        v, _ = data_decoder("TransactionLogValue", version)(buf, 2)
    except DECODE_FAILURES as e:
        raise CorruptTransactionRecordError(f"transaction log value v{version}: {e}") from None
    assert isinstance(v, TransactionLogValue)
    try:
        state = state_from_byte(v.transaction_status)
    except ValueError as e:
        raise CorruptTransactionRecordError(str(e)) from None
    if state == TxnState.PREPARE_EPOCH_FENCE:
        raise CorruptTransactionRecordError("PrepareEpochFence is never a stored state")
    partitions = frozenset(
        TopicPartition(p.topic, i) for p in (v.transaction_partitions or ()) for i in p.partition_ids
    )
    return TxnTransit(
        producer_id=v.producer_id,
        last_producer_id=NO_PRODUCER_ID,
        producer_epoch=v.producer_epoch,
        last_producer_epoch=NO_PRODUCER_EPOCH,
        timeout_ms=v.transaction_timeout_ms,
        state=state,
        partitions=partitions,
        start_ms=v.transaction_start_timestamp_ms,
        update_ms=v.transaction_last_update_timestamp_ms,
    )
