"""The log side of transactions in storage: open transactions and markers in the producer state
(first unstable offset, settling at the high watermark, snapshots), and the `.txnindex`."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from storage_helpers import append, batch

from zkafka.records.batch import CONTROL_MASK, TRANSACTIONAL_MASK, BatchHeader
from zkafka.storage.config import LogConfig
from zkafka.storage.log import Log
from zkafka.storage.producer_state import (
    CompletedTxn,
    CoordinatorFencedError,
    InvalidProducerEpochError,
    InvalidTxnStateError,
    ProducerStateManager,
)
from zkafka.storage.txn_index import ENTRY_SIZE, AbortedTxn, TransactionIndex


def header(
    base: int, count: int = 1, *, pid: int = 7, epoch: int = 0, seq: int = 0, attrs: int = TRANSACTIONAL_MASK
) -> BatchHeader:
    return BatchHeader(
        base_offset=base, batch_length=49, partition_leader_epoch=0, magic=2, crc=0, attributes=attrs,
        last_offset_delta=count - 1, base_timestamp=1000, max_timestamp=1000,
        producer_id=pid, producer_epoch=epoch, base_sequence=seq if not attrs & CONTROL_MASK else -1,
        records_count=count,
    )  # fmt: skip


def marker(base: int, *, pid: int = 7, epoch: int = 0) -> BatchHeader:
    return header(base, pid=pid, epoch=epoch, attrs=TRANSACTIONAL_MASK | CONTROL_MASK)


def test_a_transaction_is_open_from_its_first_batch_to_its_marker() -> None:
    psm = ProducerStateManager()
    assert psm.first_unstable_offset() is None
    psm.update(header(10, 5))
    psm.update(header(15, 5, seq=5))
    psm.update(header(20, 1, pid=8))
    assert psm.first_unstable_offset() == 10
    done = psm.update(marker(21), (False, 3))
    assert done == CompletedTxn(7, 10, 21, is_aborted=True)
    assert psm.last_stable_offset_after(done) == 20  # producer 8's transaction is still open
    # until the marker is below the high watermark, the transaction still holds the LSO back
    assert psm.first_unstable_offset() == 10
    psm.on_high_watermark(22)
    assert psm.first_unstable_offset() == 20
    assert psm.update(marker(22, pid=8), (True, 3)) == CompletedTxn(8, 20, 22, is_aborted=False)
    psm.on_high_watermark(23)
    assert psm.first_unstable_offset() is None
    assert psm.producers[7].coordinator_epoch == 3


def test_marker_and_batch_checks() -> None:
    psm = ProducerStateManager()
    psm.update(header(0, 2, epoch=2))
    with pytest.raises(InvalidTxnStateError):
        psm.check(header(2, 1, epoch=2, seq=2, attrs=0))
    psm.update(marker(2, epoch=2), (True, 5))
    with pytest.raises(InvalidProducerEpochError):
        psm.check_marker(7, 1, 5)
    with pytest.raises(CoordinatorFencedError):
        psm.check_marker(7, 2, 4)
    psm.check_marker(7, 3, 5)
    psm.check_marker(99, 0, 0)  # unknown producer: nothing to check against


def test_an_open_transaction_survives_a_snapshot(tmp_path: Path) -> None:
    psm = ProducerStateManager(tmp_path)
    psm.update(header(0, 3))
    psm.update(header(3, 1, pid=9, attrs=0))
    psm.take_snapshot()
    again = ProducerStateManager(tmp_path)
    assert again.load_latest_snapshot(4) == 4
    assert again.first_unstable_offset() == 0
    assert again.producers[7].current_txn_first_offset == 0
    assert again.update(marker(4), (True, 0)) == CompletedTxn(7, 0, 4, is_aborted=False)


def test_truncation_reopens_nothing_it_cut() -> None:
    psm = ProducerStateManager()
    psm.update(header(0, 2))
    psm.update(header(5, 2, pid=8))
    psm.truncate_to(5)
    assert psm.ongoing == {7: 0}


def test_expiry_keeps_producers_with_open_transactions() -> None:
    psm = ProducerStateManager()
    psm.update(header(0, 1))
    psm.update(header(1, 1, pid=8, attrs=0))
    psm.expire(now_ms=10**9, expiration_ms=1)
    assert set(psm.producers) == {7}


def test_txnindex_bytes_truncation_and_reopen(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000000.txnindex"
    idx = TransactionIndex(path)
    idx.append(AbortedTxn(7, 10, 21, 20))
    idx.append(AbortedTxn(8, 30, 40, 41))
    idx.append(AbortedTxn(8, 30, 40, 41))  # a repeat is ignored
    assert path.read_bytes()[:ENTRY_SIZE] == struct.pack(">hqqqq", 0, 7, 10, 21, 20)
    assert path.stat().st_size == 2 * ENTRY_SIZE
    assert TransactionIndex(path).collect(22, 100) == [AbortedTxn(8, 30, 40, 41)]
    assert TransactionIndex(path).collect(0, 10) == []
    assert TransactionIndex(path).collect(0, 11) == [AbortedTxn(7, 10, 21, 20)]
    with path.open("ab") as f:
        f.write(b"\x00\x00\x01")  # a torn entry at the end
    reopened = TransactionIndex(path)
    assert len(reopened.entries()) == 2
    reopened.truncate_to(40)
    assert path.stat().st_size == ENTRY_SIZE and TransactionIndex(path).entries() == [
        AbortedTxn(7, 10, 21, 20)
    ]
    reopened.truncate_to(0)
    assert not path.exists()


def test_the_log_keeps_aborted_transactions_per_segment(tmp_path: Path) -> None:
    log = Log(tmp_path / "t-0", LogConfig(segment_bytes=200))
    for _ in range(6):
        append(log, batch(3, value_size=20))
    bases = log.segment_bases()
    assert len(bases) >= 3
    log.append_aborted_txn(AbortedTxn(7, 0, 2, 3))
    log.append_aborted_txn(AbortedTxn(8, 1, log.log_end_offset - 1, log.log_end_offset))
    first_index = tmp_path / "t-0" / f"{bases[0]:020d}.txnindex"
    last_index = tmp_path / "t-0" / f"{bases[-1]:020d}.txnindex"
    assert first_index.stat().st_size == last_index.stat().st_size == ENTRY_SIZE
    # a fetch from offset 3 only needs the transaction whose marker is at or after it
    assert [t.producer_id for t in log.collect_aborted_txns(3, log.log_end_offset)] == [8]
    assert [t.producer_id for t in log.collect_aborted_txns(0, 3)] == [7, 8]
    log.close()
    reopened = Log(tmp_path / "t-0", LogConfig(segment_bytes=200), had_clean_shutdown=True)
    assert [t.producer_id for t in reopened.collect_aborted_txns(0, reopened.log_end_offset)] == [7, 8]
    reopened.truncate_to(bases[-1])  # the last segment's marker goes with its segment
    assert [t.producer_id for t in reopened.collect_aborted_txns(0, reopened.log_end_offset)] == [7]
    assert not last_index.exists()
    reopened.close()


def _txn_records(pairs: list[tuple[bytes, bytes]], pid: int) -> bytes:
    from zkafka.records.record import Record, build_batch

    return build_batch(
        [Record(i, 1000, k, v) for i, (k, v) in enumerate(pairs)],
        base_offset=0,
        producer_id=pid,
        producer_epoch=0,
        base_sequence=0,
        is_transactional=True,
    )


def test_compaction_drops_aborted_records_and_stops_at_the_first_unstable_offset(tmp_path: Path) -> None:
    from storage_helpers import all_records, keyed_batch

    from zkafka.records.record import build_end_txn_marker
    from zkafka.storage.cleaner import clean_log

    log = Log(tmp_path / "c-0", LogConfig(cleanup_policy="compact", segment_bytes=100_000))
    append(log, keyed_batch([(b"k", b"committed")]))  # 0
    append(log, _txn_records([(b"k", b"aborted")], pid=7))  # 1
    append(log, build_end_txn_marker(7, 0, False, 0, 2000))  # 2: ABORT
    log.append_aborted_txn(AbortedTxn(7, 1, 2, 3))
    append(log, _txn_records([(b"j", b"open-1")], pid=8))  # 3: a transaction still open
    append(log, _txn_records([(b"j", b"open-2")], pid=8))  # 4
    log.roll()
    log.first_unstable_offset = lambda: 3
    result = clean_log(log, None, 10_000, force=True)
    assert result is not None and result.end_offset == 3
    survivors = {(r.offset, r.key, r.value) for r in all_records(log)}
    # the aborted record neither hid the committed one nor survived; the open transaction was not
    # touched (both its records stay, as it may still abort); the marker stays
    assert (0, b"k", b"committed") in survivors
    assert not any(v == b"aborted" for _, _, v in survivors)
    assert {(3, b"j", b"open-1"), (4, b"j", b"open-2")} <= survivors
    # the cleaned segment kept the .txnindex entry
    assert log.collect_aborted_txns(0, 5) == [AbortedTxn(7, 1, 2, 3)]
    log.close()
