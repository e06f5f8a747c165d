"""`zkafka configs` for client quotas (`--entity-type clients|users`, or users then clients), as
kafka-configs does them:

    zkafka configs --zookeeper Z --entity-type clients --entity-name c --alter \\
        --add-config 'producer_byte_rate=1048576,consumer_byte_rate=2097152'
    zkafka configs --zookeeper Z --entity-type users --entity-default --alter \\
        --add-config request_percentage=50
    zkafka configs --bootstrap-server B --entity-type users --entity-name u --entity-type clients \\
        --entity-name c --alter --delete-config producer_byte_rate
    zkafka configs --zookeeper Z|--bootstrap-server B --entity-type clients [--entity-name c] --describe

With --zookeeper the command writes `/config/clients/<c>`, `/config/users/<u>` or
`/config/users/<u>/clients/<c>` itself with a `/config/changes` notification
(`zkafka.quotas.admin`); with --bootstrap-server it sends AlterClientQuotas / DescribeClientQuotas
(KIP-546) and a broker does the same. Every broker applies a change when the notification arrives.
"""

from __future__ import annotations

import argparse

from zkafka.cli.errors import CliError
from zkafka.cli.target import client_security, open_zookeeper
from zkafka.cli.topics import client_errors
from zkafka.client.admin import QuotaFilter
from zkafka.client.sync import SyncAdminClient
from zkafka.quotas.admin import QuotaAlterError, alter_quotas, describe_entity, read_quotas
from zkafka.quotas.cache import entity_key
from zkafka.quotas.entities import EntityKey
from zkafka.zk.client import KafkaZkClient
from zkafka.zk.model import ConfigType

__all__ = ["run_quotas"]


def run_quotas(args: argparse.Namespace, entity: EntityKey, added: dict[str, str], removed: list[str]) -> int:
    """`added`/`removed`: the parsed --add-config / --delete-config (empty with --describe)."""
    if args.all:
        raise CliError("--all is not valid for client quotas")
    if args.zookeeper is not None:
        with open_zookeeper(args.zookeeper) as zk:
            try:
                if args.alter:
                    alter_quotas(zk, entity, added, removed)
                else:
                    _describe_zk(zk, entity, args.entity_type_list, getattr(args, "skip_empty", False))
            except QuotaAlterError as e:
                raise CliError(str(e)) from None
    else:
        security = client_security(args.command_config)
        with client_errors(), SyncAdminClient(args.bootstrap_server, security=security) as admin:
            if args.alter:
                admin.alter_client_quotas(
                    entity, {**{k: float(v) for k, v in _checked(added).items()}, **dict.fromkeys(removed)}
                )
            else:
                for found, quotas in admin.describe_client_quotas(_filter(entity, args.entity_type_list)):
                    values = ", ".join(f"{k}={v!r}" for k, v in sorted(quotas.items()))
                    print(f"Quota configs for {describe_entity(found)} are {values}")
    if args.alter:
        print(f"Completed updating config for {describe_entity(entity)}.")
    return 0


def _checked(added: dict[str, str]) -> dict[str, str]:
    for key, text in added.items():
        try:
            float(text)
        except ValueError:
            raise CliError(f"{key} must be a number, got {text!r}") from None
    return added


def _filter(entity: EntityKey, types: list[str]) -> list[QuotaFilter]:
    """KIP-546 filter components: a given name matches exactly (or the default), a type named
    without one matches any entity of it; strict when both parts are named."""
    out = []
    for part, kind in ((entity[0], ConfigType.USER.value), (entity[1], ConfigType.CLIENT.value)):
        if kind in types:
            out.append(QuotaFilter("user" if kind == ConfigType.USER.value else "client-id", part))
    return out


def _describe_zk(zk: KafkaZkClient, entity: EntityKey, types: list[str], skip_empty: bool) -> None:
    for found in _entities(zk, entity, types):
        values = ",".join(f"{k}={v}" for k, v in sorted(read_quotas(zk, found).items()))
        if skip_empty and not values:
            continue
        print(f"Configs for {describe_entity(found)} are {values}")


def _entities(zk: KafkaZkClient, entity: EntityKey, types: list[str]) -> list[EntityKey]:
    """The entity itself when every part is named, else every entity of the types (kafka-configs
    lists them all when --entity-name is left out)."""
    user, client = entity
    wanted_user, wanted_client = ConfigType.USER.value in types, ConfigType.CLIENT.value in types
    if (user is not None or not wanted_user) and (client is not None or not wanted_client):
        return [entity]
    if types == [ConfigType.CLIENT.value]:
        names = zk.get_all_entities(ConfigType.CLIENT)
        keys = [entity_key(ConfigType.CLIENT.value, n) for n in names]
    else:
        users = zk.get_all_entities(ConfigType.USER)
        names = zk.get_user_client_entities(users) if wanted_client else users
        keys = [entity_key(ConfigType.USER.value, n) for n in names]
    return [
        k for k in keys
        if k is not None and (user is None or k[0] == user) and (client is None or k[1] == client)
    ]  # fmt: skip
