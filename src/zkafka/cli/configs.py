"""`zkafka configs`: add, delete and describe topic config overrides, with kafka-configs' flags.

    zkafka configs --bootstrap-server B --entity-type topics --entity-name t \\
        --alter --add-config retention.ms=1000,cleanup.policy=[compact,delete] --delete-config segment.ms
    zkafka configs --bootstrap-server B --entity-type topics --entity-name t --describe [--all]
    zkafka configs --zookeeper Z --entity-type topics --entity-name t --alter --add-config k=v
    zkafka configs --zookeeper Z --entity-type topics [--entity-name t] --describe
    zkafka configs --bootstrap-server B --entity-type brokers --entity-name 1 --describe --all
    zkafka configs --bootstrap-server B --entity-type brokers --entity-name 1|--entity-default \\
        --alter --add-config log.retention.ms=86400000,max.connections.per.ip=100

With --bootstrap-server the change goes through AlterConfigs, whose broker writes the overrides to
ZooKeeper; with --zookeeper this command writes `/config/topics/<t>` itself and then a
`/config/changes/config_change_N` notification, as Kafka's AdminZkClient.changeConfigs does
(`zkafka.cli.topics_zk`). Either way every broker applies the change when it sees the notification,
and the output is the same: kafka-configs' lines,

    Dynamic configs for topic t are:
      retention.ms=1000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=1000}

--describe prints only the overrides unless --all is given (then every config, with the chain of
sources it was resolved through). `--entity-type` is `topics`, `brokers` or `users`: a broker's
configs (by id) or the cluster-wide default (--entity-default) are described and altered through the
brokers, which store them in `/config/brokers/<id>` and `/config/brokers/<default>` (dynamic broker
configs, KIP-226: only the keys Kafka can change at run time). A user's SCRAM credentials are
written to `/config/users/<user>` with --zookeeper, as Kafka's kafka-configs does, or through a broker's
KIP-554 APIs (DescribeUserScramCredentials, AlterUserScramCredentials) with --bootstrap-server, which
then sends only the salt and salted password, never the password:

    zkafka configs --zookeeper Z --entity-type users --entity-name alice --alter \
        --add-config 'SCRAM-SHA-256=[iterations=8192,password=alice-pw],SCRAM-SHA-512=[password=alice-pw]'
    zkafka configs --bootstrap-server B --command-config admin.properties --entity-type users \
        --entity-name alice --alter --delete-config SCRAM-SHA-512
    zkafka configs --zookeeper Z --entity-type users --entity-name alice --describe

`--command-config FILE` gives Kafka's client keys (security.protocol, sasl.*, ssl.*) for a secured
listener.

(only the mechanisms and iterations are shown: the salted keys are password-equivalent offline).
Client quotas (`--entity-type clients`, `users` with quota keys or `--entity-default`, or users
then clients) are `configs_quotas.py`'s, over --zookeeper and --bootstrap-server alike. Kafka's ips
are not offered.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from zkafka.cli.configs_quotas import run_quotas
from zkafka.cli.errors import CliError
from zkafka.cli.target import add_command_config_arg, add_target_args, client_security, open_zookeeper
from zkafka.cli.topics import client_errors
from zkafka.client.admin import ConfigEntry, ConfigResource, ConfigSource
from zkafka.client.config import parse_key_values
from zkafka.client.errors import ClientError
from zkafka.client.sync import SyncAdminClient
from zkafka.client.user_scram import ScramDeletion, ScramUpsertion
from zkafka.protocol import ErrorCode
from zkafka.quotas import DEFAULT
from zkafka.quotas.entities import EntityKey
from zkafka.quotas.types import KEYS as QUOTA_KEYS
from zkafka.security.scram import (
    DEFAULT_ITERATIONS,
    ScramCredentialError,
    delete_credential,
    describe_credentials,
    upsert_credential,
)
from zkafka.security.scram import MECHANISMS as SCRAM_MECHANISMS
from zkafka.zk.model import ConfigType

if TYPE_CHECKING:
    from zkafka.cli.topics import TopicAdmin
    from zkafka.zk.client import KafkaZkClient

# kafka-configs splits --add-config on commas that are not inside [...], so a list value can be
# given as key=[a,b]; the same lookahead as Kafka's ConfigCommand
_TOP_LEVEL_COMMA = re.compile(r",(?=[^\]]*(?:\[|$))")
ONLY_TOPICS = "only topics are supported"
TOPICS, BROKERS = ConfigType.TOPIC.value, ConfigType.BROKER.value
USERS, CLIENTS = ConfigType.USER.value, ConfigType.CLIENT.value
ENTITY_TYPES = (TOPICS, BROKERS, USERS, CLIENTS)
"""The entity types zkafka applies configs of (users: SCRAM credentials and quotas, clients: quotas;
Kafka's ips are not offered)."""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "configs",
        help="add, delete and describe topic configs (like kafka-configs)",
        description="Add, delete and describe topic config overrides, with kafka-configs' flags.",
    )
    add_target_args(p, zookeeper="the cluster's ZooKeeper")
    add_command_config_arg(p)
    p.add_argument(
        "--entity-type",
        action="append",
        required=True,
        choices=ENTITY_TYPES,
        help="topics, brokers (through the brokers), users (SCRAM credentials, quotas) or clients "
        "(quotas); users then clients for a user's quotas with one client id",
    )
    # Both append to one list so that each name pairs with the --entity-type in the same position.
    p.add_argument(
        "--entity-name", action="append", dest="entities", metavar="NAME",
        help="topic name, broker id, user name or client id",
    )  # fmt: skip
    p.add_argument(
        "--entity-default", action="append_const", const=DEFAULT, dest="entities",
        help="the cluster-wide broker default, or the default user / client id (quotas)",
    )  # fmt: skip
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
    quota_entity = _split_entities(args)
    if quota_entity is not None:
        if args.describe and args.entity_name and quota_entity[1] is None:
            # A user's SCRAM mechanisms first, then its quotas if it has any (as kafka-configs).
            if args.zookeeper is not None:
                with open_zookeeper(args.zookeeper) as zk:
                    _describe_user(zk, args)
            else:
                security = client_security(args.command_config)
                with client_errors(), SyncAdminClient(args.bootstrap_server, security=security) as admin:
                    _describe_users_via_broker(admin, args)
            args.skip_empty = True
        if args.alter:
            return run_quotas(args, quota_entity, *_changes(args))
        return run_quotas(args, quota_entity, {}, [])
    _check_args(args)
    action = _alter if args.alter else _describe
    if args.entity_type == USERS and args.zookeeper is not None:
        with open_zookeeper(args.zookeeper) as zk:
            return (_alter_user if args.alter else _describe_user)(zk, args)
    if args.zookeeper is not None:
        from zkafka.cli.topics_zk import ZkTopicAdmin

        with open_zookeeper(args.zookeeper) as zk, client_errors():
            return action(ZkTopicAdmin(zk), args)
    security = client_security(args.command_config)
    with client_errors(), SyncAdminClient(args.bootstrap_server, security=security) as admin:
        if args.entity_type == USERS:
            return (_alter_user_via_broker if args.alter else _describe_users_via_broker)(admin, args)
        return action(admin, args)


