"""`--fix`: apply the repairs findings mark as safe, each only if its znode is still the version
the doctor read (a concurrent change wins; the repair is skipped and said so)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Protocol

from kazoo.exceptions import BadVersionError, NoNodeError, NotEmptyError

from zkafka.doctor.findings import Finding


class ZkWriter(Protocol):
    def delete(self, path: str, version: int = -1, *, recursive: bool = False) -> bool: ...

    def set_data(self, path: str, data: bytes, version: int = -1) -> object: ...


def apply_repairs(zk: ZkWriter, findings: Iterable[Finding]) -> Iterator[tuple[Finding, str]]:
    """Each repairable finding with what became of it: "done", or why it was skipped."""
    for finding in findings:
        repair = finding.repair
        if repair is None:
            continue
        try:
            if repair.data is None:
                if not zk.delete(repair.path, repair.version):
                    yield finding, "skipped: already gone"
                    continue
            else:
                zk.set_data(repair.path, repair.data, repair.version)
        except BadVersionError:
            yield finding, "skipped: the znode changed since it was read"
        except NoNodeError:
            yield finding, "skipped: already gone"
        except NotEmptyError:
            yield finding, "skipped: the znode has children now"
        else:
            yield finding, "done"
