"""ACL and delegation-token storage in ZooKeeper (the authorizer's and token manager's half of
Kafka's KafkaZkClient). Mixed into `KafkaZkClient`; same threading rules (blocking, thread-safe).

ACL update protocol (Kafka's AclAuthorizer): read the resource's ACLs with their zkVersion, compute the
new set, write conditionally (create when absent, delete when the new set is empty), and on a conflict
re-read and retry with a jittered back-off; after success publish a change notification so every broker
re-reads that resource.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Iterable
from typing import NamedTuple

from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError
from kazoo.protocol.states import ZnodeStat

from zkafka.zk.acls import AclEntry, PatternType, ResourcePattern, ResourceType
from zkafka.zk.bad_znodes import BadZNodes
from zkafka.zk.errors import ZkError, ZNodeDataError
from zkafka.zk.model import UNKNOWN_VERSION, DelegationTokenInfo
from zkafka.zk.session import ZkSession
from zkafka.zk.znodes import (
    AclZNodes,
    DelegationTokenInfoZNode,
    DelegationTokenZNodes,
    ExtendedAclChangeZNode,
    LiteralAclChangeZNode,
    TokenChangeZNode,
)

log = logging.getLogger(__name__)

__all__ = ["NO_ACLS_INSTEAD", "AclStoreMixin", "VersionedAcls"]


class VersionedAcls(NamedTuple):
    acls: frozenset[AclEntry]
    zk_version: int
    """UNKNOWN_VERSION when the resource has no ACL znode."""


NO_ACLS_INSTEAD = "treating the resource as having no ACLs"


class AclStoreMixin(ZkSession):
    ACL_UPDATE_MAX_ATTEMPTS = 10
    bad_znodes: BadZNodes
    """Set by KafkaZkClient; the lenient reads below report undecodable ACL znodes there."""

    def create_acl_paths(self) -> None:
        """Every ACL store root, resource-type directory and change queue (authorizer startup)."""
        for path in AclZNodes.all_paths():
            self.ensure_path(path)

    def get_acl_resource_names(self, pattern_type: PatternType, resource_type: ResourceType) -> list[str]:
        return sorted(self.get_children(AclZNodes.type_path(pattern_type, resource_type)) or [])

    def get_versioned_acls(self, pattern: ResourcePattern) -> VersionedAcls:
        path = AclZNodes.path(pattern)
        found = self.get_data(path)
        if found is None:
            return VersionedAcls(frozenset(), UNKNOWN_VERSION)
        data, stat = found
        return VersionedAcls(AclZNodes.decode(data, path), stat.version)

    def get_acls_lenient(self, pattern: ResourcePattern) -> VersionedAcls:
        """Like `get_versioned_acls`, but an ACL znode whose data does not decode is reported once to
        `bad_znodes` and read as no ACLs (with its real zkVersion, so a rewrite can replace it): one bad
        znode must not stop an authorizer from loading or following every other resource."""
        path = AclZNodes.path(pattern)
        found = self.get_data(path)
        return self._decode_lenient(path, found)

    def get_all_acls_lenient(self) -> dict[ResourcePattern, VersionedAcls]:
        """Every resource with an ACL znode in both stores, read in pipelined batches (authorizer start)."""
        patterns: dict[str, ResourcePattern] = {}
        for pattern_type in PatternType:
            for resource_type in ResourceType:
                for name in self.get_acl_resource_names(pattern_type, resource_type):
                    pattern = ResourcePattern(resource_type, name, pattern_type)
                    try:
                        patterns[AclZNodes.path(pattern)] = pattern
                    except ValueError:  # a child name no path can be built for: nothing to read
                        continue
        found = self.get_data_many(list(patterns))
        out = {}
        for path, entry in found.items():
            if entry is not None:
                out[patterns[path]] = self._decode_lenient(path, entry)
        return out

    def _decode_lenient(self, path: str, found: tuple[bytes, ZnodeStat] | None) -> VersionedAcls:
        if found is None:
            return VersionedAcls(frozenset(), UNKNOWN_VERSION)
        data, stat = found
        try:
            acls = AclZNodes.decode(data, path)
        except (ZNodeDataError, ValueError, TypeError, KeyError, AttributeError) as e:
            self.bad_znodes.report(e, path, data, stat, NO_ACLS_INSTEAD)
            return VersionedAcls(frozenset(), stat.version)
        self.bad_znodes.cleared(path)
        return VersionedAcls(acls, stat.version)

    def create_acls_for_resource_if_not_exists(
        self, pattern: ResourcePattern, acls: Iterable[AclEntry]
    ) -> tuple[bool, int]:
        try:
            self.create(AclZNodes.path(pattern), AclZNodes.encode(acls), makepath=True)
        except NodeExistsError:
            return False, UNKNOWN_VERSION
        return True, 0

    def conditional_set_acls(
        self, pattern: ResourcePattern, acls: Iterable[AclEntry], expected_version: int
    ) -> tuple[bool, int]:
        try:
            stat = self.set_data(AclZNodes.path(pattern), AclZNodes.encode(acls), expected_version)
        except (BadVersionError, NoNodeError):
            return False, UNKNOWN_VERSION
        return True, stat.version

    def conditional_delete_acls(self, pattern: ResourcePattern, expected_version: int) -> bool:
        try:
            self.call(self._zk.delete, AclZNodes.path(pattern), expected_version)
        except NoNodeError:
            return True
        except BadVersionError:
            return False
        return True

    def update_resource_acls(
        self,
        pattern: ResourcePattern,
        update: Callable[[frozenset[AclEntry]], Iterable[AclEntry]],
    ) -> frozenset[AclEntry]:
        """Read-modify-conditional-write of one resource's ACLs, then a change notification.

        Returns the ACLs now stored. Raises ZkError if the write keeps conflicting.
        """
        for attempt in range(self.ACL_UPDATE_MAX_ATTEMPTS):
            # Lenient: a znode whose data does not decode counts as no ACLs (as the authorizer reads
            # it), so an update replaces it instead of failing forever.
            current = self.get_acls_lenient(pattern)
            new = frozenset(update(current.acls))
            if new == current.acls:
                return new
            if not new:
                ok = self.conditional_delete_acls(pattern, current.zk_version)
            elif current.zk_version == UNKNOWN_VERSION:
                ok, _ = self.create_acls_for_resource_if_not_exists(pattern, new)
            else:
                ok, _ = self.conditional_set_acls(pattern, new, current.zk_version)
            if ok:
                self.create_acl_change_notification(pattern)
                return new
            # Another broker changed the same resource: back off with jitter and retry.
            time.sleep(min(0.05 * (2**attempt), 1.0) * random.uniform(0.5, 1.0))
        raise ZkError(f"could not update ACLs of {pattern} after {self.ACL_UPDATE_MAX_ATTEMPTS} conflicts")

    def create_acl_change_notification(self, pattern: ResourcePattern) -> str:
        if pattern.pattern_type is PatternType.LITERAL:
            queue, data = LiteralAclChangeZNode.SEQUENCE, LiteralAclChangeZNode.encode(pattern)
        else:
            queue, data = ExtendedAclChangeZNode.SEQUENCE, ExtendedAclChangeZNode.encode(pattern)
        return self.create(queue.path_prefix, data, sequential=True, makepath=True)

    # -- delegation tokens -----------------------------------------------------------------------------
    def create_delegation_token_paths(self) -> None:
        for path in DelegationTokenZNodes.all_paths():
            self.ensure_path(path)

    def set_or_create_delegation_token(self, info: DelegationTokenInfo) -> None:
        self.set_or_create(
            DelegationTokenInfoZNode.path(info.token_id), DelegationTokenInfoZNode.encode(info)
        )

    def get_delegation_token(self, token_id: str) -> DelegationTokenInfo | None:
        path = DelegationTokenInfoZNode.path(token_id)
        found = self.get_data(path)
        return None if found is None else DelegationTokenInfoZNode.decode(found[0], path)

    def get_delegation_token_ids(self) -> list[str]:
        return sorted(self.get_children(DelegationTokenZNodes.TOKENS) or [])

    def delete_delegation_token(self, token_id: str) -> bool:
        return self.delete(DelegationTokenInfoZNode.path(token_id))

    def create_token_change_notification(self, token_id: str) -> str:
        queue = TokenChangeZNode.SEQUENCE
        return self.create(
            queue.path_prefix, TokenChangeZNode.encode(token_id), sequential=True, makepath=True
        )
