"""ZooKeeper `multi` operations as plain values.

The controller builds lists of these (without importing kazoo) and hands them to
`KafkaZkClient.fenced_multi`, which prefixes a check on `/controller_epoch`. `zk.multi_write` encodes
them as one ZooKeeper request (paths below the chroot by `chrooted`); `first_failure` finds the
operation that made a multi fail (ZooKeeper reports the operations before it as rolled back and those
after it as "runtime inconsistency").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kazoo.exceptions import RolledBackError, RuntimeInconsistency, ZookeeperError
from kazoo.protocol.paths import _prefix_root

from zkafka.zk.model import ANY_VERSION

__all__ = [
    "CheckOp",
    "CreateOp",
    "DeleteOp",
    "MultiOpFailure",
    "Op",
    "SetDataOp",
    "chrooted",
    "first_failure",
]


@dataclass(frozen=True)
class CreateOp:
    path: str
    data: bytes = b""
    ephemeral: bool = False
    sequential: bool = False

    def __init__(
        self, path: str, data: bytes = b"", ephemeral: bool = False, sequential: bool = False
    ) -> None:
        # as SetDataOp's: a topic's creation makes two of these per new partition
        fields = self.__dict__
        fields["path"] = path
        fields["data"] = data
        fields["ephemeral"] = ephemeral
        fields["sequential"] = sequential


@dataclass(frozen=True)
class SetDataOp:
    path: str
    data: bytes
    version: int = ANY_VERSION

    def __init__(self, path: str, data: bytes, version: int = ANY_VERSION) -> None:
        # The frozen dataclass's generated __init__ pays an object.__setattr__ per field; the
        # controller makes one of these per partition it elects or shrinks (10,000 at once when
        # a broker dies at 30,000 partitions). Filling the instance dict is a fraction of that
        # (item by item: `update` with keywords builds a dict first).
        fields = self.__dict__
        fields["path"] = path
        fields["data"] = data
        fields["version"] = version


@dataclass(frozen=True)
class DeleteOp:
    path: str
    version: int = ANY_VERSION


@dataclass(frozen=True)
class CheckOp:
    path: str
    version: int


Op = CreateOp | SetDataOp | DeleteOp | CheckOp


def chrooted(root: str, path: str) -> str:
    """`path` below kazoo's normalised chroot `root` ("" for none), exactly as kazoo's
    `_prefix_root`: a canonical absolute path (what the znode builders make) is concatenated, anything
    else (relative, `//`, a trailing `/`, `.` components) goes through kazoo's normalisation."""
    if path[:1] == "/" and path[-1:] != "/" and "//" not in path and "/." not in path:
        return root + path
    return _prefix_root(root, path)


@dataclass(frozen=True)
class MultiOpFailure:
    index: int
    """Position of the failing operation in the multi."""
    error: ZookeeperError


def first_failure(results: Sequence[Any]) -> MultiOpFailure | None:
    """The operation that failed a multi, or None if the multi succeeded."""
    for i, result in enumerate(results):
        if isinstance(result, ZookeeperError) and not isinstance(
            result, RolledBackError | RuntimeInconsistency
        ):
            return MultiOpFailure(i, result)
    if any(isinstance(r, Exception) for r in results):
        # Every result an error but none specific: report the first one rather than claim success.
        i, result = next((i, r) for i, r in enumerate(results) if isinstance(r, Exception))
        return MultiOpFailure(i, result)
    return None
