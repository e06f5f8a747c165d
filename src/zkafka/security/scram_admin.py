"""DescribeUserScramCredentials and AlterUserScramCredentials (KIP-554) over `/config/users`, with the
checks and error codes of ZooKeeper-mode Kafka's admin manager.

Describe: no users (null or empty) lists every user that has a credential; a named user without one is
RESOURCE_NOT_FOUND, a user named twice DUPLICATE_RESOURCE.

Alter: every change of one user is checked first, and a user with any bad change is not altered at all:
an empty name or a salt/salted password missing is UNACCEPTABLE_CREDENTIAL, as are iterations outside
4096..16384; a mechanism that is not SCRAM-SHA-256/512 UNSUPPORTED_SASL_MECHANISM; the same
(user, mechanism) twice in one request DUPLICATE_RESOURCE; deleting a credential that does not exist
RESOURCE_NOT_FOUND. The good users' changes are written, one znode write and one `/config/changes`
notification per user, so every broker's credential cache follows.

An upsertion carries only the salt and SaltedPassword = Hi(password, salt, i); StoredKey and ServerKey
are derived from it here (RFC 5802) and the password never reaches the broker. Salted passwords are
kept out of every repr and message.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from scramp.utils import h as scram_h
from scramp.utils import hmac as scram_hmac

from zkafka.protocol import ErrorCode
from zkafka.security.scram import (
    MAX_ITERATIONS,
    MECHANISMS,
    ScramCredential,
    ScramCredentialError,
    credentials_of,
    user_display_name,
    user_znode_name,
)
from zkafka.security.scram_credentials import MECHANISM_CODES, MECHANISM_NAMES
from zkafka.zk.client import KafkaZkClient
from zkafka.zk.model import ConfigType
from zkafka.zk.sanitizer import DEFAULT_ENTITY

__all__ = [
    "MECHANISM_CODES",
    "MECHANISM_NAMES",
    "Deletion",
    "Upsertion",
    "UserResult",
    "alter_credentials",
    "credential_from_salted_password",
    "describe_credentials",
]


@dataclass(frozen=True, slots=True)
class Deletion:
    user: str
    mechanism: int


@dataclass(frozen=True, slots=True)
class Upsertion:
    user: str
    mechanism: int
    iterations: int
    salt: bytes = field(repr=False)
    salted_password: bytes = field(repr=False)


@dataclass(slots=True)
class UserResult:
    user: str
    error_code: int = ErrorCode.NONE
    error_message: str | None = None
    credentials: dict[str, int] = field(default_factory=dict)
    """mechanism -> iterations (Describe only)."""


def credential_from_salted_password(
    mechanism: str, salt: bytes, salted_password: bytes, iterations: int
) -> ScramCredential:
    """StoredKey = H(HMAC(SaltedPassword, "Client Key")), ServerKey = HMAC(SaltedPassword, "Server Key")."""
    hf = MECHANISMS[mechanism].hash_function
    stored_key = scram_h(hf, scram_hmac(hf, salted_password, b"Client Key"))
    server_key = scram_hmac(hf, salted_password, b"Server Key")
    return ScramCredential(bytes(salt), stored_key, server_key, iterations)


def describe_credentials(zk: KafkaZkClient, users: Sequence[str] | None) -> list[UserResult]:
    """One result per requested user (in request order), or per user with a credential when `users` is
    None or empty (sorted)."""
    if not users:
        names = [n for n in zk.get_all_entities(ConfigType.USER) if n != DEFAULT_ENTITY]
        out = []
        for name, config in sorted(zk.get_entity_configs(ConfigType.USER, names).items()):
            user = user_display_name(name)
            found = credentials_of(user, config) if user is not None else {}
            if user is not None and found:
                out.append(UserResult(user, credentials={m: c.iterations for m, c in found.items()}))
        return out
    counts = Counter(users)
    results: list[UserResult] = []
    seen: set[str] = set()
    for user in users:
        if user in seen:
            continue
        seen.add(user)
        if counts[user] > 1:
            results.append(
                UserResult(
                    user,
                    ErrorCode.DUPLICATE_RESOURCE,
                    f"Cannot describe SCRAM credentials for the same user twice in a single request: {user}",
                )
            )
            continue
        try:
            name = user_znode_name(user)
        except ScramCredentialError as e:
            results.append(UserResult(user, ErrorCode.RESOURCE_NOT_FOUND, str(e)))
            continue
        found = credentials_of(user, zk.get_entity_config(ConfigType.USER, name))
        if not found:
            results.append(
                UserResult(
                    user,
                    ErrorCode.RESOURCE_NOT_FOUND,
                    f"Attempt to describe a user credential that does not exist: {user}",
                )
            )
            continue
        results.append(UserResult(user, credentials={m: c.iterations for m, c in found.items()}))
    return results


def _check(change: Deletion | Upsertion) -> tuple[int, str] | None:
    if not change.user:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"
    if change.user == DEFAULT_ENTITY:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, "SCRAM credentials are per user, not for <default>"
    name = MECHANISM_NAMES.get(change.mechanism)
    if name is None:
        return ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"
    if isinstance(change, Upsertion):
        minimum = MECHANISMS[name].min_iterations
        if change.iterations < minimum:
            return ErrorCode.UNACCEPTABLE_CREDENTIAL, f"Too few iterations (minimum {minimum} for {name})"
        if change.iterations > MAX_ITERATIONS:
            return ErrorCode.UNACCEPTABLE_CREDENTIAL, f"Too many iterations (maximum {MAX_ITERATIONS})"
        if not change.salt or not change.salted_password:
            return ErrorCode.UNACCEPTABLE_CREDENTIAL, "The salt and the salted password must not be empty"
    return None


def alter_credentials(
    zk: KafkaZkClient, deletions: Sequence[Deletion], upsertions: Sequence[Upsertion]
) -> list[UserResult]:
    """Apply the changes (see the module doc); one result per user, in first-mention order."""
    changes: list[Deletion | Upsertion] = [*deletions, *upsertions]
    order: list[str] = []
    errors: dict[str, tuple[int, str]] = {}
    pairs = Counter((c.user, c.mechanism) for c in changes)
    for change in changes:
        if change.user not in order:
            order.append(change.user)
        if change.user in errors:
            continue
        problem = _check(change)
        if problem is None and pairs[(change.user, change.mechanism)] > 1:
            problem = (
                ErrorCode.DUPLICATE_RESOURCE,
                "A user credential cannot be altered twice in the same request",
            )
        if problem is not None:
            errors[change.user] = problem
    results: list[UserResult] = []
    for user in order:
        if user in errors:
            results.append(UserResult(user, *errors[user]))
            continue
        try:
            results.append(_alter_user(zk, user, changes))
        except ScramCredentialError as e:
            results.append(UserResult(user, ErrorCode.UNACCEPTABLE_CREDENTIAL, str(e)))
    return results


def _alter_user(zk: KafkaZkClient, user: str, changes: Sequence[Deletion | Upsertion]) -> UserResult:
    name = user_znode_name(user)
    config = zk.get_entity_config(ConfigType.USER, name)
    for change in changes:
        if change.user != user:
            continue
        mechanism = MECHANISM_NAMES[change.mechanism]
        if isinstance(change, Deletion):
            if mechanism not in config:
                return UserResult(
                    user,
                    ErrorCode.RESOURCE_NOT_FOUND,
                    "Attempt to delete a user credential that does not exist",
                )
            del config[mechanism]
        else:
            credential = credential_from_salted_password(
                mechanism, change.salt, change.salted_password, change.iterations
            )
            config[mechanism] = credential.to_config_value()
    zk.set_entity_config(ConfigType.USER, name, config)
    return UserResult(user)
