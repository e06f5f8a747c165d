"""DescribeCluster (key 60, KIP-700): the live brokers (their endpoints on the listener the request
came in on, as Metadata gives them), the controller and the cluster id.

Without an authorizer every principal may do every cluster operation, so a request that asks for
its authorized operations gets them all (Kafka's bit field of ALTER, ALTER_CONFIGS, CLUSTER_ACTION,
CREATE, DESCRIBE, DESCRIBE_CONFIGS, IDEMPOTENT_WRITE); one that does not gets INT32_MIN, Kafka's
"not asked".
"""

from __future__ import annotations

from zkafka.protocol.messages import DescribeClusterRequest, DescribeClusterResponse
from zkafka.server.dispatcher import RequestContext

AUTHORIZED_OPERATIONS_OMITTED = -(2**31)
# AclOperation codes: CREATE 5, ALTER 7, DESCRIBE 8, CLUSTER_ACTION 9, DESCRIBE_CONFIGS 10,
# ALTER_CONFIGS 11, IDEMPOTENT_WRITE 12
CLUSTER_OPERATIONS = sum(1 << op for op in (5, 7, 8, 9, 10, 11, 12))


def handle(ctx: RequestContext, request: DescribeClusterRequest) -> DescribeClusterResponse:
    cache = ctx.services.metadata
    brokers = []
    for b in sorted(cache.brokers.values(), key=lambda b: b.broker_id):
        ep = b.endpoint(ctx.listener)
        if ep is not None:
            brokers.append(
                DescribeClusterResponse.DescribeClusterBroker(
                    broker_id=b.broker_id, host=ep.host, port=ep.port, rack=b.rack
                )
            )
    return DescribeClusterResponse(
        cluster_id=ctx.services.identity.cluster_id,
        controller_id=cache.controller_id,
        brokers=brokers,
        cluster_authorized_operations=(
            CLUSTER_OPERATIONS
            if request.include_cluster_authorized_operations
            else AUTHORIZED_OPERATIONS_OMITTED
        ),
    )
