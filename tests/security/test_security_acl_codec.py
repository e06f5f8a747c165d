"""DescribeAcls (29), CreateAcls (30), DeleteAcls (31) bodies: zkafka's codec against kafka-python's
(generated from Kafka's JSON message definitions), byte for byte, every version."""

from __future__ import annotations

import pytest

from zkafka.protocol.codec import decode_body, encode_body
from zkafka.protocol.messages import (
    CreateAclsRequest,
    CreateAclsResponse,
    DeleteAclsRequest,
    DeleteAclsResponse,
    DescribeAclsRequest,
    DescribeAclsResponse,
)

kp = pytest.importorskip("kafka.protocol.admin.acl")

FILTER = dict(
    resource_type_filter=2,
    resource_name_filter="orders",
    principal_filter=None,
    host_filter="*",
    operation=3,
    permission_type=3,
)
ACL = dict(principal="User:alice", host="*", operation=4, permission_type=3)


def both(ours: object, theirs: object, version: int, key: int, kind: str) -> None:
    encoded = bytes(encode_body(ours, version))  # type: ignore[arg-type]
    assert encoded == bytes(theirs.encode(version=version))  # type: ignore[attr-defined]
    assert bytes(encode_body(decode_body(key, kind, version, encoded), version)) == encoded


@pytest.mark.parametrize("version", [0, 1, 2])
def test_describe_acls(version: int) -> None:
    extra = {"pattern_type_filter": 4} if version else {}
    both(
        DescribeAclsRequest(**FILTER, **extra),
        kp.DescribeAclsRequest(**FILTER, **extra, version=version),
        version,
        29,
        "request",
    )
    pt = {"pattern_type": 3} if version else {}
    ours = DescribeAclsResponse(
        throttle_time_ms=5,
        error_code=0,
        resources=[
            DescribeAclsResponse.DescribeAclsResource(
                resource_type=2,
                resource_name="orders",
                **pt,
                acls=[DescribeAclsResponse.AclDescription(**ACL)],
            )
        ],
    )
    K = kp.DescribeAclsResponse
    theirs = K(
        throttle_time_ms=5,
        error_code=0,
        error_message=None,
        resources=[
            K.DescribeAclsResource(
                resource_type=2,
                resource_name="orders",
                **pt,
                acls=[K.DescribeAclsResource.AclDescription(**ACL)],
            )
        ],
        version=version,
    )
    both(ours, theirs, version, 29, "response")


@pytest.mark.parametrize("version", [0, 1, 2])
def test_create_acls(version: int) -> None:
    pt = {"resource_pattern_type": 4} if version else {}
    creation = dict(resource_type=2, resource_name="app-", **pt, **ACL)
    both(
        CreateAclsRequest(creations=[CreateAclsRequest.AclCreation(**creation)]),
        kp.CreateAclsRequest(creations=[kp.CreateAclsRequest.AclCreation(**creation)], version=version),
        version,
        30,
        "request",
    )
    both(
        CreateAclsResponse(
            throttle_time_ms=0,
            results=[CreateAclsResponse.AclCreationResult(error_code=42, error_message="bad")],
        ),
        kp.CreateAclsResponse(
            throttle_time_ms=0,
            results=[kp.CreateAclsResponse.AclCreationResult(error_code=42, error_message="bad")],
            version=version,
        ),
        version,
        30,
        "response",
    )


@pytest.mark.parametrize("version", [0, 1, 2])
def test_delete_acls(version: int) -> None:
    extra = {"pattern_type_filter": 1} if version else {}
    both(
        DeleteAclsRequest(filters=[DeleteAclsRequest.DeleteAclsFilter(**FILTER, **extra)]),
        kp.DeleteAclsRequest(
            filters=[kp.DeleteAclsRequest.DeleteAclsFilter(**FILTER, **extra)], version=version
        ),
        version,
        31,
        "request",
    )
    pt = {"pattern_type": 3} if version else {}
    match = dict(error_code=0, error_message=None, resource_type=2, resource_name="orders", **pt, **ACL)
    R = kp.DeleteAclsResponse
    both(
        DeleteAclsResponse(
            throttle_time_ms=0,
            filter_results=[
                DeleteAclsResponse.DeleteAclsFilterResult(
                    error_code=0, matching_acls=[DeleteAclsResponse.DeleteAclsMatchingAcl(**match)]
                )
            ],
        ),
        R(
            throttle_time_ms=0,
            filter_results=[
                R.DeleteAclsFilterResult(
                    error_code=0,
                    error_message=None,
                    matching_acls=[R.DeleteAclsFilterResult.DeleteAclsMatchingAcl(**match)],
                )
            ],
            version=version,
        ),
        version,
        31,
        "response",
    )
