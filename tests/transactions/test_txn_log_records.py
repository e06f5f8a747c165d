"""`__transaction_state` records byte for byte as Kafka writes them, and the partition of an id."""

from __future__ import annotations

import struct

import pytest

from zkafka.protocol.groups.partitioning import offsets_partition_for
from zkafka.storage.naming import TopicPartition
from zkafka.transactions.log_records import (
    CorruptTransactionRecordError,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
    transaction_partition_for,
)
from zkafka.transactions.metadata import TxnTransit
from zkafka.transactions.state import TxnState


def _kafka_value(pid, epoch, timeout, status, parts, update, start) -> bytes:
    """TransactionLogValue v0 laid out by hand from Kafka's JSON spec."""
    out = struct.pack(">hqhib", 0, pid, epoch, timeout, status)
    out += struct.pack(">i", len(parts))
    for topic, ids in parts:
        out += struct.pack(">h", len(topic)) + topic.encode() + struct.pack(">i", len(ids))
        out += b"".join(struct.pack(">i", i) for i in ids)
    return out + struct.pack(">qq", update, start)


def test_key_bytes():
    assert encode_key("app-1") == b"\x00\x00\x00\x05app-1"
    assert decode_key(b"\x00\x00\x00\x05app-1") == "app-1"


def test_value_bytes_match_kafkas_v0_layout():
    t = TxnTransit(
        producer_id=4000,
        last_producer_id=-1,
        producer_epoch=3,
        last_producer_epoch=-1,
        timeout_ms=60_000,
        state=TxnState.PREPARE_COMMIT,
        partitions=frozenset({TopicPartition("b", 0), TopicPartition("a", 2), TopicPartition("a", 0)}),
        start_ms=1_700_000_000_000,
        update_ms=1_700_000_000_500,
    )
    expected = _kafka_value(
        4000, 3, 60_000, 2, [("a", [0, 2]), ("b", [0])], 1_700_000_000_500, 1_700_000_000_000
    )
    assert encode_value(t) == expected
    assert decode_value(expected) == t


def test_value_v1_flexible_is_read():
    t = TxnTransit(1, -1, 0, -1, 10, TxnState.ONGOING, frozenset({TopicPartition("x", 1)}), 5, 6)
    assert decode_value(encode_value(t, version=1)) == t


def test_a_null_partition_list_reads_as_empty():
    data = struct.pack(">hqhib", 0, 1, 0, 10, 0) + struct.pack(">i", -1) + struct.pack(">qq", 6, -1)
    assert decode_value(data).partitions == frozenset()


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\x00",
        b"\x00\x05" + bytes(40),  # unknown version
        _kafka_value(1, 0, 10, 9, [], 0, 0),  # unknown status byte
        _kafka_value(1, 0, 10, 7, [], 0, 0),  # PrepareEpochFence is never stored
        _kafka_value(1, 0, 10, 1, [("a", [0])], 0, 0)[:-9],  # truncated
        struct.pack(">hqhib", 0, 1, 0, 10, 1) + struct.pack(">i", 1 << 30),  # count past the end
    ],
)
def test_corrupt_values(data):
    with pytest.raises(CorruptTransactionRecordError):
        decode_value(data)


@pytest.mark.parametrize("data", [None, b"\x00", b"\x00\x01\x00\x01a", b"\x00\x00\x00\x09ab"])
def test_corrupt_keys(data):
    with pytest.raises(CorruptTransactionRecordError):
        decode_key(data)


def test_partition_is_javas_hash_with_utils_abs():
    # "polygenelubricants".hashCode() == Integer.MIN_VALUE: Utils.abs maps it to 0
    assert transaction_partition_for("polygenelubricants", 50) == 0
    assert transaction_partition_for("my-txn", 50) == offsets_partition_for("my-txn", 50) == 45
    with pytest.raises(ValueError):
        transaction_partition_for("x", 0)
