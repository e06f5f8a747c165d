"""What the doctor reports: one `Finding` per problem, with its severity and the fix."""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import asdict, dataclass


class Severity(enum.IntEnum):
    """Ordered so that the worst finding gives the exit status (monitoring plugins' convention)."""

    WARNING = 1
    CRITICAL = 2

    @property
    def label(self) -> str:
        return self.name.lower()


@dataclass(frozen=True, slots=True)
class Repair:
    """A fix the doctor may apply itself with `--fix`: delete `path` (its children too), or, when
    `data` is given, rewrite it with `data` -- only where `version` still matches what was read, so
    a repair never overwrites a change made since."""

    path: str
    version: int
    data: bytes | None = None

    @property
    def description(self) -> str:
        return f"delete {self.path}" if self.data is None else f"rewrite {self.path}"


@dataclass(frozen=True, slots=True)
class Finding:
    severity: Severity
    check: str
    """A stable name scripts can match on, e.g. `partition-offline`."""
    subject: str
    """The znode path, topic-partition or broker the finding is about."""
    message: str
    fix: str
    repair: Repair | None = None

    def as_json(self) -> dict[str, object]:
        out = asdict(self)
        out["severity"] = self.severity.label
        out["repair"] = None if self.repair is None else self.repair.description
        return out


def exit_status(findings: Iterable[Finding]) -> int:
    """0 healthy, 1 warnings only, 2 anything critical."""
    return max((int(f.severity) for f in findings), default=0)


def ordered(findings: Iterable[Finding]) -> list[Finding]:
    """Worst first, then by check and subject, so two runs over the same tree print the same."""
    return sorted(findings, key=lambda f: (-int(f.severity), f.check, f.subject))
