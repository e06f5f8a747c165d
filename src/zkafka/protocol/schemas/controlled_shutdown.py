"""ControlledShutdown (key 7): broker to controller, "move leadership off me before I stop".

Version notes: v0 is sent with request header v0 (no client_id); v1 uses the normal header;
v2 adds broker_epoch; v3 is the first flexible version.
"""

from zkafka.protocol.schema import Array, F, api

SPEC = api(
    7,
    "ControlledShutdown",
    versions="0-3",
    flexible="3+",
    request_header_v0="0",
    request=[
        F("broker_id", "int32"),
        F("broker_epoch", "int64", "2+", default=-1),
    ],
    response=[
        F("error_code", "int16"),
        F(
            "remaining_partitions",
            Array("RemainingPartition", [F("topic_name", "string"), F("partition_index", "int32")]),
        ),
    ],
)
