"""The write path of config changes, shared by AlterConfigs (33) and IncrementalAlterConfigs (44),
and the description of broker configs.

Both APIs end in `alter_resource`: the resource is checked, its current overrides read, the
request turned into the new override set (`replace_all`: AlterConfigs replaces the whole set;
`incremental`: SET, DELETE, APPEND and SUBTRACT on single keys, as Kafka's
`prepareIncrementalConfigs`), the result validated and, unless `validate_only`, written to
ZooKeeper with a `/config/changes` notification. Errors are per resource, as Kafka answers them:

- topics (`/config/topics/<t>`): an illegal name INVALID_TOPIC_EXCEPTION, a missing topic
  UNKNOWN_TOPIC_OR_PARTITION, an unknown key or bad value INVALID_CONFIG;
- brokers (`/config/brokers/<id>`, or `<default>` for the empty name; KIP-226): a name that is not
  this broker's id INVALID_REQUEST, a key that cannot change at run time or a bad value
  INVALID_REQUEST ("Cannot update these configs dynamically: Set(...)");
- IncrementalAlterConfigs: a key given twice, an unknown operation, a null value for anything but
  DELETE, APPEND/SUBTRACT on a key that is not a list: INVALID_REQUEST.

There is no `alter.config.policy.class.name`, so POLICY_VIOLATION is never answered.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Protocol

from zkafka.config.broker import BROKER_CONFIG_KEYS, LOG_CONFIG_SOURCES, is_sensitive
from zkafka.protocol import ErrorCode, KafkaError
from zkafka.protocol.messages import (
    DescribeConfigsResponse,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
)
from zkafka.server.apis.topics import _error
from zkafka.server.dispatcher import RequestContext
from zkafka.server.dynamic_config import (
    DEFAULT_CONFIG,
    DEFAULT_ENTITY,
    DYNAMIC_BROKER_CONFIGS,
    DYNAMIC_DEFAULT_BROKER_CONFIG,
    STATIC_BROKER_CONFIG,
    DynamicConfigError,
)
from zkafka.server.services import DynamicConfigs
from zkafka.storage.config import STORED_ONLY_TOPIC_CONFIGS, TOPIC_CONFIG_KEYS, InvalidConfigError
from zkafka.zk.client import KafkaZkClient
from zkafka.zk.model import ConfigType
from zkafka.zk.topic_names import is_valid_topic_name

TOPIC, BROKER = 2, 4
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3

LIST_TOPIC_CONFIGS = frozenset(
    {"cleanup.policy", "leader.replication.throttled.replicas", "follower.replication.throttled.replicas"}
)

D = DescribeConfigsResponse


class Entry(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def value(self) -> str | None: ...


class Resource:
    """What the change applies to: which keys exist, which are lists, and their defaults."""

    def __init__(
        self,
        kind: str,
        known: Callable[[str], bool],
        is_list: Callable[[str], bool],
        default: Callable[[str], str],
    ) -> None:
        self.kind, self.known, self.is_list, self.default = kind, known, is_list, default


NewOverrides = Callable[[Mapping[str, str], Resource], dict[str, str]]
"""(current overrides, the resource) -> the overrides to store."""


def replace_all(configs: Iterable[Entry]) -> NewOverrides:
    """AlterConfigs: the given non-null entries become the whole override set."""
    new = {c.name: c.value for c in configs if c.value is not None}
    return lambda _current, _resource: dict(new)


def incremental(configs: Iterable[IncrementalAlterConfigsRequest.AlterableConfig]) -> NewOverrides:
    """IncrementalAlterConfigs' operations, checked for what needs no resource (KafkaError
    INVALID_REQUEST at once) and applied in order to the current overrides."""
    ops = list(configs)
    names = [op.name for op in ops]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise KafkaError(
            ErrorCode.INVALID_REQUEST, f"Error due to duplicate config keys: {', '.join(duplicates)}"
        )
    for op in ops:
        if op.config_operation not in (SET, DELETE, APPEND, SUBTRACT):
            raise KafkaError(
                ErrorCode.INVALID_REQUEST, f"Unknown alter configs operation type {op.config_operation}"
            )
    nulls = [op.name for op in ops if op.config_operation != DELETE and op.value is None]
    if nulls:
        raise KafkaError(ErrorCode.INVALID_REQUEST, f"Null value not supported for : {', '.join(nulls)}")

    def apply(current: Mapping[str, str], resource: Resource) -> dict[str, str]:
        new = dict(current)
        for op in ops:
            name = op.name
            if op.config_operation == SET:
                new[name] = op.value  # type: ignore[assignment]
            elif op.config_operation == DELETE:
                new.pop(name, None)
            else:
                verb = "append" if op.config_operation == APPEND else "subtract"
                if not resource.known(name):
                    raise KafkaError(ErrorCode.INVALID_CONFIG, f"Unknown {resource.kind} config name: {name}")
                if not resource.is_list(name):
                    raise KafkaError(
                        ErrorCode.INVALID_REQUEST,
                        f"Config value {verb} is not allowed for config key: {name}",
                    )
                old = new.get(name, resource.default(name))
                items = [i.strip() for i in old.split(",") if i.strip()]
                given = [i.strip() for i in (op.value or "").split(",") if i.strip()]
                if op.config_operation == APPEND:
                    items = list(dict.fromkeys(items + given))
                else:
                    items = [i for i in items if i not in given]
                new[name] = ",".join(items)
        return new

    return apply


async def alter_resource(
    ctx: RequestContext, resource_type: int, name: str, change: NewOverrides, validate_only: bool
) -> None:
    """Validate and (unless `validate_only`) store one resource's new overrides; KafkaError on refusal."""
    if resource_type == TOPIC:
        await _alter_topic(ctx, name, change, validate_only)
    elif resource_type == BROKER:
        await _alter_broker(ctx, name, change, validate_only)
    else:
        raise KafkaError(ErrorCode.INVALID_REQUEST, f"unsupported resource type {resource_type}")


