"""DescribeCluster (key 60, KIP-700): the live brokers (their endpoints on the listener the request
came in on, as Metadata gives them), the controller and the cluster id.

A request that asks for its authorized operations gets Kafka's bit field of the cluster operations
(ALTER, ALTER_CONFIGS, CLUSTER_ACTION, CREATE, DESCRIBE, DESCRIBE_CONFIGS, IDEMPOTENT_WRITE) the
principal may do: all of them without an authorizer, those its ACLs allow with one
(`authorization.authorized_operations`); one that does not gets INT32_MIN, Kafka's "not asked".
"""

from __future__ import annotations

from zkafka.protocol.messages import DescribeClusterRequest, DescribeClusterResponse
from zkafka.server.authorization import authorized_operations
from zkafka.server.dispatcher import RequestContext
from zkafka.zk.acls import ResourceType

AUTHORIZED_OPERATIONS_OMITTED = -(2**31)


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
        controller_id=ctx.services.controller_id_for_clients(),
        brokers=brokers,
        cluster_authorized_operations=(
            authorized_operations(ctx, ResourceType.CLUSTER)
            if request.include_cluster_authorized_operations
            else AUTHORIZED_OPERATIONS_OMITTED
        ),
    )
