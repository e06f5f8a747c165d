"""A partition replica with transactions (zkafka.server.partition over a real log): the LSO as
transactional batches and markers arrive, markers checked against the producer and coordinator
epochs, `.txnindex` written, and the same state rebuilt from disk after a restart or a
truncation."""

from __future__ import annotations

from pathlib import Path

import pytest

from zkafka.protocol import ErrorCode, KafkaError
from zkafka.records.batch import validate_batches
from zkafka.records.record import Record, build_batch, build_end_txn_marker
from zkafka.server.partition import LeaderState, Partition
from zkafka.storage.config import LogConfig
from zkafka.storage.log import Log
from zkafka.storage.naming import TopicPartition
from zkafka.storage.txn_index import AbortedTxn

TP = TopicPartition("out", 0)


def _leader(path: Path) -> Partition:
    p = Partition(TP, 1, Log(path, LogConfig()))
    p.make_leader(LeaderState(1, 0, (1,), (1,), 0, 1), now_ms=0)
    return p


def _append(p: Partition, data: bytes) -> int:
    buf = bytearray(data)
    headers = validate_batches(buf)
    p.check_producer_state(headers)
    return p.append_as_leader(buf, headers).first_offset


def _txn_batch(pid: int, seq: int, n: int = 2, epoch: int = 0) -> bytes:
    return build_batch(
        [Record(i, 1000, b"k", b"v") for i in range(n)],
        base_offset=0,
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        is_transactional=True,
    )


def _marker(pid: int, commit: bool, epoch: int = 0, coordinator_epoch: int = 0) -> bytes:
    return build_end_txn_marker(pid, epoch, commit, coordinator_epoch, 2000)


def test_lso_txnindex_and_rebuild(tmp_path: Path) -> None:
    p = _leader(tmp_path / "out-0")
    assert _append(p, _txn_batch(7, 0)) == 0  # offsets 0-1, producer 7
    assert _append(p, _txn_batch(8, 0)) == 2  # offsets 2-3, producer 8
    assert (p.high_watermark, p.last_stable_offset) == (4, 0)
    assert _append(p, _marker(7, commit=False)) == 4
    assert p.last_stable_offset == 2  # producer 8 is still open
    assert _append(p, _marker(8, commit=True)) == 5
    assert p.last_stable_offset == p.high_watermark == 6
    assert p.log.collect_aborted_txns(0, 6) == [AbortedTxn(7, 0, 4, 2)]
    _append(p, _txn_batch(7, 2))  # a new transaction of producer 7 at offset 6
    assert p.last_stable_offset == 6
    p.take_producer_snapshot()
    p.log.close()

    again = _leader(tmp_path / "out-0")
    assert again.last_stable_offset == 6
    assert again.log.collect_aborted_txns(0, 8) == [AbortedTxn(7, 0, 4, 2)]
    # cut the commit of producer 8 (offset 5): its transaction is open again
    again.truncate_to(5)
    assert again.producer_state.ongoing == {8: 2}
    assert again.last_stable_offset == 2
    again.log.close()


def test_markers_are_fenced_by_epochs(tmp_path: Path) -> None:
    p = _leader(tmp_path / "out-0")
    _append(p, _txn_batch(7, 0, epoch=3))
    _append(p, _marker(7, commit=True, epoch=3, coordinator_epoch=2))
    with pytest.raises(KafkaError) as old_producer:
        _append(p, _marker(7, commit=False, epoch=2, coordinator_epoch=2))
    assert old_producer.value.code == ErrorCode.INVALID_PRODUCER_EPOCH
    with pytest.raises(KafkaError) as old_coordinator:
        _append(p, _marker(7, commit=False, epoch=3, coordinator_epoch=1))
    assert old_coordinator.value.code == ErrorCode.TRANSACTION_COORDINATOR_FENCED
    # the zombie's transactional data at the old epoch is refused too
    with pytest.raises(KafkaError) as zombie:
        _append(p, _txn_batch(7, 0, epoch=2))
    assert zombie.value.code == ErrorCode.INVALID_PRODUCER_EPOCH
    p.log.close()


def test_a_coordinator_write_from_an_old_epoch_is_refused(tmp_path: Path) -> None:
    """TxnOffsetCommit's batches skip the sequence checks (their sequences are not the producer's)
    but not the epoch: a zombie cannot commit offsets after its successor started."""
    p = _leader(tmp_path / "out-0")
    _append(p, _txn_batch(7, 0, epoch=4))
    buf = bytearray(_txn_batch(7, 0, epoch=3))
    with pytest.raises(KafkaError) as zombie:
        p.append_as_leader(buf, validate_batches(buf))
    assert zombie.value.code == ErrorCode.INVALID_PRODUCER_EPOCH
    again = bytearray(_txn_batch(7, 0, epoch=4))  # same epoch, sequence 0 again: accepted here
    p.append_as_leader(again, validate_batches(again))
    p.log.close()


