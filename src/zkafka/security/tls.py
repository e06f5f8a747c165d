"""TLS contexts from Kafka's `ssl.*` keys, for a listener (server) and for a client.

Keystores (our certificate and key):
* `ssl.keystore.type=PEM` (KIP-651): `ssl.keystore.location` = a PEM file holding the private key
  (PKCS#8, encrypted with `ssl.key.password` or not) and the certificate chain; or inline
  `ssl.keystore.key` + `ssl.keystore.certificate.chain`. `ssl.keystore.password` is refused for PEM,
  as Kafka refuses it.
* `ssl.keystore.type=PKCS12`: `ssl.keystore.location` + `ssl.keystore.password`, read with `cryptography`.
* JKS (Kafka's default type) cannot be read here: converting it is one `keytool -importkeystore
  -deststoretype PKCS12` away, and the error says so.

Truststores: PEM (`ssl.truststore.location` or inline `ssl.truststore.certificates`) or PKCS12; none
configured means the system's CAs.

`ssl.client.auth` none|requested|required (server), `ssl.enabled.protocols` (the lowest and highest
listed bound the handshake), `ssl.endpoint.identification.algorithm` https (default: the client checks
the broker's host name) or empty (it does not).

Python's `ssl` loads certificates and keys only from files: the key is written to a private temporary
file, re-encrypted with a one-time random password first, so it never touches the disk in clear, and
the file is removed before the context is returned.
"""

from __future__ import annotations

import logging
import os
import secrets
import ssl
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.serialization import pkcs12

__all__ = [
    "SslConfigError",
    "client_ssl_context",
    "listener_ssl_config",
    "server_ssl_context",
]

log = logging.getLogger(__name__)

_PROTOCOLS = {
    "TLSv1": ssl.TLSVersion.TLSv1,
    "TLSv1.1": ssl.TLSVersion.TLSv1_1,
    "TLSv1.2": ssl.TLSVersion.TLSv1_2,
    "TLSv1.3": ssl.TLSVersion.TLSv1_3,
}
DEFAULT_ENABLED_PROTOCOLS = "TLSv1.2,TLSv1.3"
_CLIENT_AUTH = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL, "required": ssl.CERT_REQUIRED}


class SslConfigError(ValueError):
    """A TLS configuration that cannot work; names the key, never a password or key material."""


def listener_ssl_config(config: Mapping[str, str], listener_name: str) -> dict[str, str]:
    """`config` with `listener.name.<listener>.ssl.*` overriding `ssl.*`, as Kafka resolves them."""
    prefix = f"listener.name.{listener_name.lower()}."
    merged = {k: v for k, v in config.items() if k.startswith("ssl.")}
    merged.update({k[len(prefix) :]: v for k, v in config.items() if k.startswith(prefix + "ssl.")})
    return merged


def _get(config: Mapping[str, str], key: str) -> str | None:
    value = config.get(key)
    if value is None:
        return None
    value = str(value).strip()
    return value or None


@dataclass(frozen=True)
class _KeyMaterial:
    key: object  # a cryptography private key
    chain: list[x509.Certificate]


def _load_pem_key_material(
    key_pem: bytes, chain_pem: bytes, key_password: str | None, where: str
) -> _KeyMaterial:
    try:
        key = serialization.load_pem_private_key(key_pem, key_password.encode() if key_password else None)
    except TypeError:
        raise SslConfigError(
            f"{where}: the private key is encrypted and ssl.key.password is not set"
        ) from None
    except ValueError:
        raise SslConfigError(
            f"{where}: the private key does not load (bad PEM, or wrong ssl.key.password)"
        ) from None
    try:
        chain = x509.load_pem_x509_certificates(chain_pem)
    except ValueError:
        raise SslConfigError(f"{where}: no PEM certificate chain found") from None
    return _KeyMaterial(key, chain)


