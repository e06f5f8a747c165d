"""Authorizing requests as Kafka's KafkaApis does, in one place (docs/security.md, issue 14 step 3).

When `authorizer.class.name` names Kafka's ACL authorizer (or zkafka's), the broker runs the ACL
cache (`zkafka.security.acl_cache`) and `BrokerServices.authorizer` is an `AclAuthorizer`; else it
is None and nothing here runs at all: `guard_handlers` returns the handler table unchanged, so an
unsecured broker pays nothing per request (and never anything per record).

With an authorizer every API of the table goes through its guard before its handler. A guard
checks the operation and resource Kafka checks and answers Kafka's error where Kafka does:

* whole-request denials build the API's response with its top-level error (controller and
  inter-broker APIs: Cluster:ClusterAction; group member APIs: Group:Read; ...);
* per-item denials (a topic of a Produce, a group of DescribeGroups) take the denied items out of
  the request, let the handler serve the rest, and add the denied items back to its response with
  TOPIC_/GROUP_/TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
* Metadata and ListGroups list only what the principal may describe.

Handlers themselves never check: `authorize(ctx, ...)` is the one function a handler would call,
and the guards are built on it.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from zkafka.config import BrokerConfig
from zkafka.protocol import ApiKey, ErrorCode
from zkafka.protocol.codec import message_class
from zkafka.protocol.schemas.fetch import FIRST_TOPIC_ID_VERSION
from zkafka.security.acl_wire import OPERATION_CODES
from zkafka.security.authorizer import AclAuthorizer, Action, AuthorizationResult, RequestInfo
from zkafka.security.principal import parse_principal
from zkafka.server.dispatcher import Handler, RequestContext
from zkafka.server.network import NO_RESPONSE
from zkafka.server.security import SecurityConfigError
from zkafka.zk.acls import AclOperation, ResourcePattern, ResourceType

__all__ = [
    "AUTHORIZER_CLASS_NAMES",
    "CLUSTER",
    "authorize",
    "authorized_names",
    "authorized_operations",
    "authorizer_enabled",
    "guard_handlers",
]

AUTHORIZER_CLASS_NAMES = frozenset(
    {
        "kafka.security.authorizer.AclAuthorizer",
        "kafka.security.auth.SimpleAclAuthorizer",
        "zkafka.security.authorizer.AclAuthorizer",
    }
)
CLUSTER = "kafka-cluster"

Op = AclOperation
RT = ResourceType
TOPIC_DENIED = ErrorCode.TOPIC_AUTHORIZATION_FAILED
GROUP_DENIED = ErrorCode.GROUP_AUTHORIZATION_FAILED
CLUSTER_DENIED = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
TXN_DENIED = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED


def authorizer_enabled(config: BrokerConfig) -> bool:
    """Whether `authorizer.class.name` asks for the ACL authorizer; ValueError for a class zkafka
    does not have: SecurityConfigError (a broker must not start open when its operator asked for
    a different one)."""
    name = config.authorizer_class_name.strip()
    if not name:
        return False
    if name in AUTHORIZER_CLASS_NAMES:
        return True
    raise SecurityConfigError(
        f"authorizer.class.name {name!r} is not supported (use kafka.security.authorizer.AclAuthorizer)"
    )


def build_authorizer(config: BrokerConfig, acls: Any) -> AclAuthorizer:
    return AclAuthorizer.from_config(
        {
            "super.users": config.super_users or "",
            "allow.everyone.if.no.acl.found": "true" if config.allow_everyone_if_no_acl_found else "false",
        },
        acls,
    )


def _request_info(ctx: RequestContext) -> RequestInfo:
    api = ApiKey(ctx.header.api_key).name if ctx.header.api_key in ApiKey._value2member_map_ else "UNKNOWN"
    return RequestInfo(parse_principal(ctx.principal), ctx.connection.ip, api)


def authorize(
    ctx: RequestContext,
    operation: AclOperation,
    resource_type: ResourceType,
    name: str = CLUSTER,
    *,
    audit: bool = True,
) -> bool:
    """May this request's principal do `operation` on the literal resource? Always True without an
    authorizer. `audit=False` for checks that only filter (logged below DEBUG, as Kafka does)."""
    authorizer: AclAuthorizer | None = ctx.services.authorizer
    if authorizer is None:
        return True
    action = Action(operation, ResourcePattern(resource_type, name), audit, audit)
    return authorizer.authorize_one(_request_info(ctx), action) is AuthorizationResult.ALLOWED


SUPPORTED_OPERATIONS: Mapping[ResourceType, tuple[AclOperation, ...]] = {
    ResourceType.TOPIC: (
        AclOperation.READ,
        AclOperation.WRITE,
        AclOperation.CREATE,
        AclOperation.DESCRIBE,
        AclOperation.DELETE,
        AclOperation.ALTER,
        AclOperation.DESCRIBE_CONFIGS,
        AclOperation.ALTER_CONFIGS,
    ),
    ResourceType.GROUP: (AclOperation.READ, AclOperation.DESCRIBE, AclOperation.DELETE),
    ResourceType.CLUSTER: (
        AclOperation.CREATE,
        AclOperation.CLUSTER_ACTION,
        AclOperation.DESCRIBE_CONFIGS,
        AclOperation.ALTER_CONFIGS,
        AclOperation.IDEMPOTENT_WRITE,
        AclOperation.ALTER,
        AclOperation.DESCRIBE,
    ),
    ResourceType.TRANSACTIONAL_ID: (AclOperation.DESCRIBE, AclOperation.WRITE),
}
"""The operations that mean something for each resource type (Kafka's AclEntry.supportedOperations):
what "authorized operations" answers range over."""


def authorized_operations(ctx: RequestContext, resource_type: ResourceType, name: str = CLUSTER) -> int:
    """Kafka's authorized-operations bit field for the literal resource (Metadata v8+,
    DescribeCluster): bit `code` set for each supported operation, by its AclOperation wire code,
    that the principal may do; every supported one without an authorizer. Checked without audit
    lines, as Kafka does."""
    supported = SUPPORTED_OPERATIONS[resource_type]
    authorizer: AclAuthorizer | None = ctx.services.authorizer
    if authorizer is None:
        allowed: Iterable[AclOperation] = supported
    else:
        pattern = ResourcePattern(resource_type, name)
        results = authorizer.authorize(
            _request_info(ctx), [Action(op, pattern, False, False) for op in supported]
        )
        allowed = [op for op, r in zip(supported, results, strict=True) if r is AuthorizationResult.ALLOWED]
    return sum(1 << OPERATION_CODES[op] for op in allowed)


def authorized_names(
    ctx: RequestContext,
    operation: AclOperation,
    resource_type: ResourceType,
    names: Iterable[str],
    *,
    audit: bool = True,
) -> set[str]:
    """The names (of one resource type) the principal may `operation`, each checked once."""
    unique = dict.fromkeys(names)
    authorizer: AclAuthorizer | None = ctx.services.authorizer
    if authorizer is None:
        return set(unique)
    info = _request_info(ctx)
    actions = [Action(operation, ResourcePattern(resource_type, n), audit, audit) for n in unique]
    results = authorizer.authorize(info, actions)
    return {
        a.resource.name for a, r in zip(actions, results, strict=True) if r is AuthorizationResult.ALLOWED
    }


# -- plumbing ------------------------------------------------------------------------------------


def _then(result: Any, fix: Callable[[Any], None]) -> Any:
    """Apply `fix` to a handler's response, whether it came at once or as an awaitable."""
    if result is NO_RESPONSE:
        return result
    if inspect.isawaitable(result):

        async def finished() -> Any:
            response = await result
            if response is not NO_RESPONSE:
                fix(response)
            return response

        return finished()
    fix(result)
    return result


