"""SCRAM credentials as ZooKeeper-mode Kafka stores them, and the broker's credential cache.

`/config/users/<sanitized user>` holds `{"version":1,"config":{"SCRAM-SHA-512":"salt=<b64>,stored_key=<b64>,
server_key=<b64>,iterations=<n>", ...}}` next to any quota keys of the same user, and every change is
announced by `/config/changes/config_change_N` = `{"version":2,"entity_path":"users/<sanitized user>"}`
(what `kafka-configs --zookeeper --entity-type users --alter --add-config 'SCRAM-SHA-512=[...]'` writes).

Only the salt, StoredKey, ServerKey and iteration count are kept (RFC 5802 §5.1): the password is used
once to derive them and is never stored, logged or put in an exception message.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Mapping

from zkafka.security.scram_credentials import (
    DEFAULT_ITERATIONS,
    MAX_ITERATIONS,
    MECHANISMS,
    ScramCredential,
    ScramCredentialError,
    ScramMechanismInfo,
    make_credential,
    mechanism_info,
    new_salt,
    salted_password,
)
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
