"""The transaction state machine and epoch rules (zkafka.transactions.state/metadata), example by
example as Kafka's TransactionCoordinator answers them."""

from __future__ import annotations

import pytest

from zkafka.protocol import ErrorCode
from zkafka.storage.naming import TopicPartition
from zkafka.transactions.metadata import (
    MAX_EPOCH,
    IllegalTransitionError,
    TransactionMetadata,
    TxnTransit,
    new_metadata,
)
from zkafka.transactions.state import VALID_PREVIOUS, TxnState, is_legal, state_from_byte

TP0, TP1 = TopicPartition("out", 0), TopicPartition("out", 1)


def _apply(md: TransactionMetadata, result: TxnTransit | ErrorCode) -> TxnTransit:
    assert isinstance(result, TxnTransit), result
    md.complete(result)
    return result


def _initialised(pid: int = 7) -> TransactionMetadata:
    md = new_metadata("app", pid, 60_000, now_ms=0)
    _apply(md, md.prepare_init_producer_id(60_000, 1, None))
    return md


def _ongoing() -> TransactionMetadata:
    md = _initialised()
    _apply(md, md.prepare_add_partitions(7, 0, [TP0], 10))
    return md


def test_state_bytes_are_kafkas():
    assert [(s.kafka_name, int(s)) for s in TxnState] == [
        ("Empty", 0),
        ("Ongoing", 1),
        ("PrepareCommit", 2),
        ("PrepareAbort", 3),
        ("CompleteCommit", 4),
        ("CompleteAbort", 5),
        ("Dead", 6),
        ("PrepareEpochFence", 7),
    ]
    with pytest.raises(ValueError):
        state_from_byte(8)


def test_legal_transitions_are_kafkas():
    assert is_legal(TxnState.ONGOING, TxnState.PREPARE_COMMIT)
    assert not is_legal(TxnState.EMPTY, TxnState.PREPARE_COMMIT)
    assert not is_legal(TxnState.PREPARE_COMMIT, TxnState.COMPLETE_ABORT)
    assert VALID_PREVIOUS[TxnState.PREPARE_ABORT] == {TxnState.ONGOING, TxnState.PREPARE_EPOCH_FENCE}


def test_a_new_id_starts_at_epoch_0_and_each_init_bumps_it():
    md = _initialised()
    assert (md.producer_id, md.producer_epoch, md.state) == (7, 0, TxnState.EMPTY)
    _apply(md, md.prepare_init_producer_id(30_000, 2, None))
    assert (md.producer_epoch, md.timeout_ms) == (1, 30_000)


def test_an_exhausted_epoch_moves_to_a_new_producer_id():
    md = _initialised()
    md.producer_epoch = MAX_EPOCH - 1
    assert md.needs_new_producer_id()
    with pytest.raises(IllegalTransitionError):
        md.prepare_init_producer_id(60_000, 2, None)
    t = _apply(md, md.prepare_init_producer_id(60_000, 2, 99))
    assert (t.producer_id, t.producer_epoch, t.last_producer_id) == (99, 0, 7)


def test_kip360_expected_epoch():
    md = _initialised()
    assert md.prepare_init_producer_id(60_000, 2, None, expected=(8, 0)) == ErrorCode.PRODUCER_FENCED
    t = _apply(md, md.prepare_init_producer_id(60_000, 2, None, expected=(7, 0)))
    assert (t.producer_epoch, t.last_producer_epoch) == (1, 0)
    # the same request again (its answer was lost): the same epoch, no second bump
    t = _apply(md, md.prepare_init_producer_id(60_000, 3, None, expected=(7, 0)))
    assert (t.producer_epoch, t.last_producer_epoch) == (1, 0)
    assert md.prepare_init_producer_id(60_000, 3, None, expected=(7, 5)) == ErrorCode.PRODUCER_FENCED


