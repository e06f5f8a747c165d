"""Replaying a `__transaction_state` partition when this broker becomes its leader.

The last record per transactional id wins; a null value removes the id (it expired). Undecodable
records are logged and skipped: one bad record must not take every id of the partition offline.
Plain disk reading: the coordinator runtime runs it off the event loop.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from zkafka.records import BatchHeader, iter_records
from zkafka.transactions.log_records import CorruptTransactionRecordError, decode_key, decode_value
from zkafka.transactions.metadata import TxnTransit

log = logging.getLogger(__name__)


@dataclass(slots=True)
class LoadedTransactions:
    name: str = ""
    """The partition replayed (`__transaction_state-<n>`), for log lines."""
    transactions: dict[str, TxnTransit] = field(default_factory=dict)
    records: int = 0


def replay_batch(out: LoadedTransactions, header: BatchHeader, data: bytes) -> None:
    """One batch of the partition, in log order (`runtime.CoordinatorRuntime` feeds them)."""
    if header.is_control:
        return
    for rec in iter_records(data):
        out.records += 1
        try:
            txn_id = decode_key(rec.key)
            if rec.value is None:
                out.transactions.pop(txn_id, None)
            else:
                out.transactions[txn_id] = decode_value(rec.value)
        except CorruptTransactionRecordError as e:
            log.warning("%s offset %d: skipping undecodable record: %s", out.name, rec.offset, e)
