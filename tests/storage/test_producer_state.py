import pytest

from zkafka.records.batch import BatchHeader
from zkafka.storage.producer_state import (
    INT32_MAX,
    InvalidProducerEpochError,
    OutOfOrderSequenceError,
    ProducerStateManager,
)


def header(base_offset: int, count: int, pid: int = 7, epoch: int = 0, seq: int = 0) -> BatchHeader:
    return BatchHeader(
        base_offset=base_offset,
        batch_length=49,
        partition_leader_epoch=0,
        magic=2,
        crc=0,
        attributes=0,
        last_offset_delta=count - 1,
        base_timestamp=1000,
        max_timestamp=1000 + base_offset,
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        records_count=count,
    )


def test_in_order_batches_accepted_and_duplicate_returns_original_offsets() -> None:
    psm = ProducerStateManager()
    h1 = header(0, 5, seq=0)
    assert psm.check(h1) is None
    psm.update(h1)
    h2 = header(5, 3, seq=5)
    assert psm.check(h2) is None
    psm.update(h2)
    # a retry of the first batch (offsets not yet assigned: base 0 from the producer)
    dup = psm.check(header(0, 5, seq=0))
    assert dup is not None and (dup.first_offset, dup.last_offset) == (0, 4)
    assert psm.check(header(0, 3, seq=5)).last_offset == 7


def test_gap_is_out_of_order_and_old_epoch_is_fenced() -> None:
    psm = ProducerStateManager()
    psm.update(header(0, 5, epoch=1, seq=0))
    with pytest.raises(OutOfOrderSequenceError):
        psm.check(header(0, 1, epoch=1, seq=7))
    with pytest.raises(InvalidProducerEpochError):
        psm.check(header(0, 1, epoch=0, seq=5))
    with pytest.raises(OutOfOrderSequenceError):
        psm.check(header(0, 1, epoch=2, seq=3))
    assert psm.check(header(0, 1, epoch=2, seq=0)) is None


def test_unknown_producer_accepts_any_sequence_and_only_five_batches_are_cached() -> None:
    psm = ProducerStateManager()
    assert psm.check(header(0, 1, seq=42)) is None
    for i in range(7):
        psm.update(header(i, 1, seq=i))
    assert psm.check(header(0, 1, seq=6)) is not None
    with pytest.raises(OutOfOrderSequenceError):  # older than the 5 cached batches
        psm.check(header(0, 1, seq=1))


def test_sequence_wraps_at_int32_max() -> None:
    psm = ProducerStateManager()
    psm.update(header(0, 1, seq=INT32_MAX))
    assert psm.check(header(0, 1, seq=0)) is None


def test_snapshot_round_trip_and_corruption(tmp_path) -> None:
    psm = ProducerStateManager(tmp_path)
    psm.update(header(0, 5, pid=1, seq=0))
    psm.update(header(5, 2, pid=2, epoch=3, seq=10))
    path = psm.take_snapshot()
    assert path is not None and path.name == f"{7:020d}.snapshot"
    other = ProducerStateManager(tmp_path)
    assert other.load_latest_snapshot(100) == 7
    assert other.check(header(0, 2, pid=2, epoch=3, seq=10)).last_offset == 6
    assert other.check(header(0, 1, pid=1, seq=5)) is None
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))
    third = ProducerStateManager(tmp_path)
    assert third.load_latest_snapshot(100) is None
    assert not path.exists()


def test_snapshot_only_past_the_last_one(tmp_path) -> None:
    """An idle broker's shutdown snapshots thousands of logs: an empty one, or one already
    snapshotted at its end, costs no file (and no fsync)."""
    psm = ProducerStateManager(tmp_path)
    assert psm.take_snapshot() is None and list(tmp_path.iterdir()) == []
    psm.update(header(0, 5, pid=1, seq=0))
    first = psm.take_snapshot(fsync=False)
    assert first is not None and first.exists()
    assert psm.take_snapshot() is None
    psm.update(header(5, 1, pid=1, seq=5))
    assert psm.take_snapshot() == psm.snapshot_path(6)


def test_delete_snapshots_keeps_what_no_bound_matches(tmp_path) -> None:
    """Shutdown asks every log to delete the snapshots below its start offset (`at_or_below=-1`
    for a log starting at 0, which lists nothing): only the bounds given delete anything."""
    psm = ProducerStateManager(tmp_path)
    for end in (1, 5, 9):
        psm.update(header(end - 1, 1, pid=1, seq=end - 1))
        assert psm.take_snapshot(fsync=False) == psm.snapshot_path(end)
    psm.delete_snapshots(at_or_below=-1)
    psm.delete_snapshots()
    assert psm.snapshot_offsets() == [1, 5, 9]
    psm.delete_snapshots(at_or_below=1)
    assert psm.snapshot_offsets() == [5, 9]
    psm.delete_snapshots(above=5)
    assert psm.snapshot_offsets() == [5]


def test_truncate_forgets_later_batches() -> None:
    psm = ProducerStateManager()
    psm.update(header(0, 5, seq=0))
    psm.update(header(5, 5, seq=5))
    psm.truncate_to(5)
    assert psm.check(header(0, 5, seq=5)) is None
    assert psm.map_end_offset == 5
