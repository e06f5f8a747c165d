"""The group coordinator's settings (Kafka's `group.*` and `offsets.*` broker keys)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class GroupConfig:
    num_partitions: int = 50
    min_session_timeout_ms: int = 6000
    max_session_timeout_ms: int = 1_800_000
    initial_rebalance_delay_ms: int = 3000
    max_size: int = 2**31 - 1
    offset_metadata_max_bytes: int = 4096
    offsets_retention_ms: int = 7 * 24 * 3600 * 1000
    offsets_retention_check_interval_ms: int = 600_000

    @classmethod
    def from_broker(cls, cfg: Any) -> GroupConfig:
        return cls(
            num_partitions=cfg.offsets_topic_num_partitions,
            min_session_timeout_ms=cfg.group_min_session_timeout_ms,
            max_session_timeout_ms=cfg.group_max_session_timeout_ms,
            initial_rebalance_delay_ms=cfg.group_initial_rebalance_delay_ms,
            max_size=cfg.group_max_size,
            offset_metadata_max_bytes=cfg.offset_metadata_max_bytes,
            offsets_retention_ms=cfg.offsets_retention_minutes * 60_000,
            offsets_retention_check_interval_ms=cfg.offsets_retention_check_interval_ms,
        )