def test_add_partitions_checks_producer_then_state():
    md = _initialised()
    assert md.prepare_add_partitions(8, 0, [TP0], 5) == ErrorCode.INVALID_PRODUCER_ID_MAPPING
    assert md.prepare_add_partitions(7, 1, [TP0], 5) == ErrorCode.PRODUCER_FENCED
    t = _apply(md, md.prepare_add_partitions(7, 0, [TP0], 5))
    assert (t.state, t.start_ms, t.partitions) == (TxnState.ONGOING, 5, {TP0})
    assert md.prepare_add_partitions(7, 0, [TP0], 6) == ErrorCode.NONE  # already in: nothing to write
    t = _apply(md, md.prepare_add_partitions(7, 0, [TP1], 7))
    assert (t.start_ms, t.partitions) == (5, {TP0, TP1})


def test_end_txn_commit_then_markers_complete():
    md = _ongoing()
    assert md.prepare_end(7, 0, True, 20) is not None
    assert md.pending == TxnState.PREPARE_COMMIT
    # everything else waits while the record is written
    assert md.prepare_add_partitions(7, 0, [TP1], 21) == ErrorCode.CONCURRENT_TRANSACTIONS
    assert md.prepare_init_producer_id(60_000, 21, None) == ErrorCode.CONCURRENT_TRANSACTIONS
    md.abort_pending()
    t = _apply(md, md.prepare_end(7, 0, True, 22))
    assert t.state == TxnState.PREPARE_COMMIT and t.partitions == {TP0}
    assert md.prepare_end(7, 0, True, 23) == ErrorCode.CONCURRENT_TRANSACTIONS
    assert md.prepare_end(7, 0, False, 23) == ErrorCode.INVALID_TXN_STATE
    t = _apply(md, md.prepare_complete(24))
    assert (t.state, t.partitions) == (TxnState.COMPLETE_COMMIT, frozenset())
    assert md.prepare_end(7, 0, True, 25) == ErrorCode.NONE  # a retried commit
    assert md.prepare_end(7, 0, False, 25) == ErrorCode.INVALID_TXN_STATE


def test_end_txn_without_a_transaction():
    md = _initialised()
    assert md.prepare_end(7, 0, True, 5) == ErrorCode.INVALID_TXN_STATE
    assert md.prepare_end(7, 0, False, 5) == ErrorCode.INVALID_TXN_STATE


def test_init_during_a_transaction_fences_and_aborts_with_the_new_epoch():
    md = _ongoing()
    with pytest.raises(IllegalTransitionError):
        md.prepare_init_producer_id(60_000, 30, None)
    md.prepare_fence()
    assert (md.producer_epoch, md.pending) == (1, TxnState.PREPARE_EPOCH_FENCE)
    # the zombie's commit at epoch 0 is fenced from now on
    assert md.prepare_end(7, 0, True, 31) == ErrorCode.PRODUCER_FENCED
    assert md.prepare_end(7, 1, False, 31) == ErrorCode.CONCURRENT_TRANSACTIONS  # only the coordinator
    t = _apply(md, md.prepare_end(7, 1, False, 31, from_client=False))
    assert (t.state, t.producer_epoch) == (TxnState.PREPARE_ABORT, 1)
    _apply(md, md.prepare_complete(32))
    t = _apply(md, md.prepare_init_producer_id(60_000, 33, None))
    assert (t.state, t.producer_epoch) == (TxnState.EMPTY, 2)


def test_timeout():
    md = _ongoing()
    assert not md.has_timed_out(10 + 60_000)
    assert md.has_timed_out(10 + 60_001)


def test_illegal_completion_is_a_bug_not_a_client_error():
    md = _initialised()
    with pytest.raises(IllegalTransitionError):
        md.prepare_complete(5)
    t = md.prepare_add_partitions(7, 0, [TP0], 5)
    assert isinstance(t, TxnTransit)
    md.abort_pending()
    with pytest.raises(IllegalTransitionError):
        md.complete(t)
