"""AlterUserScramCredentials (key 51, KIP-554): delete and upsert users' SCRAM credentials.

Flexible from its first version. An upsertion carries the salt and the salted password
(Hi(password, salt, iterations), computed by the client): the password itself never travels.
"""

from zkafka.protocol.schema import Array, F, api

SPEC = api(
    51,
    "AlterUserScramCredentials",
    versions="0",
    flexible="0+",
    request=[
        F("deletions", Array("ScramCredentialDeletion", [F("name", "string"), F("mechanism", "int8")])),
        F(
            "upsertions",
            Array(
                "ScramCredentialUpsertion",
                [
                    F("name", "string"),
                    F("mechanism", "int8"),
                    F("iterations", "int32"),
                    F("salt", "bytes"),
                    F("salted_password", "bytes"),
                ],
            ),
        ),
    ],
    response=[
        F("throttle_time_ms", "int32"),
        F(
            "results",
            Array(
                "AlterUserScramCredentialsResult",
                [
                    F("user", "string"),
                    F("error_code", "int16"),
                    F("error_message", "string", nullable="0+", default=None),
                ],
            ),
        ),
    ],
)
