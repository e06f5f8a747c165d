"""Configuration: topic configs in `/config/topics` that name unknown keys, hold values out of
range, or belong to topics that are gone; brokers whose registrations disagree on what must be
the same cluster-wide (listener names, rack information)."""

from __future__ import annotations

from collections.abc import Iterator

from zkafka.doctor.findings import Finding, Repair, Severity
from zkafka.doctor.view import ClusterView
from zkafka.storage.config import InvalidConfigError, LogConfig

_DEFAULTS = LogConfig()


def check_topic_configs(view: ClusterView) -> Iterator[Finding]:
    for topic, config in sorted(view.topic_configs.items()):
        path = f"/config/topics/{topic}"
        if topic not in view.topics and topic not in view.pending_deletes:
            node = view.raw.get(path)
            yield Finding(
                Severity.WARNING,
                "config-for-unknown-topic",
                path,
                f"holds configs for topic {topic!r}, which does not exist: a topic created later "
                "under that name would silently take them",
                "delete the config znode",
                None if node is None else Repair(path, node.stat.version),
            )
            continue
        for key, value in sorted(config.items()):
            try:  # one key at a time, so every bad key is its own finding
                _DEFAULTS.with_overrides({key: value})
            except InvalidConfigError as e:
                yield Finding(
                    Severity.WARNING,
                    "topic-config-invalid",
                    path,
                    f"{key}={value!r}: {e}; the brokers keep the topic on its defaults for it",
                    f"zkafka configs --alter --entity-type topics --entity-name {topic} "
                    f"--delete-config {key} (or --add-config with a valid value)",
                )


def check_broker_agreement(view: ClusterView) -> Iterator[Finding]:
    brokers = view.brokers
    if len(brokers) < 2:
        return
    listeners = {b: frozenset(e.listener_name for e in info.endpoints) for b, info in brokers.items()}
    common = frozenset.intersection(*listeners.values())
    for b, names in sorted(listeners.items()):
        if names != common:
            yield Finding(
                Severity.WARNING,
                "broker-listeners-disagree",
                f"/brokers/ids/{b}",
                f"broker {b} has listener(s) {sorted(names - common)} that not every broker has "
                f"(common to all: {sorted(common)}); clients of those listeners miss partitions led "
                "elsewhere (LEADER_NOT_AVAILABLE)",
                "give every broker the same listener names in listeners/advertised.listeners",
            )
    racked = sorted(b for b, info in brokers.items() if info.rack)
    if racked and len(racked) < len(brokers):
        bare = sorted(set(brokers) - set(racked))
        yield Finding(
            Severity.WARNING,
            "broker-rack-partial",
            "/brokers/ids",
            f"brokers {racked} have broker.rack, brokers {bare} do not: rack-aware placement "
            "refuses to create topics",
            "set broker.rack on every broker (or on none)",
        )
