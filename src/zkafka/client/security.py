"""How a client connection secures itself, from Kafka's client keys (a tool's `--command-config`):

* `security.protocol`: PLAINTEXT (default), SSL, SASL_PLAINTEXT, SASL_SSL;
* TLS: Kafka's `ssl.*` client keys through `zkafka.security.tls.client_ssl_context`
  (`ssl.truststore.*`, `ssl.keystore.*` for mTLS, `ssl.endpoint.identification.algorithm`); the
  librdkafka spellings `ssl.ca.location`, `ssl.certificate.location` + `ssl.key.location` are taken
  too;
* SASL: `sasl.mechanism` PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (default GSSAPI, as Kafka's, which is
  not supported), with the user from `sasl.jaas.config` (`username="..." password="..."` of a
  PlainLoginModule or ScramLoginModule) or librdkafka's `sasl.username`/`sasl.password`.

`ClientSecurity.authenticate` runs SaslHandshake v1 and SaslAuthenticate on a fresh connection.
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from scramp import ScramClient

from zkafka.protocol import ErrorCode
from zkafka.protocol.messages import SaslAuthenticateRequest, SaslHandshakeRequest
from zkafka.security.jaas import single_login_module
from zkafka.security.tls import client_ssl_context


class BrokerConnection(Protocol):
    """What authenticating needs of `zkafka.client.connection.BrokerConnection`."""

    host: str
    port: int

    async def send(self, request: Any, *, version: int | None = None, timeout: float = 30.0) -> Any: ...

    def pick_version(self, api_key: int, max_version: int | None = None) -> int: ...


__all__ = ["ClientSecurity", "ClientSecurityError", "is_security_key", "librdkafka_security_config"]

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")


class ClientSecurityError(ValueError):
    """A client security config that cannot work, or a failed authentication; never a secret."""


def is_security_key(key: str) -> bool:
    """Whether a Kafka client property is one `ClientSecurity.from_config` reads."""
    return key == "security.protocol" or key.startswith(("sasl.", "ssl."))


_JAVA_ONLY = ("ssl.truststore.type", "ssl.keystore.type", "ssl.truststore.location", "ssl.keystore.location")


def librdkafka_security_config(config: Mapping[str, str]) -> dict[str, str]:
    """Kafka's (Java) client keys in librdkafka's spelling, for tools that drive confluent-kafka with a
    user's Kafka client config: `sasl.jaas.config`'s username/password become `sasl.username` /
    `sasl.password`, a PEM truststore `ssl.ca.location`, a PEM keystore (key and chain in one file)
    `ssl.certificate.location` + `ssl.key.location`, an empty `ssl.endpoint.identification.algorithm`
    `none`; every other key is passed through."""
    out = {k: v for k, v in config.items() if k not in _JAVA_ONLY and k != "sasl.jaas.config"}
    jaas = config.get("sasl.jaas.config")
    if jaas:
        try:
            options = single_login_module(jaas).options
        except ValueError as e:
            raise ClientSecurityError(f"sasl.jaas.config: {e}") from None
        for key, option in (("sasl.username", "username"), ("sasl.password", "password")):
            if option in options:
                out.setdefault(key, options[option])
    for kind, key in (("truststore", "ssl.ca.location"), ("keystore", "ssl.certificate.location")):
        location = config.get(f"ssl.{kind}.location")
        if location is None:
            continue
        if (config.get(f"ssl.{kind}.type") or "JKS").upper() != "PEM":
            raise ClientSecurityError(f"ssl.{kind}.location: only PEM files can be given to librdkafka")
        out.setdefault(key, location)
        if kind == "keystore":
            out.setdefault("ssl.key.location", location)
    if config.get("ssl.endpoint.identification.algorithm", None) == "":
        out["ssl.endpoint.identification.algorithm"] = "none"
    return out


@dataclass(frozen=True)
class ClientSecurity:
    protocol: str = "PLAINTEXT"
    ssl_context: ssl.SSLContext | None = None
    mechanism: str | None = None
    username: str | None = None
    password: str | None = field(default=None, repr=False)

    @classmethod
    def from_config(cls, config: Mapping[str, str]) -> ClientSecurity:
        protocol = (config.get("security.protocol") or "PLAINTEXT").strip().upper()
        if protocol not in PROTOCOLS:
            raise ClientSecurityError(
                f"security.protocol must be one of {', '.join(PROTOCOLS)}, got {protocol!r}"
            )
        context = None
        if protocol in ("SSL", "SASL_SSL"):
            ssl_config = {k: v for k, v in config.items() if k.startswith("ssl.")}
            if "ssl.ca.location" in ssl_config and "ssl.truststore.location" not in ssl_config:
                ssl_config["ssl.truststore.type"] = "PEM"
                ssl_config["ssl.truststore.location"] = ssl_config["ssl.ca.location"]
            try:
                context = client_ssl_context(ssl_config)
                if "ssl.certificate.location" in ssl_config and "ssl.key.location" in ssl_config:
                    context.load_cert_chain(
                        ssl_config["ssl.certificate.location"],
                        ssl_config["ssl.key.location"],
                        ssl_config.get("ssl.key.password"),
                    )
            except (ValueError, OSError, ssl.SSLError) as e:
                raise ClientSecurityError(f"TLS client config: {e}") from None
        mechanism = username = password = None
        if protocol.startswith("SASL_"):
            mechanism = (config.get("sasl.mechanism") or "GSSAPI").strip().upper()
            if mechanism not in MECHANISMS:
                raise ClientSecurityError(
                    f"sasl.mechanism {mechanism} is not supported (use {', '.join(MECHANISMS)})"
                )
            username, password = config.get("sasl.username"), config.get("sasl.password")
            jaas = config.get("sasl.jaas.config")
            if jaas:
                try:
                    options = single_login_module(jaas).options
                except ValueError as e:
                    raise ClientSecurityError(f"sasl.jaas.config: {e}") from None
                username, password = options.get("username", username), options.get("password", password)
            if not username or not password:
                raise ClientSecurityError(
                    "SASL needs a user: username and password in sasl.jaas.config "
                    "(or sasl.username and sasl.password)"
                )
        return cls(protocol, context, mechanism, username, password)

    @property
    def is_sasl(self) -> bool:
        return self.mechanism is not None

    async def authenticate(self, conn: BrokerConnection, timeout: float) -> None:
        """SaslHandshake v1, then the mechanism's SaslAuthenticate exchange (ClientSecurityError on
        failure, with the broker's message)."""
        assert self.mechanism and self.username is not None and self.password is not None
        handshake = await conn.send(
            SaslHandshakeRequest(mechanism=self.mechanism), version=1, timeout=timeout
        )
        if handshake.error_code != ErrorCode.NONE:
            raise ClientSecurityError(
                f"SASL mechanism {self.mechanism} refused by {conn.host}:{conn.port} "
                f"(enabled: {', '.join(handshake.mechanisms) or 'none'})"
            )
        version = min(1, conn.pick_version(SaslAuthenticateRequest.API_KEY))
        if self.mechanism == "PLAIN":
            tokens = [f"\0{self.username}\0{self.password}".encode()]
            await self._exchange(conn, tokens[0], version, timeout)
            return
        client = ScramClient([self.mechanism], self.username, self.password)
        first = await self._exchange(conn, client.get_client_first().encode(), version, timeout)
        try:
            client.set_server_first(first.decode())
            final = await self._exchange(conn, client.get_client_final().encode(), version, timeout)
            client.set_server_final(final.decode())
        except ClientSecurityError:
            raise
        except Exception as e:  # scramp: a server signature that does not verify
            raise ClientSecurityError(f"SCRAM exchange with {conn.host}:{conn.port} failed: {e}") from None

    @staticmethod
    async def _exchange(conn: BrokerConnection, token: bytes, version: int, timeout: float) -> bytes:
        response = await conn.send(
            SaslAuthenticateRequest(auth_bytes=token), version=version, timeout=timeout
        )
        if response.error_code != ErrorCode.NONE:
            raise ClientSecurityError(
                f"SASL authentication with {conn.host}:{conn.port} failed: "
                f"{response.error_message or ErrorCode(response.error_code).name}"
            )
        return bytes(response.auth_bytes)
