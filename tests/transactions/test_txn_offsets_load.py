"""Transactional offset commits in `__consumer_offsets` replayed on load: a committed
transaction's offsets count, an aborted one's do not, an open one's wait for its marker."""

from __future__ import annotations

from pathlib import Path

from zkafka.coordinator.store import read_partition
from zkafka.protocol.groups.formats import OffsetKey, OffsetValue, encode_offset_key, encode_offset_value
from zkafka.records.batch import validate_batches
from zkafka.records.record import Record, build_batch, build_end_txn_marker
from zkafka.storage.config import LogConfig
from zkafka.storage.log import Log
from zkafka.storage.naming import TopicPartition

TP = TopicPartition("in", 0)


def _commit(offset: int, producer: int | None = None) -> bytes:
    record = Record(
        0,
        1000,
        encode_offset_key(OffsetKey("g", TP.topic, TP.partition)),
        encode_offset_value(OffsetValue(offset)),
    )
    if producer is None:
        return build_batch([record], base_offset=0)
    return build_batch(
        [record],
        base_offset=0,
        producer_id=producer,
        producer_epoch=0,
        base_sequence=0,
        is_transactional=True,
    )


def _append(log: Log, data: bytes) -> None:
    buf = bytearray(data)
    log.append(buf, validate_batches(buf), leader_epoch=0)


def test_replay(tmp_path: Path) -> None:
    log = Log(tmp_path / "__consumer_offsets-0", LogConfig())
    _append(log, _commit(5))
    _append(log, _commit(10, producer=7))
    _append(log, _commit(20, producer=8))
    _append(log, build_end_txn_marker(7, 0, True, 0, 2000))
    _append(log, build_end_txn_marker(8, 0, False, 0, 2000))
    _append(log, _commit(30, producer=9))
    loaded = read_partition(log)
    value, record_offset = loaded.offsets["g"][TP]
    assert (value.offset, record_offset) == (10, 1)
    assert {
        pid: {g: {tp: v.offset for tp, (v, _) in offs.items()} for g, offs in txn.items()}
        for pid, txn in loaded.pending_txn.items()
    } == {9: {"g": {TP: 30}}}
    assert loaded.end_offset == 6
    log.close()