def _serve_the_rest(
    ctx: RequestContext, request: Any, handler: Handler, anything_left: bool, fix: Callable[[Any], None]
) -> Any:
    """The handler serves what the principal may do (unless nothing is left: then an empty
    response of the request's version), and `fix` adds the refused items to its answer."""
    if not anything_left:
        response = _response(ctx)
        fix(response)
        return response
    return _then(handler(ctx, request), fix)


def _response(ctx: RequestContext, **fields: Any) -> Any:
    """The API's response with `fields` set and every other field at its default."""
    cls = message_class(ctx.header.api_key, "response")
    return cls(**{k: v for k, v in fields.items() if k in cls._FIELDS})


def _nested(ctx: RequestContext, name: str) -> Any:
    return getattr(message_class(ctx.header.api_key, "response"), name)


Guard = Callable[[RequestContext, Any, Handler], Any]


def _cluster_guard(operation: AclOperation, **error_fields: Any) -> Guard:
    """A whole-request check on the cluster resource; denied: the top-level error."""

    def guard(ctx: RequestContext, request: Any, handler: Handler) -> Any:
        if authorize(ctx, operation, RT.CLUSTER):
            return handler(ctx, request)
        return _response(ctx, error_code=CLUSTER_DENIED, **error_fields)

    return guard


def _alter_client_quotas(ctx: RequestContext, request: Any, handler: Handler) -> Any:
    """AlterClientQuotas: Cluster:AlterConfigs; denied, every entity is answered with the error."""
    if authorize(ctx, Op.ALTER_CONFIGS, RT.CLUSTER):
        return handler(ctx, request)
    entry, entity = _nested(ctx, "EntryData"), _nested(ctx, "EntityData")
    return _response(
        ctx,
        entries=[
            entry(
                error_code=CLUSTER_DENIED,
                error_message="Authorization failed.",
                entity=[entity(entity_type=e.entity_type, entity_name=e.entity_name) for e in item.entity],
            )
            for item in request.entries
        ],
    )


def _group_guard(operation: AclOperation) -> Guard:
    """Group member APIs (JoinGroup, SyncGroup, Heartbeat, LeaveGroup): Group:<operation>."""

    def guard(ctx: RequestContext, request: Any, handler: Handler) -> Any:
        if authorize(ctx, operation, RT.GROUP, request.group_id):
            return handler(ctx, request)
        return _response(ctx, error_code=GROUP_DENIED, generation_id=-1, member_id="")

    return guard


def _split(items: list[Any], allowed: set[str], key: str) -> tuple[list[Any], list[Any]]:
    keep = [i for i in items if getattr(i, key) in allowed]
    drop = [i for i in items if getattr(i, key) not in allowed]
    return keep, drop


# -- guards, per API -----------------------------------------------------------------------------


