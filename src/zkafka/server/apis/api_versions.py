"""ApiVersions: the table of what this broker serves (unsupported versions: see the dispatcher)."""

from __future__ import annotations

from zkafka.protocol.api_versions import api_versions_response
from zkafka.protocol.messages import ApiVersionsRequest, ApiVersionsResponse
from zkafka.server.dispatcher import RequestContext


def handle(ctx: RequestContext, request: ApiVersionsRequest) -> ApiVersionsResponse:
    return api_versions_response(ctx.services.served_versions)
