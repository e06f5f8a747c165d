"""SCRAM credentials as ZooKeeper-mode Kafka stores them, and the broker's credential cache.

`/config/users/<sanitized user>` holds `{"version":1,"config":{"SCRAM-SHA-512":"salt=<b64>,stored_key=<b64>,
server_key=<b64>,iterations=<n>", ...}}` next to any quota keys of the same user, and every change is
announced by `/config/changes/config_change_N` = `{"version":2,"entity_path":"users/<sanitized user>"}`
(what `kafka-configs --zookeeper --entity-type users --alter --add-config 'SCRAM-SHA-512=[...]'` writes).

Only the salt, StoredKey, ServerKey and iteration count are kept (RFC 5802 §5.1): the password is used
once to derive them and is never stored, logged or put in an exception message.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import logging
import secrets
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from scramp.utils import h as scram_h
from scramp.utils import hi as scram_hi
from scramp.utils import hmac as scram_hmac

from zkafka.zk.client import KafkaZkClient
from zkafka.zk.model import ConfigType
from zkafka.zk.notifications import ChangeNotificationListener
from zkafka.zk.sanitizer import DEFAULT_ENTITY
from zkafka.zk.znodes import (
    CONFIG_CHANGES,
    ConfigEntityChangeNotificationZNode,
    config_entity_display_name,
    config_entity_name,
)

__all__ = [
    "DEFAULT_ITERATIONS",
    "MAX_ITERATIONS",
    "MECHANISMS",
    "ScramCredential",
    "ScramCredentialCache",
    "ScramCredentialError",
    "ScramMechanismInfo",
    "credentials_of",
    "delete_credential",
    "describe_credentials",
    "make_credential",
    "new_salt",
    "salted_password",
    "upsert_credential",
    "user_display_name",
    "user_znode_name",
]

log = logging.getLogger(__name__)


class ScramCredentialError(ValueError):
    """A bad mechanism, iteration count, user or stored credential; never carries a password."""


@dataclass(frozen=True, slots=True)
class ScramMechanismInfo:
    name: str
    hash_function: Callable[..., Any]
    min_iterations: int


MECHANISMS: dict[str, ScramMechanismInfo] = {
    "SCRAM-SHA-256": ScramMechanismInfo("SCRAM-SHA-256", hashlib.sha256, 4096),
    "SCRAM-SHA-512": ScramMechanismInfo("SCRAM-SHA-512", hashlib.sha512, 4096),
}
DEFAULT_ITERATIONS = 4096
MAX_ITERATIONS = 16384
"""Kafka refuses more (KIP-554): each authentication costs the broker this many HMACs."""
SALT_BYTES = 32


def mechanism_info(name: str) -> ScramMechanismInfo:
    try:
        return MECHANISMS[name]
    except KeyError:
        raise ScramCredentialError(
            f"unknown SCRAM mechanism {name!r} (known: {', '.join(MECHANISMS)})"
        ) from None


@dataclass(frozen=True, slots=True)
class ScramCredential:
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    def __repr__(self) -> str:  # keys are password-equivalent for an offline attack: keep them out of logs
        return f"ScramCredential(iterations={self.iterations})"

    def to_config_value(self) -> str:
        """Kafka's ScramCredentialUtils.credentialToString."""
        b64 = base64.b64encode
        return (
            f"salt={b64(self.salt).decode()},stored_key={b64(self.stored_key).decode()},"
            f"server_key={b64(self.server_key).decode()},iterations={self.iterations}"
        )

    @classmethod
    def from_config_value(cls, text: str) -> ScramCredential:
        """Kafka's credentialFromString: exactly the four keys, comma-separated `key=value` (values are
        standard base64 with padding, so only the first `=` of each part separates)."""
        fields: dict[str, str] = {}
        for part in text.split(","):
            key, sep, value = part.partition("=")
            if not sep or key in fields:
                raise ScramCredentialError("stored SCRAM credential is not key=value,... with unique keys")
            fields[key.strip()] = value.strip()
        if set(fields) != {"salt", "stored_key", "server_key", "iterations"}:
            raise ScramCredentialError(
                f"stored SCRAM credential has keys {sorted(fields)}, expected "
                "salt, stored_key, server_key, iterations"
            )
        try:
            salt, stored, server = (
                base64.b64decode(fields[k], validate=True) for k in ("salt", "stored_key", "server_key")
            )
            iterations = int(fields["iterations"])
        except (binascii.Error, ValueError):
            raise ScramCredentialError("stored SCRAM credential has bad base64 or iterations") from None
        if iterations <= 0 or not salt or not stored or not server:
            raise ScramCredentialError("stored SCRAM credential has an empty value or iterations <= 0")
        return cls(salt, stored, server, iterations)


