"""One consumer group's in-memory state: members, generation, protocol, committed offsets.

States and their legal predecessors are Kafka's (reference group-coordinator §2):

    Empty               <- PreparingRebalance
    PreparingRebalance  <- Empty, Stable, CompletingRebalance
    CompletingRebalance <- PreparingRebalance
    Stable              <- CompletingRebalance
    Dead                <- any

The coordinator (`zkafka.coordinator.coordinator`) drives the transitions; this module only
keeps the bookkeeping consistent (leader election on removal, protocol vote, who has rejoined).
"""

from __future__ import annotations

import asyncio
import enum
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from zkafka.protocol.groups.consumer_protocol import PROTOCOL_TYPE, decode_subscription
from zkafka.protocol.groups.formats import CorruptCoordinatorRecordError, GroupValue, MemberValue
from zkafka.storage.naming import TopicPartition


class GroupState(enum.Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


_VALID_PREVIOUS: dict[GroupState, frozenset[GroupState]] = {
    GroupState.EMPTY: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.PREPARING_REBALANCE: frozenset(
        {GroupState.EMPTY, GroupState.STABLE, GroupState.COMPLETING_REBALANCE}
    ),
    GroupState.COMPLETING_REBALANCE: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.STABLE: frozenset({GroupState.COMPLETING_REBALANCE}),
    GroupState.DEAD: frozenset(GroupState),
}


class IllegalStateTransition(RuntimeError):
    pass


@dataclass(slots=True)
class OffsetAndMetadata:
    offset: int
    leader_epoch: int = -1
    metadata: str = ""
    commit_timestamp: int = -1
    expire_timestamp: int | None = None
    record_offset: int = -1
    """Where the commit's record sits in `__consumer_offsets`: a slower commit of an older record
    must not overwrite a newer one that completed first."""


@dataclass(eq=False, slots=True)
class Member:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    assignment: bytes = b""
    is_new: bool = False
    awaiting_join: asyncio.Future[Any] | None = None
    awaiting_sync: asyncio.Future[Any] | None = None
    heartbeat_timer: asyncio.TimerHandle | None = None
    heartbeat_deadline: float = 0.0

    def metadata_for(self, protocol: str) -> bytes:
        for name, data in self.protocols:
            if name == protocol:
                return data
        raise KeyError(f"member {self.member_id} does not support protocol {protocol}")

    def matches(self, protocols: list[tuple[str, bytes]]) -> bool:
        return self.protocols == protocols

    def vote(self, candidates: set[str]) -> str:
        """This member's most preferred protocol among those every member supports."""
        for name, _ in self.protocols:
            if name in candidates:
                return name
        raise ValueError(f"member {self.member_id} supports none of {sorted(candidates)}")


@dataclass(frozen=True, slots=True)
class CommitRequest:
    offset: int
    leader_epoch: int = -1
    metadata: str | None = ""
    commit_timestamp: int = -1
    """OffsetCommit v1's per-partition timestamp; -1 (every later version) means the broker's now."""


@dataclass(eq=False)
class Group:
    group_id: str
    partition: int
    """The `__consumer_offsets` partition that stores this group."""
    state: GroupState = GroupState.EMPTY
    generation: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str | None = None
    members: dict[str, Member] = field(default_factory=dict)
    pending_members: dict[str, asyncio.TimerHandle | None] = field(default_factory=dict)
    """Member ids handed out with MEMBER_ID_REQUIRED, waiting for their rejoin."""
    static_members: dict[str, str] = field(default_factory=dict)
    """group.instance.id -> member id."""
    offsets: dict[TopicPartition, OffsetAndMetadata] = field(default_factory=dict)
    pending_commits: Counter[TopicPartition] = field(default_factory=Counter)
    pending_txn_offsets: dict[int, dict[TopicPartition, OffsetAndMetadata]] = field(default_factory=dict)
    """producer id -> offsets committed in its open transaction (TxnOffsetCommit), applied when
    the COMMIT marker reaches the group's partition."""
    current_state_timestamp: int = -1
    new_member_added: bool = False
    join_timer: asyncio.TimerHandle | None = None
    join_initial: bool = False
    """The running join phase is the initial delayed join (never finishes early)."""
    join_remaining_ms: int = 0
    sync_timer: asyncio.TimerHandle | None = None
    pending_sync: set[str] = field(default_factory=set)
    """Members of the current generation that have not sent SyncGroup yet."""
    storing_generation: int = -1
    """The generation whose assignment is being written (a repeated leader SyncGroup waits)."""

    # -- state ---------------------------------------------------------------------------------
    def is_(self, state: GroupState) -> bool:
        return self.state is state

    def transition(self, state: GroupState, now_ms: int) -> None:
        if self.state not in _VALID_PREVIOUS[state]:
            raise IllegalStateTransition(
                f"group {self.group_id}: {self.state.value} -> {state.value} is not a legal transition"
            )
        self.state = state
        self.current_state_timestamp = now_ms

    @property
    def can_rebalance(self) -> bool:
        return self.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE, GroupState.EMPTY)

    # -- members -------------------------------------------------------------------------------
    def has(self, member_id: str) -> bool:
        return member_id in self.members

    def add(self, member: Member) -> None:
        if not self.members:
            self.protocol_type = member.protocol_type
        if self.leader_id is None or self.leader_id not in self.members:
            self.leader_id = member.member_id
        self.members[member.member_id] = member
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        self.pending_members.pop(member.member_id, None)

    def remove(self, member_id: str) -> Member | None:
        member = self.members.pop(member_id, None)
        if member is None:
            return None
        if (
            member.group_instance_id is not None
            and self.static_members.get(member.group_instance_id) == member_id
        ):
            del self.static_members[member.group_instance_id]
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        return member

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    def static_member_id(self, instance_id: str | None) -> str | None:
        return None if instance_id is None else self.static_members.get(instance_id)

    def has_all_members_joined(self) -> bool:
        return not self.pending_members and all(m.awaiting_join is not None for m in self.members.values())

    def not_yet_rejoined(self) -> list[Member]:
        return [m for m in self.members.values() if m.awaiting_join is None]

    def maybe_elect_new_joined_leader(self) -> bool:
        """Keep the leader if it rejoined, else promote any member that did. False if none did."""
        if self.leader_id is None:
            return False
        leader = self.members.get(self.leader_id)
        if leader is not None and leader.awaiting_join is not None:
            return True
        for m in self.members.values():
            if m.awaiting_join is not None:
                self.leader_id = m.member_id
                return True
        return False

    @property
    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    # -- protocols -----------------------------------------------------------------------------
    def candidate_protocols(self) -> set[str]:
        members = list(self.members.values())
        if not members:
            return set()
        common = {name for name, _ in members[0].protocols}
        for m in members[1:]:
            common &= {name for name, _ in m.protocols}
        return common

    def supports_protocols(self, protocol_type: str, protocols: Iterable[str]) -> bool:
        names = set(protocols)
        if not self.members:
            return bool(protocol_type) and bool(names)
        return self.protocol_type == protocol_type and bool(names & self.candidate_protocols())

    def select_protocol(self) -> str:
        """Kafka's vote: every member votes for its favourite common protocol; most votes win
        (ties broken by name, for determinism)."""
        candidates = self.candidate_protocols()
        votes = Counter(m.vote(candidates) for m in self.members.values())
        return max(sorted(votes), key=lambda name: votes[name])

    def subscribed_topics(self) -> set[str] | None:
        """Topics the consumer members subscribe to; None when unknown (not a consumer group
        or an unreadable subscription), which keeps every offset from expiring as 'unsubscribed'."""
        if self.protocol_type != PROTOCOL_TYPE or self.protocol_name is None:
            return None if self.members else set()
        topics: set[str] = set()
        try:
            for m in self.members.values():
                topics.update(decode_subscription(m.metadata_for(self.protocol_name)).topics)
        except (CorruptCoordinatorRecordError, KeyError):
            return None
        return topics

    # -- the persisted form --------------------------------------------------------------------
    def to_value(self, assignments: dict[str, bytes] | None = None) -> GroupValue:
        """The group metadata record (Kafka's `groupMetadataValue`)."""
        members = []
        if self.protocol_name is not None:
            for m in self.members.values():
                assignment = assignments.get(m.member_id, b"") if assignments is not None else m.assignment
                members.append(
                    MemberValue(
                        member_id=m.member_id,
                        client_id=m.client_id,
                        client_host=m.client_host,
                        rebalance_timeout_ms=m.rebalance_timeout_ms,
                        session_timeout_ms=m.session_timeout_ms,
                        subscription=m.metadata_for(self.protocol_name),
                        assignment=assignment,
                        group_instance_id=m.group_instance_id,
                    )
                )
        return GroupValue(
            protocol_type=self.protocol_type or "",
            generation=self.generation,
            protocol=self.protocol_name,
            leader=self.leader_id if self.members else None,
            members=tuple(members),
            current_state_timestamp=self.current_state_timestamp,
        )

    @classmethod
    def from_value(cls, group_id: str, partition: int, value: GroupValue) -> Group:
        """A group restored from its record: Stable with its members, or Empty without any."""
        group = cls(group_id, partition)
        group.generation = value.generation
        group.protocol_type = value.protocol_type or None
        group.protocol_name = value.protocol
        group.current_state_timestamp = value.current_state_timestamp
        for mv in value.members:
            protocols = [(value.protocol or "", mv.subscription)]
            member = Member(
                member_id=mv.member_id,
                group_instance_id=mv.group_instance_id,
                client_id=mv.client_id,
                client_host=mv.client_host,
                rebalance_timeout_ms=mv.rebalance_timeout_ms,
                session_timeout_ms=mv.session_timeout_ms,
                protocol_type=value.protocol_type,
                protocols=protocols,
                assignment=mv.assignment,
            )
            group.add(member)
        group.leader_id = value.leader if value.leader in group.members else group.leader_id
        group.state = GroupState.STABLE if group.members else GroupState.EMPTY
        return group