def _produce(ctx: RequestContext, request: Any, handler: Handler) -> Any:
    tid = request.transactional_id
    if tid is not None and not authorize(ctx, Op.WRITE, RT.TRANSACTIONAL_ID, tid):
        allowed: set[str] = set()
        code = TXN_DENIED
    else:
        allowed = authorized_names(ctx, Op.WRITE, RT.TOPIC, (t.name for t in request.topic_data))
        code = TOPIC_DENIED
    request.topic_data, denied = _split(request.topic_data, allowed, "name")
    if not denied:
        return handler(ctx, request)
    topic_cls, part_cls = _nested(ctx, "TopicProduceResponse"), _nested(ctx, "PartitionProduceResponse")

    def fix(response: Any) -> None:
        for t in denied:
            parts = [part_cls(index=p.index, error_code=code, base_offset=-1) for p in t.partition_data]
            response.responses.append(topic_cls(name=t.name, partition_responses=parts))

    if not request.topic_data:
        if request.acks == 0:
            return NO_RESPONSE
        response = _response(ctx)
        fix(response)
        return response
    return _then(handler(ctx, request), fix)


def _fetch(ctx: RequestContext, request: Any, handler: Handler) -> Any:
    # v13 names topics by id: checked by the name the id has; an id no topic has is left to the
    # handler (UNKNOWN_TOPIC_ID, as Kafka answers it before any authorization)
    by_id = ctx.api_version >= FIRST_TOPIC_ID_VERSION
    names = [ctx.services.metadata.topic_name(t.topic_id) if by_id else t.topic for t in request.topics]
    known = [n for n in names if n is not None]
    if request.replica_id >= 0:
        allowed = set(known) if authorize(ctx, Op.CLUSTER_ACTION, RT.CLUSTER) else set()
    else:
        allowed = authorized_names(ctx, Op.READ, RT.TOPIC, known)
    kept = [t for t, n in zip(request.topics, names, strict=True) if n is None or n in allowed]
    denied = [t for t, n in zip(request.topics, names, strict=True) if n is not None and n not in allowed]
    if not denied:
        return handler(ctx, request)
    request.topics = kept
    topic_cls, part_cls = _nested(ctx, "FetchableTopicResponse"), _nested(ctx, "PartitionData")

    def fix(response: Any) -> None:
        for t in denied:
            parts = [
                # an empty record set, never null: librdkafka refuses a null one
                part_cls(partition_index=p.partition, error_code=TOPIC_DENIED, high_watermark=-1, records=b"")
                for p in t.partitions
            ]
            response.responses.append(topic_cls(topic=t.topic, topic_id=t.topic_id, partitions=parts))

    return _then(handler(ctx, request), fix)


def _per_topic(
    operation: AclOperation,
    topic_key: str,
    parts_key: str,
    part_index: str,
    resp_topic: str,
    resp_part: str,
    resp_parts_key: str,
    resp_index: str,
    extra: Mapping[str, Any] | None = None,
) -> Guard:
    """Topic-keyed APIs answered per partition (ListOffsets, OffsetForLeaderEpoch, DeleteRecords)."""

    def guard(ctx: RequestContext, request: Any, handler: Handler) -> Any:
        allowed = authorized_names(ctx, operation, RT.TOPIC, (getattr(t, topic_key) for t in request.topics))
        request.topics, denied = _split(request.topics, allowed, topic_key)
        if not denied:
            return handler(ctx, request)
        topic_cls, part_cls = _nested(ctx, resp_topic), _nested(ctx, resp_part)

        def fix(response: Any) -> None:
            for t in denied:
                parts = [
                    part_cls(
                        **{resp_index: getattr(p, part_index), "error_code": TOPIC_DENIED, **(extra or {})}
                    )
                    for p in getattr(t, parts_key)
                ]
                response.topics.append(topic_cls(**{topic_key: getattr(t, topic_key), resp_parts_key: parts}))

        return _then(handler(ctx, request), fix)

    return guard


def _metadata(ctx: RequestContext, request: Any, handler: Handler) -> Any:
    if not request.topics:  # every topic (None; or v0's empty list): only the describable ones listed,
        # with no audit line per topic, as Kafka
        return _then(handler(ctx, request), lambda r: _fix_metadata(ctx, r, None, []))
    if any(t.topic_id.int != 0 for t in request.topics):
        # v12 by id: the handler resolves the ids; a topic the principal may not describe keeps only
        # its id in the answer (ids are not secret, names are), as Kafka answers it
        return _then(handler(ctx, request), lambda r: _hide_metadata_by_id(ctx, r))
    # named topics: Describe each; a missing one it may not create (Cluster or Topic:Create) is denied
    names = list(dict.fromkeys(t.name for t in request.topics if t.name is not None))
    describable = authorized_names(ctx, Op.DESCRIBE, RT.TOPIC, names)
    if request.allow_auto_topic_creation and ctx.services.config.auto_create_topics_enable:
        missing = [n for n in names if n in describable and not ctx.services.metadata.contains_topic(n)]
        if missing and not authorize(ctx, Op.CREATE, RT.CLUSTER, audit=False):
            describable -= set(missing) - authorized_names(ctx, Op.CREATE, RT.TOPIC, missing)
    denied = [n for n in names if n not in describable]
    if not denied:
        return handler(ctx, request)
    request.topics = [t for t in request.topics if t.name is None or t.name in describable]
    return _then(handler(ctx, request), lambda r: _fix_metadata(ctx, r, describable, denied))


def _hide_metadata_by_id(ctx: RequestContext, response: Any) -> None:
    known = [t for t in response.topics if t.name is not None]
    keep = authorized_names(ctx, Op.DESCRIBE, RT.TOPIC, (t.name for t in known))
    topic_cls = _nested(ctx, "MetadataResponseTopic")
    response.topics = [
        t
        if t.name is None or t.name in keep
        else topic_cls(error_code=TOPIC_DENIED, name=None, topic_id=t.topic_id, is_internal=False)
        for t in response.topics
    ]


