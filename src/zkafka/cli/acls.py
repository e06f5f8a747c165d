"""`zkafka acls`: add, remove and list ACLs with kafka-acls' flags and output.

    zkafka acls --authorizer-properties zookeeper.connect=HOST:PORT[/chroot] \\
        --add --allow-principal User:alice --operation Read --topic orders [--resource-pattern-type prefixed]
    zkafka acls --authorizer-properties zookeeper.connect=Z --add --producer --allow-principal User:p \\
        --topic t
    zkafka acls --authorizer-properties zookeeper.connect=Z --add --consumer --allow-principal User:c \\
        --topic t --group g
    zkafka acls --authorizer-properties zookeeper.connect=Z --remove [--force] --topic orders
    zkafka acls --authorizer-properties zookeeper.connect=Z --list [--topic t] [--principal User:alice]

With --authorizer-properties the tool writes the ACL znodes itself (`/kafka-acl/<Type>/<name>`,
`/kafka-acl-extended/prefixed/<Type>/<name>`) with versioned conditional writes, then the change
notifications every broker's ACL cache follows, as kafka-acls does through Kafka's AclAuthorizer.
With --bootstrap-server HOST:PORT[,...] it asks a broker instead, through the ACL APIs
(DescribeAcls, CreateAcls, DeleteAcls), which need `authorizer.class.name` on the brokers and
Cluster:Describe / Cluster:Alter for the caller. --command-config, when
given, holds Kafka's client keys (`security.protocol`, `sasl.mechanism`, `sasl.jaas.config`,
`ssl.truststore.*`) for an SSL or SASL listener.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager

from zkafka.cli.acls_broker import BrokerAcls
from zkafka.cli.errors import CliError
from zkafka.cli.target import add_command_config_arg, open_zookeeper
from zkafka.security.acl_admin import create_acls, delete_acls, describe_acls
from zkafka.security.acl_filters import (
    AclBindingFilter,
    AclEntryFilter,
    PatternTypeFilter,
    ResourcePatternFilter,
    format_entry,
    format_pattern,
)
from zkafka.security.principal import parse_principal
from zkafka.zk.acls import (
    CLUSTER_RESOURCE_NAME,
    WILDCARD,
    AclEntry,
    AclOperation,
    AclPermissionType,
    ResourcePattern,
    ResourceType,
)
from zkafka.zk.client import KafkaZkClient

Op = AclOperation
VALID_OPERATIONS: dict[ResourceType, tuple[AclOperation, ...]] = {
    ResourceType.TOPIC: (
        Op.READ, Op.WRITE, Op.CREATE, Op.DESCRIBE, Op.DELETE, Op.ALTER, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS,
        Op.ALL,
    ),
    ResourceType.GROUP: (Op.READ, Op.DESCRIBE, Op.DELETE, Op.ALL),
    ResourceType.CLUSTER: (
        Op.CREATE, Op.CLUSTER_ACTION, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS, Op.IDEMPOTENT_WRITE, Op.ALTER,
        Op.DESCRIBE, Op.ALL,
    ),
    ResourceType.TRANSACTIONAL_ID: (Op.DESCRIBE, Op.WRITE, Op.ALL),
    ResourceType.DELEGATION_TOKEN: (Op.DESCRIBE, Op.ALL),
    ResourceType.USER: (Op.CREATE_TOKENS, Op.DESCRIBE_TOKENS, Op.ALL),
}  # fmt: skip
"""kafka-acls' ResourceTypeToValidOperations."""

