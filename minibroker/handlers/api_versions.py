"""ApiVersions (key 18), versions 0-4.

Behaviour: lists every API in the handler registry with its advertised range; no finalized
features (so clients never switch to KIP-890 transactions V2). ClientSoftwareName/Version
(v3+) are accepted whatever they contain: librdkafka falls back to v0 on INVALID_REQUEST
and being lenient is safer.

Version notes: an ApiVersions request above v4 never reaches this module; the dispatcher
answers it with a v0 body carrying UNSUPPORTED_VERSION and key 18's range (KIP-511). The
response header is always v0, even for the flexible v3+ bodies.
"""

from __future__ import annotations

from typing import Any

from minibroker.handlers.registry import advertised_ranges, handles
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import new_response, struct_type
from minibroker.protocol.errors import ErrorCode
from minibroker.server.context import RequestContext


@handles(ApiKey.ApiVersions, 0, 4)
async def handle_api_versions(ctx: RequestContext, request: Any) -> Any:
    api_version = struct_type(ApiKey.ApiVersions, "response", "ApiVersion")
    return new_response(
        ApiKey.ApiVersions,
        ctx.api_version,
        error_code=ErrorCode.NO_ERROR,
        api_keys=[
            api_version(api_key=key, min_version=low, max_version=high)
            for key, low, high in advertised_ranges()
        ],
        throttle_time_ms=0,
        supported_features=[],
        finalized_features_epoch=-1,
        finalized_features=[],
        zk_migration_ready=False,
    )
