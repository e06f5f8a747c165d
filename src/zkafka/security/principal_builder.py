"""Kafka's DefaultKafkaPrincipalBuilder: who a connection is, from how it authenticated.

PLAINTEXT: `User:ANONYMOUS`. SSL: the client certificate's DN after `ssl.principal.mapping.rules`, or
ANONYMOUS without a certificate. SASL_PLAINTEXT / SASL_SSL: `User:<authorization id>` from the SASL
mechanism (on SASL_SSL the certificate does not count, as in Kafka).
"""

from __future__ import annotations

from zkafka.security.principal import ANONYMOUS, KafkaPrincipal, sasl_principal
from zkafka.security.ssl_principal import DEFAULT_MAPPER, SslPrincipalMapper, ssl_principal

__all__ = ["build_principal"]


def build_principal(
    security_protocol: str,
    *,
    sasl_authorization_id: str | None = None,
    peer_certificate_der: bytes | None = None,
    ssl_mapper: SslPrincipalMapper = DEFAULT_MAPPER,
) -> KafkaPrincipal:
    protocol = security_protocol.upper()
    if protocol == "PLAINTEXT":
        return ANONYMOUS
    if protocol == "SSL":
        return ssl_principal(peer_certificate_der, ssl_mapper)
    if protocol in ("SASL_PLAINTEXT", "SASL_SSL"):
        if not sasl_authorization_id:
            raise ValueError(f"a {protocol} connection has a principal only after SASL authentication")
        return sasl_principal(sasl_authorization_id)
    raise ValueError(f"unknown security protocol {security_protocol!r}")
