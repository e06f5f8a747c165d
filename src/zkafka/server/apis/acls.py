"""DescribeAcls (29), CreateAcls (30), DeleteAcls (31): the ACL APIs (KIP-140, KIP-290) over
`zkafka.security.acl_admin`, which reads and writes the ACL znodes exactly as Kafka's authorizer
does (versioned conditional writes and a change notification, so every broker's ACL cache follows).

Who may call them is `zkafka.server.authorization`'s business (Cluster:Describe for DescribeAcls,
Cluster:Alter for the others). Without an authorizer configured they answer SECURITY_DISABLED, as
Kafka does. A filter or binding Kafka would refuse (an UNKNOWN type, an ANY in a creation, a name no
znode can hold) is INVALID_REQUEST for that item only.
"""

from __future__ import annotations

from zkafka.protocol import ErrorCode
from zkafka.protocol.messages import (
    CreateAclsRequest,
    CreateAclsResponse,
    DeleteAclsRequest,
    DeleteAclsResponse,
    DescribeAclsRequest,
    DescribeAclsResponse,
)
from zkafka.security import acl_admin
from zkafka.security.acl_filters import (
    AclBindingFilter,
    AclEntryFilter,
    ResourcePatternFilter,
)
from zkafka.security.acl_wire import (
    ANY,
    OPERATION_CODES,
    OPERATIONS,
    PATTERN_CODES,
    PATTERN_FILTERS,
    PATTERN_TYPES,
    PERMISSION_CODES,
    PERMISSIONS,
    RESOURCE_CODES,
    RESOURCE_TYPES,
)
from zkafka.server.dispatcher import RequestContext
from zkafka.zk.acls import (
    AclEntry,
    ResourcePattern,
    ResourceType,
)

NO_AUTHORIZER = "No Authorizer is configured on the broker"


class _Invalid(ValueError):
    pass


def _lookup(table: dict[int, object], code: int, what: str, *, allow_any: bool) -> object | None:
    if allow_any and code == ANY:
        return None
    found = table.get(code)
    if found is None:
        raise _Invalid(f"invalid {what} {code}")
    return found


def _binding_filter(f: object, version: int) -> AclBindingFilter:
    pattern_code = f.pattern_type_filter if version >= 1 else 3  # type: ignore[attr-defined]
    pattern = ResourcePatternFilter(
        _lookup(RESOURCE_TYPES, f.resource_type_filter, "resource type", allow_any=True),  # type: ignore[arg-type, attr-defined]
        f.resource_name_filter,  # type: ignore[attr-defined]
        _lookup(PATTERN_FILTERS, pattern_code, "pattern type", allow_any=False),  # type: ignore[arg-type]
    )
    entry = AclEntryFilter(
        f.principal_filter,  # type: ignore[attr-defined]
        f.host_filter,  # type: ignore[attr-defined]
        _lookup(OPERATIONS, f.operation, "operation", allow_any=True),  # type: ignore[arg-type, attr-defined]
        _lookup(PERMISSIONS, f.permission_type, "permission type", allow_any=True),  # type: ignore[arg-type, attr-defined]
    )
    return AclBindingFilter(pattern, entry)


async def handle_describe(ctx: RequestContext, request: DescribeAclsRequest) -> DescribeAclsResponse:
    if ctx.services.authorizer is None:
        return DescribeAclsResponse(error_code=ErrorCode.SECURITY_DISABLED, error_message=NO_AUTHORIZER)
    try:
        binding_filter = _binding_filter(request, ctx.api_version)
    except _Invalid as e:
        return DescribeAclsResponse(error_code=ErrorCode.INVALID_REQUEST, error_message=str(e))
    found = await ctx.services.zk.run(acl_admin.describe_acls, binding_filter)
    resources = []
    for pattern in sorted(found, key=lambda p: (p.resource_type.pascal, p.pattern_type.value, p.name)):
        resources.append(
            DescribeAclsResponse.DescribeAclsResource(
                resource_type=RESOURCE_CODES[pattern.resource_type],
                resource_name=pattern.name,
                pattern_type=PATTERN_CODES[pattern.pattern_type],
                acls=[
                    DescribeAclsResponse.AclDescription(
                        principal=a.principal,
                        host=a.host,
                        operation=OPERATION_CODES[a.operation],
                        permission_type=PERMISSION_CODES[a.permission_type],
                    )
                    for a in sorted(found[pattern], key=lambda a: (a.principal, a.host, a.operation.pascal))
                ],
            )
        )
    return DescribeAclsResponse(error_code=ErrorCode.NONE, resources=resources)


