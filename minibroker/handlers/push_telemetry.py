"""PushTelemetry (key 72), version 0 (KIP-714).

Behaviour: as Kafka's `ClientMetricsManager` (`minibroker/telemetry/manager.py`): the
metrics (OTLP MetricsData, possibly compressed) are checked, decompressed and decoded, and
kept for tests to read back (`KafkaBroker.telemetry_metrics()`). Errors: a zero or reserved
instance id or a push after a terminating one INVALID_REQUEST; a push before the interval
THROTTLING_QUOTA_EXCEEDED (a terminating push is never throttled); a stale subscription id
UNKNOWN_SUBSCRIPTION_ID; an unknown compression type UNSUPPORTED_COMPRESSION_TYPE; metrics
over `telemetry.max.bytes` TELEMETRY_TOO_LARGE; bytes that do not decode INVALID_RECORD.

Version notes: v0 is flexible.
"""

from __future__ import annotations

from typing import Any

from minibroker.handlers.get_telemetry_subscriptions import client_identity
from minibroker.handlers.registry import handles
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import new_response
from minibroker.protocol.errors import ErrorCode
from minibroker.server.context import RequestContext
from minibroker.telemetry.manager import ZERO_UUID, TelemetryError


@handles(ApiKey.PushTelemetry, 0, 0)
async def handle_push_telemetry(ctx: RequestContext, request: Any) -> Any:
    error = ErrorCode.NO_ERROR
    try:
        ctx.broker.telemetry.push(
            request.client_instance_id or ZERO_UUID,
            client_identity(ctx),
            request.subscription_id,
            request.terminating,
            request.compression_type,
            bytes(request.metrics or b""),
            ctx.now_ms(),
        )
    except TelemetryError as exc:
        error = exc.error_code
    return new_response(ApiKey.PushTelemetry, ctx.api_version, throttle_time_ms=0, error_code=error)
