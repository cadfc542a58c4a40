"""Hand-built RecordBatch v2 bytes (struct + crc32c) for the log tests, and small helpers."""

from __future__ import annotations

import struct
from collections.abc import Sequence
from pathlib import Path

import crc32c

BATCH_HEADER = struct.Struct(">qiibIhiqqqhii")  # 61 bytes, Kafka's RecordBatch v2 header


def zigzag_varint(value: int) -> bytes:
    encoded = (value << 1) ^ (value >> 63)
    out = bytearray()
    while encoded >= 0x80:
        out.append((encoded & 0x7F) | 0x80)
        encoded >>= 7
    out.append(encoded)
    return bytes(out)


def encode_record(
    offset_delta: int,
    timestamp_delta: int,
    key: bytes | None,
    value: bytes | None,
    headers: Sequence[tuple[str, bytes | None]] = (),
) -> bytes:
    body = bytearray(b"\x00")  # attributes
    body += zigzag_varint(timestamp_delta) + zigzag_varint(offset_delta)
    for field in (key, value):
        body += zigzag_varint(-1) if field is None else zigzag_varint(len(field)) + field
    body += zigzag_varint(len(headers))
    for header_key, header_value in headers:
        encoded_key = header_key.encode()
        body += zigzag_varint(len(encoded_key)) + encoded_key
        body += (
            zigzag_varint(-1)
            if header_value is None
            else zigzag_varint(len(header_value)) + header_value
        )
    return zigzag_varint(len(body)) + bytes(body)


def make_batch(
    values: Sequence[bytes | None],
    *,
    timestamp: int = 1_700_000_000_000,
    timestamp_step: int = 1,
    keys: Sequence[bytes | None] | None = None,
    headers: Sequence[tuple[str, bytes | None]] = (),
    base_offset: int = 0,
    leader_epoch: int = -1,
    attributes: int = 0,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
) -> bytearray:
    """An uncompressed batch of one record per value; record i has timestamp + i * step."""
    keys = keys if keys is not None else [None] * len(values)
    records = b"".join(
        encode_record(i, i * timestamp_step, keys[i], value, headers)
        for i, value in enumerate(values)
    )
    max_timestamp = timestamp + max(0, (len(values) - 1) * timestamp_step)
    batch = bytearray(BATCH_HEADER.size) + records
    BATCH_HEADER.pack_into(
        batch,
        0,
        base_offset,
        len(batch) - 12,
        leader_epoch,
        2,
        0,
        attributes,
        len(values) - 1,
        timestamp,
        max_timestamp,
        producer_id,
        producer_epoch,
        base_sequence,
        len(values),
    )
    struct.pack_into(">I", batch, 17, crc32c.crc32c(bytes(batch[21:])))
    return batch


def stamped(batch: bytes, base_offset: int, leader_epoch: int) -> bytes:
    """What the log must store: the batch with base offset and leader epoch written in."""
    out = bytearray(batch)
    struct.pack_into(">q", out, 0, base_offset)
    struct.pack_into(">i", out, 12, leader_epoch)
    return bytes(out)


def split_batches(data: bytes) -> list[bytes]:
    """The whole batches in `data` (asserts nothing partial)."""
    batches, position = [], 0
    while position < len(data):
        (length,) = struct.unpack_from(">i", data, position + 8)
        batches.append(data[position : position + 12 + length])
        position += 12 + length
    assert position == len(data), "partial batch"
    return batches


def batch_base_offset(batch: bytes) -> int:
    return int(struct.unpack_from(">q", batch, 0)[0])


def batch_last_offset(batch: bytes) -> int:
    return batch_base_offset(batch) + int(struct.unpack_from(">i", batch, 23)[0])


def assert_indexes_point_at_batches(partition_dir: Path) -> None:
    """Every .index entry is (last offset, start) of a batch in its .log; every .timeindex
    entry names a batch's last offset; timestamps strictly increase."""
    for log_path in sorted(partition_dir.glob("*.log")):
        base = int(log_path.stem)
        last_offset_at = {}
        position = 0
        for batch in split_batches(log_path.read_bytes()):
            last_offset_at[position] = batch_last_offset(batch)
            position += len(batch)
        index = log_path.with_suffix(".index").read_bytes()
        assert len(index) % 8 == 0
        for relative, entry_position in struct.iter_unpack(">ii", index):
            assert last_offset_at.get(entry_position) == base + relative
        time_index = log_path.with_suffix(".timeindex").read_bytes()
        assert len(time_index) % 12 == 0
        last_offsets = set(last_offset_at.values())
        previous = -1
        for timestamp, relative in struct.iter_unpack(">qi", time_index):
            assert base + relative in last_offsets and timestamp > previous
            previous = timestamp
