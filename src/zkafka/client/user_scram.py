"""Users' SCRAM credentials through a broker (KIP-554): DescribeUserScramCredentials and
AlterUserScramCredentials, used by `AdminClient` and `zkafka configs --bootstrap-server --entity-type
users`.

A new credential is sent as its salt and SaltedPassword = Hi(password, salt, iterations), computed
here: the password itself never leaves the client, and is kept out of every repr.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from zkafka.protocol import ErrorCode, KafkaError, Message
from zkafka.protocol.messages import (
    AlterUserScramCredentialsRequest,
    AlterUserScramCredentialsResponse,
    DescribeUserScramCredentialsRequest,
    DescribeUserScramCredentialsResponse,
)
from zkafka.security.scram_credentials import (
    DEFAULT_ITERATIONS,
    MECHANISM_CODES,
    MECHANISM_NAMES,
    mechanism_info,
    new_salt,
    salted_password,
)

__all__ = [
    "ScramDeletion",
    "ScramUpsertion",
    "alter_user_scram_credentials",
    "describe_user_scram_credentials",
]


class Sender(Protocol):
    """What these calls need of `zkafka.client.cluster.Cluster`."""

    async def send_any(self, request: Message, *, max_version: int | None = None) -> Message: ...


@dataclass(frozen=True)
class ScramUpsertion:
    user: str
    mechanism: str
    password: str = field(repr=False)
    iterations: int = DEFAULT_ITERATIONS
    salt: bytes | None = field(default=None, repr=False)
    """None: a fresh random salt."""


@dataclass(frozen=True)
class ScramDeletion:
    user: str
    mechanism: str


def _code(mechanism: str) -> int:
    mechanism_info(mechanism)  # ScramCredentialError (a ValueError) for an unknown one
    return MECHANISM_CODES[mechanism]


async def describe_user_scram_credentials(
    cluster: Sender, users: Sequence[str] | None = None
) -> dict[str, dict[str, int] | KafkaError]:
    """user -> {mechanism: iterations}, or the broker's error for that user; every user with a
    credential when `users` is None or empty. A top-level error raises."""
    request = DescribeUserScramCredentialsRequest(
        users=None if users is None else [DescribeUserScramCredentialsRequest.UserName(name=u) for u in users]
    )
    resp = await cluster.send_any(request)
    assert isinstance(resp, DescribeUserScramCredentialsResponse)
    if resp.error_code != ErrorCode.NONE:
        raise KafkaError(resp.error_code, resp.error_message)
    out: dict[str, dict[str, int] | KafkaError] = {}
    for r in resp.results:
        if r.error_code != ErrorCode.NONE:
            out[r.user] = KafkaError(r.error_code, r.error_message)
        else:
            out[r.user] = {
                MECHANISM_NAMES.get(c.mechanism, f"UNKNOWN({c.mechanism})"): c.iterations
                for c in r.credential_infos
            }
    return out


async def alter_user_scram_credentials(
    cluster: Sender, upsertions: Sequence[ScramUpsertion] = (), deletions: Sequence[ScramDeletion] = ()
) -> dict[str, KafkaError | None]:
    """Apply the changes; user -> None (altered) or the broker's error (that user was left as it was)."""
    request = AlterUserScramCredentialsRequest(
        deletions=[
            AlterUserScramCredentialsRequest.ScramCredentialDeletion(
                name=d.user, mechanism=_code(d.mechanism)
            )
            for d in deletions
        ],
        upsertions=[],
    )
    for u in upsertions:
        salt = u.salt if u.salt is not None else new_salt()
        request.upsertions.append(
            AlterUserScramCredentialsRequest.ScramCredentialUpsertion(
                name=u.user,
                mechanism=_code(u.mechanism),
                iterations=u.iterations,
                salt=salt,
                salted_password=salted_password(u.mechanism, u.password, salt, u.iterations),
            )
        )
    resp = await cluster.send_any(request)
    assert isinstance(resp, AlterUserScramCredentialsResponse)
    return {
        r.user: None if r.error_code == ErrorCode.NONE else KafkaError(r.error_code, r.error_message)
        for r in resp.results
    }
