"""Partition health and the controller, from the decoded tree: offline partitions, leaders outside
their ISR or on dead brokers, under-replicated and under-min-ISR partitions, replicas on brokers
that are not registered, preferred-leader imbalance, and controller epochs that disagree."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator

from zkafka.doctor.findings import Finding, Repair, Severity
from zkafka.doctor.settings import DoctorSettings
from zkafka.doctor.view import ClusterView
from zkafka.protocol.topic_partition import TopicPartition
from zkafka.zk.model import LeaderAndIsr

NO_LEADER = -1
SHOWN = 5
"""Partitions named in a finding that covers many (the rest are counted)."""


def _tp(tp: TopicPartition) -> str:
    return f"{tp.topic}-{tp.partition}"


def _some(tps: list[TopicPartition]) -> str:
    names = ", ".join(_tp(tp) for tp in sorted(tps)[:SHOWN])
    return names if len(tps) <= SHOWN else f"{names} and {len(tps) - SHOWN} more"


def min_isr_of(view: ClusterView, topic: str, settings: DoctorSettings) -> int:
    raw = view.topic_configs.get(topic, {}).get("min.insync.replicas")
    if raw is not None and raw.isdigit():
        return int(raw)
    return settings.min_insync_replicas


def check_partitions(view: ClusterView, settings: DoctorSettings) -> Iterator[Finding]:
    live = set(view.brokers)
    unknown_hosts: dict[int, list[TopicPartition]] = defaultdict(list)
    for topic, assignment in sorted(view.topics.items()):
        for partition, replicas in sorted(assignment.partitions.items()):
            tp = TopicPartition(topic, partition)
            for r in replicas:
                if r not in live:
                    unknown_hosts[r].append(tp)
            state = view.states.get(tp)
            if state is None:
                if tp not in view.unreadable_states:
                    yield Finding(
                        Severity.CRITICAL,
                        "partition-no-state",
                        _tp(tp),
                        f"assigned to {list(replicas)} but has no state znode: no leader, offline",
                        "the controller writes it when it handles the topic; if it stays missing, make the "
                        "controller resign (delete /controller) so the next one initialises the partition",
                    )
                else:
                    yield Finding(
                        Severity.CRITICAL,
                        "partition-offline",
                        _tp(tp),
                        "its state znode does not decode, so no broker serves it",
                        "rewrite the state znode (see the znode-schema finding); a controller failover "
                        "then elects a leader",
                    )
                continue
            yield from _partition_state(tp, replicas, state.leader_and_isr, live, view, settings)
    for broker, tps in sorted(unknown_hosts.items()):
        yield Finding(
            Severity.WARNING,
            "replica-on-unknown-broker",
            f"broker {broker}",
            f"holds replicas of {len(tps)} partition(s) ({_some(tps)}) but is not registered "
            "in /brokers/ids (stopped, or never existed)",
            f"start broker {broker}, or move its replicas with zkafka reassign-partitions",
        )


def _partition_state(
    tp: TopicPartition,
    replicas: tuple[int, ...],
    lai: LeaderAndIsr,
    live: set[int],
    view: ClusterView,
    settings: DoctorSettings,
) -> Iterator[Finding]:
    isr = list(lai.isr)
    if lai.leader == NO_LEADER or lai.leader not in live:
        where = "no leader" if lai.leader == NO_LEADER else f"leader {lai.leader} is not registered"
        yield Finding(
            Severity.CRITICAL,
            "partition-offline",
            _tp(tp),
            f"{where} (replicas {list(replicas)}, ISR {isr}): nobody can produce to or fetch from it",
            "start a broker of its ISR; if none can come back, "
            f"zkafka leader-election --election-type unclean --topic {tp.topic} --partition {tp.partition} "
            "(loses what only the ISR had)",
        )
    elif lai.leader not in isr:
        yield Finding(
            Severity.CRITICAL,
            "leader-not-in-isr",
            _tp(tp),
            f"leader {lai.leader} is not in its own ISR {isr}",
            "make the controller resign (delete /controller); the next one re-elects from the ISR",
        )
    outside = [b for b in isr if b not in replicas]
    if outside:
        yield Finding(
            Severity.WARNING,
            "isr-not-in-replicas",
            _tp(tp),
            f"ISR {isr} names broker(s) {outside} that are not replicas {list(replicas)}",
            "the leader shrinks its ISR on its next check; if it stays, make the controller resign",
        )
    adding = set(view.topics[tp.topic].adding_replicas.get(tp.partition, ()))
    expected = [r for r in replicas if r not in adding]
    if len(set(isr) & set(expected)) < len(expected):
        behind = [r for r in expected if r not in isr]
        yield Finding(
            Severity.WARNING,
            "partition-under-replicated",
            _tp(tp),
            f"replicas {behind} are out of the ISR {isr}",
            "start or repair the brokers named; a follower rejoins the ISR once it has caught up",
        )
    needed = min_isr_of(view, tp.topic, settings)
    if len(isr) < needed:
        yield Finding(
            Severity.CRITICAL,
            "partition-under-min-isr",
            _tp(tp),
            f"ISR {isr} is smaller than min.insync.replicas={needed}: acks=all produce fails "
            "with NOT_ENOUGH_REPLICAS",
            "bring the missing replicas back, or lower the topic's min.insync.replicas",
        )


def check_preferred_imbalance(view: ClusterView, settings: DoctorSettings) -> Iterator[Finding]:
    preferred: dict[int, int] = defaultdict(int)
    moved: dict[int, list[TopicPartition]] = defaultdict(list)
    for topic, assignment in view.topics.items():
        for partition, replicas in assignment.partitions.items():
            state = view.states.get(TopicPartition(topic, partition))
            if not replicas or state is None:
                continue
            first = replicas[0]
            preferred[first] += 1
            if state.leader_and_isr.leader != first:
                moved[first].append(TopicPartition(topic, partition))
    limit = settings.leader_imbalance_per_broker_percentage
    for broker, total in sorted(preferred.items()):
        off = moved.get(broker, [])
        if broker in view.brokers and total and 100 * len(off) / total > limit:
            yield Finding(
                Severity.WARNING,
                "preferred-leader-imbalance",
                f"broker {broker}",
                f"leads {total - len(off)} of the {total} partitions it is preferred for "
                f"({100 * len(off) / total:.0f}% elsewhere, above "
                f"leader.imbalance.per.broker.percentage={limit})",
                "zkafka leader-election --election-type preferred --all-topic-partitions",
            )


ZNODES_PER_GB = 800_000
"""Znodes a ZooKeeper heap of 1 GB holds with room to spare (measured: 512 MB thrashes near
400,000; 1 GB wrote 800,000 at a steady rate)."""


def check_cluster_size(view: ClusterView, settings: DoctorSettings) -> Iterator[Finding]:
    """More partitions than ZooKeeper mode is meant for: every partition is two znodes in
    ZooKeeper's heap, and a new controller reads every state before it elects anything."""
    partitions = sum(len(a.partitions) for a in view.topics.values())
    limit = settings.cluster_partitions_warning
    if partitions <= limit:
        return
    znodes = len(view.raw.znodes)
    heap_gb = max(1, -(-znodes // ZNODES_PER_GB))  # rounded up
    yield Finding(
        Severity.WARNING,
        "cluster-size",
        "cluster",
        f"{partitions:,} partitions ({znodes:,} znodes), above {limit:,}, Kafka's guidance for one "
        "ZooKeeper-mode cluster: ZooKeeper keeps every znode in its heap (at Kafka's default 512 MB it "
        "thrashes near 400,000 znodes and sessions expire), and a new controller reads every "
        "partition's state before it elects a leader",
        f'give each ZooKeeper server at least {heap_gb} GB of heap (KAFKA_HEAP_OPTS="-Xmx{heap_gb}g '
        f'-Xms{heap_gb}g" for zkafka zookeeper-start, as for zookeeper-server-start.sh); beyond that, '
        "spread topics over more clusters",
    )


def check_controller(view: ClusterView) -> Iterator[Finding]:
    raw = view.raw.get("/controller")
    if raw is None:
        if view.brokers:
            yield Finding(
                Severity.CRITICAL,
                "no-controller",
                "/controller",
                f"{len(view.brokers)} broker(s) are registered but none is the controller",
                "the brokers elect one within seconds; if none does, restart one broker",
            )
    elif view.controller is not None and view.controller not in view.brokers:
        yield Finding(
            Severity.CRITICAL,
            "controller-not-live",
            "/controller",
            f"names broker {view.controller}, which is not registered",
            "delete /controller so that a live broker takes over",
            Repair("/controller", raw.stat.version),
        )
    epoch = view.controller_epoch
    if epoch is None:
        return
    ahead = [tp for tp, s in view.states.items() if s.controller_epoch > epoch]
    if ahead:
        yield Finding(
            Severity.CRITICAL,
            "controller-epoch-behind",
            "/controller_epoch",
            f"is {epoch}, but {len(ahead)} partition state(s) were written by a later controller epoch "
            f"({_some(ahead)}): the next controller's writes would be refused as stale",
            "set /controller_epoch to the largest controller_epoch in the partition states, "
            "then delete /controller",
        )