def _fix_metadata(ctx: RequestContext, response: Any, keep: set[str] | None, denied: list[str]) -> None:
    if keep is None:
        names = (t.name for t in response.topics)
        keep = authorized_names(ctx, Op.DESCRIBE, RT.TOPIC, names, audit=False)
    response.topics = [t for t in response.topics if t.name in keep]
    topic_cls = _nested(ctx, "MetadataResponseTopic")
    for name in denied:
        response.topics.append(topic_cls(error_code=TOPIC_DENIED, name=name, is_internal=False))


def _find_coordinator(ctx: RequestContext, request: Any, handler: Handler) -> Any:
    if request.key_type == 1:
        ok, code = authorize(ctx, Op.DESCRIBE, RT.TRANSACTIONAL_ID, request.key), TXN_DENIED
    else:
        ok, code = authorize(ctx, Op.DESCRIBE, RT.GROUP, request.key), GROUP_DENIED
    if ok:
        return handler(ctx, request)
    return _response(ctx, error_code=code, node_id=-1, host="", port=-1)


def _offset_commit(ctx: RequestContext, request: Any, handler: Handler) -> Any:
    group_ok = authorize(ctx, Op.READ, RT.GROUP, request.group_id)
    allowed = (
        authorized_names(ctx, Op.READ, RT.TOPIC, (t.name for t in request.topics)) if group_ok else set()
    )
    request.topics, denied = _split(request.topics, allowed, "name")
    code = TOPIC_DENIED if group_ok else GROUP_DENIED
    topic_cls, part_cls = (
        _nested(ctx, "OffsetCommitResponseTopic"),
        _nested(ctx, "OffsetCommitResponsePartition"),
    )

    def fix(response: Any) -> None:
        for t in denied:
            parts = [part_cls(partition_index=p.partition_index, error_code=code) for p in t.partitions]
            response.topics.append(topic_cls(name=t.name, partitions=parts))

    if not group_ok or (not request.topics and denied):
        response = _response(ctx)
        fix(response)
        return response
    return _then(handler(ctx, request), fix) if denied else handler(ctx, request)


def _offset_fetch_groups(ctx: RequestContext, request: Any, handler: Handler) -> Any:
    """v8+ (several groups): Group:Describe per group (a refused group gets its own
    GROUP_AUTHORIZATION_FAILED, the others are served), then Topic:Describe per topic as below."""
    group_cls, topic_cls = _nested(ctx, "OffsetFetchResponseGroup"), _nested(ctx, "OffsetFetchResponseTopics")
    part_cls = _nested(ctx, "OffsetFetchResponsePartitions")
    refused_groups = [g for g in request.groups if not authorize(ctx, Op.DESCRIBE, RT.GROUP, g.group_id)]
    request.groups = [g for g in request.groups if g not in refused_groups]
    every_topic = {g.group_id for g in request.groups if g.topics is None}
    denied: dict[str, list[Any]] = {}
    for g in request.groups:
        if g.topics is not None:
            allowed = authorized_names(ctx, Op.DESCRIBE, RT.TOPIC, (t.name for t in g.topics))
            g.topics, denied[g.group_id] = _split(g.topics, allowed, "name")

    def fix(response: Any) -> None:
        for group in response.groups:
            if group.group_id in every_topic:  # only the describable committed topics
                allowed = authorized_names(
                    ctx, Op.DESCRIBE, RT.TOPIC, (t.name for t in group.topics), audit=False
                )
                group.topics = [t for t in group.topics if t.name in allowed]
            for t in denied.get(group.group_id, []):
                parts = [
                    part_cls(partition_index=i, committed_offset=-1, metadata="", error_code=TOPIC_DENIED)
                    for i in t.partition_indexes
                ]
                group.topics.append(topic_cls(name=t.name, partitions=parts))
        response.groups.extend(
            group_cls(group_id=g.group_id, error_code=GROUP_DENIED) for g in refused_groups
        )

    return _serve_the_rest(ctx, request, handler, bool(request.groups), fix)


def _offset_fetch(ctx: RequestContext, request: Any, handler: Handler) -> Any:
    if ctx.api_version >= 8:
        return _offset_fetch_groups(ctx, request, handler)
    topic_cls = _nested(ctx, "OffsetFetchResponseTopic")
    part_cls = _nested(ctx, "OffsetFetchResponsePartition")
    if not authorize(ctx, Op.DESCRIBE, RT.GROUP, request.group_id):
        topics = [
            topic_cls(
                name=t.name,
                partitions=[
                    part_cls(partition_index=i, committed_offset=-1, metadata="", error_code=GROUP_DENIED)
                    for i in t.partition_indexes
                ],
            )
            for t in (request.topics or [])
        ]
        return _response(ctx, error_code=GROUP_DENIED, topics=topics)
    if request.topics is None:  # every committed topic: only the describable ones

        def keep(response: Any) -> None:
            allowed = authorized_names(
                ctx, Op.DESCRIBE, RT.TOPIC, (t.name for t in response.topics), audit=False
            )
            response.topics = [t for t in response.topics if t.name in allowed]

        return _then(handler(ctx, request), keep)
    allowed = authorized_names(ctx, Op.DESCRIBE, RT.TOPIC, (t.name for t in request.topics))
    request.topics, denied = _split(request.topics, allowed, "name")
    if not denied:
        return handler(ctx, request)

    def fix(response: Any) -> None:
        for t in denied:
            parts = [
                part_cls(partition_index=i, committed_offset=-1, metadata="", error_code=TOPIC_DENIED)
                for i in t.partition_indexes
            ]
            response.topics.append(topic_cls(name=t.name, partitions=parts))

    return _then(handler(ctx, request), fix)


