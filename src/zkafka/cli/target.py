"""Which cluster a tool talks to: `--bootstrap-server`, `--zookeeper`, or the local cluster.

Every command that talks to a cluster adds its connection flags with `add_target_args`. When the
user gives none of them, `zkafka.cli.main` calls `fill_from_local_cluster` before the command
runs: the brokers (or the ZooKeeper, for commands that only speak ZooKeeper) of the cluster that
`zkafka cluster up` recorded in `--cluster-dir` (default `.zkafka/cluster`, as for `cluster up`)
are used, so

    zkafka cluster up --brokers 3
    zkafka topics --create --topic t --partitions 6 --replication-factor 3
    zkafka console-consumer --topic t --from-beginning

needs no port copied. With no such cluster running the command stops with one line saying what to
pass. This module is the only place that reads a local cluster's address for a tool,
`open_zookeeper` the one way an admin tool opens its `--zookeeper` session, and `client_security`
the one way a tool turns a client config file (`--command-config`, `--producer.config`, ...) into the
TLS/SASL settings of its broker connections.
"""

from __future__ import annotations

import argparse
import warnings
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from zkafka.cli.errors import CliError
from zkafka.cli.output import quiet_libraries

if TYPE_CHECKING:
    from zkafka.client.security import ClientSecurity
    from zkafka.local.launcher import LocalCluster
    from zkafka.zk.client import KafkaZkClient

DEFAULT_CLUSTER_DIR = Path(".zkafka/cluster")
"""Where `zkafka cluster up` keeps its cluster, relative to the working directory."""

ZOOKEEPER_TIMEOUT_S = 15.0
"""How long an admin tool waits for its ZooKeeper session."""

_FILLS = "target_fills"
"""Namespace attribute naming what a local cluster fills in: "bootstrap_server" or "zookeeper"."""


@dataclass(frozen=True)
class LocalTarget:
    """The addresses of a running local cluster."""

    directory: Path
    bootstrap_servers: str  # the live brokers, "" when none runs
    zookeeper_connect: str  # "" when its ZooKeeper does not answer


def add_target_args(
    parser: argparse.ArgumentParser,
    *,
    bootstrap: str | None = "brokers to connect to",
    zookeeper: str | None = None,
    broker_list: bool = False,
) -> None:
    """Add `--bootstrap-server` (help `bootstrap`; None: none), `--zookeeper` (help `zookeeper`;
    None: none), Kafka's older `--broker-list` spelling of --bootstrap-server if `broker_list`, all
    mutually exclusive and optional, and `--cluster-dir`."""
    where = parser.add_mutually_exclusive_group()
    if bootstrap is not None:
        where.add_argument("--bootstrap-server", metavar="HOST:PORT[,...]", help=bootstrap)
        if broker_list:
            where.add_argument(
                "--broker-list",
                dest="bootstrap_server",
                metavar="HOST:PORT[,...]",
                help="= --bootstrap-server",
            )
    if zookeeper is not None:
        where.add_argument("--zookeeper", metavar="HOST:PORT[/chroot]", help=zookeeper)
    given = " or ".join(f"--{f}" for f, h in (("bootstrap-server", bootstrap), ("zookeeper", zookeeper)) if h)
    parser.add_argument(
        "--cluster-dir",
        type=Path,
        default=DEFAULT_CLUSTER_DIR,
        metavar="DIR",
        help=f"without {given}: use the `zkafka cluster up` cluster running in DIR "
        f"(default {DEFAULT_CLUSTER_DIR})",
    )
    parser.set_defaults(**{_FILLS: "bootstrap_server" if bootstrap is not None else "zookeeper"})


