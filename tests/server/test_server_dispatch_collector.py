"""The dispatcher decodes and handles a controller's bulk requests (LeaderAndIsr, StopReplica,
UpdateMetadata) with the garbage collector paused, and every other request with it as it was."""

from __future__ import annotations

import gc
from types import SimpleNamespace
from typing import Any

import pytest

from zkafka.protocol import ApiKey
from zkafka.protocol.codec import encode_request, supported_versions
from zkafka.protocol.header_types import RequestHeader
from zkafka.protocol.messages.leader_and_isr import LeaderAndIsrRequest
from zkafka.protocol.messages.metadata import MetadataRequest
from zkafka.runtime import collector
from zkafka.server.dispatcher import Dispatcher


class Seen(Exception):
    """Raised by the test's handlers to carry what they saw out of the dispatcher."""


def _seen(_ctx: Any, request: Any) -> Any:
    raise Seen(type(request).__name__, gc.isenabled(), collector.pause_depth())


def _dispatcher() -> Dispatcher:
    services = SimpleNamespace(served_versions=supported_versions(), metrics=None, quotas=None)
    handlers = {ApiKey.LEADER_AND_ISR: _seen, ApiKey.METADATA: _seen}
    return Dispatcher(services, handlers, "PLAINTEXT")  # type: ignore[arg-type]


_CONN = SimpleNamespace(sasl=None, principal="User:ANONYMOUS")
"""What the dispatcher reads of a connection before the handler."""


def _frame(api_key: int, version: int, request: Any) -> bytes:
    return bytes(encode_request(RequestHeader(api_key, version, 7, "t"), request))[4:]  # no size


def test_a_leader_and_isr_is_handled_with_the_collector_paused() -> None:
    assert gc.isenabled()
    request = LeaderAndIsrRequest(controller_id=1, controller_epoch=1, broker_epoch=1)
    with pytest.raises(Seen) as seen:
        _dispatcher()(_frame(ApiKey.LEADER_AND_ISR, 2, request), _CONN)  # type: ignore[arg-type]
    assert seen.value.args == ("LeaderAndIsrRequest", False, 1)
    assert gc.isenabled() and collector.pause_depth() == 0


def test_other_requests_leave_the_collector_alone() -> None:
    with pytest.raises(Seen) as seen:
        _dispatcher()(_frame(ApiKey.METADATA, 1, MetadataRequest(topics=None)), _CONN)  # type: ignore[arg-type]
    assert seen.value.args == ("MetadataRequest", True, 0)


@pytest.mark.parametrize("frame", [b"", b"\x00", b"\x01\x04garbage"])
def test_short_or_foreign_frames_are_not_paused(frame: bytes) -> None:
    """A frame too short to hold an api key, or with a high byte set, goes the ordinary way (and
    fails there as malformed)."""
    with pytest.raises(Exception) as raised:
        _dispatcher()(frame, _CONN)  # type: ignore[arg-type]
    assert not isinstance(raised.value, Seen)
    assert collector.pause_depth() == 0
