"""DescribeAcls (key 29): the ACLs a filter matches (KIP-140).

Version notes: v1 adds the pattern type (KIP-290: LITERAL 3, PREFIXED 4; filters also ANY 1 and
MATCH 2); v2 is the first flexible version.
"""

from zkafka.protocol.schema import Array, F, api

SPEC = api(
    29,
    "DescribeAcls",
    versions="0-2",
    flexible="2+",
    request=[
        F("resource_type_filter", "int8"),
        F("resource_name_filter", "string", nullable="0+"),
        F("pattern_type_filter", "int8", "1+", default=3),
        F("principal_filter", "string", nullable="0+"),
        F("host_filter", "string", nullable="0+"),
        F("operation", "int8"),
        F("permission_type", "int8"),
    ],
    response=[
        F("throttle_time_ms", "int32"),
        F("error_code", "int16"),
        F("error_message", "string", nullable="0+", default=None),
        F(
            "resources",
            Array(
                "DescribeAclsResource",
                [
                    F("resource_type", "int8"),
                    F("resource_name", "string"),
                    F("pattern_type", "int8", "1+", default=3),
                    F(
                        "acls",
                        Array(
                            "AclDescription",
                            [
                                F("principal", "string"),
                                F("host", "string"),
                                F("operation", "int8"),
                                F("permission_type", "int8"),
                            ],
                        ),
                    ),
                ],
            ),
        ),
    ],
)