def check_topic_name(topic: str) -> None:
    """Kafka's Topic.validate: an illegal name ("", "..", "a/b") is INVALID_TOPIC_EXCEPTION, and
    never reaches ZooKeeper, where it would not even be a znode name."""
    if not is_valid_topic_name(topic):
        raise KafkaError(ErrorCode.INVALID_TOPIC_EXCEPTION, f"topic name {topic[:64]!r} is illegal")


async def _alter_topic(ctx: RequestContext, topic: str, change: NewOverrides, validate_only: bool) -> None:
    services = ctx.services
    check_topic_name(topic)
    if not await services.zk.run(KafkaZkClient.topic_exists, topic):
        raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {topic!r} does not exist")
    current = await services.zk.run(KafkaZkClient.get_entity_config, ConfigType.TOPIC, topic)
    defaults = services.logs.default_config.to_topic_configs()
    resource = Resource(
        "topic",
        lambda k: k in TOPIC_CONFIG_KEYS or k in STORED_ONLY_TOPIC_CONFIGS,
        lambda k: k in LIST_TOPIC_CONFIGS,
        lambda k: defaults.get(k, STORED_ONLY_TOPIC_CONFIGS.get(k, "")),
    )
    configs = change(current, resource)
    try:
        services.logs.default_config.with_overrides(configs)
    except InvalidConfigError as e:
        raise KafkaError(ErrorCode.INVALID_CONFIG, str(e)) from None
    if not validate_only:
        await services.zk.run(KafkaZkClient.set_entity_config, ConfigType.TOPIC, topic, configs)


def _dynamic(ctx: RequestContext) -> DynamicConfigs:
    if ctx.services.dynamic is None:
        raise KafkaError(ErrorCode.INVALID_REQUEST, "this broker has no dynamic broker configs")
    return ctx.services.dynamic


def broker_entity(ctx: RequestContext, name: str, *, describing: bool = False) -> str:
    """The znode name of a broker resource: `<default>` for "", else this broker's id (Kafka's
    "Unexpected broker id" for another's)."""
    if name == "":
        return DEFAULT_ENTITY
    own = ctx.services.identity.broker_id
    try:
        broker_id = int(name)
    except ValueError:
        raise KafkaError(
            ErrorCode.INVALID_REQUEST, f"Broker id must be an integer, but it is: {name[:64]}"
        ) from None
    if broker_id != own:
        expected = f"{own} or empty string" if describing else str(own)
        raise KafkaError(
            ErrorCode.INVALID_REQUEST, f"Unexpected broker id, expected {expected}, but received {name}"
        )
    return str(own)