def _per_name(
    operation: AclOperation,
    resource_type: ResourceType,
    req_key: str,
    resp_key: str,
    item: str,
    item_key: str,
    code: ErrorCode,
) -> Guard:
    """APIs over a list of names answered one result each (DescribeGroups, DeleteGroups,
    DeleteTopics)."""

    def guard(ctx: RequestContext, request: Any, handler: Handler) -> Any:
        names = list(getattr(request, req_key))
        allowed = authorized_names(ctx, operation, resource_type, names)
        denied = [n for n in names if n not in allowed]
        if not denied:
            return handler(ctx, request)
        setattr(request, req_key, [n for n in names if n in allowed])
        cls = _nested(ctx, item)

        def fix(response: Any) -> None:
            getattr(response, resp_key).extend(cls(**{item_key: n, "error_code": code}) for n in denied)

        return _serve_the_rest(ctx, request, handler, bool(getattr(request, req_key)), fix)

    return guard


def _list_groups(ctx: RequestContext, request: Any, handler: Handler) -> Any:
    if authorize(ctx, Op.DESCRIBE, RT.CLUSTER, audit=False):
        return handler(ctx, request)

    def keep(response: Any) -> None:
        allowed = authorized_names(
            ctx, Op.DESCRIBE, RT.GROUP, (g.group_id for g in response.groups), audit=False
        )
        response.groups = [g for g in response.groups if g.group_id in allowed]

    return _then(handler(ctx, request), keep)


def _create_topics(ctx: RequestContext, request: Any, handler: Handler) -> Any:
    if authorize(ctx, Op.CREATE, RT.CLUSTER, audit=False):
        return handler(ctx, request)
    return _per_topic_name(ctx, request, handler, Op.CREATE, "topics", "CreatableTopicResult")


def _create_partitions(ctx: RequestContext, request: Any, handler: Handler) -> Any:
    return _per_topic_name(ctx, request, handler, Op.ALTER, "results", "CreatePartitionsTopicResult")


def _per_topic_name(
    ctx: RequestContext, request: Any, handler: Handler, operation: AclOperation, resp_key: str, item: str
) -> Any:
    """`operation` on each topic of `request.topics`; the refused ones answered in `resp_key`."""
    allowed = authorized_names(ctx, operation, RT.TOPIC, (t.name for t in request.topics))
    request.topics, denied = _split(request.topics, allowed, "name")
    if not denied:
        return handler(ctx, request)
    cls = _nested(ctx, item)

    def fix(response: Any) -> None:
        getattr(response, resp_key).extend(
            cls(name=t.name, error_code=TOPIC_DENIED, error_message="Authorization failed.") for t in denied
        )

    return _serve_the_rest(ctx, request, handler, bool(request.topics), fix)


_TOPIC_RESOURCE, _BROKER_RESOURCE = 2, 4


def _configs(operation: AclOperation, resp_key: str, item: str) -> Guard:
    """DescribeConfigs / AlterConfigs: on the topic, or on the cluster for a broker resource."""

    def guard(ctx: RequestContext, request: Any, handler: Handler) -> Any:
        cluster_ok: bool | None = None
        keep, denied = [], []
        for res in request.resources:
            if res.resource_type == _TOPIC_RESOURCE:
                ok = authorize(ctx, operation, RT.TOPIC, res.resource_name)
                code = TOPIC_DENIED
            else:
                if cluster_ok is None:
                    cluster_ok = authorize(ctx, operation, RT.CLUSTER)
                ok, code = cluster_ok, CLUSTER_DENIED
            (keep if ok else denied).append((res, code))
        if not denied:
            return handler(ctx, request)
        request.resources = [r for r, _ in keep]
        cls = _nested(ctx, item)

        def fix(response: Any) -> None:
            getattr(response, resp_key).extend(
                cls(
                    error_code=code,
                    error_message="Authorization failed.",
                    resource_type=r.resource_type,
                    resource_name=r.resource_name,
                )
                for r, code in denied
            )

        return _serve_the_rest(ctx, request, handler, bool(request.resources), fix)

    return guard


def _describe_log_dirs(ctx: RequestContext, request: Any, handler: Handler) -> Any:
    """Kafka answers a principal without Cluster:Describe with no log dirs at all (v0-2 have no
    error field to say so)."""
    if authorize(ctx, Op.DESCRIBE, RT.CLUSTER):
        return handler(ctx, request)
    return _response(ctx)


def _init_producer_id(ctx: RequestContext, request: Any, handler: Handler) -> Any:
    tid = request.transactional_id
    if tid is not None:
        if authorize(ctx, Op.WRITE, RT.TRANSACTIONAL_ID, tid):
            return handler(ctx, request)
        return _response(ctx, error_code=TXN_DENIED, producer_id=-1, producer_epoch=-1)
    if authorize(ctx, Op.IDEMPOTENT_WRITE, RT.CLUSTER, audit=False) or _may_write_some_topic(ctx):
        return handler(ctx, request)
    return _response(ctx, error_code=CLUSTER_DENIED, producer_id=-1, producer_epoch=-1)


# -- transactions (Kafka's KafkaApis checks) --------------------------------------------------------


