"""DescribeConfigs and AlterConfigs for topics (ZooKeeper `/config/topics/<t>`) and brokers.

A topic's effective value comes from its override in ZooKeeper (source DYNAMIC_TOPIC_CONFIG),
else from this broker's `log.*` key: its dynamic value (DYNAMIC_BROKER_CONFIG), the cluster's
dynamic default (DYNAMIC_DEFAULT_BROKER_CONFIG), server.properties (STATIC_BROKER_CONFIG), else
Kafka's default (DEFAULT_CONFIG); synonyms list that chain (v1+). AlterConfigs replaces a
topic's whole override set (it is not incremental, as in Kafka) and announces the change with
a `/config/changes` notification, which every broker applies to its local logs. Broker
resources (dynamic broker configs, KIP-226) and the write path shared with IncrementalAlterConfigs
live in `config_changes`.
"""

from __future__ import annotations

from zkafka.protocol import ErrorCode, KafkaError
from zkafka.protocol.messages import (
    AlterConfigsRequest,
    AlterConfigsResponse,
    DescribeConfigsRequest,
    DescribeConfigsResponse,
)
from zkafka.server.apis.config_changes import (
    alter_resource,
    describe_broker,
    replace_all,
    topic_default_synonyms,
)
from zkafka.server.apis.config_changes import check_topic_name as _check_topic_name
from zkafka.server.apis.topics import _error
from zkafka.server.dispatcher import RequestContext
from zkafka.storage.config import STORED_ONLY_TOPIC_CONFIGS
from zkafka.zk.client import KafkaZkClient
from zkafka.zk.model import ConfigType

TOPIC, BROKER = 2, 4
DYNAMIC_TOPIC_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG = 1, 4, 5

D = DescribeConfigsResponse


async def handle_describe(ctx: RequestContext, request: DescribeConfigsRequest) -> DescribeConfigsResponse:
    results = []
    for res in request.resources:
        out = D.DescribeConfigsResult(resource_type=res.resource_type, resource_name=res.resource_name)
        results.append(out)
        try:
            if res.resource_type == TOPIC:
                out.configs = await _describe_topic(ctx, res.resource_name, request.include_synonyms)
            elif res.resource_type == BROKER:
                out.configs = describe_broker(ctx, res.resource_name, request.include_synonyms)
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
    entries = []
    for key, default_value in defaults.items():
        chain = topic_default_synonyms(ctx, key, default_value)
        syn = []
        if key in overrides:
            value, source = overrides[key], DYNAMIC_TOPIC_CONFIG
            syn.append(D.DescribeConfigsSynonym(name=key, value=value, source=DYNAMIC_TOPIC_CONFIG))
        else:
            value, source = default_value, chain[0][2] if chain else DEFAULT_CONFIG
        syn.extend(D.DescribeConfigsSynonym(name=n, value=v, source=src) for n, v, src in chain)
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


async def handle_alter(ctx: RequestContext, request: AlterConfigsRequest) -> AlterConfigsResponse:
    results = []
    for res in request.resources:
        out = AlterConfigsResponse.AlterConfigsResourceResponse(
            resource_type=res.resource_type, resource_name=res.resource_name
        )
        results.append(out)
        try:
            await alter_resource(
                ctx, res.resource_type, res.resource_name, replace_all(res.configs), request.validate_only
            )
        except Exception as e:
            out.error_code, out.error_message = _error(e)
    return AlterConfigsResponse(responses=results)
