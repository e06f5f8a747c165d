"""The `zkafka` command.

Each subcommand group lives in its own module of this package and exposes
`register(subparsers)`, which adds its parsers and sets `func` to a callable taking the parsed
namespace and returning an exit code. Adding a command means adding its name and module to
COMMANDS. Only the module of the command being run is imported (Spark, rich and the client stack
are not loaded to print `--help` of one command or to start a broker); `zkafka --help` loads them
all to list every command with its own help line.

Before a command runs, `zkafka.cli.target.fill_from_local_cluster` gives a tool that was named no
cluster the running `zkafka cluster up` cluster's address. A flag a command does not know is
answered with that (sub)command's own usage, not the top level's.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version

from zkafka.cli.errors import CliError
from zkafka.cli.target import fill_from_local_cluster
from zkafka.logs import RepeatFilter

COMMANDS = {
    "zookeeper-start": "zkafka.cli.zookeeper",
    "server-start": "zkafka.cli.server",
    "zk": "zkafka.cli.zk",
    "perf": "zkafka.cli.perf",
    "demo": "zkafka.cli.demo",
    "topics": "zkafka.cli.topics",
    "configs": "zkafka.cli.configs",
    "console-producer": "zkafka.cli.console",
    "console-consumer": "zkafka.cli.console",
    "cluster": "zkafka.cli.cluster",
    "consumer-groups": "zkafka.cli.consumer_groups",
    "transactions": "zkafka.cli.transactions",
    "reassign-partitions": "zkafka.cli.reassign",
    "leader-election": "zkafka.cli.leader_election",
    "pipeline": "zkafka.cli.pipeline",
    "acls": "zkafka.cli.acls",
    "doctor": "zkafka.cli.doctor",
    "chaos": "zkafka.cli.chaos",
    "zookeeper-security-migration": "zkafka.cli.zk_security_migration",
    "ui": "zkafka.cli.ui",
}
"""command name -> the module whose `register` adds it (one module may add several commands)."""

LOG_LEVEL_HELP = "Python log level (default WARNING); accepted before or after the command"


def zkafka_version() -> str:
    try:
        return version("zkafka")
    except PackageNotFoundError:  # running from a source tree that was never installed
        return "unknown"


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser with `command`'s module registered, or every module when `command` is None or
    not a known command (so argparse lists the choices)."""
    parser = argparse.ArgumentParser(
        prog="zkafka",
        description="A Kafka-compatible commit log with its cluster metadata in ZooKeeper.",
    )
    parser.add_argument("--log-level", default="WARNING", help=LOG_LEVEL_HELP)
    parser.add_argument("--version", action="version", version=f"zkafka {zkafka_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    modules = [COMMANDS[command]] if command in COMMANDS else list(dict.fromkeys(COMMANDS.values()))
    for name in modules:
        importlib.import_module(name).register(sub)
    _accept_log_level_everywhere(sub)
    return parser


def _accept_log_level_everywhere(sub: argparse._SubParsersAction) -> None:
    """Kafka's tools take their options in any position; `--log-level` after the command too."""
    for parser in set(sub.choices.values()):
        if "--log-level" not in parser._option_string_actions:
            parser.add_argument("--log-level", default=argparse.SUPPRESS, help=LOG_LEVEL_HELP)
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                _accept_log_level_everywhere(action)


def _command_in(argv: Sequence[str]) -> str | None:
    """The first word that names a command (the only positional the top level has)."""
    skip = False
    for word in argv:
        if skip:
            skip = False
            continue
        if word == "--log-level":
            skip = True
        elif not word.startswith("-"):
            return word
    return None


def chosen_parser(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.ArgumentParser:
    """The innermost (sub)parser of the command line `args` came from (`zkafka cluster up` ->
    the parser of `up`)."""
    while True:
        sub = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
        name = getattr(args, sub.dest, None) if sub is not None and sub.dest != argparse.SUPPRESS else None
        if sub is None or name not in sub.choices:
            return parser
        parser = sub.choices[name]


def configure_logging(level_name: str) -> None:
    logging.basicConfig(
        level=getattr(logging, str(level_name).upper(), logging.WARNING),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    # kazoo warns on every reconnect attempt while ZooKeeper is away: one line a minute says as much.
    for handler in logging.getLogger().handlers:
        handler.addFilter(RepeatFilter("kazoo"))


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    command = _command_in(argv)
    if command is None and "--version" in argv:
        print(f"zkafka {zkafka_version()}")  # without loading every command module
        return 0
    parser = build_parser(command)
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        # argparse would blame the top-level parser and print its usage; the user wants the
        # usage of the (sub)command they typed the flag for
        chosen_parser(parser, args).error(f"unrecognized arguments: {' '.join(unknown)}")
    configure_logging(args.log_level)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        fill_from_local_cluster(args)
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        return 130
    except CliError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        # Output piped into `head` and the reader went away: not an error worth a traceback.
        # Point stdout at /dev/null so the interpreter's final flush does not raise again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141


if __name__ == "__main__":
    sys.exit(main())
