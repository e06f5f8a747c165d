from __future__ import annotations

import pytest

from zkafka.quotas.types import QuotaType, parse_quota_value


@pytest.mark.parametrize(
    ("quota", "text", "value"),
    [
        (QuotaType.PRODUCE, "1048576", 1048576.0),
        (QuotaType.FETCH, " 2000 ", 2000.0),
        (QuotaType.REQUEST, "12.5", 12.5),
        (QuotaType.CONTROLLER_MUTATION, "10", 10.0),
    ],
)
def test_valid_values(quota: QuotaType, text: str, value: float) -> None:
    assert parse_quota_value(quota, text) == value


@pytest.mark.parametrize(
    ("quota", "text"),
    [
        (QuotaType.PRODUCE, "1.5"),  # byte rates are LONGs in Kafka
        (QuotaType.PRODUCE, "1MB"),
        (QuotaType.FETCH, "0"),  # KIP-219's formula divides by the bound
        (QuotaType.FETCH, "-5"),
        (QuotaType.REQUEST, "nan"),
        (QuotaType.REQUEST, "inf"),
        (QuotaType.REQUEST, ""),
    ],
)
def test_invalid_values_say_which_key(quota: QuotaType, text: str) -> None:
    with pytest.raises(ValueError, match=quota.value):
        parse_quota_value(quota, text)