ACCEPTED_AUTHORIZERS = (
    "kafka.security.authorizer.AclAuthorizer",
    "kafka.security.auth.SimpleAclAuthorizer",
    "zkafka.security.AclAuthorizer",
)
CONNECT_TIMEOUT_S = 10.0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "acls",
        help="add, remove and list ACLs (like kafka-acls)",
        description="Add, remove and list ACLs, with kafka-acls' flags and output.",
    )
    where = p.add_argument_group("where the ACLs live")
    where.add_argument(
        "--authorizer-properties",
        action="append",
        metavar="KEY=VALUE",
        help="authorizer properties; zookeeper.connect=HOST:PORT[/chroot] is required",
    )
    where.add_argument("--bootstrap-server", metavar="HOST:PORT", help="a broker (through the ACL APIs)")
    add_command_config_arg(where)
    where.add_argument(
        "--authorizer", default=ACCEPTED_AUTHORIZERS[0], help="authorizer class (Kafka's names)"
    )
    action = p.add_argument_group("action (exactly one)")
    action.add_argument("--add", action="store_true", help="add ACLs")
    action.add_argument("--remove", action="store_true", help="remove ACLs")
    action.add_argument("--list", action="store_true", help="list ACLs")
    resources = p.add_argument_group("resources")
    resources.add_argument("--topic", action="append", default=[], help="a topic (* for all topics)")
    resources.add_argument("--group", action="append", default=[], help="a consumer group (* for all)")
    resources.add_argument("--cluster", action="store_true", help="the cluster resource")
    resources.add_argument("--transactional-id", action="append", default=[], help="a transactional id")
    resources.add_argument("--delegation-token", action="append", default=[], help="a delegation token id")
    resources.add_argument(
        "--resource-pattern-type",
        default="literal",
        metavar="literal|prefixed|any|match",
        help="pattern type of the resources (default literal; any and match only for --list and --remove)",
    )
    acl = p.add_argument_group("ACL entries")
    acl.add_argument("--allow-principal", action="append", default=[], metavar="TYPE:NAME")
    acl.add_argument("--deny-principal", action="append", default=[], metavar="TYPE:NAME")
    acl.add_argument(
        "--principal", action="append", default=[], metavar="TYPE:NAME", help="--list: only these"
    )
    acl.add_argument(
        "--allow-host", action="append", default=[], help="default * when --allow-principal is given"
    )
    acl.add_argument(
        "--deny-host", action="append", default=[], help="default * when --deny-principal is given"
    )
    acl.add_argument("--operation", action="append", default=[], help="operation (default All); repeatable")
    acl.add_argument("--producer", action="store_true", help="Write, Describe, Create on --topic (+ txn ids)")
    acl.add_argument("--consumer", action="store_true", help="Read, Describe on --topic and Read on --group")
    acl.add_argument(
        "--idempotent", action="store_true", help="with --producer: IdempotentWrite on the cluster"
    )
    p.add_argument("--force", action="store_true", help="assume yes to every question")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    connect = _check(args)
    if args.add:
        return _add(args, connect)
    if args.remove:
        return _remove(args, connect)
    return _list(args, connect)


# -- arguments -----------------------------------------------------------------------------------------
def _check(args: argparse.Namespace) -> str:
    if args.bootstrap_server is not None and args.authorizer_properties:
        raise CliError("only one of --bootstrap-server or --authorizer-properties must be specified")
    if args.command_config is not None and args.bootstrap_server is None:
        raise CliError("--command-config is for --bootstrap-server")
    if not args.authorizer_properties and args.bootstrap_server is None:
        raise CliError("one of --bootstrap-server or --authorizer-properties must be specified")
    if args.authorizer not in ACCEPTED_AUTHORIZERS:
        raise CliError(f"--authorizer {args.authorizer!r} is not supported (use {ACCEPTED_AUTHORIZERS[0]})")
    if args.bootstrap_server is not None:
        connect = BOOTSTRAP + args.bootstrap_server
    else:
        properties = _key_values(args.authorizer_properties)
        connect = properties.get("zookeeper.connect", "")
        if not connect:
            raise CliError("--authorizer-properties must include zookeeper.connect=HOST:PORT[/chroot]")
    if sum((args.add, args.remove, args.list)) != 1:
        raise CliError("Command must include exactly one action: --list, --add, --remove.")
    if args.list:
        for name in ("producer", "consumer", "allow_host", "allow_principal", "deny_host", "deny_principal"):
            if getattr(args, name):
                raise CliError(f"option --{name.replace('_', '-')} can't be used with --list")
    elif args.principal:
        raise CliError("--principal is only for --list (use --allow-principal/--deny-principal)")
    if args.producer or args.consumer:
        for name in ("operation", "deny_principal", "deny_host"):
            if getattr(args, name):
                raise CliError(
                    f"option --{name.replace('_', '-')} can't be used with --producer or --consumer"
                )
    if args.producer and not args.topic:
        raise CliError("With --producer you must specify a --topic")
    if args.idempotent and not args.producer:
        raise CliError("The --idempotent option should only be used with --producer.")
    if args.consumer and (
        not args.topic or not args.group or (not args.producer and (args.cluster or args.transactional_id))
    ):
        raise CliError(
            "With --consumer you must specify a --topic and a --group and no --cluster or "
            "--transactional-id option should be specified."
        )
    try:
        args.pattern_filter = PatternTypeFilter.parse(args.resource_pattern_type)
    except ValueError as e:
        raise CliError(str(e)) from None
    if args.add and args.pattern_filter in (PatternTypeFilter.ANY, PatternTypeFilter.MATCH):
        raise CliError(
            f"A '--resource-pattern-type' value of '{args.resource_pattern_type}' "
            "is not valid when adding acls."
        )
    return connect


def _key_values(items: Sequence[str]) -> dict[str, str]:
    out = {}
    for item in items:
        for part in item.split(","):
            key, sep, value = part.partition("=")
            if not sep or not key.strip():
                raise CliError(f"--authorizer-properties expects KEY=VALUE, got {part!r}")
            out[key.strip()] = value.strip()
    return out


