"""One doctor run: read the tree, decode it, run every check."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from zkafka.doctor.checks_admin import check_admin_requests
from zkafka.doctor.checks_brokers import BrokerFacts, check_brokers
from zkafka.doctor.checks_configs import check_broker_agreement, check_topic_configs
from zkafka.doctor.checks_consumers import check_zk_consumers
from zkafka.doctor.checks_partitions import (
    check_cluster_size,
    check_controller,
    check_partitions,
    check_preferred_imbalance,
)
from zkafka.doctor.findings import Finding, ordered
from zkafka.doctor.settings import DoctorSettings
from zkafka.doctor.snapshot import ZkReader, read_snapshot
from zkafka.doctor.view import ClusterView, decode_snapshot
from zkafka.zk.sanitizer import DEFAULT_ENTITY

__all__ = ["BrokerFacts", "DoctorSettings", "diagnose", "diagnose_view", "read_view"]


def read_view(zk: ZkReader) -> tuple[ClusterView, list[Finding]]:
    """The decoded tree and its schema findings."""
    return decode_snapshot(read_snapshot(zk))


def diagnose(
    zk: ZkReader,
    settings: DoctorSettings | None = None,
    brokers: Callable[[ClusterView], BrokerFacts] | None = None,
) -> tuple[ClusterView, list[Finding]]:
    """Every check; with `brokers` (what the brokers answer about the view's cluster, gathered by
    the caller, which owns the client) the broker checks too."""
    settings = settings or DoctorSettings()
    view, findings = read_view(zk)
    findings += diagnose_view(view, settings)
    if brokers is not None:
        findings += check_brokers(view, brokers(view), settings)
    return view, ordered(findings)


def diagnose_view(view: ClusterView, settings: DoctorSettings) -> list[Finding]:
    # A cluster-wide dynamic min.insync.replicas (/config/brokers/<default>) is what the brokers use.
    dynamic = view.broker_configs.get(DEFAULT_ENTITY, {}).get("min.insync.replicas", "")
    if dynamic.isdigit():
        settings = replace(settings, min_insync_replicas=int(dynamic))
    out: list[Finding] = []
    out.extend(check_controller(view))
    out.extend(check_cluster_size(view, settings))
    out.extend(check_partitions(view, settings))
    out.extend(check_preferred_imbalance(view, settings))
    out.extend(check_admin_requests(view, settings))
    out.extend(check_zk_consumers(view))
    out.extend(check_topic_configs(view))
    out.extend(check_broker_agreement(view))
    return out
