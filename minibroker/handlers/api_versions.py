"""ApiVersions (key 18), versions 0-4.

Behaviour: lists every API in the handler registry with its advertised range as the emulated
Kafka release had it (`broker.api_gates`: keys the release lacked are left out, ranges are
the intersection; `protocol/releases.py`), and (v3+) the features this broker supports and
the levels finalized for the cluster with their epoch (`cluster/features.py`:
`transaction.version` tells clients whether to use transactions V2).
As Kafka's `ApiVersionsRequest.isValid`, a v3+ request whose ClientSoftwareName or
ClientSoftwareVersion does not match `[a-zA-Z0-9](?:[a-zA-Z0-9\\-.]*[a-zA-Z0-9])?` (empty
included) gets INVALID_REQUEST with no API list (Kafka's `getErrorResponse`); Java, librdkafka
(which sanitizes its names) and the other clients send names that match.

Version notes: an ApiVersions request above the advertised maximum (v4; v3 under 2.8-3.8)
never reaches this module; the dispatcher answers it with a v0 body carrying
UNSUPPORTED_VERSION and key 18's range (KIP-511). The
response header is always v0, even for the flexible v3+ bodies. Below v4 a supported feature
whose range starts at 0 is left out (KAFKA-17011: older clients reject a minimum of 0); a
finalized level 0 is never listed.
"""

from __future__ import annotations

import re
from typing import Any

from minibroker.handlers.registry import handles
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import new_response, struct_type
from minibroker.protocol.errors import ErrorCode
from minibroker.server.context import RequestContext

SOFTWARE_NAME_VERSION = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")
FIRST_SOFTWARE_NAME_VERSION = 3

_ApiVersion = struct_type(ApiKey.ApiVersions, "response", "ApiVersion")
_Supported = struct_type(ApiKey.ApiVersions, "response", "SupportedFeatureKey")
_Finalized = struct_type(ApiKey.ApiVersions, "response", "FinalizedFeatureKey")


def is_valid(api_version: int, request: Any) -> bool:
    """Kafka's ApiVersionsRequest.isValid."""
    if api_version < FIRST_SOFTWARE_NAME_VERSION:
        return True
    return all(
        SOFTWARE_NAME_VERSION.fullmatch(text or "") is not None
        for text in (request.client_software_name, request.client_software_version)
    )


def _invalid_request(ctx: RequestContext) -> Any:
    return new_response(
        ApiKey.ApiVersions,
        ctx.api_version,
        error_code=ErrorCode.INVALID_REQUEST,
        api_keys=[],
        throttle_time_ms=0,
        supported_features=[],
        finalized_features_epoch=-1,
        finalized_features=[],
        zk_migration_ready=False,
    )


@handles(ApiKey.ApiVersions, 0, 4)
async def handle_api_versions(ctx: RequestContext, request: Any) -> Any:
    if not is_valid(ctx.api_version, request):
        return _invalid_request(ctx)
    features = ctx.broker.features
    return new_response(
        ApiKey.ApiVersions,
        ctx.api_version,
        error_code=ErrorCode.NO_ERROR,
        api_keys=[
            _ApiVersion(api_key=key, min_version=gate.advertised_min, max_version=gate.max_version)
            for key, gate in ctx.broker.api_gates.items()
        ],
        throttle_time_ms=0,
        supported_features=[
            _Supported(name=name, min_version=low, max_version=high)
            for name, low, high in features.supported_list(ctx.api_version)
        ],
        finalized_features_epoch=features.epoch,
        finalized_features=[
            _Finalized(name=name, max_version_level=level, min_version_level=level)
            for name, level in features.finalized_list()
        ],
        zk_migration_ready=False,
    )
