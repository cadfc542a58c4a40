"""Request decoding and response encoding over kafka-python's generated message classes,
and for the APIs kafka-python has no class for (ConsumerGroupHeartbeat, telemetry, share
groups...), classes built by its machinery from our own message definitions
(`minibroker/protocol/definitions/`).

The versions Kafka 2.8-3.9 served that Kafka 4 removed (KIP-896: Produce v0-2, Fetch v0-3,
ListOffsets v0, OffsetCommit v0-1, ...) go through kafka-python's classes too: Kafka kept those
versions' fields in the 4.3 schemas it builds them from, and kafka-python decodes and encodes
every version from 0 (`tests/protocol/test_old_versions.py` holds them to Kafka 3.9's layouts).
Which versions a broker accepts is the handlers' and the emulated release's business.

The rest of the broker never imports `kafka.protocol`; it gets request objects from
`decode_request` and turns response objects into frames with `encode_response`.
kafka-python's `decode()` does not notice, for some versions, a frame cut short (a final
bytes/string field comes back shortened), so decoding here checks that the body did not run
past the frame's end and turns any decoder exception into `MalformedRequest`. Bytes left
after the body are ignored, as Kafka's `RequestContext.parseRequest` ignores them:
librdkafka 2.16 sends an all-topics Metadata v12 request with three stray bytes after it.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sized
from dataclasses import dataclass
from typing import Any, NamedTuple

from kafka.protocol.api_message import ApiMessage

from minibroker.protocol import decoder_limits, definitions
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.metadata_response import encode_metadata_response
from minibroker.protocol.produce_request import decode_produce_request
from minibroker.protocol.produce_response import encode_produce_response

decoder_limits.install()

_KEY_VERSION_CORRELATION = struct.Struct(">hhi")
_HEADER_V1 = struct.Struct(">hhih")  # and the client id's length
_INT16 = struct.Struct(">h")
_SIZE_CORRELATION = struct.Struct(">ii")
_SIZE_CORRELATION_TAGS = struct.Struct(">iiB")  # header v1: no tagged fields


class MalformedRequest(Exception):
    """The frame cannot be a valid request: the connection that sent it is closed."""


class RequestHeader(NamedTuple):
    """A tuple, not a dataclass: one is built per request, and a tuple is the cheapest."""

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str


@dataclass(slots=True)
class EncodedFrame:
    """A response frame a handler framed itself (where profiling showed the codec's copies
    were in the way): bytes parts, and parts such as file regions that the connection sends
    as they are. Written in order, they are the whole frame, size prefix included. Not to be
    changed once made (not frozen only because a frozen dataclass costs more to make).

    `message()` builds the same response as a codec message instead (reading what the parts
    refer to), for the rare paths that edit a response, such as test clusters' per-partition
    errors; the parts are not to be written after that."""

    parts: list[bytes | Sized]
    message: Callable[[], Any]


# The kafka-python 3 module defining each API's message classes, imported when the API is
# first used (tests/protocol/test_codec_modules.py checks the table against kafka-python).
KAFKA_PYTHON_MODULES = {
    0: "producer.produce",
    1: "consumer.fetch",
    2: "consumer.offsets",
    3: "metadata.metadata",
    **dict.fromkeys((8, 9, 11, 12, 13, 14, 47), "consumer.group"),
    10: "metadata.find_coordinator",
    **dict.fromkeys((15, 16, 42), "admin.groups"),
    **dict.fromkeys((17, 36), "sasl"),
    18: "metadata.api_versions",
    **dict.fromkeys((19, 20, 21, 37, 43, 45, 46, 75), "admin.topics"),
    **dict.fromkeys((22, 24, 25, 26, 27, 28), "producer.transaction"),
    23: "consumer.offsets",
    **dict.fromkeys((29, 30, 31), "admin.acl"),
    **dict.fromkeys((32, 33, 44, 74), "admin.configs"),
    **dict.fromkeys((34, 35, 55, 57, 60), "admin.cluster"),
    **dict.fromkeys((48, 49), "admin.client_quotas"),
    **dict.fromkeys((50, 51), "admin.users"),
    **dict.fromkeys((61, 65, 66), "admin.transactions"),
}
# kafka-python's classes, and for the APIs it has none for, classes built from our own
# message definitions (each when first looked up).
_CLASSES = definitions.MessageClasses(
    {}, {key: f"kafka.protocol.{module}" for key, module in KAFKA_PYTHON_MODULES.items()}
)


def request_class(api_key: int) -> type[ApiMessage] | None:
    return _CLASSES.get((api_key, "request"))


def response_class(api_key: int) -> type[ApiMessage]:
    return _CLASSES[(api_key, "response")]


_FLEXIBLE: dict[tuple[int, int], bool] = {}  # keys and versions are int16: bounded anyway


def is_flexible(api_key: int, api_version: int) -> bool:
    flexible = _FLEXIBLE.get((api_key, api_version))
    if flexible is None:
        cls = request_class(api_key)
        flexible = cls is not None and bool(cls.flexible_version_q(api_version))
        _FLEXIBLE[(api_key, api_version)] = flexible
    return flexible


def peek_key_version_correlation(frame: memoryview) -> tuple[int, int, int]:
    if len(frame) < _KEY_VERSION_CORRELATION.size:
        raise MalformedRequest("frame shorter than a request header")
    key, version, correlation_id = _KEY_VERSION_CORRELATION.unpack_from(frame, 0)
    return key, version, correlation_id


def _read_uvarint(data: memoryview, pos: int) -> tuple[int, int]:
    value = 0
    shift = 0
    while True:
        if pos >= len(data) or shift > 28:
            raise MalformedRequest("bad unsigned varint")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7


def _skip_tagged_fields(data: memoryview, pos: int) -> int:
    count, pos = _read_uvarint(data, pos)
    for _ in range(count):
        _, pos = _read_uvarint(data, pos)
        size, pos = _read_uvarint(data, pos)
        pos += size
        if pos > len(data):
            raise MalformedRequest("tagged field runs past the frame")
    return pos


def decode_header(frame: memoryview) -> tuple[RequestHeader, int]:
    """Header v1 (or v2 when the API version is flexible); returns it and the body position.

    The client id is always an INT16-length string, even in header v2; null becomes "".
    """
    if len(frame) < _HEADER_V1.size:
        peek_key_version_correlation(frame)
        raise MalformedRequest("frame ends before the client id")
    api_key, api_version, correlation_id, length = _HEADER_V1.unpack_from(frame, 0)
    pos = _HEADER_V1.size
    client_id = ""
    if length > 0:
        if pos + length > len(frame):
            raise MalformedRequest("client id runs past the frame")
        try:
            client_id = str(frame[pos : pos + length], "utf-8")
        except UnicodeDecodeError as exc:
            raise MalformedRequest("client id is not UTF-8") from exc
        pos += length
    elif length < -1:
        raise MalformedRequest("negative client id length")
    if is_flexible(api_key, api_version):
        pos = _skip_tagged_fields(frame, pos)
    return RequestHeader(api_key, api_version, correlation_id, client_id), pos


def decode_body(
    api_key: int, api_version: int, frame: memoryview, pos: int, *, records_in_place: bool = False
) -> Any:
    """The request body at `frame[pos:]`. With `records_in_place`, a Produce request's
    records are views of `frame` rather than copies (the caller owns the frame)."""
    if records_in_place and api_key == ApiKey.Produce:
        decoded = decode_produce_request(frame, pos, api_version)
        if decoded is not None:
            body, end = decoded
            return _checked_body(body, end, frame, api_key, api_version)
    cls = request_class(api_key)
    if cls is None or not 0 <= api_version <= cls.max_version:
        raise MalformedRequest(f"no codec for API {api_key} v{api_version}")
    flexible = cls.flexible_version_q(api_version)
    try:
        decode = cls._struct.compiled_decode_from(
            api_version, compact=flexible, tagged=flexible, data_class=cls[None]
        )
        body, end = decode(frame, pos)
    except Exception as exc:  # the generated decoder raises many kinds on bad input
        raise MalformedRequest(f"cannot decode {ApiKey.name_of(api_key)} v{api_version}") from exc
    return _checked_body(body, end, frame, api_key, api_version)


def _checked_body(body: Any, end: int, frame: memoryview, api_key: int, api_version: int) -> Any:
    if end > len(frame):
        raise MalformedRequest(f"the request body runs {end - len(frame)} bytes past the frame")
    body._version = api_version
    body._header = None
    return body


def encode_response(
    api_key: int, api_version: int, correlation_id: int, body: ApiMessage
) -> bytearray:
    """A whole response frame: size, header (v1 when flexible, except ApiVersions), body."""
    return response_frame(
        api_key, api_version, correlation_id, _encoded_body(api_key, api_version, body)
    )


def response_frame(
    api_key: int, api_version: int, correlation_id: int, encoded: bytes | bytearray
) -> bytearray:
    """Size, header and an encoded response body: the whole frame."""
    if api_key != ApiKey.ApiVersions and is_flexible(api_key, api_version):
        frame = bytearray(_SIZE_CORRELATION_TAGS.pack(5 + len(encoded), correlation_id, 0))
    else:
        frame = bytearray(_SIZE_CORRELATION.pack(4 + len(encoded), correlation_id))
    frame += encoded
    return frame


def _encoded_body(api_key: int, api_version: int, body: ApiMessage) -> bytes | bytearray:
    fast: bytes | bytearray | None = None
    if api_key == ApiKey.Produce:
        fast = encode_produce_response(body, api_version)
    elif api_key == ApiKey.Metadata:
        fast = encode_metadata_response(body, api_version)
    if fast is not None:
        return fast
    encoded: bytes | bytearray = body.encode(version=api_version)
    return encoded


def new_response(api_key: int, api_version: int, **fields: Any) -> Any:
    return response_class(api_key)(version=api_version, **fields)


def struct_type(api_key: int, kind: str, *path: str) -> Any:
    """A nested struct class of a message, e.g. struct_type(Produce, "response",
    "TopicProduceResponse", "PartitionProduceResponse")."""
    cls: Any = _CLASSES[(api_key, kind)]
    for name in path:
        cls = getattr(cls, name)
    return cls