def add_command_config_arg(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """`--command-config FILE`: Kafka's client keys for the brokers' listener (security.protocol,
    sasl.mechanism, sasl.jaas.config, ssl.truststore.*, ssl.keystore.*; see `client_security`)."""
    parser.add_argument(
        "--command-config",
        metavar="FILE",
        help="client config (security.protocol, sasl.*, ssl.*) for --bootstrap-server",
    )


def client_security(path: str | Path | None, flag: str = "--command-config") -> ClientSecurity | None:
    """The TLS/SASL settings in a Kafka client properties file (None without one): Kafka's keys
    `security.protocol`, `sasl.mechanism`, `sasl.jaas.config` (or librdkafka's `sasl.username`/
    `sasl.password`), `ssl.truststore.*`, `ssl.keystore.*` (or `ssl.ca.location`,
    `ssl.certificate.location`, `ssl.key.location`). A file that cannot be read or a config that
    cannot work is a one-line CliError naming `flag`, never a secret."""
    if path is None:
        return None
    from zkafka.config.properties import load_properties

    try:
        props = load_properties(path)
    except (ValueError, OSError) as e:
        raise CliError(f"{flag} {path}: {e}") from None
    return split_security(props, f"{flag} {path}")[0]


def split_security(props: Mapping[str, str], source: str) -> tuple[ClientSecurity | None, dict[str, str]]:
    """(the TLS/SASL settings of Kafka client properties, None for PLAINTEXT; the other properties),
    for tools whose config files and `--*-property` flags mix both (console and perf tools)."""
    from zkafka.client.security import ClientSecurity, is_security_key

    security = {k: v for k, v in props.items() if is_security_key(k)}
    rest = {k: v for k, v in props.items() if not is_security_key(k)}
    if not security:
        return None, rest
    try:
        found = ClientSecurity.from_config(security)
    except ValueError as e:
        raise CliError(f"{source}: {e}") from None
    return (None if found.protocol == "PLAINTEXT" else found), rest


def fill_from_local_cluster(args: argparse.Namespace) -> None:
    """Give `args` the local cluster's address when the command takes one and none was given."""
    fills = getattr(args, _FILLS, None)
    if fills is None or getattr(args, "bootstrap_server", None) or getattr(args, "zookeeper", None):
        return
    flag = f"--{fills.replace('_', '-')}"
    what_to_pass = f"pass {flag} {'HOST:PORT' if fills == 'bootstrap_server' else 'HOST:PORT[/chroot]'}"
    try:
        found = local_cluster(args.cluster_dir)
    except CliError as e:
        raise CliError(f"no {flag} given and {e}; {what_to_pass}") from None
    address = found.bootstrap_servers if fills == "bootstrap_server" else found.zookeeper_connect
    if not address:
        raise CliError(
            f"no {flag} given and the cluster in {found.directory} is not running "
            f"(`{_up_command(found.directory)}` starts it again); {what_to_pass}"
        )
    setattr(args, fills, address)


def local_cluster(directory: Path) -> LocalTarget:
    """The addresses of the cluster `zkafka cluster up` recorded in `directory`, as far as it runs."""
    cluster = load_local_cluster(directory)
    live = [b for b in sorted(cluster.brokers) if cluster.broker_alive(b)]
    # an external ZooKeeper (`cluster up --zookeeper`) outlives the cluster: it is named as recorded
    # and the tool reports it if it does not answer (it may not answer `ruok` even when it runs)
    zookeeper_running = not cluster.zookeeper_embedded or cluster.zookeeper_alive()
    return LocalTarget(
        directory,
        ",".join(cluster.brokers[b].bootstrap for b in live),
        cluster.zookeeper_connect if zookeeper_running else "",
    )


def load_local_cluster(directory: Path) -> LocalCluster:
    """The cluster recorded in `directory`, or a one-line CliError saying there is none."""
    from zkafka.local.launcher import STATE_FILE, LocalCluster

    try:
        return LocalCluster.load(directory)
    except FileNotFoundError:
        raise CliError(
            f"no local cluster in {directory} (start one with `{_up_command(directory)}`)"
        ) from None
    except (ValueError, KeyError, TypeError) as e:
        raise CliError(f"{directory / STATE_FILE} is damaged: {e}") from None


def _up_command(directory: Path) -> str:
    return "zkafka cluster up" + ("" if directory == DEFAULT_CLUSTER_DIR else f" --dir {directory}")


@contextmanager
def open_zookeeper(
    connect: str,
    timeout_s: float = ZOOKEEPER_TIMEOUT_S,
    *,
    flag: str = "--zookeeper",
    create_chroot: bool = False,
    cluster_znode: str | None = "/brokers",
) -> Iterator[KafkaZkClient]:
    """A ZooKeeper session for an admin command. The chroot must already exist unless
    `create_chroot` (a tool never creates one by accident: a typo would otherwise look like an
    empty cluster), and hold `cluster_znode` when one is named; `flag` names the connect string in
    errors as the user gave it. With ZooKeeper credentials (`zookeeper_credentials`: the JAAS `Client`
    section `KAFKA_OPTS` names, as Kafka's tools take them) the session authenticates and the znodes it
    creates carry secure ACLs, as Kafka's tools do when their JAAS login is set."""
    from zkafka.security.zookeeper_auth import zookeeper_credentials
    from zkafka.zk.client import KafkaZkClient
    from zkafka.zk.errors import ZkConnectionError, ZkError

    quiet_libraries()  # our one-line error says what kazoo would in many
    try:
        auth = zookeeper_credentials()
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="No chroot path exists")
            zk = KafkaZkClient(
                connect,
                connection_timeout_ms=int(timeout_s * 1000),
                create_chroot=create_chroot,
                auth=auth,
                secure_acls=auth is not None,
            )
    except ValueError as e:
        raise CliError(f"bad {flag} {connect!r}: {e}") from None
    except ZkConnectionError as e:
        raise CliError(str(e)) from None
    try:
        if cluster_znode is None:
            if zk.exists("/") is None:
                raise CliError(f"no such ZooKeeper chroot in {flag}={connect}")
        elif zk.exists(cluster_znode) is None:
            raise CliError(f"no Kafka cluster at {connect} (no {cluster_znode} znode; wrong chroot?)")
        yield zk
    except ZkError as e:
        raise CliError(str(e)) from None
    finally:
        zk.close()