def _add_partitions_to_txn(ctx: RequestContext, request: Any, handler: Handler) -> Any:
    """TransactionalId:Write, then Topic:Write on every partition; one refusal and the coordinator
    is not asked (the allowed partitions get OPERATION_NOT_ATTEMPTED). v4+ is broker to broker
    (KIP-890): Cluster:ClusterAction or a top-level CLUSTER_AUTHORIZATION_FAILED, as in Kafka."""
    if ctx.api_version >= 4:
        if authorize(ctx, Op.CLUSTER_ACTION, RT.CLUSTER):
            return handler(ctx, request)
        return _response(ctx, error_code=CLUSTER_DENIED)
    topics = request.v3_and_below_topics
    if not authorize(ctx, Op.WRITE, RT.TRANSACTIONAL_ID, request.v3_and_below_transactional_id):
        allowed: set[str] = set()
        refused = TXN_DENIED
    else:
        allowed = authorized_names(ctx, Op.WRITE, RT.TOPIC, (t.name for t in topics))
        if all(t.name in allowed for t in topics):
            return handler(ctx, request)
        refused = TOPIC_DENIED
    topic_cls = _nested(ctx, "AddPartitionsToTxnTopicResult")
    part_cls = _nested(ctx, "AddPartitionsToTxnPartitionResult")

    def code(topic: str) -> ErrorCode:
        return ErrorCode.OPERATION_NOT_ATTEMPTED if topic in allowed else refused

    return _response(
        ctx,
        results_by_topic_v3_and_below=[
            topic_cls(
                name=t.name,
                results_by_partition=[
                    part_cls(partition_index=p, partition_error_code=code(t.name)) for p in t.partitions
                ],
            )
            for t in topics
        ],
    )


def _add_offsets_to_txn(ctx: RequestContext, request: Any, handler: Handler) -> Any:
    if not authorize(ctx, Op.WRITE, RT.TRANSACTIONAL_ID, request.transactional_id):
        return _response(ctx, error_code=TXN_DENIED)
    if not authorize(ctx, Op.READ, RT.GROUP, request.group_id):
        return _response(ctx, error_code=GROUP_DENIED)
    return handler(ctx, request)


def _end_txn(ctx: RequestContext, request: Any, handler: Handler) -> Any:
    if authorize(ctx, Op.WRITE, RT.TRANSACTIONAL_ID, request.transactional_id):
        return handler(ctx, request)
    return _response(ctx, error_code=TXN_DENIED)


def _txn_offset_commit(ctx: RequestContext, request: Any, handler: Handler) -> Any:
    """TransactionalId:Write and Group:Read for the whole request, Topic:Read per topic."""
    if not authorize(ctx, Op.WRITE, RT.TRANSACTIONAL_ID, request.transactional_id):
        allowed: set[str] = set()
        refused = TXN_DENIED
    elif not authorize(ctx, Op.READ, RT.GROUP, request.group_id):
        allowed, refused = set(), GROUP_DENIED
    else:
        allowed = authorized_names(ctx, Op.READ, RT.TOPIC, (t.name for t in request.topics))
        refused = TOPIC_DENIED
    request.topics, denied = _split(request.topics, allowed, "name")
    if not denied:
        return handler(ctx, request)
    topic_cls = _nested(ctx, "TxnOffsetCommitResponseTopic")
    part_cls = _nested(ctx, "TxnOffsetCommitResponsePartition")

    def fix(response: Any) -> None:
        for t in denied:
            parts = [part_cls(partition_index=p.partition_index, error_code=refused) for p in t.partitions]
            response.topics.append(topic_cls(name=t.name, partitions=parts))

    return _serve_the_rest(ctx, request, handler, bool(request.topics), fix)


def _write_txn_markers(ctx: RequestContext, request: Any, handler: Handler) -> Any:
    """Broker to broker: Cluster:ClusterAction, else every partition is refused."""
    if authorize(ctx, Op.CLUSTER_ACTION, RT.CLUSTER):
        return handler(ctx, request)
    marker_cls, topic_cls = (
        _nested(ctx, "WritableTxnMarkerResult"),
        _nested(ctx, "WritableTxnMarkerTopicResult"),
    )
    part_cls = _nested(ctx, "WritableTxnMarkerPartitionResult")
    return _response(
        ctx,
        markers=[
            marker_cls(
                producer_id=m.producer_id,
                topics=[
                    topic_cls(
                        name=t.name,
                        partitions=[
                            part_cls(partition_index=p, error_code=CLUSTER_DENIED)
                            for p in t.partition_indexes
                        ],
                    )
                    for t in m.topics
                ],
            )
            for m in request.markers
        ],
    )


def _describe_transactions(ctx: RequestContext, request: Any, handler: Handler) -> Any:
    allowed = authorized_names(ctx, Op.DESCRIBE, RT.TRANSACTIONAL_ID, request.transactional_ids)
    denied = [i for i in request.transactional_ids if i not in allowed]
    if not denied:
        return handler(ctx, request)
    request.transactional_ids = [i for i in request.transactional_ids if i in allowed]
    state_cls = _nested(ctx, "TransactionState")

    def fix(response: Any) -> None:
        for i in denied:
            response.transaction_states.append(
                state_cls(error_code=TXN_DENIED, transactional_id=i, transaction_state="", producer_id=-1)
            )

    return _serve_the_rest(ctx, request, handler, bool(request.transactional_ids), fix)


def _list_transactions(ctx: RequestContext, request: Any, handler: Handler) -> Any:
    """Only the transactional ids the principal may describe are listed."""

    def fix(response: Any) -> None:
        names = [s.transactional_id for s in response.transaction_states]
        allowed = authorized_names(ctx, Op.DESCRIBE, RT.TRANSACTIONAL_ID, names, audit=False)
        response.transaction_states = [
            s for s in response.transaction_states if s.transactional_id in allowed
        ]

    return _then(handler(ctx, request), fix)