def make_credential(
    mechanism: str, password: str, iterations: int = DEFAULT_ITERATIONS, salt: bytes | None = None
) -> ScramCredential:
    """Derive salt/StoredKey/ServerKey from a password with scramp's RFC 5802 primitives:
    SaltedPassword = Hi(password, salt, i), StoredKey = H(HMAC(SaltedPassword, "Client Key")),
    ServerKey = HMAC(SaltedPassword, "Server Key").

    The password's UTF-8 bytes go in as they are, like Kafka's ScramFormatter and the Java and
    librdkafka clients do, rather than through scramp's `make_auth_info`, which SASLprep-normalises the
    password first: for a password SASLprep would change, only the raw bytes give keys those clients can
    log in with. (For every other password the two agree; tests/security check that against scramp.)"""
    info = mechanism_info(mechanism)
    if not isinstance(iterations, int) or not info.min_iterations <= iterations <= MAX_ITERATIONS:
        raise ScramCredentialError(
            f"{mechanism} iterations must be between {info.min_iterations} and {MAX_ITERATIONS}, "
            f"got {iterations}"
        )
    if not isinstance(password, str) or not password:
        raise ScramCredentialError("the SCRAM password must be a non-empty string")
    salt = secrets.token_bytes(SALT_BYTES) if salt is None else salt
    hf = info.hash_function
    salted = salted_password(mechanism, password, salt, iterations)
    stored_key = scram_h(hf, scram_hmac(hf, salted, b"Client Key"))
    server_key = scram_hmac(hf, salted, b"Server Key")
    return ScramCredential(salt, stored_key, server_key, iterations)


def salted_password(mechanism: str, password: str, salt: bytes, iterations: int) -> bytes:
    """SaltedPassword = Hi(UTF-8 password, salt, i) (RFC 5802), what a KIP-554 upsertion carries."""
    return scram_hi(mechanism_info(mechanism).hash_function, password.encode("utf-8"), salt, iterations)


def new_salt() -> bytes:
    return secrets.token_bytes(SALT_BYTES)


def user_znode_name(user: str) -> str:
    """The sanitized `/config/users` child of a user (ScramCredentialError for no name or <default>)."""
    if not isinstance(user, str) or not user:
        raise ScramCredentialError("the SCRAM user name must be a non-empty string")
    if user == DEFAULT_ENTITY:
        raise ScramCredentialError("SCRAM credentials are per user, not for <default>")
    try:
        return config_entity_name(ConfigType.USER, user)
    except ValueError as e:
        raise ScramCredentialError(str(e)) from None


def upsert_credential(
    zk: KafkaZkClient, user: str, mechanism: str, password: str, iterations: int = DEFAULT_ITERATIONS
) -> ScramCredential:
    """Create or replace `user`'s credential for `mechanism`, keeping the user's other config keys
    (quotas, the other mechanism), then write the change notification."""
    credential = make_credential(mechanism, password, iterations)
    name = user_znode_name(user)
    config = zk.get_entity_config(ConfigType.USER, name)
    config[mechanism] = credential.to_config_value()
    zk.set_entity_config(ConfigType.USER, name, config)
    log.info("SCRAM credential %s for user %r set (%d iterations)", mechanism, user, iterations)
    return credential


def delete_credential(zk: KafkaZkClient, user: str, mechanism: str) -> bool:
    """Remove `user`'s credential for `mechanism`; False if there was none. The user's znode stays (with
    its other keys, or an empty config), as Kafka's tool leaves it."""
    mechanism_info(mechanism)
    name = user_znode_name(user)
    config = zk.get_entity_config(ConfigType.USER, name)
    if mechanism not in config:
        return False
    del config[mechanism]
    zk.set_entity_config(ConfigType.USER, name, config)
    log.info("SCRAM credential %s for user %r deleted", mechanism, user)
    return True


