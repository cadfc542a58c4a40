"""Fixes to kafka-python's generated request decoders, applied before any is compiled.

The decoders are Python source emitted per message and version (`compiled_decode_from`).
Two of the emitted pieces let a hostile frame cost far more than its size:

- an unsigned varint (compact lengths, array counts, tag numbers) is read with no length
  limit, so a run of 0xff bytes builds an ever larger integer: time quadratic in the run
  (80 KB took 0.1 s, a 10 MB frame would hold the event loop for many minutes). Kafka's
  `ByteUtils.readUnsignedVarint` refuses a varint longer than 5 bytes; so do we now.
- a struct with a non-empty tagged-field section copied the whole rest of the frame into a
  `BytesIO` to decode it, so an array of N such structs copied O(N x frame) bytes. It now
  reads through a view of the frame without copying.

And two let through what Kafka's generated readers refuse, which then reached handlers as
None where they iterate (Produce with a null `topic_data` was an UNKNOWN_SERVER_ERROR):

- null (length -1) in a string, bytes or array field that is not nullable in that version:
  Kafka throws "non-nullable field ... was serialized as null"; now so do we;
- array counts below -1: Kafka reads any negative count as null, kafka-python as empty.

`install()` is idempotent and fails loudly if kafka-python's internals have moved.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from kafka.protocol.schemas.fields.array import ArrayField
from kafka.protocol.schemas.fields.codecs.types import Bytes, String, UnsignedVarInt32
from kafka.protocol.schemas.fields.simple import SimpleField
from kafka.protocol.schemas.fields.struct import StructField
from kafka.protocol.schemas.fields.struct_array import StructArrayField

MAX_UVARINT_SHIFT = 28  # 5 bytes: 7 * 4 bits before the last byte


class ViewReader:
    """The `read`/`tell` part of a BytesIO, over a memoryview and without copying it."""

    __slots__ = ("_data", "_pos", "_start")

    def __init__(self, data: Any, pos: int) -> None:
        self._data = memoryview(data)
        self._start = pos
        self._pos = pos

    def read(self, size: int = -1) -> bytes:
        end = len(self._data) if size is None or size < 0 else self._pos + size
        chunk = bytes(self._data[self._pos : end])
        self._pos += len(chunk)
        return chunk

    def tell(self) -> int:
        return self._pos - self._start


def _emit_bounded_uvarint_decode(cls: Any, ctx: Any, var_name: str, indent: str) -> None:
    byte = ctx.next_var("b")
    shift = ctx.next_var("sh")
    ctx.emit(indent, f"{var_name} = 0")
    ctx.emit(indent, f"{shift} = 0")
    ctx.emit(indent, "while True:")
    ctx.emit(indent, f"    {byte} = data[pos]")
    ctx.emit(indent, "    pos += 1")
    ctx.emit(indent, f"    {var_name} |= ({byte} & 0x7f) << {shift}")
    ctx.emit(indent, f"    if not ({byte} & 0x80): break")
    ctx.emit(indent, f"    {shift} += 7")
    ctx.emit(indent, f"    if {shift} > {MAX_UVARINT_SHIFT}:")
    ctx.emit(indent, "        raise ValueError('unsigned varint longer than 5 bytes')")


def _emit_tagged_decode_without_copy(
    self: Any, ctx: Any, var_name: str, indent: str, version: int
) -> None:
    tagged = ctx.next_var("tf")
    reader = ctx.next_var("rd")
    ctx.globs[tagged] = self.tagged_fields(version)
    ctx.globs["_ViewReader"] = ViewReader
    ctx.emit(indent, f"{reader} = _ViewReader(data, pos)")
    ctx.emit(indent, f"_tfd = {tagged}.decode({reader}, version={version})")
    ctx.emit(indent, f"pos += {reader}.tell()")
    ctx.emit(indent, "if _tfd:")
    ctx.emit(indent, "    for _tk, _tv in _tfd.items():")
    ctx.emit(indent, '        if _tk.startswith("_"):')
    ctx.emit(
        indent, f"            if {var_name}.unknown_tags is None: {var_name}.unknown_tags = {{}}"
    )
    ctx.emit(indent, f"            {var_name}.unknown_tags[_tk] = _tv")
    ctx.emit(indent, "        else:")
    ctx.emit(indent, f"            if {var_name}.tags is None: {var_name}.tags = set()")
    ctx.emit(indent, f"            {var_name}.tags.add(_tk)")
    ctx.emit(indent, f"            setattr({var_name}, _tk, _tv)")


_NULL_COUNT_TEST = re.compile(r"^if (_n\d+) == -1:$")


class _NegativeCountIsNull:
    """A codegen context whose emitted `if _nN == -1:` (null array) becomes `< 0`."""

    def __init__(self, ctx: Any) -> None:
        self._ctx = ctx

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ctx, name)

    def emit(self, indent: str, line: str) -> None:
        self._ctx.emit(indent, _NULL_COUNT_TEST.sub(r"if \1 < 0:", line))


_EmitDecode = Callable[..., None]


def _checked(original: _EmitDecode, *, array: bool) -> _EmitDecode:
    def emit_decode_from(
        self: Any,
        ctx: Any,
        var_name: str,
        indent: str,
        version: int | None = None,
        compact: bool = False,
        tagged: bool = False,
    ) -> None:
        if array:
            ctx = _NegativeCountIsNull(ctx)
        original(self, ctx, var_name, indent, version=version, compact=compact, tagged=tagged)
        nullable_type = array or isinstance(self._type, String) or self._type is Bytes
        if nullable_type and not self.nullable_for_version_q(version):
            ctx.emit(indent, f"if {var_name} is None:")
            ctx.emit(indent, f"    raise ValueError('non-nullable field {self.name} is null')")

    emit_decode_from.__wrapped__ = original  # type: ignore[attr-defined]
    return emit_decode_from


def install() -> None:
    if getattr(SimpleField.emit_decode_from, "__wrapped__", None) is not None:
        return
    if not hasattr(UnsignedVarInt32, "emit_decode_from") or not hasattr(
        StructField, "_emit_tagged_decode"
    ):
        raise RuntimeError("kafka-python's decoder generator changed: review decoder_limits")
    UnsignedVarInt32.emit_decode_from = classmethod(_emit_bounded_uvarint_decode)
    StructField._emit_tagged_decode = _emit_tagged_decode_without_copy
    SimpleField.emit_decode_from = _checked(SimpleField.emit_decode_from, array=False)
    ArrayField.emit_decode_from = _checked(ArrayField.emit_decode_from, array=True)
    StructArrayField.emit_decode_from = _checked(StructArrayField.emit_decode_from, array=True)