def _resource_filters(args: argparse.Namespace, required: bool = True) -> list[ResourcePatternFilter]:
    pattern_type = args.pattern_filter
    filters = [ResourcePatternFilter(ResourceType.TOPIC, t.strip(), pattern_type) for t in args.topic]
    if args.cluster:
        filters.append(ResourcePatternFilter(ResourceType.CLUSTER, CLUSTER_RESOURCE_NAME, pattern_type))
    filters += [ResourcePatternFilter(ResourceType.GROUP, g.strip(), pattern_type) for g in args.group]
    filters += [
        ResourcePatternFilter(ResourceType.TRANSACTIONAL_ID, t.strip(), pattern_type)
        for t in args.transactional_id
    ]
    filters += [
        ResourcePatternFilter(ResourceType.DELEGATION_TOKEN, t.strip(), pattern_type)
        for t in args.delegation_token
    ]
    if not filters and required:
        raise CliError(
            "You must provide at least one resource: --topic <topic> or --cluster or --group <group> or "
            "--transactional-id <transactional-id> or --delegation-token <delegation-token>"
        )
    return list(dict.fromkeys(filters))


def _principals(values: Sequence[str]) -> list[str]:
    out = []
    for value in values:
        try:
            out.append(str(parse_principal(value.strip())))
        except ValueError as e:
            raise CliError(str(e)) from None
    return out


def _entries(args: argparse.Namespace, operations: Sequence[AclOperation]) -> set[AclEntry]:
    """The entries the principal/host options give for `operations` (kafka-acls' getAcl)."""
    entries = set()
    for permission, principals, hosts in (
        (AclPermissionType.ALLOW, args.allow_principal, args.allow_host),
        (AclPermissionType.DENY, args.deny_principal, args.deny_host),
    ):
        names = _principals(principals)
        host_list = [h.strip() for h in hosts] or ([WILDCARD] if names else [])
        entries |= {AclEntry(p, permission, op, h) for p in names for op in operations for h in host_list}
    return entries


def _operations(args: argparse.Namespace) -> list[AclOperation]:
    try:
        return [AclOperation.parse(o.strip()) for o in (args.operation or ["All"])]  # type: ignore[misc]
    except ValueError as e:
        raise CliError(str(e)) from None


def _filter_to_entries(args: argparse.Namespace) -> dict[ResourcePatternFilter, set[AclEntry]]:
    """kafka-acls' getResourceFilterToAcls, --producer/--consumer shortcuts included."""
    filters = _resource_filters(args)
    out: dict[ResourcePatternFilter, set[AclEntry]] = {}
    if not args.producer and not args.consumer:
        entries = _entries(args, _operations(args))
        out = {f: set(entries) for f in filters}
    if args.producer:
        for f in filters:
            if f.resource_type is ResourceType.TOPIC:
                out.setdefault(f, set()).update(_entries(args, [Op.WRITE, Op.DESCRIBE, Op.CREATE]))
            elif f.resource_type is ResourceType.TRANSACTIONAL_ID:
                out.setdefault(f, set()).update(_entries(args, [Op.WRITE, Op.DESCRIBE]))
        if args.idempotent:
            cluster = ResourcePatternFilter(ResourceType.CLUSTER, CLUSTER_RESOURCE_NAME, args.pattern_filter)
            out.setdefault(cluster, set()).update(_entries(args, [Op.IDEMPOTENT_WRITE]))
    if args.consumer:
        for f in filters:
            if f.resource_type is ResourceType.TOPIC:
                out.setdefault(f, set()).update(_entries(args, [Op.READ, Op.DESCRIBE]))
            elif f.resource_type is ResourceType.GROUP:
                out.setdefault(f, set()).update(_entries(args, [Op.READ]))
    for f, entries in out.items():
        valid = VALID_OPERATIONS[f.resource_type]  # type: ignore[index]
        if any(e.operation not in valid for e in entries):
            assert f.resource_type is not None
            names = ", ".join(o.pascal for o in valid)
            raise CliError(f"ResourceType {f.resource_type.enum_name} only supports operations {names}")
    return out


# -- output --------------------------------------------------------------------------------------------
def _block(title: str, entries: Sequence[AclEntry]) -> str:
    """kafka-acls' `s"$title: $Newline ${acls.map("\\t" + _).mkString(Newline)} $Newline"` (with println)."""
    lines = "\n".join("\t" + format_entry(e) for e in entries)
    return f"{title}: \n {lines} \n"


def _sorted(entries: set[AclEntry] | frozenset[AclEntry]) -> list[AclEntry]:
    return sorted(entries, key=lambda e: (e.principal, e.permission_type.pascal, e.operation.pascal, e.host))


