"""How each listener authenticates its connections (docs/security.md), built once at start-up.

`ListenerSecurity` is one listener's setup: its security protocol, the SSLContext of an SSL or
SASL_SSL listener (Kafka's `ssl.*` keys, `listener.name.<listener>.ssl.*` overriding them), the
`ssl.principal.mapping.rules`, and for SASL listeners the enabled mechanisms with what they check
against (PLAIN: the PlainLoginModule's `user_<name>` options; SCRAM: the broker's credential cache,
loaded from `/config/users` and kept current by `/config/changes`).

`inter_broker_client_security` is how this broker connects to the others (replica fetchers, the
controller's channels, controlled shutdown): the inter-broker listener's protocol with the broker's
own keys and the listener JAAS config's username/password.

`SaslSession` is one SASL connection's state, as Kafka's SaslServerAuthenticator:
* before authentication only ApiVersions, SaslHandshake (v0-1) and, after a v1 handshake,
  SaslAuthenticate are served; anything else closes the connection (the dispatcher asks `allows`);
* a SaslHandshake v0 means the tokens follow as raw size-prefixed frames (`raw_token`);
* frames before authentication are limited to `sasl.server.max.receive.size`;
* KIP-368: with `connections.max.reauth.ms` the session expires; a client that re-authenticates
  (SaslHandshake + SaslAuthenticate on the same connection, as the same principal) keeps its
  connection, one that sends anything else after expiry is closed.
"""

from __future__ import annotations

import logging
import ssl
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from zkafka.client.security import ClientSecurity, ClientSecurityError
from zkafka.config import BrokerConfig
from zkafka.protocol import ApiKey
from zkafka.security.jaas import (
    PLAIN_LOGIN_MODULE,
    JaasConfigError,
    listener_jaas_config,
    plain_users,
    single_login_module,
)
from zkafka.security.sasl import SaslServer, SaslStep, create_sasl_server
from zkafka.security.scram import MECHANISMS as SCRAM_MECHANISMS
from zkafka.security.scram import ScramCredentialCache
from zkafka.security.ssl_principal import NoMatchingRuleError, SslPrincipalMapper, ssl_principal
from zkafka.security.tls import SslConfigError, listener_ssl_config, server_ssl_context

log = logging.getLogger(__name__)

SUPPORTED_MECHANISMS = ("PLAIN", *SCRAM_MECHANISMS)
ANONYMOUS = "User:ANONYMOUS"
PRE_AUTH_APIS = frozenset({ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE})


class SecurityConfigError(ValueError):
    """A listener's security settings cannot work; never names a secret."""


@dataclass(slots=True)
class ListenerSecurity:
    listener: str
    protocol: str
    ssl_context: ssl.SSLContext | None = None
    ssl_mapper: SslPrincipalMapper | None = None
    mechanisms: tuple[str, ...] = ()
    """The enabled mechanisms this broker can serve, in `sasl.enabled.mechanisms` order."""
    plain_users: Mapping[str, str] | None = field(default=None, repr=False)
    scram: ScramCredentialCache | None = None
    reauth_ms: int = 0
    max_receive_size: int = 524288
    """Largest frame before authentication (`sasl.server.max.receive.size`)."""
    max_request_bytes: int = 104857600
    """... and after it (`socket.request.max.bytes`)."""

    @property
    def is_sasl(self) -> bool:
        return self.protocol in ("SASL_PLAINTEXT", "SASL_SSL")

    def ssl_principal(self, peer_certificate_der: bytes | None) -> str:
        """The principal of an SSL connection (ANONYMOUS without a client certificate). Raises
        NoMatchingRuleError when no `ssl.principal.mapping.rules` rule applies to its DN."""
        assert self.ssl_mapper is not None
        return str(ssl_principal(peer_certificate_der, self.ssl_mapper))

    def sasl_server(self, mechanism: str) -> SaslServer:
        return create_sasl_server(mechanism, plain_users=self.plain_users, scram_credentials=self.scram_get)

    def scram_get(self, mechanism: str, user: str):
        return None if self.scram is None else self.scram.get(mechanism, user)


