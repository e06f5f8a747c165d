"""`zkafka ui`: serve the web console (`zkafka.console`) for a cluster.

    zkafka ui --bootstrap-server 127.0.0.1:9092 --zookeeper 127.0.0.1:2181 --port 8080
    zkafka ui                      # the `zkafka cluster up` cluster: its brokers and its ZooKeeper

Without `--zookeeper` the console shows what the brokers answer; with it (or with a local cluster,
whose ZooKeeper is known) also dead brokers' registrations, the doctor's findings, the ZooKeeper
consumers and the raw tree. `--read-only` turns the actions off. `--command-config FILE` (Kafka's
client keys: security.protocol, sasl.*, ssl.*) is how the console connects to a secured listener;
the brokers' authorizer then decides what its principal may see and do. `--login` (with a
`--command-config` naming a SASL listener and mechanism but no user) has each user sign in with
their own Kafka user and act as themselves; `--ssl-certfile` (and `--ssl-keyfile`) serve it over
HTTPS, as a console taking passwords should be anywhere but loopback.
"""

from __future__ import annotations

import argparse
import sys
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from zkafka.cli.errors import CliError
from zkafka.cli.output import quiet_libraries
from zkafka.cli.target import (
    add_command_config_arg,
    add_target_args,
    client_security,
    local_cluster,
    open_zookeeper,
    split_security,
)

if TYPE_CHECKING:
    from zkafka.client.security import ClientSecurity

DEFAULT_PORT = 8080


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("ui", help="serve the web console for a cluster")
    add_target_args(p, bootstrap="brokers to connect to")
    p.add_argument(
        "--zookeeper",
        metavar="HOST:PORT[/chroot]",
        help="the cluster's ZooKeeper, with its chroot (default: the local cluster's, if that is the one)",
    )
    add_command_config_arg(p)
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default %(default)s)")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help="port to listen on (default %(default)s)")
    p.add_argument("--read-only", action="store_true", help="no actions: only look at the cluster")
    p.add_argument(
        "--login",
        action="store_true",
        help="users sign in with their Kafka user (checked by the brokers over SASL, as set in "
        "--command-config) and act as themselves; nothing is read from ZooKeeper",
    )
    p.add_argument("--ssl-certfile", metavar="PEM", help="serve HTTPS with this certificate (chain)")
    p.add_argument(
        "--ssl-keyfile", metavar="PEM", help="the certificate's private key (if not in --ssl-certfile)"
    )
    p.add_argument(
        "--refresh", type=int, default=5, metavar="S", help="seconds between overview reloads (default 5)"
    )
    p.set_defaults(func=run)


def _local_zookeeper(args: argparse.Namespace) -> str | None:
    """The local cluster's ZooKeeper, when the brokers in use are that cluster's."""
    try:
        found = local_cluster(args.cluster_dir)
    except CliError:
        return None
    return found.zookeeper_connect or None if found.bootstrap_servers == args.bootstrap_server else None


def _login_security(path: str | None) -> ClientSecurity:
    """The SASL listener's settings from `--command-config`, without a user: each one signing in
    brings their own."""
    from zkafka.config.properties import load_properties

    needs = (
        "--login needs --command-config with security.protocol SASL_PLAINTEXT or SASL_SSL and "
        "sasl.mechanism SCRAM-SHA-256, SCRAM-SHA-512 or PLAIN"
    )
    if path is None:
        raise CliError(needs)
    try:
        props = load_properties(path)
    except (ValueError, OSError) as e:
        raise CliError(f"--command-config {path}: {e}") from None
    # a placeholder user: the file names none (the users signing in do)
    security, _ = split_security(
        {"sasl.username": "-", "sasl.password": "-", **props}, f"--command-config {path}"
    )
    if security is None or not security.is_sasl:
        raise CliError(needs)
    return replace(security, username=None, password=None)


def run(args: argparse.Namespace) -> int:
    from zkafka.console.server import serve
    from zkafka.console.settings import ConsoleSettings

    quiet_libraries()
    if not args.bootstrap_server:
        raise CliError("pass --bootstrap-server HOST:PORT (the brokers the console talks to)")
    if args.ssl_keyfile and not args.ssl_certfile:
        raise CliError("--ssl-keyfile goes with --ssl-certfile (the certificate it is the key of)")
    for given in (args.ssl_certfile, args.ssl_keyfile):
        if given and not Path(given).is_file():
            raise CliError(f"no such certificate or key file: {given}")
    if not 0 <= args.port <= 65535:
        raise CliError(f"--port must be 0..65535, got {args.port}")
    if args.login:
        if args.zookeeper:
            raise CliError("--login shows each user what the brokers let them see: drop --zookeeper")
        zookeeper, security = None, _login_security(args.command_config)
    else:
        zookeeper, security = args.zookeeper or _local_zookeeper(args), client_security(args.command_config)
    settings = ConsoleSettings(
        args.bootstrap_server,
        zookeeper,
        read_only=args.read_only,
        refresh_s=max(args.refresh, 0),
        security=security,
        login=args.login,
    )
    with ExitStack() as stack:
        zk = stack.enter_context(open_zookeeper(zookeeper)) if zookeeper else None
        scheme = "https" if args.ssl_certfile else "http"
        print(f"zkafka console on {scheme}://{args.host}:{args.port}/", file=sys.stderr, flush=True)
        serve(
            settings, args.host, args.port, zk, ssl_certfile=args.ssl_certfile, ssl_keyfile=args.ssl_keyfile
        )
    return 0
