"""The credentials a broker or a tool authenticates to ZooKeeper with, found the way Kafka finds them.

Kafka's ZooKeeper client reads the JAAS file named by the JVM system property
`java.security.auth.login.config`, which operators set in `KAFKA_OPTS`
(`-Djava.security.auth.login.config=/etc/kafka/jaas.conf`), and logs in with its `Client` section
(another name with `-Dzookeeper.sasl.clientconfig=<section>`). zkafka reads the same file from the same
environment variable and takes the section's ZooKeeper DigestLoginModule `username` and `password`:

    Client {
        org.apache.zookeeper.server.auth.DigestLoginModule required
        username="kafka"
        password="kafka-secret";
    };

The session then authenticates with ZooKeeper's digest scheme (`addauth digest kafka:kafka-secret`), so
the znodes it creates under `zookeeper.set.acl=true` belong to `digest:kafka:<hash>`. (Kafka uses the
same module for SASL DIGEST-MD5, whose ACL identity is `sasl:kafka`; ZooKeeper's digest scheme needs no
server-side JAAS set-up.) Errors never show the password.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping
from pathlib import Path

from zkafka.security.jaas import JaasConfigError, parse_jaas_file
from zkafka.zk.znode_acls import DigestCredentials

__all__ = ["DIGEST_LOGIN_MODULE", "ZooKeeperAuthError", "zookeeper_credentials"]

DIGEST_LOGIN_MODULE = "org.apache.zookeeper.server.auth.DigestLoginModule"
JAAS_PROPERTY = "java.security.auth.login.config"
SECTION_PROPERTY = "zookeeper.sasl.clientconfig"


class ZooKeeperAuthError(ValueError):
    """The JAAS file cannot give ZooKeeper credentials; names the file, never a password."""


def _system_properties(kafka_opts: str) -> dict[str, str]:
    out = {}
    try:
        words = shlex.split(kafka_opts)
    except ValueError:
        words = kafka_opts.split()
    for word in words:
        if word.startswith("-D") and "=" in word:
            key, _, value = word[2:].partition("=")
            out[key] = value
    return out


def zookeeper_credentials(env: Mapping[str, str] | None = None) -> DigestCredentials | None:
    """The digest user of the JAAS file `KAFKA_OPTS` names (None when it names none)."""
    env = os.environ if env is None else env
    props = _system_properties(env.get("KAFKA_OPTS", ""))
    path = props.get(JAAS_PROPERTY)
    if not path:
        return None
    section = props.get(SECTION_PROPERTY, "Client")
    try:
        sections = parse_jaas_file(Path(path).read_text())
    except OSError as e:
        raise ZooKeeperAuthError(f"{JAAS_PROPERTY}={path}: {e.strerror or e}") from None
    except JaasConfigError as e:
        raise ZooKeeperAuthError(f"{JAAS_PROPERTY}={path}: {e}") from None
    modules = [m for m in sections.get(section, []) if m.class_name == DIGEST_LOGIN_MODULE]
    if not modules:
        if section not in sections:
            return None  # a JAAS file for other logins (KafkaServer only): no ZooKeeper login, as Kafka
        raise ZooKeeperAuthError(
            f"{JAAS_PROPERTY}={path}: section {section} has no {DIGEST_LOGIN_MODULE} "
            "(the only ZooKeeper login zkafka supports)"
        )
    options = modules[0].options
    try:
        return DigestCredentials(options.get("username", ""), options.get("password", ""))
    except ValueError as e:
        raise ZooKeeperAuthError(f"{JAAS_PROPERTY}={path}, section {section}: {e}") from None
