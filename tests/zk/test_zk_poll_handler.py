"""`poll_select`, the select kazoo's connection thread uses (zkafka.zk.poll_handler): select's
contract, and descriptors above select(2)'s FD_SETSIZE (a broker holds thousands of files)."""

from __future__ import annotations

import os
import resource
import socket

import pytest

from zkafka.zk.poll_handler import PollHandler, poll_select


def test_readable_writable_and_timeout() -> None:
    a, b = socket.socketpair()
    with a, b:
        assert poll_select([a], [], [], 0) == ([], [], [])
        assert poll_select([a], [b], [], 0) == ([], [b], [])
        b.send(b"x")
        assert poll_select([a, b], [a], [], 1) == ([a], [a], [])
        assert PollHandler().select([a], [], [], 0) == ([a], [], [])
        b.close()
        a.recv(1)
        readable, _, _ = poll_select([a], [], [], 1)  # the peer's close reads as readable
        assert readable == [a]


def test_bad_arguments() -> None:
    a, b = socket.socketpair()
    with a, b:
        with pytest.raises(ValueError):
            poll_select([a], [], [], -1)
        with pytest.raises(TypeError):
            poll_select([a], [], [], "1")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        poll_select([a], [], [], 0)  # closed: fileno() is -1


def test_descriptor_above_fd_setsize() -> None:
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft <= 1100:
        pytest.skip("the open-files limit does not allow descriptor 1,100")
    a, b = socket.socketpair()
    with a, b:
        high = os.dup2(a.fileno(), 1100)
        try:
            b.send(b"x")
            assert poll_select([high], [], [], 1) == ([high], [], [])
        finally:
            os.close(high)
