"""The fetcher's side of an incremental fetch session (KIP-227), as Kafka's FetchSessionHandler.

One handler per fetcher and broker. Each round the fetcher hands `build` every partition it wants
with its fetch parameters; the first request is full (id 0, epoch 0: all partitions). Once the
broker answers with a session id, requests are incremental: only partitions added or whose
parameters changed (fetch offset, log start offset, byte limit, leader epoch), and the ones no
longer wanted as forgotten; the answer lists only partitions with something new. An error of the
session (FETCH_SESSION_ID_NOT_FOUND: start over; INVALID_FETCH_SESSION_EPOCH or anything else,
or a lost connection: close the old session with a new full fetch) is followed by a full fetch,
and the answer to the failed request is not used.

A fetcher that knows which of its partitions may have changed (a replica fetcher: only its own
appends, truncations and log-start moves change its positions) builds an incremental request from
those alone (`build_changes`), so a round costs what changed, not what it follows; `needs_full`
says when it must hand over everything instead.

Pure bookkeeping: no I/O. Partition data are the protocol's `FetchRequest.FetchPartition`s.
"""

from __future__ import annotations

import logging
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from zkafka.protocol import ErrorCode

log = logging.getLogger(__name__)

INVALID_SESSION_ID = 0
INITIAL_EPOCH = 0
FINAL_EPOCH = -1
FIRST_SESSION_VERSION = 7
"""Fetch v7 brought sessions (KIP-227)."""


def next_epoch(epoch: int) -> int:
    if epoch < 0:
        return FINAL_EPOCH
    return 1 if epoch == 0x7FFFFFFF else epoch + 1


def _params(p: Any) -> tuple[int, int, int, int, int]:
    """What the broker caches of a partition: a change of any is sent."""
    return (
        p.fetch_offset,
        p.log_start_offset,
        p.partition_max_bytes,
        p.current_leader_epoch,
        p.last_fetched_epoch,
    )


@dataclass(slots=True)
class FetchPlan:
    """One request's session fields and partitions."""

    session_id: int
    epoch: int
    to_send: dict[Hashable, Any]
    to_forget: list[Hashable]

    @property
    def full(self) -> bool:
        return self.epoch in (INITIAL_EPOCH, FINAL_EPOCH)


@dataclass(slots=True)
class FetchSessionHandler:
    session_id: int = INVALID_SESSION_ID
    epoch: int = INITIAL_EPOCH
    """The next request's session id and epoch (epoch 0: full)."""
    partitions: dict[Hashable, Any] = field(default_factory=dict)
    """The partitions the broker's session holds, as last sent."""

    @property
    def needs_full(self) -> bool:
        """The next request is full: `build` with every partition wanted."""
        return self.epoch == INITIAL_EPOCH

    def build_changes(self, changed: Mapping[Hashable, Any], removed: Iterable[Hashable]) -> FetchPlan:
        """An incremental request (not `needs_full`) from what may have changed: `changed` holds
        the current parameters of every partition added or possibly changed since the last request,
        `removed` the partitions no longer wanted; every other partition is as last sent."""
        assert not self.needs_full
        to_forget = [
            key for key in removed if key not in changed and self.partitions.pop(key, None) is not None
        ]
        to_send: dict[Hashable, Any] = {}
        for key, p in changed.items():
            old = self.partitions.get(key)
            if old is None or _params(old) != _params(p):
                self.partitions[key] = p
                to_send[key] = p
        return FetchPlan(self.session_id, self.epoch, to_send, to_forget)

    def build(self, wanted: Mapping[Hashable, Any]) -> FetchPlan:
        if self.epoch == INITIAL_EPOCH:
            self.partitions = dict(wanted)
            return FetchPlan(self.session_id, self.epoch, dict(wanted), [])
        to_send: dict[Hashable, Any] = {}
        to_forget = [key for key in self.partitions if key not in wanted]
        for key in to_forget:
            del self.partitions[key]
        for key, p in wanted.items():
            old = self.partitions.get(key)
            if old is None or _params(old) != _params(p):
                self.partitions[key] = p
                to_send[key] = p
        return FetchPlan(self.session_id, self.epoch, to_send, to_forget)

    def handle_response(
        self, plan: FetchPlan, error_code: int, session_id: int, answered: list[Hashable]
    ) -> bool:
        """Take the answer to `plan`'s request; False: do not use its partitions."""
        if error_code != ErrorCode.NONE:
            log.info(
                "fetch session %d epoch %d: error %d; next fetch is full",
                plan.session_id,
                plan.epoch,
                error_code,
            )
            if error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND:
                self.session_id = INVALID_SESSION_ID
            self.epoch = INITIAL_EPOCH
            return False
        extra = [key for key in answered if key not in self.partitions]
        if extra:  # the broker answered partitions the session does not hold: start afresh
            log.info("fetch session %d answered partitions it does not hold: %s", plan.session_id, extra[:5])
            self.epoch = INITIAL_EPOCH
            return False
        if session_id == INVALID_SESSION_ID:  # none created, or the broker closed it
            self.session_id, self.epoch = INVALID_SESSION_ID, INITIAL_EPOCH
        elif plan.full:
            self.session_id, self.epoch = session_id, next_epoch(INITIAL_EPOCH)
        else:
            self.epoch = next_epoch(self.epoch)
        return True

    def handle_error(self) -> None:
        """The request got no answer (connection lost): close the session with the next fetch."""
        self.epoch = INITIAL_EPOCH