def _describe_producers(ctx: RequestContext, request: Any, handler: Handler) -> Any:
    allowed = authorized_names(ctx, Op.READ, RT.TOPIC, (t.name for t in request.topics))
    request.topics, denied = _split(request.topics, allowed, "name")
    if not denied:
        return handler(ctx, request)
    topic_cls, part_cls = _nested(ctx, "TopicResponse"), _nested(ctx, "PartitionResponse")

    def fix(response: Any) -> None:
        for t in denied:
            parts = [part_cls(partition_index=i, error_code=TOPIC_DENIED) for i in t.partition_indexes]
            response.topics.append(topic_cls(name=t.name, partitions=parts))

    return _serve_the_rest(ctx, request, handler, bool(request.topics), fix)


def _may_write_some_topic(ctx: RequestContext) -> bool:
    """KIP-679 (Kafka 2.8+): an idempotent producer needs IdempotentWrite on the cluster, or Write
    on any topic."""
    authorizer: AclAuthorizer = ctx.services.authorizer
    result = authorizer.authorize_by_resource_type(_request_info(ctx), Op.WRITE, RT.TOPIC)
    return result is AuthorizationResult.ALLOWED


def _elect_leaders(ctx: RequestContext, request: Any, handler: Handler) -> Any:
    if authorize(ctx, Op.ALTER, RT.CLUSTER):
        return handler(ctx, request)
    topic_cls, part_cls = _nested(ctx, "ReplicaElectionResult"), _nested(ctx, "PartitionResult")
    results = [
        topic_cls(
            topic=t.topic,
            partition_result=[
                part_cls(partition_id=p, error_code=CLUSTER_DENIED, error_message="Authorization failed.")
                for p in t.partitions
            ],
        )
        for t in (request.topic_partitions or [])
    ]
    return _response(ctx, error_code=CLUSTER_DENIED, replica_election_results=results)


def _offset_delete(ctx: RequestContext, request: Any, handler: Handler) -> Any:
    if not authorize(ctx, Op.DELETE, RT.GROUP, request.group_id):
        return _response(ctx, error_code=GROUP_DENIED)
    allowed = authorized_names(ctx, Op.READ, RT.TOPIC, (t.name for t in request.topics))
    request.topics, denied = _split(request.topics, allowed, "name")
    if not denied:
        return handler(ctx, request)
    topic_cls, part_cls = (
        _nested(ctx, "OffsetDeleteResponseTopic"),
        _nested(ctx, "OffsetDeleteResponsePartition"),
    )

    def fix(response: Any) -> None:
        for t in denied:
            parts = [
                part_cls(partition_index=p.partition_index, error_code=TOPIC_DENIED) for p in t.partitions
            ]
            response.topics.append(topic_cls(name=t.name, partitions=parts))

    return _then(handler(ctx, request), fix)


def _create_acls(ctx: RequestContext, request: Any, handler: Handler) -> Any:
    if authorize(ctx, Op.ALTER, RT.CLUSTER):
        return handler(ctx, request)
    cls = _nested(ctx, "AclCreationResult")
    results = [
        cls(error_code=CLUSTER_DENIED, error_message="Authorization failed.") for _ in request.creations
    ]
    return _response(ctx, results=results)


def _delete_acls(ctx: RequestContext, request: Any, handler: Handler) -> Any:
    if authorize(ctx, Op.ALTER, RT.CLUSTER):
        return handler(ctx, request)
    cls = _nested(ctx, "DeleteAclsFilterResult")
    results = [cls(error_code=CLUSTER_DENIED, error_message="Authorization failed.") for _ in request.filters]
    return _response(ctx, filter_results=results)


def _alter_user_scram_credentials(ctx: RequestContext, request: Any, handler: Handler) -> Any:
    """Cluster:Alter; denied: every named user gets CLUSTER_AUTHORIZATION_FAILED, as in Kafka."""
    if authorize(ctx, Op.ALTER, RT.CLUSTER):
        return handler(ctx, request)
    cls = _nested(ctx, "AlterUserScramCredentialsResult")
    users = dict.fromkeys(c.name for c in [*request.deletions, *request.upsertions])
    return _response(ctx, results=[cls(user=u, error_code=CLUSTER_DENIED) for u in users])


