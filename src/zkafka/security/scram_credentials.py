"""SCRAM credentials themselves (RFC 5802 / KIP-554): mechanisms, the salted-password derivation, and
Kafka's stored form `salt=<b64>,stored_key=<b64>,server_key=<b64>,iterations=<n>`.

No ZooKeeper here (that is `zkafka.security.scram`): the client's KIP-554 admin calls use these
too, and a client process should not import the broker's ZooKeeper stack to salt a password.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from scramp.utils import h as scram_h
from scramp.utils import hi as scram_hi
from scramp.utils import hmac as scram_hmac

__all__ = [
    "DEFAULT_ITERATIONS",
    "MAX_ITERATIONS",
    "MECHANISMS",
    "MECHANISM_CODES",
    "MECHANISM_NAMES",
    "SALT_BYTES",
    "ScramCredential",
    "ScramCredentialError",
    "ScramMechanismInfo",
    "make_credential",
    "mechanism_info",
    "new_salt",
    "salted_password",
]

MECHANISM_CODES = {"SCRAM-SHA-256": 1, "SCRAM-SHA-512": 2}
"""Kafka's ScramMechanism type bytes (0 is UNKNOWN)."""
MECHANISM_NAMES = {code: name for name, code in MECHANISM_CODES.items()}


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
