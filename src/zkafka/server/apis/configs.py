"""DescribeConfigs and AlterConfigs for topics (ZooKeeper `/config/topics/<t>`) and brokers.

A topic's effective value comes from its override in ZooKeeper (source DYNAMIC_TOPIC_CONFIG),
else from this broker's `log.*` key when set in server.properties (STATIC_BROKER_CONFIG), else
Kafka's default (DEFAULT_CONFIG); synonyms list that chain (v1+). AlterConfigs replaces a
topic's whole override set (it is not incremental, as in Kafka) and announces the change with
a `/config/changes` notification, which every broker applies to its local logs.
"""

from __future__ import annotations

from zkafka.config.broker import LOG_CONFIG_SOURCES, is_sensitive
from zkafka.protocol import ErrorCode, KafkaError
from zkafka.protocol.messages import (
    AlterConfigsRequest,
    AlterConfigsResponse,
    DescribeConfigsRequest,
    DescribeConfigsResponse,
)
from zkafka.server.apis.topics import _error
from zkafka.server.dispatcher import RequestContext
from zkafka.storage.config import STORED_ONLY_TOPIC_CONFIGS, InvalidConfigError
from zkafka.zk.client import KafkaZkClient
from zkafka.zk.model import ConfigType
from zkafka.zk.topic_names import is_valid_topic_name

TOPIC, BROKER = 2, 4
DYNAMIC_TOPIC_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG = 1, 4, 5

D = DescribeConfigsResponse


def _check_topic_name(topic: str) -> None:
    """Kafka's Topic.validate: an illegal name ("", "..", "a/b") is INVALID_TOPIC_EXCEPTION, and
    never reaches ZooKeeper, where it would not even be a znode name."""
    if not is_valid_topic_name(topic):
        raise KafkaError(ErrorCode.INVALID_TOPIC_EXCEPTION, f"topic name {topic[:64]!r} is illegal")


async def handle_describe(ctx: RequestContext, request: DescribeConfigsRequest) -> DescribeConfigsResponse:
    results = []
    for res in request.resources:
        out = D.DescribeConfigsResult(resource_type=res.resource_type, resource_name=res.resource_name)
        results.append(out)
        try:
            if res.resource_type == TOPIC:
                out.configs = await _describe_topic(ctx, res.resource_name, request.include_synonyms)
            elif res.resource_type == BROKER:
                out.configs = _describe_broker(ctx, res.resource_name)
            else:
                raise KafkaError(ErrorCode.INVALID_REQUEST, f"unsupported resource type {res.resource_type}")
            if res.configuration_keys is not None:
                wanted = set(res.configuration_keys)
                out.configs = [c for c in out.configs if c.name in wanted]
        except Exception as e:
            out.error_code, out.error_message = _error(e)
            out.configs = []
    return DescribeConfigsResponse(results=results)


async def _describe_topic(
    ctx: RequestContext, topic: str, synonyms: bool
) -> list[D.DescribeConfigsResourceResult]:
    services = ctx.services
    _check_topic_name(topic)
    if not await services.zk.run(KafkaZkClient.topic_exists, topic):
        raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {topic!r} does not exist")
    overrides = await services.zk.run(KafkaZkClient.get_entity_config, ConfigType.TOPIC, topic)
    defaults = services.logs.default_config.to_topic_configs()
    explicit = services.config.explicit_keys
    entries = []
    for key, default_value in defaults.items():
        broker_keys = [k for k in LOG_CONFIG_SOURCES[key][1] if k in explicit]
        syn = []
        if key in overrides:
            value, source = overrides[key], DYNAMIC_TOPIC_CONFIG
            syn.append(D.DescribeConfigsSynonym(name=key, value=value, source=DYNAMIC_TOPIC_CONFIG))
        else:
            value = default_value
            source = STATIC_BROKER_CONFIG if broker_keys else DEFAULT_CONFIG
        if broker_keys:
            syn.append(
                D.DescribeConfigsSynonym(
                    name=broker_keys[0], value=default_value, source=STATIC_BROKER_CONFIG
                )
            )
        syn.append(
            D.DescribeConfigsSynonym(
                name=LOG_CONFIG_SOURCES[key][1][0], value=default_value, source=DEFAULT_CONFIG
            )
        )
        entries.append(
            D.DescribeConfigsResourceResult(
                name=key,
                value=value,
                read_only=False,
                config_source=source,
                is_default=source == DEFAULT_CONFIG,
                is_sensitive=False,
                synonyms=syn if synonyms else [],
            )
        )
    for key, kafka_default in STORED_ONLY_TOPIC_CONFIGS.items():
        given = key in overrides
        source = DYNAMIC_TOPIC_CONFIG if given else DEFAULT_CONFIG
        value = overrides[key] if given else kafka_default
        entries.append(
            D.DescribeConfigsResourceResult(
                name=key,
                value=value,
                read_only=False,
                config_source=source,
                is_default=not given,
                is_sensitive=False,
                synonyms=[D.DescribeConfigsSynonym(name=key, value=value, source=source)] if synonyms else [],
            )
        )
    return entries


def _describe_broker(ctx: RequestContext, name: str) -> list[D.DescribeConfigsResourceResult]:
    broker_id = ctx.services.identity.broker_id
    if name not in ("", str(broker_id)):
        raise KafkaError(
            ErrorCode.INVALID_REQUEST, f"broker {name} must be asked directly; this is {broker_id}"
        )
    return [
        D.DescribeConfigsResourceResult(
            name=key,
            value=value,
            read_only=True,
            config_source=DEFAULT_CONFIG if is_default else STATIC_BROKER_CONFIG,
            is_default=is_default,
            is_sensitive=is_sensitive(key),
        )
        for key, value, is_default in ctx.services.config.describe()
    ]


async def handle_alter(ctx: RequestContext, request: AlterConfigsRequest) -> AlterConfigsResponse:
    services = ctx.services
    results = []
    for res in request.resources:
        out = AlterConfigsResponse.AlterConfigsResourceResponse(
            resource_type=res.resource_type, resource_name=res.resource_name
        )
        results.append(out)
        try:
            if res.resource_type != TOPIC:
                raise KafkaError(
                    ErrorCode.INVALID_REQUEST,
                    "only topic configs can be altered (dynamic broker configs are not supported)",
                )
            _check_topic_name(res.resource_name)
            configs = {c.name: c.value for c in res.configs if c.value is not None}
            try:
                services.logs.default_config.with_overrides(configs)
            except InvalidConfigError as e:
                raise KafkaError(ErrorCode.INVALID_CONFIG, str(e)) from None
            if not await services.zk.run(KafkaZkClient.topic_exists, res.resource_name):
                raise KafkaError(
                    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {res.resource_name!r} does not exist"
                )
            if not request.validate_only:
                await services.zk.run(
                    KafkaZkClient.set_entity_config, ConfigType.TOPIC, res.resource_name, configs
                )
        except Exception as e:
            out.error_code, out.error_message = _error(e)
    return AlterConfigsResponse(responses=results)
