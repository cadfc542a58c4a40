"""Fuzz target: one partition's records from a Produce request, validated as the produce path
validates them (`validate_produce_records`, in place), and a stored batch read back
(`iter_records`), each through the C record scan and the pure-Python one.

The first input byte picks the topic settings (`config_for`); the rest is the records.
Outcomes allowed: validated batches or InvalidRecords; records or CorruptRecordsError; the
same answer from both paths; what validation accepted reads back as that many records.
Decompression is bounded by a 1 MiB limit here."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from minibroker.records import records
from minibroker.records.compression import CODEC_IDS
from minibroker.records.records import CorruptRecordsError, build_batch, iter_records
from minibroker.records.validate import (
    CREATE_TIME,
    LOG_APPEND_TIME,
    InvalidRecords,
    ValidationConfig,
    validate_produce_records,
)
from tests.fuzz.targets import built_extension
from tests.records.golden import client_batches

NATIVE_SCAN = built_extension("minibroker.records._accel", "scan")

NOW = 1_800_000_000_000
HOUR = 3_600_000
MAX_DECOMPRESSED = 1 << 20
_COMPRESSION_TYPES = ("producer", "uncompressed", "gzip", "snappy", "lz4", "zstd")


def config_for(selector: int) -> ValidationConfig:
    """bit 0: compacted, bit 1: LogAppendTime, bit 2: timestamps within an hour of now,
    bits 3-5: compression.type."""
    bounded = HOUR if selector & 4 else 2**63 - 1
    return ValidationConfig(
        timestamp_type=LOG_APPEND_TIME if selector & 2 else CREATE_TIME,
        timestamp_before_max_ms=bounded,
        timestamp_after_max_ms=bounded,
        compression_type=_COMPRESSION_TYPES[(selector >> 3) % len(_COMPRESSION_TYPES)],
        max_decompressed_bytes=MAX_DECOMPRESSED,
        compacted=bool(selector & 1),
    )


def seeds() -> list[bytes]:
    built = [
        build_batch(
            [(b"k%d" % i, b"v" * i, [("h", b"x")], NOW + i) for i in range(5)],
            compression=codec,
            producer_id=7,
            producer_epoch=0,
            base_sequence=0,
        )
        for codec in sorted(CODEC_IDS)
    ]
    batches = [batch.records for batch in client_batches()] + built
    return [bytes([selector]) + batch for batch in batches for selector in (0, 0x0B)]


def test_one_input(data: bytes) -> None:
    if not data:
        return
    config = config_for(data[0])
    batch = data[1:]
    fast, validated = _both(lambda: _validated(batch, config))
    if fast != validated:
        raise AssertionError(f"native and pure validation differ: {fast} {validated}")
    fast, read = _both(lambda: _read_back(batch))
    if fast != read:
        raise AssertionError(f"native and pure reads differ: {fast} {read}")
    if isinstance(validated, tuple) and validated[0] != "rejected":
        _accepted_reads_back(batch, config)


@contextmanager
def _scan(scan: Any) -> Iterator[None]:
    saved = records.native_scan
    records.native_scan = scan
    try:
        yield
    finally:
        records.native_scan = saved


def _both(run: Callable[[], object]) -> tuple[object, object]:
    with _scan(NATIVE_SCAN):
        fast = run()
    with _scan(None):
        pure = run()
    return fast, pure


def _validated(batch: bytes, config: ValidationConfig) -> object:
    try:
        (validated,) = validate_produce_records(bytearray(batch), config, NOW, in_place=True)
    except InvalidRecords as e:
        return ("rejected", e.error_code, e.message, e.record_errors)
    return bytes(validated.data), {**vars(validated), "data": None}


def _read_back(batch: bytes) -> object:
    try:
        return list(iter_records(batch, max_decompressed_bytes=MAX_DECOMPRESSED))
    except CorruptRecordsError as e:
        return ("corrupt", e.message, e.record_index)


def _accepted_reads_back(batch: bytes, config: ValidationConfig) -> None:
    try:
        (validated,) = validate_produce_records(bytearray(batch), config, NOW, in_place=True)
    except InvalidRecords:
        return
    stored = list(iter_records(validated.data, max_decompressed_bytes=MAX_DECOMPRESSED))
    if len(stored) != validated.record_count:
        raise AssertionError(f"{validated.record_count} records validated, {len(stored)} read")