async def _alter_broker(ctx: RequestContext, name: str, change: NewOverrides, validate_only: bool) -> None:
    entity = broker_entity(ctx, name)
    dynamic = _dynamic(ctx)
    per_broker = entity != DEFAULT_ENTITY
    current = await ctx.services.zk.run(KafkaZkClient.get_entity_config, ConfigType.BROKER, entity)

    def is_list(key: str) -> bool:
        return BROKER_CONFIG_KEYS[key].type.kafka_type == "LIST"

    resource = Resource(
        "broker", lambda k: k in BROKER_CONFIG_KEYS, is_list, lambda k: dynamic.effective_text(k) or ""
    )
    configs = change(current, resource)
    try:
        dynamic.check(configs, per_broker=per_broker)
    except DynamicConfigError as e:
        raise KafkaError(
            ErrorCode.INVALID_REQUEST, f"Invalid config value for resource broker {name!r}: {e}"
        ) from None
    if not validate_only:
        await ctx.services.zk.run(KafkaZkClient.set_entity_config, ConfigType.BROKER, entity, configs)
        await dynamic.reload()


async def handle_incremental(
    ctx: RequestContext, request: IncrementalAlterConfigsRequest
) -> IncrementalAlterConfigsResponse:
    results = []
    for res in request.resources:
        out = IncrementalAlterConfigsResponse.AlterConfigsResourceResponse(
            resource_type=res.resource_type, resource_name=res.resource_name
        )
        results.append(out)
        try:
            await alter_resource(
                ctx, res.resource_type, res.resource_name, incremental(res.configs), request.validate_only
            )
        except Exception as e:
            out.error_code, out.error_message = _error(e)
    return IncrementalAlterConfigsResponse(responses=results)


# -- describing broker configs ---------------------------------------------------------------------


def topic_default_synonyms(
    ctx: RequestContext, topic_key: str, default_value: str
) -> list[tuple[str, str | None, int]]:
    """Where a topic config's default comes from, as DescribeConfigs lists it after the topic's own
    override: the broker keys that set it, each at every level it is set (dynamic broker, dynamic
    default, static, Kafka default), as Kafka's synonyms of the first broker key."""
    broker_keys = LOG_CONFIG_SOURCES[topic_key][1]
    if ctx.services.dynamic is not None:
        return ctx.services.dynamic.synonyms(broker_keys[0])
    explicit = [k for k in broker_keys if k in ctx.services.config.explicit_keys]
    static = [(explicit[0], default_value, STATIC_BROKER_CONFIG)] if explicit else []
    return [*static, (broker_keys[0], default_value, DEFAULT_CONFIG)]


def describe_broker(ctx: RequestContext, name: str, synonyms: bool) -> list[D.DescribeConfigsResourceResult]:
    """Kafka's DescribeConfigs of a broker: for its id every config with its source and synonyms
    (dynamic broker, dynamic default, static, Kafka default); for "" the dynamic defaults only."""
    entity = broker_entity(ctx, name, describing=True)
    dynamic = _dynamic(ctx)
    keys = sorted(dynamic.defaults) if entity == DEFAULT_ENTITY else sorted(BROKER_CONFIG_KEYS)
    out = []
    for key in keys:
        chain = dynamic.synonyms(key, per_broker=entity != DEFAULT_ENTITY)
        source = chain[0][2] if chain else DEFAULT_CONFIG
        value = dynamic.defaults[key] if entity == DEFAULT_ENTITY else dynamic.effective_text(key)
        sensitive = is_sensitive(key)  # Kafka's PASSWORD keys: described as null, never shown
        out.append(
            D.DescribeConfigsResourceResult(
                name=key,
                value=None if sensitive else value,
                read_only=key not in DYNAMIC_BROKER_CONFIGS,
                config_source=DYNAMIC_DEFAULT_BROKER_CONFIG if entity == DEFAULT_ENTITY else source,
                is_default=source == DEFAULT_CONFIG,
                is_sensitive=sensitive,
                synonyms=[
                    D.DescribeConfigsSynonym(name=n, value=None if sensitive else v, source=s)
                    for n, v, s in chain
                ]
                if synonyms
                else [],
            )
        )
    return out
