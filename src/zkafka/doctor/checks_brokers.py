"""What only the brokers know, checked when the doctor is given `--bootstrap-server`: log dirs
offline or nearly full (DescribeLogDirs v4's total and usable bytes), the seeds' ZooKeeper
consumers' offsets outside their partitions' logs (ListOffsets earliest and latest), and brokers
whose configs disagree on cluster-wide settings (DescribeConfigs, `checks_broker_configs`)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from zkafka.doctor.checks_broker_configs import BrokerSetting, check_broker_configs
from zkafka.doctor.findings import Finding, Severity
from zkafka.doctor.settings import DoctorSettings
from zkafka.doctor.view import ClusterView
from zkafka.protocol.topic_partition import TopicPartition


@dataclass(frozen=True, slots=True)
class LogDirFacts:
    path: str
    error_code: int
    total_bytes: int
    usable_bytes: int
    """-1 both when the broker does not report them."""


@dataclass
class BrokerFacts:
    log_dirs: dict[int, list[LogDirFacts]] = field(default_factory=dict)
    """broker id -> its log dirs."""
    log_offsets: dict[TopicPartition, tuple[int, int]] = field(default_factory=dict)
    """(log start offset, log end offset) of the partitions the ZooKeeper consumers commit to."""
    unreachable: list[int] = field(default_factory=list)
    """Registered brokers that did not answer."""
    configs: dict[int, dict[str, BrokerSetting]] = field(default_factory=dict)
    """broker id -> the settings `checks_broker_configs` compares, as that broker described them."""
    configs_unavailable: dict[int, str] = field(default_factory=dict)
    """Brokers that answered but not with their configs -> why."""


def check_brokers(view: ClusterView, facts: BrokerFacts, settings: DoctorSettings) -> Iterator[Finding]:
    for broker in facts.unreachable:
        yield Finding(
            Severity.CRITICAL,
            "broker-unreachable",
            f"broker {broker}",
            f"broker {broker} is registered in ZooKeeper but did not answer on its listener",
            "check the broker process and its advertised.listeners (clients use that address)",
        )
    for broker, why in sorted(facts.configs_unavailable.items()):
        yield Finding(
            Severity.WARNING,
            "broker-configs-unavailable",
            f"broker {broker}",
            f"broker {broker} did not describe its configs ({why}): it is left out of the "
            "cluster-wide settings comparison",
            "check that the doctor's principal may DescribeConfigs on the cluster (ACL), and the "
            "broker's log",
        )
    yield from check_broker_configs(facts.configs)
    for broker, dirs in sorted(facts.log_dirs.items()):
        for d in dirs:
            subject = f"broker {broker}: {d.path}"
            if d.error_code:
                yield Finding(
                    Severity.CRITICAL,
                    "log-dir-offline",
                    subject,
                    f"the log dir is offline (error {d.error_code}): its partitions are offline here",
                    "fix the disk or its permissions and restart the broker",
                )
                continue
            if d.total_bytes <= 0 or d.usable_bytes < 0:
                continue
            used = 100 * (1 - d.usable_bytes / d.total_bytes)
            if used >= settings.disk_warning_percent:
                severity = Severity.CRITICAL if used >= settings.disk_critical_percent else Severity.WARNING
                yield Finding(
                    severity,
                    "log-dir-nearly-full",
                    subject,
                    f"{used:.0f}% used, {d.usable_bytes / 2**30:.1f} GiB left "
                    f"of {d.total_bytes / 2**30:.1f} GiB",
                    "lower retention (retention.ms / retention.bytes), add disk, or move partitions away "
                    "with zkafka reassign-partitions",
                )
    for name, group in sorted(view.zk_groups.items()):
        for tp, offset in sorted(group.offsets.items()):
            bounds = facts.log_offsets.get(tp)
            if bounds is None:
                continue
            start, end = bounds
            path = f"/consumers/{name}/offsets/{tp.topic}/{tp.partition}"
            if offset > end:
                yield Finding(
                    Severity.WARNING,
                    "offset-beyond-log-end",
                    path,
                    f"group {name!r} is at {offset} but {tp.topic}-{tp.partition} ends at {end}: its "
                    "consumers reset by auto.offset.reset (and may skip or repeat records)",
                    "zkafka consumer-groups --reset-offsets --to-latest (or --to-offset) for the group",
                )
            elif offset < start:
                yield Finding(
                    Severity.WARNING,
                    "offset-before-log-start",
                    path,
                    f"group {name!r} is at {offset} but {tp.topic}-{tp.partition} starts at {start}: "
                    f"{start - offset} record(s) were deleted before the group read them",
                    "zkafka consumer-groups --reset-offsets --to-earliest; consider longer retention",
                )