def describe_credentials(zk: KafkaZkClient, user: str) -> dict[str, int]:
    """mechanism -> iterations of `user`'s credentials (what DescribeUserScramCredentials shows); a stored
    value that does not parse is left out (and logged)."""
    config = zk.get_entity_config(ConfigType.USER, user_znode_name(user))
    return {m: c.iterations for m, c in credentials_of(user, config).items()}


def credentials_of(user: str, config: Mapping[str, str]) -> dict[str, ScramCredential]:
    """The SCRAM credentials in one user's config (the others keys are quotas); bad ones logged, skipped."""
    out = {}
    for mechanism in MECHANISMS:
        value = config.get(mechanism)
        if value is None:
            continue
        try:
            out[mechanism] = ScramCredential.from_config_value(value)
        except ScramCredentialError as e:
            # The value itself stays out of the log line: it is password-equivalent.
            log.warning("ignoring %s credential of user %r: %s", mechanism, user, e)
    return out


class ScramCredentialCache:
    """(mechanism, user) -> credential for the SASL/SCRAM server, loaded from `/config/users` and
    refreshed per user on `/config/changes` notifications (Kafka's CredentialCache + UserConfigHandler).

    Reads (`get`) take no lock: the dict is replaced, never mutated, so the event loop reads it freely
    while a ZooKeeper thread refreshes it."""

    def __init__(self, zk: KafkaZkClient, mechanisms: Iterable[str] = MECHANISMS) -> None:
        self.zk = zk
        self.mechanisms = tuple(mechanism_info(m).name for m in mechanisms)
        self._credentials: dict[tuple[str, str], ScramCredential] = {}
        self._lock = threading.Lock()

    def get(self, mechanism: str, user: str) -> ScramCredential | None:
        return self._credentials.get((mechanism, user))

    def __len__(self) -> int:
        return len(self._credentials)

    def load(self) -> None:
        """Read every user's credentials (blocking)."""
        names = [n for n in self.zk.get_all_entities(ConfigType.USER) if n != DEFAULT_ENTITY]
        configs = self.zk.get_entity_configs(ConfigType.USER, names)
        fresh: dict[tuple[str, str], ScramCredential] = {}
        for name, config in configs.items():
            user = user_display_name(name)
            if user is None:
                continue
            for mechanism, credential in credentials_of(user, config).items():
                if mechanism in self.mechanisms:
                    fresh[(mechanism, user)] = credential
        with self._lock:
            self._credentials = fresh
        log.info("SCRAM credential cache loaded: %d credentials", len(fresh))

    def refresh_user(self, znode_name: str) -> None:
        """Re-read one user (by its sanitized znode name) and publish the result (blocking)."""
        user = user_display_name(znode_name)
        if user is None:
            return
        configs = self.zk.get_entity_configs(ConfigType.USER, [znode_name])
        found = credentials_of(user, configs.get(znode_name, {}))
        with self._lock:
            updated = {k: v for k, v in self._credentials.items() if k[1] != user}
            for mechanism, credential in found.items():
                if mechanism in self.mechanisms:
                    updated[(mechanism, user)] = credential
            self._credentials = updated

    def on_config_change(self, entity_path: str) -> None:
        """A `/config/changes` entity path; only `users/<user>` concerns credentials (a
        `users/<u>/clients/<c>` path is a quota of that pair, `users/<default>` has no credentials)."""
        entity_type, _, rest = entity_path.partition("/")
        if entity_type != ConfigType.USER.value or "/" in rest or rest in ("", DEFAULT_ENTITY):
            return
        self.refresh_user(rest)

    def handle_notification(self, name: str, data: bytes) -> None:
        """A ChangeNotificationListener handler for `/config/changes` (blocking)."""
        notification = ConfigEntityChangeNotificationZNode.decode(data, CONFIG_CHANGES.path(name))
        self.on_config_change(notification.entity_path)

    def listener(self) -> ChangeNotificationListener:
        """A listener of its own on `/config/changes` (standalone use and tests; a broker feeds
        `on_config_change` from its one dynamic-config listener instead)."""
        return ChangeNotificationListener(self.zk, CONFIG_CHANGES, self.handle_notification)


def user_display_name(znode_name: str) -> str | None:
    """The user a `/config/users` child names (None, logged, if it is not a sanitized name)."""
    try:
        return config_entity_display_name(ConfigType.USER, znode_name)
    except ValueError as e:
        log.warning("ignoring /config/users/%s: %s", znode_name, e)
        return None