async def handle_create(ctx: RequestContext, request: CreateAclsRequest) -> CreateAclsResponse:
    results: list[CreateAclsResponse.AclCreationResult] = []
    if ctx.services.authorizer is None:
        for _ in request.creations:
            results.append(
                CreateAclsResponse.AclCreationResult(
                    error_code=ErrorCode.SECURITY_DISABLED, error_message=NO_AUTHORIZER
                )
            )
        return CreateAclsResponse(results=results)
    valid: list[tuple[int, tuple[ResourcePattern, AclEntry]]] = []
    for i, c in enumerate(request.creations):
        try:
            pattern_code = c.resource_pattern_type if ctx.api_version >= 1 else 3
            pattern = ResourcePattern(
                _lookup(RESOURCE_TYPES, c.resource_type, "resource type", allow_any=False),  # type: ignore[arg-type]
                c.resource_name,
                _lookup(PATTERN_TYPES, pattern_code, "pattern type", allow_any=False),  # type: ignore[arg-type]
            )
            entry = AclEntry(
                c.principal,
                _lookup(PERMISSIONS, c.permission_type, "permission type", allow_any=False),  # type: ignore[arg-type]
                _lookup(OPERATIONS, c.operation, "operation", allow_any=False),  # type: ignore[arg-type]
                c.host,
            )
            if pattern.resource_type is ResourceType.CLUSTER and pattern.name != "kafka-cluster":
                raise _Invalid("the cluster resource is named kafka-cluster")
            acl_admin.validate_binding(pattern, entry)
        except ValueError as e:
            results.append(
                CreateAclsResponse.AclCreationResult(
                    error_code=ErrorCode.INVALID_REQUEST, error_message=str(e)
                )
            )
            continue
        results.append(CreateAclsResponse.AclCreationResult(error_code=ErrorCode.NONE))
        valid.append((i, (pattern, entry)))
    if valid:
        try:
            await ctx.services.zk.run(acl_admin.create_acls, [b for _, b in valid])
        except Exception as e:  # ZooKeeper trouble: every creation of this request failed
            for i, _ in valid:
                results[i] = CreateAclsResponse.AclCreationResult(
                    error_code=ErrorCode.UNKNOWN_SERVER_ERROR, error_message=f"{type(e).__name__}: {e}"
                )
    return CreateAclsResponse(results=results)


async def handle_delete(ctx: RequestContext, request: DeleteAclsRequest) -> DeleteAclsResponse:
    R = DeleteAclsResponse
    if ctx.services.authorizer is None:
        return R(
            filter_results=[
                R.DeleteAclsFilterResult(error_code=ErrorCode.SECURITY_DISABLED, error_message=NO_AUTHORIZER)
                for _ in request.filters
            ]
        )
    parsed: list[AclBindingFilter | str] = []
    for f in request.filters:
        try:
            parsed.append(_binding_filter(f, ctx.api_version))
        except _Invalid as e:
            parsed.append(str(e))
    valid = [p for p in parsed if isinstance(p, AclBindingFilter)]
    removed = await ctx.services.zk.run(acl_admin.delete_acls, valid) if valid else []
    results = []
    for p in parsed:
        if isinstance(p, str):
            results.append(R.DeleteAclsFilterResult(error_code=ErrorCode.INVALID_REQUEST, error_message=p))
            continue
        matching = [
            R.DeleteAclsMatchingAcl(
                error_code=ErrorCode.NONE,
                resource_type=RESOURCE_CODES[pattern.resource_type],
                resource_name=pattern.name,
                pattern_type=PATTERN_CODES[pattern.pattern_type],
                principal=entry.principal,
                host=entry.host,
                operation=OPERATION_CODES[entry.operation],
                permission_type=PERMISSION_CODES[entry.permission_type],
            )
            for pattern, entry in removed
            if p.pattern.matches(pattern) and p.entry.matches(entry)
        ]
        results.append(R.DeleteAclsFilterResult(error_code=ErrorCode.NONE, matching_acls=matching))
    return R(filter_results=results)
