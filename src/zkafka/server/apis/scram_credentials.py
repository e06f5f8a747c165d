"""DescribeUserScramCredentials (50) and AlterUserScramCredentials (51), KIP-554, over
`zkafka.security.scram_admin`, which reads and writes `/config/users` as Kafka does (one znode write and
one `/config/changes` notification per altered user, so every broker's credential cache follows).

Any broker answers both. (ZooKeeper-mode Kafka answers Alter on the controller only, NOT_CONTROLLER
elsewhere, and its admin clients send it there; answering everywhere serves those clients and any that
pick another broker.) Who may call them is `zkafka.server.authorization`'s business: Cluster:Describe
and Cluster:Alter. Salted passwords never reach a log line or an error message.
"""

from __future__ import annotations

import logging

from zkafka.protocol import ErrorCode
from zkafka.protocol.messages import (
    AlterUserScramCredentialsRequest,
    AlterUserScramCredentialsResponse,
    DescribeUserScramCredentialsRequest,
    DescribeUserScramCredentialsResponse,
)
from zkafka.security import scram_admin
from zkafka.security.scram_admin import MECHANISM_CODES, Deletion, Upsertion
from zkafka.server.dispatcher import RequestContext

log = logging.getLogger(__name__)

DescribeResp = DescribeUserScramCredentialsResponse
AlterResp = AlterUserScramCredentialsResponse


async def handle_describe(
    ctx: RequestContext, request: DescribeUserScramCredentialsRequest
) -> DescribeUserScramCredentialsResponse:
    users = None if request.users is None else [u.name for u in request.users]
    try:
        found = await ctx.services.zk.run(scram_admin.describe_credentials, users)
    except Exception as e:  # ZooKeeper trouble
        log.warning("DescribeUserScramCredentials failed: %r", e)
        return DescribeResp(error_code=ErrorCode.UNKNOWN_SERVER_ERROR, error_message=type(e).__name__)
    return DescribeResp(
        error_code=ErrorCode.NONE,
        results=[
            DescribeResp.DescribeUserScramCredentialsResult(
                user=r.user,
                error_code=r.error_code,
                error_message=r.error_message,
                credential_infos=[
                    DescribeResp.CredentialInfo(mechanism=MECHANISM_CODES[m], iterations=i)
                    for m, i in sorted(r.credentials.items())
                ],
            )
            for r in found
        ],
    )


async def handle_alter(
    ctx: RequestContext, request: AlterUserScramCredentialsRequest
) -> AlterUserScramCredentialsResponse:
    deletions = [Deletion(d.name, d.mechanism) for d in request.deletions]
    upsertions = [
        Upsertion(u.name, u.mechanism, u.iterations, bytes(u.salt), bytes(u.salted_password))
        for u in request.upsertions
    ]
    try:
        results = await ctx.services.zk.run(scram_admin.alter_credentials, deletions, upsertions)
    except Exception as e:  # ZooKeeper trouble: every user of this request failed
        log.warning("AlterUserScramCredentials failed: %r", e)
        users = dict.fromkeys(c.user for c in [*deletions, *upsertions])
        return AlterResp(
            results=[
                AlterResp.AlterUserScramCredentialsResult(
                    user=u, error_code=ErrorCode.UNKNOWN_SERVER_ERROR, error_message=type(e).__name__
                )
                for u in users
            ]
        )
    for r in results:
        if r.error_code == ErrorCode.NONE:
            log.info("SCRAM credentials of user %r altered by %s", r.user, ctx.principal)
    return AlterResp(
        results=[
            AlterResp.AlterUserScramCredentialsResult(
                user=r.user, error_code=r.error_code, error_message=r.error_message
            )
            for r in results
        ]
    )
