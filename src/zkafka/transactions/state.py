"""A transaction's states, their bytes in `__transaction_state`, and which transitions are legal.

Kafka's TransactionState (reference: the coordinator's state machine)::

    Empty ──AddPartitions──▶ Ongoing ──EndTxn(commit)──▶ PrepareCommit ──markers──▶ CompleteCommit
      ▲                       │  │                                                        │
      │                       │  └──EndTxn(abort)──▶ PrepareAbort ──markers──▶ CompleteAbort
      │                       └──InitProducerId / timeout──▶ PrepareEpochFence ──▶ PrepareAbort
      └──────── InitProducerId (epoch bump) from Empty, CompleteCommit, CompleteAbort ────┘

`Dead` is a transactional id being removed after `transactional.id.expiration.ms`.
`PrepareEpochFence` is only ever a pending state in memory (Kafka never writes it): the epoch is
bumped and the ongoing transaction aborted with the new epoch, which fences the old producer.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Final


class TxnState(IntEnum):
    """The state's value is its `TransactionStatus` byte in `__transaction_state`."""

    EMPTY = 0
    ONGOING = 1
    PREPARE_COMMIT = 2
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6
    PREPARE_EPOCH_FENCE = 7

    @property
    def kafka_name(self) -> str:
        """The name Kafka's tools print (DescribeTransactions, kafka-transactions)."""
        return _KAFKA_NAMES[self]

    @property
    def is_complete(self) -> bool:
        return self in (TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT)


_KAFKA_NAMES: Final = {
    TxnState.EMPTY: "Empty",
    TxnState.ONGOING: "Ongoing",
    TxnState.PREPARE_COMMIT: "PrepareCommit",
    TxnState.PREPARE_ABORT: "PrepareAbort",
    TxnState.COMPLETE_COMMIT: "CompleteCommit",
    TxnState.COMPLETE_ABORT: "CompleteAbort",
    TxnState.DEAD: "Dead",
    TxnState.PREPARE_EPOCH_FENCE: "PrepareEpochFence",
}

_S = TxnState
VALID_PREVIOUS: Final[dict[TxnState, frozenset[TxnState]]] = {
    _S.EMPTY: frozenset({_S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT}),
    _S.ONGOING: frozenset({_S.ONGOING, _S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT}),
    _S.PREPARE_COMMIT: frozenset({_S.ONGOING}),
    _S.PREPARE_ABORT: frozenset({_S.ONGOING, _S.PREPARE_EPOCH_FENCE}),
    _S.COMPLETE_COMMIT: frozenset({_S.PREPARE_COMMIT}),
    _S.COMPLETE_ABORT: frozenset({_S.PREPARE_ABORT}),
    _S.DEAD: frozenset({_S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT}),
    _S.PREPARE_EPOCH_FENCE: frozenset({_S.ONGOING}),
}
"""target state -> the states it may be entered from (Kafka's TransactionState.validPreviousStates)."""


def is_legal(source: TxnState, target: TxnState) -> bool:
    return source in VALID_PREVIOUS[target]


def state_from_byte(value: int) -> TxnState:
    """The state a `TransactionStatus` byte names; ValueError for an unknown one."""
    try:
        return TxnState(value)
    except ValueError:
        raise ValueError(f"unknown transaction status byte {value}") from None