def _aborted_history(path: Path) -> list[AbortedTxn]:
    """Two aborted transactions, the first while another was open (its LSO is that one's start),
    and a snapshot taken between them; returns the `.txnindex` entries."""
    p = _leader(path)
    _append(p, _txn_batch(7, 0))  # 0-1
    _append(p, _txn_batch(8, 0))  # 2-3
    _append(p, _marker(7, commit=False))  # 4
    _append(p, _marker(8, commit=True))  # 5
    p.take_producer_snapshot()  # at 6: the replay from it alone would miss the first abort
    _append(p, _txn_batch(9, 0, n=3))  # 6-8
    _append(p, _marker(9, commit=False))  # 9
    entries = p.log.collect_aborted_txns(0, 10)
    assert entries == [AbortedTxn(7, 0, 4, 2), AbortedTxn(9, 6, 9, 10)]
    p.log.close()
    return entries


@pytest.mark.parametrize("damage", ["deleted", "shorter", "torn"])
def test_an_unclean_restart_rebuilds_a_damaged_txnindex(tmp_path: Path, damage: str) -> None:
    """A power loss can leave the `.txnindex` missing or short; recovery re-adds the entries from
    the markers (with the LSO each had), as Kafka's recoverSegment does."""
    entries = _aborted_history(tmp_path / "out-0")
    (index,) = (tmp_path / "out-0").glob("*.txnindex")
    data = index.read_bytes()
    if damage == "deleted":
        index.unlink()
    else:
        index.write_bytes(data[:34] + (b"\0\0\1\2\3" if damage == "torn" else b""))

    again = _leader(tmp_path / "out-0")  # Log() defaults: unclean shutdown, recovery point 0
    assert again.log.collect_aborted_txns(0, 10) == entries
    assert index.read_bytes() == data
    assert again.last_stable_offset == 10
    again.log.close()


def test_a_clean_restart_trusts_the_txnindex(tmp_path: Path) -> None:
    _aborted_history(tmp_path / "out-0")
    (index,) = (tmp_path / "out-0").glob("*.txnindex")
    index.unlink()
    log = Log(tmp_path / "out-0", LogConfig(), had_clean_shutdown=True, recovery_point=10)
    p = Partition(TP, 1, log)
    assert p.log.collect_aborted_txns(0, 10) == [] and not index.exists()
    p.log.close()


def test_a_roll_snapshots_the_producer_state(tmp_path: Path) -> None:
    """As Kafka does: an unclean restart then replays from the snapshot at the base of its first
    re-validated segment, not from the log start."""
    p = _leader(tmp_path / "out-0")
    _append(p, _txn_batch(7, 0))  # 0-1
    _append(p, _marker(7, commit=False))  # 2
    p.log.roll()
    assert p.producer_state.snapshot_offsets() == [3]
    _append(p, _txn_batch(8, 0))  # 3-4
    _append(p, _marker(8, commit=False))  # 5
    p.log.close()
    log = Log(tmp_path / "out-0", LogConfig(), recovery_point=4)  # unclean: segment 3 re-validated
    assert log.recovered_from == 3
    again = Partition(TP, 1, log)
    assert again.log.collect_aborted_txns(0, 6) == [AbortedTxn(7, 0, 2, 3), AbortedTxn(8, 3, 5, 6)]
    again.log.close()


def test_compaction_keeps_each_producers_last_batch_from_the_partitions_state(tmp_path: Path) -> None:
    from zkafka.records.batch import iter_headers
    from zkafka.records.record import simple_batch
    from zkafka.storage.cleaner import clean_log

    p = Partition(TP, 1, Log(tmp_path / "out-0", LogConfig(cleanup_policy="compact", delete_retention_ms=0)))
    p.make_leader(LeaderState(1, 0, (1,), (1,), 0, 1), now_ms=0)
    assert _append(p, _txn_batch(7, 0)) == 0  # offsets 0-1: producer 7's last data batch
    assert _append(p, _marker(7, commit=True)) == 2
    assert (
        _append(p, simple_batch([(b"k", b"newer")], timestamp=1000)) == 3
    )  # hides both records of producer 7
    assert _append(p, simple_batch([(b"z", b"last")], timestamp=1000)) == 4
    assert p.log.last_producer_records() == {7: (1, 0)}
    p.log.roll()
    for now in (10_000, 10_001, 10_002):
        clean_log(p.log, None, now, force=True)
    headers = {h.base_offset: h for h in iter_headers(bytes(p.log.read(0, 1 << 20).read_bytes()))}
    # the batch is kept as an empty header (producer 7's sequences survive) and so its
    # transaction's marker stays; nothing of the hidden records is readable
    assert headers[0].records_count == 0 and headers[0].last_offset == 1
    assert (headers[0].producer_id, headers[0].base_sequence, headers[0].last_sequence) == (7, 0, 1)
    assert headers[2].is_control and headers[2].records_count == 1
    assert sorted(headers) == [0, 2, 3, 4]
