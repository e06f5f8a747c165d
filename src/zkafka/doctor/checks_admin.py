"""Admin requests that will never finish: `/admin/reassign_partitions`,
`/admin/preferred_replica_election` and `/admin/delete_topics/<t>` naming topics that are gone,
brokers that are not registered, or older than `stale_request_minutes`. Requests that do not
decode stop the controller from taking new ones of their kind, so deleting them is a safe fix."""

from __future__ import annotations

import time
from collections.abc import Iterator

from zkafka.doctor.findings import Finding, Repair, Severity
from zkafka.doctor.settings import DoctorSettings
from zkafka.doctor.snapshot import RawZnode
from zkafka.doctor.view import ClusterView
from zkafka.zk.znodes import (
    DeleteTopicsZNode,
    PreferredReplicaElectionZNode,
    ReassignPartitionsZNode,
)


def _age_minutes(node: RawZnode, settings: DoctorSettings) -> float:
    now = settings.now_ms if settings.now_ms is not None else int(time.time() * 1000)
    return max(0.0, (now - node.stat.ctime) / 60_000)


def check_admin_requests(view: ClusterView, settings: DoctorSettings) -> Iterator[Finding]:
    yield from _reassignment(view, settings)
    yield from _preferred_election(view, settings)
    yield from _deletions(view, settings)


def _undecodable(node: RawZnode, what: str) -> Finding:
    return Finding(
        Severity.WARNING,
        "admin-request-unreadable",
        node.path,
        f"the {what} does not decode, so the controller cannot act on it or accept a new one",
        "delete it and submit the request again",
        Repair(node.path, node.stat.version),
    )


def _reassignment(view: ClusterView, settings: DoctorSettings) -> Iterator[Finding]:
    node = view.raw.get(ReassignPartitionsZNode.path())
    if node is None:
        return
    if view.reassignment is None:
        yield _undecodable(node, "reassignment request")
        return
    gone = sorted({tp.topic for tp in view.reassignment if tp.topic not in view.topics})
    if gone:
        kept = {tp: r for tp, r in view.reassignment.items() if tp.topic in view.topics}
        yield Finding(
            Severity.WARNING,
            "stale-reassignment",
            node.path,
            f"names topic(s) that no longer exist: {', '.join(gone)}",
            "remove their entries (the rest of the request stays)",
            Repair(node.path, node.stat.version, ReassignPartitionsZNode.encode(kept) if kept else None),
        )
    missing = sorted({b for r in view.reassignment.values() for b in r if b not in view.brokers})
    if missing:
        yield Finding(
            Severity.WARNING,
            "reassignment-to-unknown-broker",
            node.path,
            f"moves replicas to broker(s) {missing}, which are not registered: it cannot finish",
            "start those brokers, or cancel with zkafka reassign-partitions --cancel",
        )
    age = _age_minutes(node, settings)
    if age > settings.stale_request_minutes:
        yield Finding(
            Severity.WARNING,
            "reassignment-stuck",
            node.path,
            f"in progress for {age:.0f} minutes ({len(view.reassignment)} partition(s))",
            "zkafka reassign-partitions --verify shows what is left; a replica that cannot catch up "
            "is usually on a stopped or throttled broker",
        )


def _preferred_election(view: ClusterView, settings: DoctorSettings) -> Iterator[Finding]:
    node = view.raw.get(PreferredReplicaElectionZNode.path())
    if node is None:
        return
    if view.preferred_election is None:
        yield _undecodable(node, "preferred election request")
        return
    gone = sorted({tp.topic for tp in view.preferred_election if tp.topic not in view.topics})
    age = _age_minutes(node, settings)
    if gone or age > settings.stale_request_minutes:
        why = (
            f"names topic(s) that no longer exist: {', '.join(gone)}" if gone else f"is {age:.0f} minutes old"
        )
        yield Finding(
            Severity.WARNING,
            "stale-preferred-election",
            node.path,
            f"the request {why}; the controller deletes it when it has run",
            "delete it, then run zkafka leader-election --election-type preferred again if needed",
            Repair(node.path, node.stat.version),
        )


def _deletions(view: ClusterView, settings: DoctorSettings) -> Iterator[Finding]:
    for topic in view.pending_deletes:
        node = view.raw.get(DeleteTopicsZNode.path() + "/" + topic)
        if node is None:
            continue
        if topic not in view.topics:
            yield Finding(
                Severity.WARNING,
                "stale-topic-deletion",
                node.path,
                f"asks to delete topic {topic!r}, which does not exist",
                "delete the request",
                Repair(node.path, node.stat.version),
            )
        elif (age := _age_minutes(node, settings)) > settings.stale_request_minutes:
            down = sorted(
                {r for rs in view.topics[topic].partitions.values() for r in rs if r not in view.brokers}
            )
            why = f"; its replicas on broker(s) {down} are not registered" if down else ""
            yield Finding(
                Severity.WARNING,
                "topic-deletion-stuck",
                node.path,
                f"topic {topic!r} has been queued for deletion for {age:.0f} minutes{why}",
                "start the brokers holding its replicas; deletion completes once every replica is gone",
            )
