"""ZooKeeper `multi` requests (opcode 14) encoded here, byte for byte as kazoo's `Transaction` encodes
them, and their answers decoded into the same results.

Why: a topic's creation makes the controller write three znodes per new partition in fenced multis
(100,000 operations for 50,000 partitions), and kazoo spends ~10 us of CPU per operation on them: a
request object and a `MultiHeader` per operation, several `bytearray` concatenations each, the ACL
list encoded again for every create, and on the answer a `MultiHeader` and a decoded path per
operation. `EncodedMulti` is encoded once, on the calling thread, from the plain `zk.ops` values:
each distinct ACL list is encoded once per request, each operation is a few `struct` packs joined
at the end. kazoo's connection sends it and hands its answer to `deserialize` as for its own
requests; with the same opcode it also strips the chroot from the created paths of the answer
(`Transaction.unchroot`), so callers see exactly what `TransactionRequest.commit` gives them: per
operation the created path, a `ZnodeStat`, True, or the operation's `ZookeeperError`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from kazoo.exceptions import EXCEPTIONS
from kazoo.protocol.serialization import int_struct, multiheader_struct, stat_struct
from kazoo.protocol.states import ZnodeStat
from kazoo.security import ACL

from zkafka.zk.ops import CheckOp, CreateOp, DeleteOp, Op, SetDataOp, chrooted

__all__ = ["MULTI_OPCODE", "EncodedMulti", "encode_multi"]

MULTI_OPCODE = 14
"""ZooKeeper's `multi` (kazoo's `Transaction.type`)."""
_CREATE, _DELETE, _SET_DATA, _CHECK, _ERROR = 1, 2, 5, 13, -1
_HEADERS = {kind: multiheader_struct.pack(kind, False, -1) for kind in (_CREATE, _DELETE, _SET_DATA, _CHECK)}
_END = multiheader_struct.pack(-1, True, -1)
_pack_int = int_struct.pack


class EncodedMulti(NamedTuple):
    """A multi whose body is encoded already (`encode_multi`); kazoo's connection sends it as is."""

    body: bytes

    type = MULTI_OPCODE

    def serialize(self) -> bytes:
        return self.body

    def __repr__(self) -> str:  # kazoo's DEBUG line names each request: not 512 KiB of it
        return f"EncodedMulti({len(self.body)} bytes)"

    @classmethod
    def deserialize(cls, data: bytes, offset: int) -> list[Any]:
        """What kazoo's `Transaction.deserialize` makes of the answer, without its per-operation
        header objects: per operation the created path (still chrooted: kazoo's connection strips
        it, as for its own multis), the set znode's `ZnodeStat`, True (delete, check), or the
        error (`RolledBackError` for the operations the failing one rolled back)."""
        results: list[Any] = []
        unpack_header = multiheader_struct.unpack_from
        unpack_int = int_struct.unpack_from
        header_size = multiheader_struct.size
        while True:
            kind, done, _err = unpack_header(data, offset)
            offset += header_size
            if done:
                return results
            if kind == _CREATE:
                (length,) = unpack_int(data, offset)
                offset += 4
                if length <= 0:
                    # kazoo leaves a null or empty path out of the results (it keeps only truthy
                    # ones); a server never answers a create so, but the two must not differ
                    offset += max(length, 0)
                    continue
                results.append(data[offset : offset + length].decode("utf-8"))
                offset += length
            elif kind == _SET_DATA:
                results.append(ZnodeStat._make(stat_struct.unpack_from(data, offset)))
                offset += stat_struct.size
            elif kind in (_DELETE, _CHECK):
                results.append(True)
            elif kind == _ERROR:
                (code,) = unpack_int(data, offset)
                offset += 4
                results.append(EXCEPTIONS[code]())
            else:
                raise ValueError(f"unexpected multi result type {kind}")


def _string(value: str) -> bytes:
    """jute's ustring as kazoo writes it (`write_string`): an empty string is written as null."""
    if not value:
        return b"\xff\xff\xff\xff"
    encoded = value.encode("utf-8")
    return _pack_int(len(encoded)) + encoded


def _acl_bytes(acls: list[ACL]) -> bytes:
    parts = [_pack_int(len(acls))]
    for acl in acls:
        parts.append(_pack_int(acl.perms) + _string(acl.id.scheme) + _string(acl.id.id))
    return b"".join(parts)


def encode_multi(root: str, ops: Sequence[Op], acls: Callable[[str], list[ACL]]) -> EncodedMulti:
    """`ops` as one multi below the chroot `root` ("" for none); a created znode gets `acls(path)`."""
    parts: list[bytes] = []
    add = parts.append
    encoded_acls: dict[tuple[ACL, ...], bytes] = {}
    create_header, set_header = _HEADERS[_CREATE], _HEADERS[_SET_DATA]
    for op in ops:
        match op:  # setData first: the bulk of the controller's writes (elections, ISR changes)
            case SetDataOp():
                data = op.data
                add(set_header)
                add(_string(chrooted(root, op.path)))
                add(b"\xff\xff\xff\xff" if data is None else _pack_int(len(data)) + data)
                add(_pack_int(op.version))
            case CreateOp():
                key = tuple(acls(op.path))
                acl = encoded_acls.get(key)
                if acl is None:
                    acl = encoded_acls[key] = _acl_bytes(list(key))
                data = op.data
                flags = (1 if op.ephemeral else 0) | (2 if op.sequential else 0)
                add(create_header)
                add(_string(chrooted(root, op.path)))
                add(b"\xff\xff\xff\xff" if data is None else _pack_int(len(data)) + data)
                add(acl)
                add(_pack_int(flags))
            case DeleteOp():
                add(_HEADERS[_DELETE])
                add(_string(chrooted(root, op.path)))
                add(_pack_int(op.version))
            case CheckOp():
                add(_HEADERS[_CHECK])
                add(_string(chrooted(root, op.path)))
                add(_pack_int(op.version))
            case _:
                raise TypeError(f"not a ZooKeeper operation: {op!r}")
    add(_END)
    return EncodedMulti(b"".join(parts))