def _pattern_order(pattern: ResourcePattern) -> tuple[str, str, str]:
    return pattern.resource_type.enum_name, pattern.pattern_type.value, pattern.name


# -- actions -------------------------------------------------------------------------------------------
BOOTSTRAP = "bootstrap:"
"""Prefix of a --bootstrap-server target in the `connect` string `_check` returns."""


class _ZkAcls:
    """The ACL znodes themselves (--authorizer-properties)."""

    def __init__(self, zk: KafkaZkClient) -> None:
        self.zk = zk

    def create(self, bindings: Iterable[tuple[ResourcePattern, AclEntry]]) -> None:
        create_acls(self.zk, bindings)

    def delete(self, filters: Sequence[AclBindingFilter]) -> None:
        delete_acls(self.zk, filters)

    def describe(self, binding_filter: AclBindingFilter) -> dict[ResourcePattern, frozenset[AclEntry]]:
        return describe_acls(self.zk, binding_filter)


@contextmanager
def _acls(
    connect: str, create_chroot: bool, command_config: str | None = None
) -> Iterator[_ZkAcls | BrokerAcls]:
    if connect.startswith(BOOTSTRAP):
        with BrokerAcls.connect(connect[len(BOOTSTRAP) :], command_config) as broker:
            yield broker
        return
    with open_zookeeper(
        connect, CONNECT_TIMEOUT_S, flag="zookeeper.connect", create_chroot=create_chroot, cluster_znode=None
    ) as zk:
        yield _ZkAcls(zk)


def _add(args: argparse.Namespace, connect: str) -> int:
    to_add = {f.as_pattern(): entries for f, entries in _filter_to_entries(args).items()}
    if any(not entries for entries in to_add.values()):
        raise CliError(
            "You must specify one of: --allow-principal, --deny-principal when trying to add ACLs."
        )
    # Like Kafka's AclAuthorizer, adding creates the chroot: ACLs are often set before the first broker.
    with _acls(connect, create_chroot=True, command_config=args.command_config) as zk:
        for pattern in sorted(to_add, key=_pattern_order):
            print(_block(f"Adding ACLs for resource `{format_pattern(pattern)}`", _sorted(to_add[pattern])))
            try:
                zk.create((pattern, e) for e in to_add[pattern])
            except ValueError as e:
                raise CliError(f"Error while adding ACLs: {e}") from None
        _print_current(zk, args)
    return 0


def _confirm(args: argparse.Namespace, question: str) -> bool:
    if args.force:
        return True
    print(question)
    try:
        answer = input()
    except EOFError:
        return False
    return answer.strip().lower() == "y"


def _remove(args: argparse.Namespace, connect: str) -> int:
    plan = _filter_to_entries(args)
    with _acls(connect, create_chroot=False, command_config=args.command_config) as zk:
        for resource_filter, entries in plan.items():
            if not entries:
                question = (
                    f"Are you sure you want to delete all ACLs for resource filter `{resource_filter}`? (y/n)"
                )
                filters = [AclBindingFilter(resource_filter)]
            else:
                listed = "\n".join("\t" + format_entry(e) for e in _sorted(entries))
                question = (
                    f"Are you sure you want to remove ACLs: \n {listed} \n "
                    f"from resource filter `{resource_filter}`? (y/n)"
                )
                filters = [AclBindingFilter(resource_filter, AclEntryFilter.exactly(e)) for e in entries]
            if _confirm(args, question):
                zk.delete(filters)
        _print_current(zk, args)
    return 0


def _list(args: argparse.Namespace, connect: str) -> int:
    with _acls(connect, create_chroot=False, command_config=args.command_config) as zk:
        _print_current(zk, args)
    return 0


def _print_current(zk: _ZkAcls | BrokerAcls, args: argparse.Namespace) -> None:
    filters = _resource_filters(args, required=False) or [
        ResourcePatternFilter(None, None, PatternTypeFilter.ANY)
    ]
    found: dict[ResourcePattern, set[AclEntry]] = {}
    for resource_filter in filters:
        for pattern, acls in zk.describe(AclBindingFilter(resource_filter)).items():
            found.setdefault(pattern, set()).update(acls)
    principals = _principals(args.principal) if args.list else []
    if not principals:
        _print_resources(found)
        return
    for principal in principals:
        print(f"ACLs for principal `{principal}`")
        _print_resources({p: {a for a in acls if a.principal == principal} for p, acls in found.items()})


def _print_resources(found: Mapping[ResourcePattern, set[AclEntry]]) -> None:
    for pattern in sorted(found, key=_pattern_order):
        if found[pattern]:
            print(_block(f"Current ACLs for resource `{format_pattern(pattern)}`", _sorted(found[pattern])))
    sys.stdout.flush()
