"""ZooKeeper's `multiRead` (opcode 22, servers 3.6+): many getData in one request, each with its own
result (not atomic, unlike `multi`). kazoo has no call for it; `MultiGetData` is a request kazoo's
connection sends and decodes like its own.

Why: kazoo spends a loop turn, two polls, a send and a pipe read per request. Reading 10,000
partition states as 10,000 pipelined getData kept kazoo's thread busy for seconds; a new controller
reads every partition's state at failover (100,000 at the issue's scale). One multiRead of 1,000
paths costs one turn.

A server older than 3.6 answers an unknown opcode by closing the connection, so `server_supports`
asks the server its version first (the `srvr` command, on the default four-letter-word whitelist);
when it cannot tell, callers keep to pipelined getData.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, NamedTuple

from kazoo.client import KazooClient
from kazoo.exceptions import EXCEPTIONS, NoNodeError
from kazoo.protocol.serialization import (
    int_struct,
    multiheader_struct,
    stat_struct,
    write_string,
)
from kazoo.protocol.states import ZnodeStat

__all__ = ["MULTI_READ_OPCODE", "MultiGetData", "server_supports"]

MULTI_READ_OPCODE = 22
_GET_DATA = 4
_ERROR = -1
_VERSION = re.compile(r"Zookeeper version: (\d+)\.(\d+)")

ReadResult = tuple[bytes, ZnodeStat] | None | Exception
"""(data, stat); None when the znode does not exist; the server's error otherwise."""


class MultiGetData(NamedTuple):
    """getData (no watch) of every path, in one multiRead; paths are absolute in the session's
    namespace, i.e. with its chroot already in front."""

    paths: Sequence[str]

    type = MULTI_READ_OPCODE

    def serialize(self) -> bytes:
        parts = []
        header = multiheader_struct.pack(_GET_DATA, False, -1)
        for path in self.paths:
            parts.append(header)
            parts.append(bytes(write_string(path)))
            parts.append(b"\x00")  # watch: false
        parts.append(multiheader_struct.pack(-1, True, -1))
        return b"".join(parts)

    @classmethod
    def deserialize(cls, data: bytes, offset: int) -> list[ReadResult]:
        results: list[ReadResult] = []
        unpack_header = multiheader_struct.unpack_from
        unpack_int = int_struct.unpack_from
        unpack_stat = stat_struct.unpack_from
        while True:
            kind, done, _err = unpack_header(data, offset)
            offset += multiheader_struct.size
            if done:
                return results
            if kind == _GET_DATA:
                (length,) = unpack_int(data, offset)
                offset += 4
                if length < 0:
                    value = b""
                else:
                    value = data[offset : offset + length]
                    offset += length
                results.append((value, ZnodeStat._make(unpack_stat(data, offset))))
                offset += stat_struct.size
            elif kind == _ERROR:
                (code,) = unpack_int(data, offset)
                offset += 4
                error = EXCEPTIONS[code]()
                results.append(None if isinstance(error, NoNodeError) else error)
            else:
                raise ValueError(f"unexpected multiRead result type {kind}")


def server_supports(client: KazooClient) -> bool:
    """True if the server `client` is connected to says it is ZooKeeper 3.6 or newer."""
    try:
        answer: Any = client.command(b"srvr")
    except Exception:  # not whitelisted, connection trouble: assume not
        return False
    found = _VERSION.search(str(answer))
    return found is not None and (int(found.group(1)), int(found.group(2))) >= (3, 6)
