"""The quota config keys and what a valid value is."""

from __future__ import annotations

import math
from enum import Enum

__all__ = ["KEYS", "QuotaType", "parse_quota_value"]


class QuotaType(Enum):
    """A client quota, by its config key in `/config/clients|users/...`."""

    PRODUCE = "producer_byte_rate"
    FETCH = "consumer_byte_rate"
    REQUEST = "request_percentage"
    CONTROLLER_MUTATION = "controller_mutation_rate"

    @property
    def label(self) -> str:
        """The `quota` label of the throttle metrics (Kafka's QuotaType names, lower case)."""
        return _LABELS[self]


_LABELS = {
    QuotaType.PRODUCE: "produce",
    QuotaType.FETCH: "fetch",
    QuotaType.REQUEST: "request",
    QuotaType.CONTROLLER_MUTATION: "controllermutation",
}
KEYS = {q.value: q for q in QuotaType}
_INTEGRAL = (QuotaType.PRODUCE, QuotaType.FETCH)  # Kafka declares these LONG, the others DOUBLE


def parse_quota_value(quota: QuotaType, text: str) -> float:
    """The bound a config string sets; ValueError (saying why) for anything Kafka's types would refuse,
    and for bounds that are not positive: a bound of 0 makes KIP-219's throttle formula divide by zero,
    so it is refused here instead of throttling forever."""
    stripped = text.strip()
    if quota in _INTEGRAL:
        try:
            value = float(int(stripped))
        except ValueError:
            raise ValueError(f"{quota.value} must be whole bytes per second, got {text!r}") from None
    else:
        try:
            value = float(stripped)
        except ValueError:
            raise ValueError(f"{quota.value} must be a number, got {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{quota.value} must be positive, got {text!r}")
    return value
