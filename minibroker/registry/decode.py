"""Values in Confluent's wire format decoded through the registry, for the web console.

A framed value is a zero magic byte, the schema id (4 bytes, big-endian), then the payload:
Avro binary, JSON text, or Protobuf's message-index list followed by the message. The running
registries are kept per broker so the console finds its broker's registry.
"""

from __future__ import annotations

import io
import json
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from minibroker.registry.errors import RegistryError

if TYPE_CHECKING:
    from minibroker.registry.service import SchemaRegistry
    from minibroker.server.broker import Broker

_RUNNING: weakref.WeakKeyDictionary[Broker, SchemaRegistry] = weakref.WeakKeyDictionary()
FRAME_BYTES = 5


@dataclass(frozen=True, slots=True)
class Decoded:
    schema_id: int
    schema_type: str
    subject: str
    value: Any


def register_running(broker: Broker, registry: SchemaRegistry | None) -> None:
    if registry is None:
        _RUNNING.pop(broker, None)
    else:
        _RUNNING[broker] = registry


def running_registry(broker: Broker) -> SchemaRegistry | None:
    return _RUNNING.get(broker)


def decode_framed(registry: SchemaRegistry, data: bytes) -> Decoded | None:
    """The value decoded with the schema its frame names; None if it is not framed, names no
    schema the registry holds, or does not decode with it."""
    if len(data) < FRAME_BYTES or data[0] != 0:
        return None
    schema_id = int.from_bytes(data[1:FRAME_BYTES], "big")
    record = registry.store.schema_by_id(schema_id)
    if record is None:
        return None
    try:
        parsed = registry.parsed_now(record)
        value = _decode(record.schema_type, parsed, data[FRAME_BYTES:])
    except (RegistryError, ValueError, TypeError, EOFError, IndexError, OverflowError):
        return None
    except Exception:  # a decoding library's own errors on bytes that are not its format
        return None
    return Decoded(schema_id, record.schema_type, record.subject, value)


def _decode(schema_type: str, parsed: Any, payload: bytes) -> Any:
    if schema_type == "AVRO":
        import avro.io

        reader = avro.io.DatumReader(parsed.parsed)
        decoder = avro.io.BinaryDecoder(io.BytesIO(payload))
        value = reader.read(decoder)
        if decoder.reader.read(1):
            raise ValueError("bytes left after the Avro value")
        return value
    if schema_type == "JSON":
        return json.loads(payload)
    from minibroker.registry.formats.protobuf import decode_message, read_message_indexes

    indexes, used = read_message_indexes(payload)
    return decode_message(parsed, indexes, payload[used:])