def build_listener_security(
    config: BrokerConfig, scram: ScramCredentialCache | None
) -> dict[str, ListenerSecurity]:
    """listener name -> its security; SecurityConfigError (or SslConfigError) if one cannot work."""
    props = config.security_properties()
    out: dict[str, ListenerSecurity] = {}
    for ep in config.listeners:
        name, protocol = ep.listener_name, ep.security_protocol.upper()
        sec = ListenerSecurity(
            name,
            protocol,
            reauth_ms=config.connections_max_reauth_ms,
            max_receive_size=config.sasl_server_max_receive_size,
            max_request_bytes=config.socket_request_max_bytes,
        )
        if protocol in ("SSL", "SASL_SSL"):
            ssl_props = listener_ssl_config(props, name)
            if "ssl.client.auth" not in ssl_props and protocol == "SSL":
                ssl_props["ssl.client.auth"] = config.ssl_client_auth
            try:
                sec.ssl_context = server_ssl_context(ssl_props)
            except SslConfigError as e:
                raise SslConfigError(f"listener {name}: {e}") from None
            sec.ssl_mapper = SslPrincipalMapper.from_rules(
                ssl_props.get("ssl.principal.mapping.rules", config.ssl_principal_mapping_rules)
            )
        if sec.is_sasl:
            enabled = _listener_mechanisms(props, name, config.sasl_enabled_mechanisms)
            served = tuple(m for m in enabled if m in SUPPORTED_MECHANISMS)
            unsupported = [m for m in enabled if m not in SUPPORTED_MECHANISMS]
            if unsupported:
                log.warning(
                    "listener %s: SASL mechanisms %s are not supported and not offered",
                    name,
                    ", ".join(unsupported),
                )
            if not served:
                raise SecurityConfigError(
                    f"listener {name} ({protocol}) has no supported SASL mechanism: sasl.enabled.mechanisms "
                    f"is {','.join(enabled) or 'empty'}; set it to some of {', '.join(SUPPORTED_MECHANISMS)}"
                )
            if "PLAIN" in served:
                jaas = listener_jaas_config(props, name, "PLAIN")
                if jaas is None:
                    raise SecurityConfigError(
                        f"listener {name}: PLAIN needs listener.name.{name.lower()}.plain.sasl.jaas.config "
                        '(a PlainLoginModule with user_<name>="<password>" options)'
                    )
                try:
                    sec.plain_users = plain_users(single_login_module(jaas, PLAIN_LOGIN_MODULE))
                except JaasConfigError as e:
                    raise SecurityConfigError(f"listener {name}: PLAIN sasl.jaas.config: {e}") from None
            if any(m in SCRAM_MECHANISMS for m in served):
                sec.scram = scram
            sec.mechanisms = served
            inter_mechanism = config.sasl_mechanism_inter_broker_protocol.strip().upper()
            if name == config.inter_broker_listener_name and inter_mechanism not in served:
                # Kafka's check too: the brokers could not log in to each other.
                raise SecurityConfigError(
                    f"sasl.mechanism.inter.broker.protocol {inter_mechanism} is not enabled on the "
                    f"inter-broker listener {name} (it serves {', '.join(served)})"
                )
        out[name] = sec
    return out


def inter_broker_client_security(config: BrokerConfig) -> ClientSecurity | None:
    """How this broker connects to the others (replica fetchers, the controller's channels,
    controlled shutdown): the inter-broker listener's protocol, with the broker's own `ssl.*` keys
    (`listener.name.<l>.ssl.*` first; the keystore is presented when the listener asks for a client
    certificate) and, for SASL, `sasl.mechanism.inter.broker.protocol` logging in with the
    `username`/`password` options of the listener's JAAS config for that mechanism, as Kafka's
    broker does. None for PLAINTEXT. SecurityConfigError when it cannot work; never names a secret."""
    endpoint = config.inter_broker_endpoint
    protocol, listener = endpoint.security_protocol.upper(), endpoint.listener_name
    if protocol == "PLAINTEXT":
        return None
    props = config.security_properties()
    client: dict[str, str] = {"security.protocol": protocol}
    if protocol in ("SSL", "SASL_SSL"):
        client.update(listener_ssl_config(props, listener))
    if protocol in ("SASL_PLAINTEXT", "SASL_SSL"):
        mechanism = config.sasl_mechanism_inter_broker_protocol.strip().upper()
        jaas = listener_jaas_config(props, listener, mechanism)
        if jaas is None:
            raise SecurityConfigError(
                f"the inter-broker listener {listener} uses SASL {mechanism}: set "
                f"listener.name.{listener.lower()}.{mechanism.lower()}.sasl.jaas.config with the "
                'broker\'s own username="..." password="..."'
            )
        client["sasl.mechanism"] = mechanism
        client["sasl.jaas.config"] = jaas
    try:
        return ClientSecurity.from_config(client)
    except (ClientSecurityError, SslConfigError) as e:
        raise SecurityConfigError(f"inter-broker listener {listener}: {e}") from None


