"""`zkafka ui`: serve the web console (`zkafka.console`) for a cluster.

    zkafka ui --bootstrap-server 127.0.0.1:9092 --zookeeper 127.0.0.1:2181 --port 8080
    zkafka ui                      # the `zkafka cluster up` cluster: its brokers and its ZooKeeper

Without `--zookeeper` the console shows what the brokers answer; with it (or with a local cluster,
whose ZooKeeper is known) also dead brokers' registrations, the doctor's findings, the ZooKeeper
consumers and the raw tree. `--read-only` turns the actions off. `--command-config FILE` (Kafka's
client keys: security.protocol, sasl.*, ssl.*) is how the console connects to a secured listener;
the brokers' authorizer then decides what its principal may see and do.
"""

from __future__ import annotations

import argparse
import sys
from contextlib import ExitStack

from zkafka.cli.errors import CliError
from zkafka.cli.output import quiet_libraries
from zkafka.cli.target import (
    add_command_config_arg,
    add_target_args,
    client_security,
    local_cluster,
    open_zookeeper,
)

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


def run(args: argparse.Namespace) -> int:
    from zkafka.console.server import serve
    from zkafka.console.settings import ConsoleSettings

    quiet_libraries()
    if not args.bootstrap_server:
        raise CliError("pass --bootstrap-server HOST:PORT (the brokers the console talks to)")
    if not 0 <= args.port <= 65535:
        raise CliError(f"--port must be 0..65535, got {args.port}")
    zookeeper = args.zookeeper or _local_zookeeper(args)
    settings = ConsoleSettings(
        args.bootstrap_server,
        zookeeper,
        read_only=args.read_only,
        refresh_s=max(args.refresh, 0),
        security=client_security(args.command_config),
    )
    with ExitStack() as stack:
        zk = stack.enter_context(open_zookeeper(zookeeper)) if zookeeper else None
        print(f"zkafka console on http://{args.host}:{args.port}/", file=sys.stderr, flush=True)
        serve(settings, args.host, args.port, zk)
    return 0
