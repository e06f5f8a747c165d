"""Which ZooKeeper ACLs the znodes of a cluster carry (`zookeeper.set.acl`), as ZooKeeper-mode Kafka
chooses them (its ZkData.defaultAcls):

* not secure: world may do everything (ZooKeeper's OPEN_ACL_UNSAFE), the default;
* secure: the creator may do everything (the identity the session authenticated with, here a digest
  user) and the world may read, except below the sensitive roots `/config/users` (SCRAM credentials),
  `/config/brokers` (dynamic broker configs, which may hold passwords) and `/delegation_token`, which
  only the creator may read;
* `/consumers` (the old consumers' offsets and owners) stays open either way: those consumers write
  below it with sessions of their own.

Paths are relative to the chroot. `DigestCredentials` is the session's digest identity (ZooKeeper's
`addauth digest user:password`); its password stays out of every repr.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kazoo.security import ACL, CREATOR_ALL_ACL, OPEN_ACL_UNSAFE, READ_ACL_UNSAFE

__all__ = ["CONSUMERS_PATH", "SENSITIVE_ROOTS", "DigestCredentials", "default_acls", "is_sensitive"]

SENSITIVE_ROOTS = ("/config/users", "/config/brokers", "/delegation_token")
CONSUMERS_PATH = "/consumers"


@dataclass(frozen=True)
class DigestCredentials:
    username: str
    password: str = field(repr=False)

    def __post_init__(self) -> None:
        if not self.username or ":" in self.username or not self.password:
            raise ValueError("a ZooKeeper digest user needs a username without ':' and a password")

    def auth_data(self) -> list[tuple[str, str]]:
        """kazoo's `auth_data`: the session authenticates with the digest scheme."""
        return [("digest", f"{self.username}:{self.password}")]


def is_sensitive(path: str) -> bool:
    return any(path == root or path.startswith(root + "/") for root in SENSITIVE_ROOTS)


def default_acls(path: str, secure: bool) -> list[ACL]:
    """The ACLs a znode at `path` is created with (see the module doc)."""
    if not secure or path == CONSUMERS_PATH or path.startswith(CONSUMERS_PATH + "/"):
        return list(OPEN_ACL_UNSAFE)
    if is_sensitive(path):
        return list(CREATOR_ALL_ACL)
    return [*CREATOR_ALL_ACL, *READ_ACL_UNSAFE]
