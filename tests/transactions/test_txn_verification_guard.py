"""The leader-side half of KIP-890 on a real partition log: which batches need the coordinator's
word (`has_ongoing_txn`: only the first of a transaction at its epoch), and the guard that a
marker landing while the coordinator is asked invalidates, so an answer about a transaction that
has ended is never used."""

from __future__ import annotations

from pathlib import Path

from zkafka.records.batch import validate_batches
from zkafka.records.record import Record, build_batch, build_end_txn_marker
from zkafka.server.partition import LeaderState, Partition
from zkafka.storage.config import LogConfig
from zkafka.storage.log import Log
from zkafka.storage.naming import TopicPartition

TP = TopicPartition("out", 0)


def _leader(path: Path) -> Partition:
    p = Partition(TP, 1, Log(path, LogConfig()))
    p.make_leader(LeaderState(1, 0, (1,), (1,), 0, 1), now_ms=0)
    return p


def _append(p: Partition, data: bytes) -> None:
    buf = bytearray(data)
    headers = validate_batches(buf)
    p.check_producer_state(headers)
    p.append_as_leader(buf, headers)


def _txn(pid: int, epoch: int, seq: int) -> bytes:
    return build_batch(
        [Record(0, 1000, None, b"v")],
        base_offset=0,
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        is_transactional=True,
    )


def test_only_a_transactions_first_batch_needs_verification(tmp_path: Path) -> None:
    p = _leader(tmp_path / "out-0")
    psm = p.producer_state
    assert not psm.has_ongoing_txn(7, 0)
    _append(p, _txn(7, 0, 0))
    assert psm.has_ongoing_txn(7, 0)  # later batches of this transaction: no question asked
    assert not psm.has_ongoing_txn(7, 1)  # another epoch is another transaction
    _append(p, build_end_txn_marker(7, 0, True, 0, 2000))
    assert not psm.has_ongoing_txn(7, 0)  # the next transaction starts with a question again
    p.log.close()


def test_a_marker_during_verification_voids_the_answer(tmp_path: Path) -> None:
    p = _leader(tmp_path / "out-0")
    psm = p.producer_state
    _append(p, _txn(7, 0, 0))
    _append(p, build_end_txn_marker(7, 0, True, 0, 2000))

    guard = psm.start_verification(7, 0)
    assert psm.start_verification(7, 0) is guard  # a concurrent batch shares the question
    assert psm.is_verified(7, 0, guard)
    # the coordinator aborts something of producer 7 meanwhile: its marker lands first
    _append(p, build_end_txn_marker(7, 0, False, 0, 3000))
    assert not psm.is_verified(7, 0, guard)

    newer = psm.start_verification(7, 1)
    assert psm.start_verification(7, 0) is not newer  # an older epoch never replaces a newer one
    assert psm.is_verified(7, 1, newer) and psm.verifying[7][0] == 1
    psm.end_verification(7, newer)
    assert 7 not in psm.verifying  # used guards are forgotten: nothing grows per producer
    p.log.close()
