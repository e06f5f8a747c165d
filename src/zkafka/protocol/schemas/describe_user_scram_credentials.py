"""DescribeUserScramCredentials (key 50, KIP-554): the SCRAM mechanisms and iteration counts of users.

Flexible from its first version. `users` null or empty describes every user with a credential;
mechanism codes are Kafka's ScramMechanism types (1 SCRAM-SHA-256, 2 SCRAM-SHA-512).
"""

from zkafka.protocol.schema import Array, F, api

SPEC = api(
    50,
    "DescribeUserScramCredentials",
    versions="0",
    flexible="0+",
    request=[F("users", Array("UserName", [F("name", "string")]), nullable="0+", default=None)],
    response=[
        F("throttle_time_ms", "int32"),
        F("error_code", "int16"),
        F("error_message", "string", nullable="0+", default=None),
        F(
            "results",
            Array(
                "DescribeUserScramCredentialsResult",
                [
                    F("user", "string"),
                    F("error_code", "int16"),
                    F("error_message", "string", nullable="0+", default=None),
                    F(
                        "credential_infos",
                        Array("CredentialInfo", [F("mechanism", "int8"), F("iterations", "int32")]),
                    ),
                ],
            ),
        ),
    ],
)
