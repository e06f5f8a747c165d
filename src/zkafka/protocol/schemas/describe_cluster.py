"""DescribeCluster (key 60, KIP-700): brokers, controller and cluster id.

Flexible from its first version. cluster_authorized_operations is -2147483648 (INT32_MIN)
unless the request asks for them.
"""

from zkafka.protocol.schema import Array, F, api

SPEC = api(
    60,
    "DescribeCluster",
    versions="0",
    flexible="0+",
    request=[F("include_cluster_authorized_operations", "bool")],
    response=[
        F("throttle_time_ms", "int32"),
        F("error_code", "int16"),
        F("error_message", "string", nullable="0+", default=None),
        F("cluster_id", "string"),
        F("controller_id", "int32", default=-1),
        F(
            "brokers",
            Array(
                "DescribeClusterBroker",
                [
                    F("broker_id", "int32"),
                    F("host", "string"),
                    F("port", "int32"),
                    F("rack", "string", nullable="0+", default=None),
                ],
            ),
        ),
        F("cluster_authorized_operations", "int32", default=-2147483648),
    ],
)
