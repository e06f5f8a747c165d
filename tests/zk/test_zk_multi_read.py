"""`get_data_many` through ZooKeeper's multiRead (zkafka.zk.multi_read) against the real server: the
same answers as pipelined getData, chroot included, and the fallback when the server does not take
multiRead."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kazoo.exceptions import NoAuthError
from kazoo.security import make_digest_acl

from zkafka.zk import session as zk_session
from zkafka.zk.client import KafkaZkClient
from zkafka.zk.multi_read import MultiGetData


@pytest.fixture
def zk(zk_connect: str) -> Iterator[KafkaZkClient]:
    client = KafkaZkClient(zk_connect)
    client.create_top_level_paths()
    yield client
    client.close()


def test_multi_read_answers_as_pipelined_reads(zk: KafkaZkClient, monkeypatch: pytest.MonkeyPatch) -> None:
    assert zk._multi_read_supported()  # the project's ZooKeeper is 3.8
    zk.create("/mr/full", b"hello", makepath=True)
    zk.create("/mr/empty", b"")
    zk.kazoo.create("/mr/null", None)
    paths = [f"/mr/{name}" for name in ("full", "empty", "null", "absent")] * 7
    monkeypatch.setattr(zk_session, "MULTI_READ_PATHS", 3)  # several requests, one partly filled
    multi = zk.get_data_many(paths)
    pipelined = zk._get_data_pipelined(paths)
    assert multi == pipelined
    assert multi["/mr/full"] is not None and multi["/mr/full"][0] == b"hello"
    assert multi["/mr/full"][1].version == 0 and multi["/mr/full"][1].dataLength == 5
    assert multi["/mr/null"] is not None and multi["/mr/null"][0] == b""
    assert multi["/mr/absent"] is None


def test_multi_read_reports_other_errors(zk: KafkaZkClient) -> None:
    zk.kazoo.create("/mr-secret", b"x", acl=[make_digest_acl("someone", "else", all=True)])
    with pytest.raises(NoAuthError):
        zk.get_data_many(["/mr-secret"] * 20)


def test_an_old_server_gets_pipelined_reads(zk: KafkaZkClient, monkeypatch: pytest.MonkeyPatch) -> None:
    """A server that refuses multiRead (UNIMPLEMENTED, and it drops the connection) still answers:
    the reads are made again pipelined. (`srvr` keeps a server older than 3.6 from being asked.)"""
    zk.create("/mr-old", b"v", makepath=True)

    class Refused(MultiGetData):
        type = 1000  # an opcode no server knows: answered UNIMPLEMENTED, as a 3.5 server does multiRead

    monkeypatch.setattr(zk_session, "MultiGetData", Refused)
    found = zk.get_data_many(["/mr-old", "/mr-absent"] * 10)
    assert found["/mr-old"] is not None and found["/mr-old"][0] == b"v"
    assert found["/mr-absent"] is None
