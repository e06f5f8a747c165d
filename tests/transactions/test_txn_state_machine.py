"""Hypothesis: random client requests, coordinator fences and record-write outcomes against a
small model of Kafka's transaction rules. Every change the metadata prepares must be a legal
transition; the epoch only ever grows; a request from an older epoch never changes anything;
while a record is being written nothing else is; every record survives its byte format."""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from zkafka.protocol import ErrorCode
from zkafka.storage.naming import TopicPartition
from zkafka.transactions.log_records import decode_value, encode_value
from zkafka.transactions.metadata import TxnTransit, new_metadata
from zkafka.transactions.state import TxnState, is_legal

PID = 1000
PARTITIONS = st.sets(st.builds(TopicPartition, st.sampled_from(["a", "b"]), st.integers(0, 2)), min_size=1)
S = TxnState


@dataclass
class Model:
    """What Kafka's rules say the coordinator holds for the id."""

    epoch: int = 0
    state: TxnState = S.EMPTY
    partitions: set[TopicPartition] = field(default_factory=set)
    writing: TxnState | None = None  # a record in flight


class TxnMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.md = new_metadata("t", PID, 60_000, 0)
        first = self.md.prepare_init_producer_id(60_000, 0, None)
        assert isinstance(first, TxnTransit)
        self.md.complete(first)
        self.model = Model()
        self.now = 1
        self.in_flight: TxnTransit | None = None
        self.max_epoch_seen = 0

    def _prepared(self, result: TxnTransit | ErrorCode, source: TxnState) -> None:
        assert isinstance(result, TxnTransit), result
        assert is_legal(source, result.state), (source, result.state)
        back = decode_value(encode_value(result))
        assert back == TxnTransit(
            result.producer_id,
            -1,
            result.producer_epoch,
            -1,
            result.timeout_ms,
            result.state,
            result.partitions,
            result.start_ms,
            result.update_ms,
        )
        self.in_flight = result
        self.model.writing = result.state

    def _tick(self) -> int:
        self.now += 1
        return self.now

    # -- client requests ----------------------------------------------------------------------------
    @rule(parts=PARTITIONS, stale=st.booleans())
    def add_partitions(self, parts: set[TopicPartition], stale: bool) -> None:
        m = self.model
        epoch = m.epoch - 1 if stale else m.epoch
        result = self.md.prepare_add_partitions(PID, epoch, parts, self._tick())
        if stale:
            assert result == ErrorCode.PRODUCER_FENCED
        elif m.writing is not None or m.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            assert result == ErrorCode.CONCURRENT_TRANSACTIONS
        elif m.state == S.ONGOING and parts <= m.partitions:
            assert result == ErrorCode.NONE
        else:
            self._prepared(result, m.state)
            assert isinstance(result, TxnTransit)
            assert result.state == S.ONGOING and result.partitions == m.partitions | parts

    @rule(commit=st.booleans(), stale=st.booleans())
    def end_txn(self, commit: bool, stale: bool) -> None:
        m = self.model
        epoch = m.epoch - 1 if stale else m.epoch
        result = self.md.prepare_end(PID, epoch, commit, self._tick())
        if stale:
            assert result == ErrorCode.PRODUCER_FENCED
        elif m.writing is not None:
            assert result == ErrorCode.CONCURRENT_TRANSACTIONS
        elif m.state == S.ONGOING:
            self._prepared(result, m.state)
            assert isinstance(result, TxnTransit)
            assert result.state == (S.PREPARE_COMMIT if commit else S.PREPARE_ABORT)
        elif m.state == (S.COMPLETE_COMMIT if commit else S.COMPLETE_ABORT):
            assert result == ErrorCode.NONE
        elif m.state == (S.PREPARE_COMMIT if commit else S.PREPARE_ABORT):
            assert result == ErrorCode.CONCURRENT_TRANSACTIONS
        else:
            assert result == ErrorCode.INVALID_TXN_STATE

    @rule()
    def init_producer_id(self) -> None:
        m = self.model
        if m.state == S.ONGOING and m.writing is None:
            # the coordinator fences the running transaction and aborts it with the new epoch
            self.md.prepare_fence()
            m.epoch += 1
            result = self.md.prepare_end(PID, m.epoch, False, self._tick(), from_client=False)
            self._prepared(result, S.ONGOING)
            return
        result = self.md.prepare_init_producer_id(60_000, self._tick(), None)
        if m.writing is not None or m.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            assert result == ErrorCode.CONCURRENT_TRANSACTIONS
            return
        self._prepared(result, m.state)
        assert isinstance(result, TxnTransit)
        assert result.state == S.EMPTY and result.producer_epoch == m.epoch + 1

    # -- the record write finishing --------------------------------------------------------------------
    @precondition(lambda self: self.in_flight is not None)
    @rule(ok=st.booleans())
    def write_done(self, ok: bool) -> None:
        transit, m = self.in_flight, self.model
        assert transit is not None
        self.in_flight = m.writing = None
        if not ok:
            self.md.abort_pending()
            return
        self.md.complete(transit)
        m.state, m.epoch, m.partitions = transit.state, transit.producer_epoch, set(transit.partitions)

    @precondition(
        lambda self: self.in_flight is None and self.model.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT)
    )
    @rule()
    def markers_written(self) -> None:
        source = self.model.state
        result = self.md.prepare_complete(self._tick())
        self._prepared(result, source)
        assert result.partitions == frozenset()

    # -- what always holds ---------------------------------------------------------------------------
    @invariant()
    def matches_the_model(self) -> None:
        md, m = self.md, self.model
        assert md.state == m.state
        assert md.producer_epoch == m.epoch
        assert md.partitions == m.partitions
        assert md.pending == m.writing
        assert md.producer_epoch >= self.max_epoch_seen
        self.max_epoch_seen = md.producer_epoch
        assert md.state != S.PREPARE_EPOCH_FENCE


TestTxnStateMachine = TxnMachine.TestCase
TestTxnStateMachine.settings = settings(max_examples=150, stateful_step_count=40, deadline=None)
