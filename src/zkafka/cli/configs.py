"""`zkafka configs`: add, delete and describe topic config overrides, with kafka-configs' flags.

    zkafka configs --bootstrap-server B --entity-type topics --entity-name t \\
        --alter --add-config retention.ms=1000,cleanup.policy=[compact,delete] --delete-config segment.ms
    zkafka configs --bootstrap-server B --entity-type topics --entity-name t --describe [--all]
    zkafka configs --zookeeper Z --entity-type topics --entity-name t --alter --add-config k=v
    zkafka configs --zookeeper Z --entity-type topics [--entity-name t] --describe
    zkafka configs --bootstrap-server B --entity-type brokers --entity-name 1 --describe --all

With --bootstrap-server the change goes through AlterConfigs, whose broker writes the overrides to
ZooKeeper; with --zookeeper this command writes `/config/topics/<t>` itself and then a
`/config/changes/config_change_N` notification, as Kafka's AdminZkClient.changeConfigs does. Either
way every broker applies the change when it sees the notification.

--describe prints only the overrides unless --all is given (then every config with its source).
Broker configs can be described (read-only: zkafka brokers have no dynamic broker configs); users,
clients and ips are refused.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterable, Mapping, Sequence

from zkafka.cli.errors import CliError
from zkafka.cli.reassign import open_zookeeper
from zkafka.cli.topics import client_errors
from zkafka.client.admin import ConfigEntry, ConfigResource, ConfigSource
from zkafka.client.config import parse_key_values
from zkafka.client.errors import ClientError
from zkafka.client.sync import SyncAdminClient
from zkafka.storage.config import InvalidConfigError, LogConfig
from zkafka.zk.client import KafkaZkClient
from zkafka.zk.model import ConfigType
from zkafka.zk.znodes import config_entity_name

# kafka-configs splits --add-config on commas that are not inside [...], so a list value can be
# given as key=[a,b]; the same lookahead as Kafka's ConfigCommand
_TOP_LEVEL_COMMA = re.compile(r",(?=[^\]]*(?:\[|$))")
ONLY_TOPICS = "only topics are supported"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "configs",
        help="add, delete and describe topic configs (like kafka-configs)",
        description="Add, delete and describe topic config overrides, with kafka-configs' flags.",
    )
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--bootstrap-server", metavar="HOST:PORT[,...]", help="brokers to connect to")
    where.add_argument("--zookeeper", metavar="HOST:PORT[/chroot]", help="the cluster's ZooKeeper")
    p.add_argument(
        "--entity-type", required=True, choices=[t.value for t in ConfigType], help="what to configure"
    )
    entity = p.add_mutually_exclusive_group()
    entity.add_argument("--entity-name", metavar="NAME", help="topic name or broker id")
    entity.add_argument("--entity-default", action="store_true", help="the cluster-wide broker default")
    actions = p.add_mutually_exclusive_group(required=True)
    actions.add_argument("--alter", action="store_true", help="add or delete configs of the entity")
    actions.add_argument("--describe", action="store_true", help="print the entity's configs")
    p.add_argument(
        "--add-config",
        action="append",
        metavar="K=V[,K2=[A,B]]",
        help="configs to set (comma-separated; a value with commas goes in [...])",
    )
    p.add_argument("--delete-config", action="append", metavar="K[,K2]", help="configs to remove")
    p.add_argument("--all", action="store_true", help="--describe: every config, not only the overrides")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    _check_args(args)
    if args.zookeeper is not None:
        with open_zookeeper(args.zookeeper) as zk:
            return _alter_zk(zk, args) if args.alter else _describe_zk(zk, args)
    with client_errors(), SyncAdminClient(args.bootstrap_server) as admin:
        return _alter(admin, args) if args.alter else _describe(admin, args)


def _check_args(args: argparse.Namespace) -> None:
    if (args.add_config or args.delete_config) and not args.alter:
        raise CliError("--add-config and --delete-config are only valid with --alter")
    if args.alter and not (args.add_config or args.delete_config):
        raise CliError("At least one of --add-config or --delete-config must be specified with --alter")
    if args.all and not args.describe:
        raise CliError("--all is only valid with --describe")
    if args.all and args.zookeeper is not None:
        raise CliError("--all needs --bootstrap-server (ZooKeeper holds only the overrides)")
    _check_entity(args)


def _check_entity(args: argparse.Namespace) -> None:
    """Topics fully; brokers only for a bootstrap --describe of one broker, because zkafka brokers
    refuse AlterConfigs of brokers and have no dynamic (default) broker configs to show."""
    kind = ConfigType(args.entity_type)
    if kind is ConfigType.TOPIC:
        if args.entity_default:
            raise CliError("topics have no --entity-default; give --entity-name")
        if args.alter and not args.entity_name:
            raise CliError("--alter of topics needs --entity-name")
        return
    if kind is not ConfigType.BROKER:
        raise CliError(f"entity type {kind.value}: {ONLY_TOPICS} (and brokers with --describe)")
    if args.alter:
        raise CliError(f"{ONLY_TOPICS} by --alter: zkafka brokers have no dynamic broker configs")
    if args.zookeeper is not None:
        raise CliError(f"{ONLY_TOPICS} with --zookeeper (describe brokers with --bootstrap-server)")
    if args.entity_default:
        raise CliError(f"{ONLY_TOPICS} for --entity-default: zkafka brokers have no dynamic defaults")
    if not args.entity_name or not args.entity_name.isdigit():
        raise CliError(f"--entity-type brokers needs --entity-name <broker id>, got {args.entity_name!r}")


# -- argument parsing --------------------------------------------------------------------------------


def parse_add_config(items: Sequence[str] | None) -> dict[str, str]:
    """`["a=1,b=[x,y]"]` -> {"a": "1", "b": "x,y"} (kafka-configs drops the brackets)."""
    pairs = [part for item in items or () for part in _TOP_LEVEL_COMMA.split(item)]
    try:
        parsed = parse_key_values(pairs, what="--add-config")
    except ClientError as e:
        raise CliError(str(e)) from None
    return {key: re.sub(r"[\[\]]", "", value).strip() for key, value in parsed.items()}


def parse_delete_config(items: Sequence[str] | None) -> list[str]:
    keys = [key.strip() for item in items or () for key in item.split(",")]
    if any(not key for key in keys):
        raise CliError(f"bad --delete-config {','.join(items or ())!r}: expected KEY[,KEY2]")
    return list(dict.fromkeys(keys))


def _changes(args: argparse.Namespace) -> tuple[dict[str, str], list[str]]:
    added = parse_add_config(args.add_config)
    deleted = parse_delete_config(args.delete_config)
    both = sorted(set(added) & set(deleted))
    if both:
        raise CliError(f"config(s) both added and deleted: {', '.join(both)}")
    return added, deleted


def _check_deletable(deleted: Iterable[str], known: Iterable[str]) -> None:
    """kafka-configs refuses to delete a key it cannot find, rather than silently doing nothing."""
    missing = sorted(set(deleted) - set(known))
    if missing:
        raise CliError(f"Invalid config(s): {','.join(missing)}")


# -- through the brokers -----------------------------------------------------------------------------


def _alter(admin: SyncAdminClient, args: argparse.Namespace) -> int:
    added, deleted = _changes(args)
    resource = ConfigResource.topic(args.entity_name)
    # describing first names an unknown topic before anything is sent, and gives the known keys
    current = admin.describe_configs([resource])[resource]
    _check_deletable(deleted, current)
    changes: dict[str, str | None] = {**added, **dict.fromkeys(deleted)}
    admin.alter_configs(resource, changes)
    print(f"Completed updating config for topic {args.entity_name}.")
    return 0


def _describe(admin: SyncAdminClient, args: argparse.Namespace) -> int:
    if ConfigType(args.entity_type) is ConfigType.BROKER:
        resources = [ConfigResource.broker(args.entity_name)]
    else:
        names = [args.entity_name] if args.entity_name else admin.list_topics(include_internal=True)
        resources = [ConfigResource.topic(n) for n in names]
    described = admin.describe_configs(resources) if resources else {}
    for resource, entries in described.items():
        shown = [e for _, e in sorted(entries.items()) if args.all or e.is_override]
        kind = "topic" if ConfigType(args.entity_type) is ConfigType.TOPIC else "broker"
        _print_entries(f"{'All' if args.all else 'Dynamic'} configs for {kind} {resource.name} are:", shown)
    return 0


# -- through ZooKeeper -------------------------------------------------------------------------------


def _existing_topic(zk: KafkaZkClient, name: str) -> str:
    """The topic's config znode name, after Kafka's AdminZkClient check that the topic exists."""
    try:
        znode_name = config_entity_name(ConfigType.TOPIC, name)
        exists = zk.topic_exists(name)
    except ValueError as e:
        raise CliError(str(e)) from None
    if not exists:
        raise CliError(f"UNKNOWN_TOPIC_OR_PARTITION: Topic '{name}' does not exist.")
    return znode_name


def _alter_zk(zk: KafkaZkClient, args: argparse.Namespace) -> int:
    added, deleted = _changes(args)
    znode_name = _existing_topic(zk, args.entity_name)
    current = zk.get_entity_config(ConfigType.TOPIC, znode_name)
    _check_deletable(deleted, current)  # with ZooKeeper Kafka checks against the overrides
    updated = {k: v for k, v in {**current, **added}.items() if k not in deleted}
    _validate_topic_config(updated)
    # the entity znode, then the v2 notification the brokers watch (AdminZkClient.changeConfigs)
    zk.set_entity_config(ConfigType.TOPIC, znode_name, updated)
    print(f"Completed updating config for entity: topic '{args.entity_name}'.")
    return 0


def _validate_topic_config(config: Mapping[str, str]) -> None:
    """What a broker's AlterConfigs would refuse (Kafka's LogConfig.validate); nothing invalid may
    reach the znode, since every broker would then ignore the whole change."""
    try:
        LogConfig().with_overrides(config)
    except InvalidConfigError as e:
        raise CliError(f"INVALID_CONFIG: {e}") from None


def _describe_zk(zk: KafkaZkClient, args: argparse.Namespace) -> int:
    if args.entity_name:
        names = {args.entity_name: _existing_topic(zk, args.entity_name)}
    else:
        names = {n: n for n in zk.get_all_entities(ConfigType.TOPIC)}
    for name, znode_name in names.items():
        overrides = zk.get_entity_config(ConfigType.TOPIC, znode_name)
        entries = [ConfigEntry(k, v, ConfigSource.DYNAMIC_TOPIC_CONFIG) for k, v in sorted(overrides.items())]
        _print_entries(f"Configs for topic '{name}' are:", entries)
    return 0


# -- output ------------------------------------------------------------------------------------------


def _print_entries(title: str, entries: Sequence[ConfigEntry]) -> None:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    # piped output has no terminal width; a wide one keeps each config on one row
    console = Console(width=None if sys.stdout.isatty() else 200)
    console.print(title, highlight=False, markup=False)
    if not entries:
        return
    table = Table()
    for column in ("Name", "Value", "Source", "Default"):
        table.add_column(column)
    for e in entries:
        value = "<sensitive>" if e.is_sensitive else ("" if e.value is None else e.value)
        # Text, not str: a value like "[a]" would otherwise be read as rich markup
        table.add_row(Text(e.name), Text(value), e.source.name, "yes" if e.is_default else "no")
    console.print(table, highlight=False)