def _read(path: str, key: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise SslConfigError(f"{key} {path!r}: {e.strerror}") from None


def _keystore(config: Mapping[str, str]) -> _KeyMaterial | None:
    store_type = (_get(config, "ssl.keystore.type") or "JKS").upper()
    location = _get(config, "ssl.keystore.location")
    inline_key = _get(config, "ssl.keystore.key")
    inline_chain = _get(config, "ssl.keystore.certificate.chain")
    password = _get(config, "ssl.keystore.password")
    key_password = _get(config, "ssl.key.password")
    if location is None and inline_key is None and inline_chain is None:
        return None
    if (inline_key or inline_chain) and store_type != "PEM":
        raise SslConfigError("ssl.keystore.key and ssl.keystore.certificate.chain need ssl.keystore.type=PEM")
    if store_type == "PEM":
        if password is not None:
            raise SslConfigError(
                "ssl.keystore.password cannot be set with ssl.keystore.type=PEM (use ssl.key.password)"
            )
        if location is not None:
            if inline_key or inline_chain:
                raise SslConfigError(
                    "set either ssl.keystore.location or the inline PEM keystore keys, not both"
                )
            data = _read(location, "ssl.keystore.location")
            return _load_pem_key_material(data, data, key_password, f"ssl.keystore.location {location!r}")
        if inline_key is None or inline_chain is None:
            raise SslConfigError(
                "an inline PEM keystore needs both ssl.keystore.key and ssl.keystore.certificate.chain"
            )
        return _load_pem_key_material(
            inline_key.encode(), inline_chain.encode(), key_password, "ssl.keystore.key"
        )
    if store_type == "PKCS12":
        if location is None:
            raise SslConfigError("ssl.keystore.type=PKCS12 needs ssl.keystore.location")
        data = _read(location, "ssl.keystore.location")
        try:
            key, cert, extra = pkcs12.load_key_and_certificates(data, password.encode() if password else None)
        except ValueError:
            raise SslConfigError(
                f"ssl.keystore.location {location!r}: not a PKCS12 keystore, or wrong ssl.keystore.password"
            ) from None
        if key is None or cert is None:
            raise SslConfigError(
                f"ssl.keystore.location {location!r}: the keystore holds no private key entry"
            )
        return _KeyMaterial(key, [cert, *extra])
    if store_type == "JKS":
        raise SslConfigError(
            "ssl.keystore.type JKS (Kafka's default) is not supported: set ssl.keystore.type=PKCS12 after "
            "`keytool -importkeystore -srckeystore <jks> -destkeystore <p12> -deststoretype PKCS12`, "
            "or use PEM"
        )
    raise SslConfigError(f"unknown ssl.keystore.type {store_type!r} (PEM, PKCS12)")


def _trusted_pem(config: Mapping[str, str]) -> str | None:
    """The trusted certificates as PEM text, or None for the system's CAs."""
    store_type = (_get(config, "ssl.truststore.type") or "JKS").upper()
    location = _get(config, "ssl.truststore.location")
    inline = _get(config, "ssl.truststore.certificates")
    password = _get(config, "ssl.truststore.password")
    if location is None and inline is None:
        return None
    if inline is not None and store_type != "PEM":
        raise SslConfigError("ssl.truststore.certificates needs ssl.truststore.type=PEM")
    if store_type == "PEM":
        if password is not None:
            raise SslConfigError("ssl.truststore.password cannot be set with ssl.truststore.type=PEM")
        if location is not None and inline is not None:
            raise SslConfigError(
                "set either ssl.truststore.location or ssl.truststore.certificates, not both"
            )
        data = inline.encode() if inline is not None else _read(location or "", "ssl.truststore.location")
        try:
            certs = x509.load_pem_x509_certificates(data)
        except ValueError:
            raise SslConfigError("the PEM truststore holds no certificate") from None
    elif store_type == "PKCS12":
        if location is None:
            raise SslConfigError("ssl.truststore.type=PKCS12 needs ssl.truststore.location")
        data = _read(location, "ssl.truststore.location")
        try:
            loaded = pkcs12.load_pkcs12(data, password.encode() if password else None)
        except ValueError:
            raise SslConfigError(
                f"ssl.truststore.location {location!r}: not a PKCS12 truststore, "
                "or wrong ssl.truststore.password"
            ) from None
        certs = [c.certificate for c in loaded.additional_certs]
        if loaded.cert is not None:
            certs.insert(0, loaded.cert.certificate)
        if not certs:
            raise SslConfigError(f"ssl.truststore.location {location!r}: the truststore holds no certificate")
    elif store_type == "JKS":
        raise SslConfigError(
            "ssl.truststore.type JKS (Kafka's default) is not supported: convert it to PKCS12 with keytool, "
            "or use PEM"
        )
    else:
        raise SslConfigError(f"unknown ssl.truststore.type {store_type!r} (PEM, PKCS12)")
    return "".join(c.public_bytes(serialization.Encoding.PEM).decode() for c in certs)


def _load_into(context: ssl.SSLContext, material: _KeyMaterial) -> None:
    one_time = secrets.token_urlsafe(32)
    key_pem = material.key.private_bytes(  # type: ignore[attr-defined]
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(one_time.encode()),
    )
    chain_pem = b"".join(c.public_bytes(serialization.Encoding.PEM) for c in material.chain)
    with tempfile.TemporaryDirectory(prefix="zkafka-tls-") as directory:  # mode 0700
        path = os.path.join(directory, "keystore.pem")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(key_pem + chain_pem)
        try:
            context.load_cert_chain(path, password=one_time)
        except ssl.SSLError as e:
            raise SslConfigError(
                f"the keystore's key and certificate do not load together: {e.reason}"
            ) from None


def _protocols(context: ssl.SSLContext, config: Mapping[str, str]) -> None:
    text = _get(config, "ssl.enabled.protocols") or DEFAULT_ENABLED_PROTOCOLS
    names = [p.strip() for p in text.split(",") if p.strip()]
    unknown = [p for p in names if p not in _PROTOCOLS]
    if unknown or not names:
        raise SslConfigError(
            f"ssl.enabled.protocols {text!r}: unknown {unknown} (known: {', '.join(_PROTOCOLS)})"
        )
    versions = sorted(_PROTOCOLS[p] for p in names)
    context.minimum_version = versions[0]
    context.maximum_version = versions[-1]
    if _get(config, "ssl.cipher.suites"):
        # Kafka's names are Java's (IANA); mapping them to OpenSSL's is not done yet.
        log.warning(
            "ssl.cipher.suites is not applied yet: OpenSSL's default suites for the protocols are used"
        )


def _trust(context: ssl.SSLContext, config: Mapping[str, str]) -> None:
    pem = _trusted_pem(config)
    if pem is None:
        context.load_default_certs(
            ssl.Purpose.CLIENT_AUTH if context.check_hostname is False else ssl.Purpose.SERVER_AUTH
        )
    else:
        context.load_verify_locations(cadata=pem)


def server_ssl_context(config: Mapping[str, str]) -> ssl.SSLContext:
    """The context of an SSL or SASL_SSL listener (use `listener_ssl_config` for per-listener keys)."""
    material = _keystore(config)
    if material is None:
        raise SslConfigError("an SSL listener needs a keystore: ssl.keystore.location or ssl.keystore.key")
    client_auth = (_get(config, "ssl.client.auth") or "none").lower()
    if client_auth not in _CLIENT_AUTH:
        raise SslConfigError(f"ssl.client.auth must be none, requested or required, got {client_auth!r}")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    _protocols(context, config)
    _load_into(context, material)
    context.verify_mode = _CLIENT_AUTH[client_auth]
    if client_auth != "none":
        _trust(context, config)
    return context


def client_ssl_context(config: Mapping[str, str]) -> ssl.SSLContext:
    """The context of a client (tools, inter-broker, the client library): verifies the broker's chain
    against the truststore, its host name unless `ssl.endpoint.identification.algorithm` is empty, and
    presents the keystore's certificate if one is configured (mTLS)."""
    algorithm = config.get("ssl.endpoint.identification.algorithm", "https")
    algorithm = "" if algorithm is None else str(algorithm).strip().lower()
    if algorithm not in ("https", ""):
        raise SslConfigError(
            f"ssl.endpoint.identification.algorithm must be https or empty, got {algorithm!r}"
        )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = algorithm == "https"
    context.verify_mode = ssl.CERT_REQUIRED
    _protocols(context, config)
    _trust(context, config)
    material = _keystore(config)
    if material is not None:
        _load_into(context, material)
    return context
