"""Kafka's topic-name rules (the `Topic` helper in Kafka's clients).

* legal: non-empty, not `.` or `..`, at most 249 characters, only `[a-zA-Z0-9._-]`. 249 = 255 (a
  typical file-name limit) minus room for the `-<partition>` suffix of the log directory and the
  `-delete`/`.<uuid>` suffixes used while deleting.
* collisions: metrics replace `.` with `_`, so `a.b` and `a_b` would report into the same metric
  names; a new topic colliding that way with an existing one is refused (INVALID_TOPIC), while an exact
  match is TOPIC_ALREADY_EXISTS.
* internal: `__consumer_offsets` and `__transaction_state` are created by the brokers themselves;
  `__cluster_metadata` is KRaft's metadata log and is never a valid ZooKeeper-mode topic.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from zkafka.zk.errors import InvalidTopicError, TopicExistsError

__all__ = [
    "CLUSTER_METADATA_TOPIC",
    "GROUP_METADATA_TOPIC",
    "INTERNAL_TOPICS",
    "MAX_TOPIC_NAME_LENGTH",
    "TRANSACTION_STATE_TOPIC",
    "check_topic_creatable",
    "colliding_topics",
    "has_collision_chars",
    "is_internal_topic",
    "is_valid_topic_name",
    "unify_collision_chars",
    "validate_topic_name",
]

MAX_TOPIC_NAME_LENGTH = 249
GROUP_METADATA_TOPIC = "__consumer_offsets"
TRANSACTION_STATE_TOPIC = "__transaction_state"
CLUSTER_METADATA_TOPIC = "__cluster_metadata"
INTERNAL_TOPICS = frozenset({GROUP_METADATA_TOPIC, TRANSACTION_STATE_TOPIC})

_LEGAL = re.compile(r"[a-zA-Z0-9._-]+")


def validate_topic_name(name: str) -> None:
    """Raise InvalidTopicError unless `name` is a legal topic name."""
    if not isinstance(name, str):
        raise InvalidTopicError(f"Topic name must be a string, got {type(name).__name__}")
    if not name:
        raise InvalidTopicError("Topic name is illegal, it can't be empty")
    if name in (".", ".."):
        raise InvalidTopicError(f"Topic name cannot be {name!r}")
    if len(name) > MAX_TOPIC_NAME_LENGTH:
        raise InvalidTopicError(
            f"Topic name is illegal, it can't be longer than {MAX_TOPIC_NAME_LENGTH} characters, "
            f"topic name: {name[:60]}... ({len(name)} characters)"
        )
    if not _LEGAL.fullmatch(name):
        bad = sorted({c for c in name if not _LEGAL.fullmatch(c)})
        raise InvalidTopicError(
            f"Topic name {name!r} is illegal, it contains a character other than ASCII alphanumerics, "
            f"'.', '_' and '-' (found {', '.join(repr(c) for c in bad)})"
        )


def is_valid_topic_name(name: str) -> bool:
    try:
        validate_topic_name(name)
    except InvalidTopicError:
        return False
    return True


def is_internal_topic(name: str) -> bool:
    return name in INTERNAL_TOPICS


def has_collision_chars(name: str) -> bool:
    return "." in name or "_" in name


def unify_collision_chars(name: str) -> str:
    return name.replace(".", "_")


def colliding_topics(name: str, existing: Iterable[str]) -> list[str]:
    """Existing topics (other than `name` itself) that map to the same metric name as `name`."""
    if not has_collision_chars(name):
        # Without '.'/'_' only an identical name could unify to the same string.
        return []
    unified = unify_collision_chars(name)
    return sorted(t for t in existing if t != name and unify_collision_chars(t) == unified)


def check_topic_creatable(
    name: str,
    existing: Iterable[str],
    *,
    marked_for_deletion: Iterable[str] = (),
    allow_internal: bool = False,
) -> None:
    """Every name-level check Kafka runs before creating a topic.

    Raises InvalidTopicError (illegal, reserved or colliding name) or TopicExistsError (exact match or
    still queued for deletion).
    """
    validate_topic_name(name)
    if name == CLUSTER_METADATA_TOPIC:
        raise InvalidTopicError(f"Topic name {name!r} is reserved for KRaft's metadata log")
    if is_internal_topic(name) and not allow_internal:
        raise InvalidTopicError(f"Topic {name!r} is an internal topic and is created by the brokers only")
    existing = set(existing)
    if name in existing:
        raise TopicExistsError(f"Topic '{name}' already exists.")
    if name in set(marked_for_deletion):
        raise TopicExistsError(f"Topic '{name}' is marked for deletion.")
    collisions = colliding_topics(name, existing)
    if collisions:
        raise InvalidTopicError(
            f"Topic '{name}' collides with existing topics: {', '.join(collisions)} "
            "(topics whose names differ only in '.' vs '_' would share metric names)"
        )
