"""OpenTelemetry metrics (OTLP `MetricsData`, protobuf) as Kafka clients push them (KIP-714).

A small reader of the protobuf wire format (varints, fixed 32/64-bit, length-delimited
fields; unknown fields skipped) for the messages of `opentelemetry/proto/metrics/v1`:
MetricsData → ResourceMetrics (resource attributes) → ScopeMetrics → Metric (name, unit,
description and one of gauge, sum, histogram, exponential histogram, summary) → data points
(attributes, times, value or count/sum). Malformed input raises `OtlpError`.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

VARINT, FIXED64, LENGTH, FIXED32 = 0, 1, 2, 5
_DOUBLE = struct.Struct("<d")
_INT64 = struct.Struct("<q")
_UINT64 = struct.Struct("<Q")

# Metric fields holding the data, by kind.
_METRIC_KINDS = {5: "gauge", 7: "sum", 9: "histogram", 10: "exponential_histogram", 11: "summary"}
# Data point fields: (attributes, start time, time) for every kind.
_POINT_FIELDS = {
    "gauge": (7, 2, 3),
    "sum": (7, 2, 3),
    "histogram": (9, 2, 3),
    "exponential_histogram": (1, 2, 3),
    "summary": (7, 2, 3),
}


class OtlpError(ValueError):
    """Bytes that are not a well-formed OTLP MetricsData message."""


@dataclass(frozen=True)
class DataPoint:
    """One data point. `value` for gauges and sums (int or float); `count` and `sum` for
    histograms and summaries."""

    attributes: dict[str, Any]
    time_unix_nano: int
    start_time_unix_nano: int = 0
    value: int | float | None = None
    count: int | None = None
    sum: float | None = None


@dataclass(frozen=True)
class Metric:
    name: str
    kind: str
    """"gauge", "sum", "histogram", "exponential_histogram" or "summary"."""
    points: tuple[DataPoint, ...]
    unit: str = ""
    description: str = ""
    monotonic: bool = False
    resource: dict[str, Any] = field(default_factory=dict)
    """The attributes of the resource (the client) the metric came from."""

    @property
    def value(self) -> int | float | None:
        """The last data point's value (gauges and sums)."""
        return self.points[-1].value if self.points else None


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(data) or shift > 63:
            raise OtlpError("truncated or overlong varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7


def fields(data: Any) -> Iterator[tuple[int, int, Any]]:
    """(field number, wire type, value) of each field: an int for varints and fixed fields
    (fixed ones as unsigned little-endian), bytes for length-delimited ones."""
    data = _blob(data)
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire_type = key >> 3, key & 7
        value: int | bytes
        if wire_type == VARINT:
            value, pos = _varint(data, pos)
        elif wire_type in (FIXED64, FIXED32):
            size = 8 if wire_type == FIXED64 else 4
            if pos + size > len(data):
                raise OtlpError("truncated fixed-size field")
            value = int.from_bytes(data[pos : pos + size], "little")
            pos += size
        elif wire_type == LENGTH:
            size, pos = _varint(data, pos)
            if pos + size > len(data):
                raise OtlpError("truncated length-delimited field")
            value = data[pos : pos + size]
            pos += size
        else:
            raise OtlpError(f"unsupported wire type {wire_type}")
        yield number, wire_type, value


def _blob(value: Any) -> bytes:
    """A length-delimited field's bytes (OtlpError for a field of another wire type)."""
    if not isinstance(value, bytes):
        raise OtlpError("a length-delimited field was expected")
    return value


def _text(value: Any) -> str:
    return _blob(value).decode("utf-8", "replace")


def _number(value: Any) -> int:
    """A varint or fixed-size field's value (OtlpError for a length-delimited one)."""
    if not isinstance(value, int):
        raise OtlpError("a numeric field was expected")
    return value


def _double(bits: int) -> float:
    value: float = _DOUBLE.unpack(_UINT64.pack(bits))[0]
    return value


def _signed64(value: int) -> int:
    signed: int = _INT64.unpack(_UINT64.pack(value & (2**64 - 1)))[0]
    return signed


def _any_value(data: bytes) -> Any:
    for number, _, value in fields(data):
        if number == 1:
            return _text(value)
        if number == 2:
            return bool(value)
        if number == 3:
            return _signed64(_number(value))
        if number == 4:
            return _double(_number(value))
        if number == 5:
            return [_any_value(item) for n, _, item in fields(value) if n == 1]
        if number == 6:
            return attributes([item for n, _, item in fields(value) if n == 1])
        if number == 7:
            return _blob(value)
    return None


def attributes(key_values: list[bytes]) -> dict[str, Any]:
    """KeyValue messages as a dict."""
    result: dict[str, Any] = {}
    for entry in key_values:
        key, value = "", None
        for number, _, item in fields(entry):
            if number == 1:
                key = _text(item)
            elif number == 2:
                value = _any_value(item)
        result[key] = value
    return result


def _point(kind: str, data: bytes) -> DataPoint:
    attribute_field, start_field, time_field = _POINT_FIELDS[kind]
    attrs: list[bytes] = []
    times = {start_field: 0, time_field: 0}
    value: int | float | None = None
    count: int | None = None
    total: float | None = None
    for number, _, item in fields(data):
        if number == attribute_field:
            attrs.append(item)
        elif number in times:
            times[number] = _number(item)
        elif kind in ("gauge", "sum") and number == 4:
            value = _double(_number(item))
        elif kind in ("gauge", "sum") and number == 6:
            value = _signed64(_number(item))
        elif kind not in ("gauge", "sum") and number == 4:
            count = _number(item)
        elif kind not in ("gauge", "sum") and number == 5:
            total = _double(_number(item))
    return DataPoint(attributes(attrs), times[time_field], times[start_field], value, count, total)


def _metric(data: bytes, resource: dict[str, Any]) -> Metric | None:
    name = unit = description = ""
    kind: str | None = None
    points: list[DataPoint] = []
    monotonic = False
    for number, _, item in fields(data):
        if number == 1:
            name = _text(item)
        elif number == 2:
            description = _text(item)
        elif number == 3:
            unit = _text(item)
        elif number in _METRIC_KINDS:
            kind = _METRIC_KINDS[number]
            for inner, _, value in fields(item):
                if inner == 1:
                    points.append(_point(kind, value))
                elif inner == 3 and kind == "sum":
                    monotonic = bool(value)
    if kind is None:
        return None
    return Metric(name, kind, tuple(points), unit, description, monotonic, resource)


def decode_metrics_data(data: bytes) -> list[Metric]:
    """Every metric of a MetricsData message, in order."""
    try:
        return _metrics_data(data)
    except (TypeError, AttributeError, struct.error) as exc:  # a field of the wrong wire type
        raise OtlpError(f"malformed metrics: {exc}") from exc


def _metrics_data(data: bytes) -> list[Metric]:
    metrics: list[Metric] = []
    for number, wire_type, resource_metrics in fields(data):
        if number != 1 or wire_type != LENGTH:
            continue
        resource: dict[str, Any] = {}
        scopes: list[bytes] = []
        for inner, _, value in fields(resource_metrics):
            if inner == 1:
                resource = attributes([kv for n, _, kv in fields(value) if n == 1])
            elif inner == 2:
                scopes.append(value)
        for scope in scopes:
            for inner, _, value in fields(scope):
                if inner == 2:
                    metric = _metric(value, resource)
                    if metric is not None:
                        metrics.append(metric)
    return metrics
