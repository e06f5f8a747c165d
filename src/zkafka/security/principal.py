"""`KafkaPrincipal`: who a connection is (`User:alice`), as Kafka's ACLs and `super.users` name it."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ANONYMOUS", "USER_TYPE", "WILDCARD_USER", "KafkaPrincipal", "parse_principal", "sasl_principal"]

USER_TYPE = "User"


@dataclass(frozen=True, slots=True)
class KafkaPrincipal:
    """Equality is on type and name, both case-sensitive, as in Kafka (`User:Alice` != `User:alice`)."""

    principal_type: str
    name: str

    def __str__(self) -> str:
        return f"{self.principal_type}:{self.name}"


ANONYMOUS = KafkaPrincipal(USER_TYPE, "ANONYMOUS")
"""PLAINTEXT connections, and TLS clients that sent no certificate."""

WILDCARD_USER = KafkaPrincipal(USER_TYPE, "*")


def parse_principal(text: str) -> KafkaPrincipal:
    """`Type:name` (Kafka's SecurityUtils.parseKafkaPrincipal): split at the first colon, both parts
    required; the name may itself contain colons (an mTLS DN rarely does, a SASL name may)."""
    if not isinstance(text, str):
        raise ValueError(f"a principal must be a string, got {type(text).__name__}")
    principal_type, sep, name = text.partition(":")
    if not sep or not principal_type or not name:
        raise ValueError(f"expected a principal in the form principalType:principalName, got {text!r}")
    return KafkaPrincipal(principal_type, name)


def sasl_principal(authorization_id: str) -> KafkaPrincipal:
    """DefaultKafkaPrincipalBuilder for SASL: the authorization id, as a `User`."""
    return KafkaPrincipal(USER_TYPE, authorization_id)