def _split_entities(args: argparse.Namespace) -> EntityKey | None:
    """Pair `--entity-type`s with their names; the quota entity when the command is about client
    quotas (clients, users with quota keys or a default, users+clients), else None with
    `entity_type`, `entity_name` and `entity_default` set for the single-entity commands."""
    types: list[str] = args.entity_type
    names: list[str] = args.entities or []
    if len(names) > len(types):
        raise CliError("each --entity-name / --entity-default needs an --entity-type before it")
    args.entity_type, args.entity_type_list = types[0], types
    first = names[0] if names else None
    args.entity_name = None if first == DEFAULT else first
    args.entity_default = first == DEFAULT
    keys = set(parse_add_config(args.add_config)) | set(parse_delete_config(args.delete_config))
    quota_keys = keys & set(QUOTA_KEYS)
    if quota_keys and quota_keys != keys:
        raise CliError("alter client quotas and SCRAM credentials in separate commands")
    users_describe = types == [USERS] and bool(args.describe)
    if not (CLIENTS in types or len(types) > 1 or quota_keys or users_describe):
        return None
    if types not in ([CLIENTS], [USERS], [USERS, CLIENTS]):
        raise CliError("quotas are for --entity-type clients, users, or users then clients")
    if not args.describe and len(names) != len(types):
        raise CliError("give --entity-name or --entity-default for each --entity-type")
    padded = names + [None] * (len(types) - len(names))  # type: ignore[list-item]
    by_type = dict(zip(types, padded, strict=True))
    return (
        by_type.get(USERS) if USERS in types else None,
        by_type.get(CLIENTS) if CLIENTS in types else None,
    )


