"""`zk.multi_write`: the multi requests zkafka encodes itself are the bytes kazoo's `Transaction`
sends for the same operations, and their answers decode to what kazoo makes of them (the requests
go to a real ZooKeeper in tests/zk/test_zk_client.py: fenced multis, rolled-back chunks, chroots)."""

from __future__ import annotations

import pytest
from kazoo.exceptions import NodeExistsError, NoNodeError, RolledBackError, RuntimeInconsistency
from kazoo.protocol.serialization import (
    CheckVersion,
    Create,
    Delete,
    MultiHeader,
    SetData,
    Transaction,
    int_struct,
    stat_struct,
    write_string,
)

from zkafka.zk.multi_write import EncodedMulti, encode_multi
from zkafka.zk.ops import CheckOp, CreateOp, DeleteOp, Op, SetDataOp, chrooted
from zkafka.zk.znode_acls import default_acls

OPS: list[Op] = [
    CreateOp("/brokers/topics/t/partitions/0/state", b'{"leader":1}'),
    CreateOp("/brokers/topics/t/partitions"),
    CreateOp("/config/users/alice", b"secret"),  # creator-only ACLs when secure
    CreateOp("/consumers/g/ids/c", b"x", ephemeral=True),
    CreateOp("/seq/item-", b"", sequential=True),
    CreateOp("/both-", b"y", ephemeral=True, sequential=True),
    CreateOp("/t\u00f8pic/\u65e5\u672c", b"\x00\xff"),
    CreateOp("relative/path", b"r"),  # normalised by kazoo's rules, as kazoo would
    SetDataOp("/brokers/topics/t/partitions/0/state", b'{"leader":2}', 7),
    SetDataOp("/s", b""),
    DeleteOp("/d", 3),
    DeleteOp("/d2"),
    CheckOp("/controller_epoch", 12),
]


def kazoo_request(root: str, ops: list[Op], secure: bool) -> bytes:
    """The bytes kazoo's own transaction sends for `ops` (what `tx.create` & co. build)."""
    requests: list[object] = []
    for op in ops:
        path = chrooted(root, op.path)
        match op:
            case CreateOp():
                flags = (1 if op.ephemeral else 0) | (2 if op.sequential else 0)
                requests.append(Create(path, op.data, default_acls(op.path, secure), flags))
            case SetDataOp():
                requests.append(SetData(path, op.data, op.version))
            case DeleteOp():
                requests.append(Delete(path, op.version))
            case CheckOp():
                requests.append(CheckVersion(path, op.version))
    return bytes(Transaction(requests).serialize())


@pytest.mark.parametrize("root", ["", "/r", "/r/s"])
@pytest.mark.parametrize("secure", [False, True])
def test_a_multi_is_encoded_as_kazoo_encodes_it(root: str, secure: bool) -> None:
    encoded = encode_multi(root, OPS, lambda path: default_acls(path, secure))
    assert encoded.type == Transaction.type
    assert encoded.serialize() == kazoo_request(root, OPS, secure)
    assert encode_multi(root, [], lambda _: []).serialize() == kazoo_request(root, [], secure)


def test_a_bad_operation_is_refused() -> None:
    with pytest.raises(TypeError, match="not a ZooKeeper operation"):
        encode_multi("", [object()], lambda _: [])  # type: ignore[list-item]


def answer(parts: list[tuple[int, bytes]]) -> bytes:
    out = b"".join(bytes(MultiHeader(kind, False, 0).serialize()) + body for kind, body in parts)
    return out + bytes(MultiHeader(-1, True, -1).serialize())


def error(code: int) -> tuple[int, bytes]:
    return (-1, int_struct.pack(code))


STAT = stat_struct.pack(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11)


@pytest.mark.parametrize(
    "parts",
    [
        [
            (1, bytes(write_string("/r/a"))),
            (5, STAT),
            (2, b""),
            (13, b""),
            (1, bytes(write_string("/r/t\u00f8pic"))),
        ],
        # a failed multi: rolled back before the failing operation, inconsistent after it
        [error(RolledBackError.code), error(NodeExistsError.code), error(RuntimeInconsistency.code)],
        [error(NoNodeError.code)],
        [],
    ],
)
def test_an_answer_decodes_as_kazoo_decodes_it(parts: list[tuple[int, bytes]]) -> None:
    data = b"\x00" * 5 + answer(parts)  # decoded from an offset, as kazoo's connection does
    mine, kazoos = EncodedMulti.deserialize(data, 5), Transaction.deserialize(data, 5)
    assert [type(r) if isinstance(r, Exception) else r for r in mine] == [
        type(r) if isinstance(r, Exception) else r for r in kazoos
    ]