def _listener_mechanisms(
    props: Mapping[str, str], listener: str, default: tuple[str, ...]
) -> tuple[str, ...]:
    key = f"listener.name.{listener.lower()}.sasl.enabled.mechanisms"
    if key in props:
        return tuple(m.strip().upper() for m in props[key].split(",") if m.strip())
    return tuple(m.upper() for m in default)


def needs_scram(config: BrokerConfig) -> bool:
    """Whether a SASL listener may serve SCRAM (the broker then loads the credential cache)."""
    props = config.security_properties()
    return any(
        m in SCRAM_MECHANISMS
        for ep in config.listeners
        if ep.security_protocol.upper() in ("SASL_PLAINTEXT", "SASL_SSL")
        for m in _listener_mechanisms(props, ep.listener_name, config.sasl_enabled_mechanisms)
    )


class SaslSession:
    """The SASL state of one connection (see the module doc)."""

    __slots__ = ("authenticated", "expires_at", "principal", "raw", "security", "server", "version")

    def __init__(self, security: ListenerSecurity) -> None:
        self.security = security
        self.server: SaslServer | None = None  # between a handshake and the end of its exchange
        self.raw = False  # SaslHandshake v0: the next frames are raw tokens
        self.version = -1  # the SaslHandshake version of the exchange in progress
        self.authenticated = False
        self.principal: str | None = None
        self.expires_at: float | None = None  # time.monotonic() deadline (KIP-368)

    def allows(self, api_key: int) -> str | None:
        """None if a request of `api_key` may be served now, else why the connection closes."""
        if not self.authenticated:
            if api_key in PRE_AUTH_APIS:
                return None
            return f"unexpected request (api key {api_key}) before SASL authentication"
        if (
            self.expires_at is not None
            and time.monotonic() > self.expires_at
            and api_key not in PRE_AUTH_APIS
        ):
            return "SASL session expired (connections.max.reauth.ms) and the client did not re-authenticate"
        return None

    def handshake(self, mechanism: str, version: int) -> bool:
        """Start an exchange with `mechanism`; False if it is not enabled here."""
        if mechanism not in self.security.mechanisms:
            return False
        try:
            self.server = self.security.sasl_server(mechanism)
        except ValueError:
            return False
        self.version = version
        self.raw = version == 0
        return True

    def authenticate(self, token: bytes, version: int = -1) -> SaslStep:
        """One token of the exchange in progress (`version`: the SaslAuthenticate version, -1 for a
        raw v0 token); on completion the connection is authenticated (a re-authentication must keep
        the principal, as Kafka requires). Only a client told its session lifetime (SaslAuthenticate
        v1+) gets one: older clients cannot re-authenticate."""
        server = self.server
        if server is None:
            return SaslStep(error="SaslAuthenticate without a SaslHandshake first")
        step = server.evaluate(token)
        if step.failed:
            self.server = None
            self.raw = False
            return step
        if step.complete:
            principal = str(server.principal)
            self.server = None
            self.raw = False
            if self.authenticated and principal != self.principal:
                return SaslStep(
                    error="Cannot change principals during re-authentication from "
                    f"{self.principal}: {principal}"
                )
            self.principal = principal
            self.authenticated = True
            reauth = self.security.reauth_ms
            # Only clients that can re-authenticate (SaslAuthenticate v1+) get a lifetime.
            self.expires_at = time.monotonic() + reauth / 1000 if reauth > 0 and version >= 1 else None
        return step

    def session_lifetime_ms(self) -> int:
        return self.security.reauth_ms if self.authenticated and self.expires_at is not None else 0


__all__ = [
    "ANONYMOUS",
    "SUPPORTED_MECHANISMS",
    "ListenerSecurity",
    "NoMatchingRuleError",
    "SaslSession",
    "SecurityConfigError",
    "build_listener_security",
    "inter_broker_client_security",
    "needs_scram",
]