def _check_args(args: argparse.Namespace) -> None:
    if (args.add_config or args.delete_config) and not args.alter:
        raise CliError("--add-config and --delete-config are only valid with --alter")
    if args.alter and not (args.add_config or args.delete_config):
        raise CliError("At least one of --add-config or --delete-config must be specified with --alter")
    if args.all and not args.describe:
        raise CliError("--all is only valid with --describe")
    if args.all and args.zookeeper is not None:
        raise CliError("--all needs --bootstrap-server (ZooKeeper holds only the overrides)")
    if args.command_config is not None and args.zookeeper is not None:
        raise CliError("--command-config is for --bootstrap-server")
    _check_entity(args)


def _check_entity(args: argparse.Namespace) -> None:
    """Topics fully; brokers through the brokers (--bootstrap-server), one by id or the
    cluster-wide default (dynamic broker configs, KIP-226)."""
    if args.entity_type == TOPICS:
        if args.entity_default:
            raise CliError("topics have no --entity-default; give --entity-name")
        if args.alter and not args.entity_name:
            raise CliError("--alter of topics needs --entity-name")
        return
    if args.entity_type == USERS:
        if args.entity_default:
            raise CliError("SCRAM credentials are per user: give --entity-name")
        # Through a broker, --describe without a name lists every user with a credential.
        if not args.entity_name and (args.alter or args.zookeeper is not None):
            raise CliError("SCRAM credentials are per user: give --entity-name")
        if args.all:
            raise CliError("--all is not valid for users")
        return
    if args.zookeeper is not None:
        raise CliError(f"{ONLY_TOPICS} with --zookeeper (use --bootstrap-server for brokers)")
    if args.entity_default:
        return
    if not args.entity_name or not args.entity_name.isdigit():
        given = args.entity_name
        raise CliError(f"--entity-type brokers needs --entity-name <id> or --entity-default, got {given!r}")


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


# -- the actions, through the brokers or ZooKeeper alike ---------------------------------------------


def _broker_resource(args: argparse.Namespace) -> ConfigResource:
    return ConfigResource.broker("" if args.entity_default else args.entity_name)


def _alter(admin: TopicAdmin, args: argparse.Namespace) -> int:
    added, deleted = _changes(args)
    brokers = args.entity_type == BROKERS
    resource = _broker_resource(args) if brokers else ConfigResource.topic(args.entity_name)
    # describing first names an unknown topic before anything is written, and gives the keys that
    # can be deleted (every config of a topic through the brokers, its overrides in ZooKeeper; a
    # broker's dynamic configs, as kafka-configs does)
    current = admin.describe_configs([resource])[resource]
    if brokers:
        current = {k: e for k, e in current.items() if e.source in _DYNAMIC_BROKER_SOURCES}
    _check_deletable(deleted, current)
    admin.alter_configs(resource, {**added, **dict.fromkeys(deleted)})
    if not brokers:
        print(f"Completed updating config for topic {args.entity_name}.")
    elif args.entity_default:
        print("Completed updating default config for brokers in the cluster.")
    else:
        print(f"Completed updating config for broker {args.entity_name}.")
    return 0


def _describe(admin: TopicAdmin, args: argparse.Namespace) -> int:
    if args.entity_type == BROKERS:
        resources = [_broker_resource(args)]
    else:
        names = [args.entity_name] if args.entity_name else admin.list_topics(include_internal=True)
        resources = [ConfigResource.topic(n) for n in names]
    described = admin.describe_configs(resources, include_synonyms=True) if resources else {}
    kind = args.entity_type.removesuffix("s")
    for resource, entries in described.items():
        if args.entity_type == BROKERS and args.entity_default:
            print("Default configs for brokers in the cluster are:")  # every one is a dynamic default
        else:
            print(f"{'All' if args.all else 'Dynamic'} configs for {kind} {resource.name} are:")
        for _, entry in sorted(entries.items()):
            if args.all or args.entity_default or entry.is_override:
                print(f"  {config_line(entry)}")
    return 0


_DYNAMIC_BROKER_SOURCES = (ConfigSource.DYNAMIC_BROKER_CONFIG, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)


