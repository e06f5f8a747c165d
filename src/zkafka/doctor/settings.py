"""The thresholds a doctor run uses, with Kafka's defaults."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DoctorSettings:
    min_insync_replicas: int = 1
    """The broker default (`min.insync.replicas`), for topics without their own."""
    leader_imbalance_per_broker_percentage: int = 10
    stale_request_minutes: float = 30.0
    """An admin request (reassignment, preferred election, deletion) older than this is stuck."""
    cluster_partitions_warning: int = 200_000
    """A cluster with more partitions than this gets a `cluster-size` warning: Kafka's guidance for
    ZooKeeper mode, and where ZooKeeper's default heap runs out (docs/performance.md)."""
    disk_warning_percent: float = 85.0
    disk_critical_percent: float = 95.0
    """A log dir's file system used at or above these percentages is a warning / critical."""
    now_ms: int | None = None
    """The clock the ages are measured against (None: now)."""
