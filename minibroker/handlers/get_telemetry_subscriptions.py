"""GetTelemetrySubscriptions (key 71), version 0 (KIP-714).

Behaviour: as Kafka's `ClientMetricsManager` (`minibroker/telemetry/manager.py`): a zero
client instance id gets a new one; the answer carries the instance's subscription id, the
metric prefixes it is subscribed to (none by default: empty RequestedMetrics, so clients
push nothing; "*" for all), the push interval (300000 ms unless a subscription sets a lower
one), the compression types accepted (zstd, lz4, gzip, snappy), `telemetry.max.bytes` and
delta temporality. Asking again before the push interval has passed is
THROTTLING_QUOTA_EXCEEDED, with the other fields left at their defaults. The client is
matched against subscriptions by its client id and source address.

Version notes: v0 is flexible.
"""

from __future__ import annotations

from typing import Any

from minibroker.handlers.registry import handles
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import new_response
from minibroker.protocol.errors import ErrorCode
from minibroker.server.context import RequestContext
from minibroker.telemetry.manager import (
    ACCEPTED_COMPRESSION_TYPES,
    ZERO_UUID,
    TelemetryError,
)


def client_identity(ctx: RequestContext) -> dict[str, str]:
    """What a subscription's match criteria can select a client by."""
    return {
        "client_id": ctx.header.client_id or "",
        "client_source_address": ctx.client_host.lstrip("/"),
    }


@handles(ApiKey.GetTelemetrySubscriptions, 0, 0)
async def handle_get_telemetry_subscriptions(ctx: RequestContext, request: Any) -> Any:
    def answer(error: ErrorCode, **fields: Any) -> Any:
        return new_response(
            ApiKey.GetTelemetrySubscriptions,
            ctx.api_version,
            throttle_time_ms=0,
            error_code=error,
            **fields,
        )

    try:
        found = ctx.broker.telemetry.get_subscription(
            request.client_instance_id or ZERO_UUID, client_identity(ctx), ctx.now_ms()
        )
    except TelemetryError as exc:
        return answer(
            exc.error_code,
            client_instance_id=ZERO_UUID,
            subscription_id=0,
            accepted_compression_types=[],
            push_interval_ms=0,
            telemetry_max_bytes=0,
            delta_temporality=False,
            requested_metrics=[],
        )
    return answer(
        ErrorCode.NO_ERROR,
        client_instance_id=found.instance_id,
        subscription_id=found.subscription_id,
        accepted_compression_types=list(ACCEPTED_COMPRESSION_TYPES),
        push_interval_ms=found.interval_ms,
        telemetry_max_bytes=found.max_bytes,
        delta_temporality=True,
        requested_metrics=list(found.metrics),
    )
