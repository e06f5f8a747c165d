"""The `zkafka` command.

Each subcommand group lives in its own module of this package and exposes
`register(subparsers)`, which adds its parsers and sets `func` to a callable taking the parsed
namespace and returning an exit code. Adding a command means adding a module name to COMMANDS.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Sequence

from zkafka.cli.errors import CliError
from zkafka.logs import RepeatFilter

COMMANDS = (
    "zkafka.cli.zookeeper",
    "zkafka.cli.server",
    "zkafka.cli.zk",
    "zkafka.cli.perf",
    "zkafka.cli.demo",
    "zkafka.cli.topics",
    "zkafka.cli.configs",
    "zkafka.cli.console",
    "zkafka.cli.cluster",
    "zkafka.cli.consumer_groups",
    "zkafka.cli.reassign",
    "zkafka.cli.leader_election",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="zkafka",
        description="A Kafka-compatible commit log with its cluster metadata in ZooKeeper.",
    )
    parser.add_argument("--log-level", default="WARNING", help="Python log level (default WARNING)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=getattr(logging, str(args.log_level).upper(), logging.WARNING),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    # kazoo warns on every reconnect attempt while ZooKeeper is away: one line a minute says as much.
    for handler in logging.getLogger().handlers:
        handler.addFilter(RepeatFilter("kazoo"))
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        return 130
    except CliError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