def config_line(entry: ConfigEntry) -> str:
    """kafka-configs' line for one config: `key=value sensitive=false synonyms={SOURCE:key=value, ...}`
    (the synonyms, most specific first, are the sources the value was resolved through)."""
    synonyms = ", ".join(f"{source.name}:{name}={_text(value)}" for name, value, source in entry.synonyms)
    sensitive = str(entry.is_sensitive).lower()
    return f"{entry.name}={_text(entry.value)} sensitive={sensitive} synonyms={{{synonyms}}}"


def _text(value: str | None) -> str:
    return "null" if value is None else value  # as Java prints a missing (or sensitive) value


# -- users: SCRAM credentials in ZooKeeper ------------------------------------------------------------


def parse_scram_config(mechanism: str, text: str) -> tuple[str, int]:
    """`iterations=8192,password=secret` (the brackets already dropped) -> (password, iterations)."""
    fields: dict[str, str] = {}
    for part in text.split(","):
        key, sep, value = part.partition("=")
        if not sep or key.strip() not in ("iterations", "password"):
            raise CliError(f"bad {mechanism} value: expected [iterations=N,]password=P")
        fields[key.strip()] = value
    if not fields.get("password"):
        raise CliError(f"{mechanism} needs password=...")
    try:
        iterations = int(fields.get("iterations", DEFAULT_ITERATIONS))
    except ValueError:
        raise CliError(f"{mechanism} iterations must be a whole number") from None
    return fields["password"], iterations


def _user_changes(args: argparse.Namespace) -> tuple[dict[str, str], list[str]]:
    added, deleted = _changes(args)
    unknown = sorted((set(added) | set(deleted)) - set(SCRAM_MECHANISMS))
    if unknown:
        raise CliError(
            f"Invalid config(s): {','.join(unknown)} "
            f"(users take {' and '.join(SCRAM_MECHANISMS)} credentials)"
        )
    return added, deleted


def _alter_user(zk: KafkaZkClient, args: argparse.Namespace) -> int:
    added, deleted = _user_changes(args)
    try:
        for mechanism, value in added.items():
            password, iterations = parse_scram_config(mechanism, value)
            upsert_credential(zk, args.entity_name, mechanism, password, iterations)
        missing = [m for m in deleted if not delete_credential(zk, args.entity_name, m)]
    except ScramCredentialError as e:
        raise CliError(str(e)) from None
    if missing:
        raise CliError(f"Invalid config(s): {','.join(missing)} (user {args.entity_name} has none)")
    print(f"Completed updating config for user {args.entity_name}.")
    return 0


def _describe_user(zk: KafkaZkClient, args: argparse.Namespace) -> int:
    try:
        found = describe_credentials(zk, args.entity_name)
    except ScramCredentialError as e:
        raise CliError(str(e)) from None
    _print_user(args.entity_name, found)
    return 0


def _print_user(user: str, found: dict[str, int]) -> None:
    listed = ",".join(f"{m}=iterations={n}" for m, n in sorted(found.items()))
    print(f"SCRAM credential configs for user-principal '{user}' are {listed}")


def _alter_user_via_broker(admin: SyncAdminClient, args: argparse.Namespace) -> int:
    """AlterUserScramCredentials: the salted password goes to the broker, the password stays here."""
    added, deleted = _user_changes(args)
    user = args.entity_name
    upsertions = []
    for mechanism, value in added.items():
        password, iterations = parse_scram_config(mechanism, value)
        upsertions.append(ScramUpsertion(user, mechanism, password, iterations))
    results = admin.alter_user_scram_credentials(upsertions, [ScramDeletion(user, m) for m in deleted])
    error = results.get(user)
    if error is not None:
        raise CliError(f"Error while updating SCRAM credentials of user {user}: {error.message}")
    print(f"Completed updating config for user {user}.")
    return 0


def _describe_users_via_broker(admin: SyncAdminClient, args: argparse.Namespace) -> int:
    """DescribeUserScramCredentials of the named user (none: its list is empty), or of every user."""
    found = admin.describe_user_scram_credentials([args.entity_name] if args.entity_name else None)
    for user, credentials in sorted(found.items()):
        if isinstance(credentials, dict):
            _print_user(user, credentials)
        elif credentials.code == ErrorCode.RESOURCE_NOT_FOUND:
            _print_user(user, {})  # as kafka-configs --zookeeper prints a user without credentials
        else:
            raise CliError(f"Error while describing SCRAM credentials of user {user}: {credentials.message}")
    return 0