GUARDS: dict[int, Guard] = {
    ApiKey.PRODUCE: _produce,
    ApiKey.FETCH: _fetch,
    ApiKey.LIST_OFFSETS: _per_topic(
        Op.DESCRIBE,
        "name",
        "partitions",
        "partition_index",
        "ListOffsetsTopicResponse",
        "ListOffsetsPartitionResponse",
        "partitions",
        "partition_index",
        {"old_style_offsets": []},
    ),
    ApiKey.OFFSET_FOR_LEADER_EPOCH: _per_topic(
        Op.DESCRIBE,
        "topic",
        "partitions",
        "partition",
        "OffsetForLeaderTopicResult",
        "EpochEndOffset",
        "partitions",
        "partition",
        {"leader_epoch": -1, "end_offset": -1},
    ),
    ApiKey.DELETE_RECORDS: _per_topic(
        Op.DELETE,
        "name",
        "partitions",
        "partition_index",
        "DeleteRecordsTopicResult",
        "DeleteRecordsPartitionResult",
        "partitions",
        "partition_index",
        {"low_watermark": -1},
    ),
    ApiKey.METADATA: _metadata,
    ApiKey.LEADER_AND_ISR: _cluster_guard(Op.CLUSTER_ACTION),
    ApiKey.STOP_REPLICA: _cluster_guard(Op.CLUSTER_ACTION),
    ApiKey.UPDATE_METADATA: _cluster_guard(Op.CLUSTER_ACTION),
    ApiKey.CONTROLLED_SHUTDOWN: _cluster_guard(Op.CLUSTER_ACTION),
    ApiKey.FIND_COORDINATOR: _find_coordinator,
    ApiKey.JOIN_GROUP: _group_guard(Op.READ),
    ApiKey.SYNC_GROUP: _group_guard(Op.READ),
    ApiKey.HEARTBEAT: _group_guard(Op.READ),
    ApiKey.LEAVE_GROUP: _group_guard(Op.READ),
    ApiKey.OFFSET_COMMIT: _offset_commit,
    ApiKey.OFFSET_FETCH: _offset_fetch,
    ApiKey.OFFSET_DELETE: _offset_delete,
    ApiKey.DESCRIBE_GROUPS: _per_name(
        Op.DESCRIBE, RT.GROUP, "groups", "groups", "DescribedGroup", "group_id", GROUP_DENIED
    ),
    ApiKey.DELETE_GROUPS: _per_name(
        Op.DELETE, RT.GROUP, "groups_names", "results", "DeletableGroupResult", "group_id", GROUP_DENIED
    ),
    ApiKey.LIST_GROUPS: _list_groups,
    ApiKey.CREATE_TOPICS: _create_topics,
    ApiKey.DELETE_TOPICS: _per_name(
        Op.DELETE, RT.TOPIC, "topic_names", "responses", "DeletableTopicResult", "name", TOPIC_DENIED
    ),
    ApiKey.CREATE_PARTITIONS: _create_partitions,
    ApiKey.DESCRIBE_CONFIGS: _configs(Op.DESCRIBE_CONFIGS, "results", "DescribeConfigsResult"),
    ApiKey.ALTER_CONFIGS: _configs(Op.ALTER_CONFIGS, "responses", "AlterConfigsResourceResponse"),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: _configs(Op.ALTER_CONFIGS, "responses", "AlterConfigsResourceResponse"),
    ApiKey.DESCRIBE_LOG_DIRS: _describe_log_dirs,
    ApiKey.DESCRIBE_CLUSTER: _cluster_guard(Op.DESCRIBE, error_message="Authorization failed."),
    ApiKey.INIT_PRODUCER_ID: _init_producer_id,
    ApiKey.ADD_PARTITIONS_TO_TXN: _add_partitions_to_txn,
    ApiKey.ADD_OFFSETS_TO_TXN: _add_offsets_to_txn,
    ApiKey.END_TXN: _end_txn,
    ApiKey.TXN_OFFSET_COMMIT: _txn_offset_commit,
    ApiKey.WRITE_TXN_MARKERS: _write_txn_markers,
    ApiKey.DESCRIBE_TRANSACTIONS: _describe_transactions,
    ApiKey.LIST_TRANSACTIONS: _list_transactions,
    ApiKey.DESCRIBE_PRODUCERS: _describe_producers,
    ApiKey.ELECT_LEADERS: _elect_leaders,
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: _cluster_guard(Op.ALTER, error_message="Authorization failed."),
    ApiKey.LIST_PARTITION_REASSIGNMENTS: _cluster_guard(Op.DESCRIBE, error_message="Authorization failed."),
    ApiKey.DESCRIBE_ACLS: _cluster_guard(Op.DESCRIBE, error_message="Authorization failed."),
    ApiKey.CREATE_ACLS: _create_acls,
    ApiKey.DELETE_ACLS: _delete_acls,
    ApiKey.DESCRIBE_CLIENT_QUOTAS: _cluster_guard(Op.DESCRIBE_CONFIGS, error_message="Authorization failed."),
    ApiKey.ALTER_CLIENT_QUOTAS: _alter_client_quotas,
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: _cluster_guard(Op.DESCRIBE),
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: _alter_user_scram_credentials,
}
"""api key -> its check. ApiVersions, SaslHandshake and SaslAuthenticate need none; an API in the
table with no guard here is refused to everyone but super users (fail closed)."""

UNGUARDED = frozenset({ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE})


def guard_handlers(
    handlers: Mapping[int, Handler], authorizer: AclAuthorizer | None
) -> Mapping[int, Handler]:
    """The handler table the listeners serve: `handlers` itself without an authorizer, else every
    handler behind its guard."""
    if authorizer is None:
        return handlers
    out: dict[int, Handler] = {}
    for key, handler in handlers.items():
        if key in UNGUARDED:
            out[key] = handler
            continue
        guard = GUARDS.get(key, _super_users_only)

        def guarded(ctx: RequestContext, request: Any, h: Handler = handler, g: Guard = guard) -> Any:
            return g(ctx, request, h)

        out[key] = guarded
    return out


def _super_users_only(ctx: RequestContext, request: Any, handler: Handler) -> Any:
    """An API without a guard (added to the table later): served to super users, else the
    connection's request is refused with CLUSTER_AUTHORIZATION_FAILED as its top-level error."""
    authorizer: AclAuthorizer = ctx.services.authorizer
    if authorizer.is_super_user(parse_principal(ctx.principal)):
        return handler(ctx, request)
    return _response(ctx, error_code=CLUSTER_DENIED, error_message="Authorization failed.")
