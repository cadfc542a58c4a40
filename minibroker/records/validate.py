"""Produce-path validation of one partition's records, as Apache Kafka does it.

Kafka spreads these checks over `ProduceRequest.validateRecords` (run by KafkaApis per
partition), `UnifiedLog.analyzeAndValidateRecords` and `LogValidator`; here they are one flat
list of early rejects, in Kafka's order:

 1. no bytes at all                               INVALID_RECORD   (at least one batch)
 2. too short for a header, length field < 49,
    cut short, or trailing bytes                  CORRUPT_MESSAGE
 3. magic outside 0..2                            CORRUPT_MESSAGE
 4. magic 0 or 1                                  INVALID_RECORD   (Produce v3+ needs magic 2)
 5. a second whole batch                          INVALID_RECORD   (exactly one per partition)
 6. zstd in Produce < v7                          UNSUPPORTED_COMPRESSION_TYPE
 7. base offset not 0                             INVALID_RECORD
 8. batch larger than max.message.bytes           MESSAGE_TOO_LARGE
 9. CRC-32C mismatch                              CORRUPT_MESSAGE
10. codec 5-7                                     UNSUPPORTED_COMPRESSION_TYPE
11. lastOffsetDelta < 0, count < 1, or
    lastOffsetDelta != count - 1                  INVALID_RECORD
12. control batch                                 INVALID_RECORD   (clients may not write one)
13. producer id set but base sequence < 0         INVALID_RECORD
14. compressed data corrupt or over the bound     INVALID_RECORD   (record errors)
15. record lengths, offset deltas, structure      INVALID_RECORD   (record errors)
16. key missing on a compacted topic              INVALID_RECORD   (record errors)
17. CreateTime timestamp out of range, or a
    producer-set LogAppendTime                    INVALID_TIMESTAMP (record errors)
18. recompressed batch over max.message.bytes     MESSAGE_TOO_LARGE

Deviations from Kafka, all stricter: a truncated batch or trailing partial bytes are
rejected (Kafka ignores or trims them), offset deltas must be 0, 1, 2, ... in every batch
(Kafka rewrites compressed batches whose deltas are not, and does not look at them in
uncompressed ones), undecodable compressed data is INVALID_RECORD (Kafka: an unknown server
error) and decompression is bounded by `max_decompressed_bytes`.

Then, as Kafka: CreateTime batches get their max timestamp recomputed, LogAppendTime sets
the timestamp-type bit and max timestamp = now (CRC recomputed, records untouched), and a
topic `compression.type` differing from the batch's codec rebuilds the batch in the target
codec, keeping producer id, epoch, base sequence and the transactional flag. Uncompressed
batches are checked by walking varints over the bytes; no record objects are built.
"""

from __future__ import annotations

from dataclasses import dataclass

from minibroker.protocol.errors import ErrorCode
from minibroker.records.batch import (
    HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    MAGIC_V2,
    NO_TIMESTAMP,
    TIMESTAMP_CREATE_TIME,
    TIMESTAMP_LOG_APPEND_TIME,
    BatchHeader,
    Buffer,
    WritableBuffer,
    batch_size_at,
    compute_crc,
    set_max_timestamp,
)
from minibroker.records.compression import CODEC_IDS, CODEC_NAMES, ZSTD
from minibroker.records.records import (
    DEFAULT_MAX_DECOMPRESSED_BYTES,
    CorruptRecordsError,
    RecordsSummary,
    build_batch,
    decode_records,
    records_region,
    scan_records,
)

CREATE_TIME = "CreateTime"
LOG_APPEND_TIME = "LogAppendTime"
_TIMESTAMP_TYPES = {CREATE_TIME: TIMESTAMP_CREATE_TIME, LOG_APPEND_TIME: TIMESTAMP_LOG_APPEND_TIME}
_LONG_MAX = 2**63 - 1
_FIRST_ZSTD_PRODUCE_VERSION = 7
# Kafka's LegacyRecord.RECORD_OVERHEAD_V0 plus LOG_OVERHEAD: the smallest batch of any magic.
_MIN_RECORD_SIZE = LOG_OVERHEAD + 14


@dataclass(frozen=True)
class ValidationConfig:
    """The topic settings validation depends on, by their Kafka names."""

    timestamp_type: str = CREATE_TIME  # message.timestamp.type
    timestamp_before_max_ms: int = _LONG_MAX  # message.timestamp.before.max.ms
    timestamp_after_max_ms: int = _LONG_MAX  # message.timestamp.after.max.ms
    max_message_bytes: int = 1048588  # max.message.bytes
    compression_type: str = "producer"  # compression.type
    max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES
    compacted: bool = False  # cleanup.policy contains compact: keys are required

    def __post_init__(self) -> None:
        if self.timestamp_type not in _TIMESTAMP_TYPES:
            raise ValueError(f"unknown message.timestamp.type {self.timestamp_type!r}")
        if self.compression_type != "producer" and self.compression_type not in CODEC_NAMES:
            raise ValueError(f"unknown compression.type {self.compression_type!r}")


@dataclass
class ValidatedBatch:
    """A batch ready to append; the log stamps its base offset and leader epoch.

    `data` is the request's own bytes when they are writable (stamped where they arrived),
    else a copy."""

    data: WritableBuffer
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int
    is_transactional: bool
    max_timestamp: int
    log_append_time_ms: int = NO_TIMESTAMP


class InvalidRecords(Exception):
    """The partition's records are rejected with `error_code`.

    `record_errors` are ProduceResponse RecordErrors: (BatchIndex, BatchIndexErrorMessage),
    where, as in Kafka, the index is the position of the offending record in the batch.
    """

    def __init__(
        self,
        error_code: ErrorCode,
        message: str,
        record_errors: list[tuple[int, str]] | None = None,
    ) -> None:
        super().__init__(error_code.name, message)
        self.error_code = error_code
        self.message = message
        self.record_errors = record_errors or []


def validate_produce_records(
    records: Buffer,
    config: ValidationConfig,
    now_ms: int,
    *,
    produce_version: int | None = None,
    in_place: bool = False,
) -> list[ValidatedBatch]:
    """Validate one partition's records from a Produce request (v3+) and prepare them to
    append. Raises `InvalidRecords`; Kafka accepts exactly one batch, so the list has one.

    With `in_place`, writable `records` become the batch to append (timestamps rewritten and,
    later, offsets stamped into them) instead of being copied."""
    batch = _single_batch(memoryview(records))
    header = BatchHeader.parse(batch)
    _check_header(batch, header, config, produce_version)
    buf, start, end = _records_region(batch, header, config)
    summary = _scan(buf, start, end, header.records_count)
    _check_keys_and_timestamps(buf, start, header, summary, config, now_ms)
    return [_prepare(batch, buf, start, header, summary, config, now_ms, in_place)]


def _corrupt(message: str) -> InvalidRecords:
    return InvalidRecords(ErrorCode.CORRUPT_MESSAGE, message)


def _invalid(message: str) -> InvalidRecords:
    return InvalidRecords(ErrorCode.INVALID_RECORD, message)


def _single_batch(view: memoryview) -> memoryview:
    total = len(view)
    if total == 0:
        raise _invalid("Produce requests must have at least one record batch per partition")
    if total <= MAGIC_OFFSET:
        raise _corrupt(f"{total} bytes are too few for a record batch")
    magic = view[MAGIC_OFFSET]
    if magic > MAGIC_V2:
        raise _corrupt(f"Invalid magic found in record: {magic}")
    if magic != MAGIC_V2:
        raise _invalid(
            "Produce requests with version 3 or later are only allowed to contain record "
            "batches with magic version 2"
        )
    size = batch_size_at(view, 0)
    assert size is not None  # total > MAGIC_OFFSET > LOG_OVERHEAD
    if size < HEADER_SIZE:
        raise _corrupt(
            f"Record batch is corrupt (the size {size} is smaller than the minimum allowed "
            f"overhead {HEADER_SIZE})"
        )
    if size > total:
        raise _corrupt(f"the batch length field says {size} bytes but {total} were sent")
    if size < total:
        if _holds_another_batch(view[size:]):
            raise _invalid(
                "Produce requests are only allowed to contain exactly one record batch per "
                "partition"
            )
        raise _corrupt(f"{total - size} bytes follow the record batch")
    return view


def _holds_another_batch(rest: memoryview) -> bool:
    """Whether Kafka's batch reader would find a second batch in `rest` (rather than a
    corrupt one or an incomplete tail)."""
    size = batch_size_at(rest, 0)
    return (
        size is not None
        and size >= _MIN_RECORD_SIZE
        and len(rest) > MAGIC_OFFSET
        and rest[MAGIC_OFFSET] <= MAGIC_V2
        and size <= len(rest)
    )


def _check_header(
    batch: memoryview, header: BatchHeader, config: ValidationConfig, produce_version: int | None
) -> None:
    compression = header.compression
    if (
        produce_version is not None
        and produce_version < _FIRST_ZSTD_PRODUCE_VERSION
        and compression == ZSTD
    ):
        raise InvalidRecords(
            ErrorCode.UNSUPPORTED_COMPRESSION_TYPE,
            f"Produce requests with version {produce_version} are not allowed to use "
            "ZStandard compression",
        )
    if header.base_offset != 0:
        raise _invalid(
            f"The baseOffset of the record batch should be 0, but it is {header.base_offset}"
        )
    if header.size > config.max_message_bytes:
        raise _too_large(header.size, config)
    crc = compute_crc(batch)
    if crc != header.crc:
        raise _corrupt(f"Record is corrupt (stored crc = {header.crc}, computed crc = {crc})")
    if compression not in CODEC_IDS:
        raise InvalidRecords(
            ErrorCode.UNSUPPORTED_COMPRESSION_TYPE,
            f"Unknown compression type id: {compression}",
        )
    if header.last_offset_delta < 0:
        raise _invalid(f"Batch has an invalid offset range: [0, {header.last_offset_delta}]")
    if header.records_count <= 0:
        raise _invalid(f"Invalid reported count for record batch: {header.records_count}")
    if header.last_offset_delta + 1 != header.records_count:
        raise _invalid(
            f"Inconsistent batch offset range [0, {header.last_offset_delta}] and count of "
            f"records {header.records_count}"
        )
    if header.is_control:
        raise _invalid("Clients are not allowed to write control records")
    if header.producer_id >= 0 and header.base_sequence < 0:
        raise _invalid(
            f"Invalid sequence number {header.base_sequence} in record batch with producerId "
            f"{header.producer_id}"
        )


def _too_large(size: int, config: ValidationConfig) -> InvalidRecords:
    return InvalidRecords(
        ErrorCode.MESSAGE_TOO_LARGE,
        f"The record batch size is {size} bytes which exceeds the maximum configured value "
        f"of {config.max_message_bytes}.",
    )


def _record_errors(code: ErrorCode, errors: list[tuple[int, str]]) -> InvalidRecords:
    if code == ErrorCode.INVALID_TIMESTAMP:
        message = "One or more records have been rejected due to invalid timestamp"
    else:
        message = (
            f"One or more records have been rejected due to {len(errors)} record errors in "
            f"total, and only showing the first three errors at most: {errors[:3]}"
        )
    return InvalidRecords(code, message, errors)


def _records_region(
    batch: memoryview, header: BatchHeader, config: ValidationConfig
) -> tuple[Buffer, int, int]:
    try:
        return records_region(batch, header, config.max_decompressed_bytes)
    except CorruptRecordsError as e:
        raise _record_errors(ErrorCode.INVALID_RECORD, [(0, e.message)]) from None


def _scan(buf: Buffer, start: int, end: int, count: int) -> RecordsSummary:
    try:
        return scan_records(buf, start, end, count)
    except CorruptRecordsError as e:
        raise _record_errors(ErrorCode.INVALID_RECORD, [(e.record_index, e.message)]) from None


def _check_keys_and_timestamps(
    buf: Buffer,
    start: int,
    header: BatchHeader,
    summary: RecordsSummary,
    config: ValidationConfig,
    now_ms: int,
) -> None:
    lowest = now_ms - config.timestamp_before_max_ms
    highest = now_ms + config.timestamp_after_max_ms
    producer_log_append_time = header.timestamp_type == TIMESTAMP_LOG_APPEND_TIME
    create_time = config.timestamp_type == CREATE_TIME
    timestamps_fine = not producer_log_append_time and (
        not create_time
        or (
            header.base_timestamp + summary.min_timestamp_delta >= lowest
            and header.base_timestamp + summary.max_timestamp_delta <= highest
        )
    )
    keys_fine = not config.compacted or summary.null_keys == 0
    if timestamps_fine and keys_fine:
        return
    errors: list[tuple[int, str]] = []
    timestamp_error = False
    for index, record in enumerate(decode_records(buf, start, header)):
        if config.compacted and record.key is None:
            errors.append((index, "Compacted topic cannot accept message without key"))
        elif create_time and record.timestamp != NO_TIMESTAMP:
            if not lowest <= record.timestamp <= highest:
                timestamp_error = True
                errors.append(
                    (
                        index,
                        f"Timestamp {record.timestamp} of message with offset {record.offset} "
                        f"is out of range. The timestamp should be within [{lowest}, {highest}]",
                    )
                )
        elif producer_log_append_time:
            timestamp_error = True
            errors.append(
                (
                    index,
                    f"Invalid timestamp type in message with offset {record.offset}. Producer "
                    "should not set timestamp type to LogAppendTime.",
                )
            )
    if errors:
        code = ErrorCode.INVALID_TIMESTAMP if timestamp_error else ErrorCode.INVALID_RECORD
        raise _record_errors(code, errors)


def _prepare(
    batch: memoryview,
    buf: Buffer,
    start: int,
    header: BatchHeader,
    summary: RecordsSummary,
    config: ValidationConfig,
    now_ms: int,
    in_place: bool,
) -> ValidatedBatch:
    timestamp_type = _TIMESTAMP_TYPES[config.timestamp_type]
    if timestamp_type == TIMESTAMP_LOG_APPEND_TIME:
        max_timestamp = now_ms
    elif header.timestamp_type == TIMESTAMP_LOG_APPEND_TIME:
        max_timestamp = max(NO_TIMESTAMP, header.max_timestamp)
    else:
        max_timestamp = max(NO_TIMESTAMP, header.base_timestamp + summary.max_timestamp_delta)
    target = (
        header.compression
        if config.compression_type == "producer"
        else CODEC_NAMES[config.compression_type]
    )
    if target == header.compression:
        data: WritableBuffer = batch if in_place and not batch.readonly else bytearray(batch)
        set_max_timestamp(data, timestamp_type, max_timestamp)
    else:
        data = _recompress(buf, start, header, target, timestamp_type, max_timestamp, config)
    return ValidatedBatch(
        data=data,
        producer_id=header.producer_id,
        producer_epoch=header.producer_epoch,
        base_sequence=header.base_sequence,
        record_count=header.records_count,
        is_transactional=header.is_transactional,
        max_timestamp=max_timestamp,
        log_append_time_ms=now_ms if timestamp_type == TIMESTAMP_LOG_APPEND_TIME else NO_TIMESTAMP,
    )


def _recompress(
    buf: Buffer,
    start: int,
    header: BatchHeader,
    target: int,
    timestamp_type: int,
    max_timestamp: int,
    config: ValidationConfig,
) -> bytearray:
    """Kafka's `buildRecordsAndAssignOffsets`: the same records in a new batch."""
    records = decode_records(buf, start, header)
    rebuilt = build_batch(
        [(r.key, r.value, r.headers, r.timestamp) for r in records],
        compression=target,
        timestamp_type=timestamp_type,
        producer_id=header.producer_id,
        producer_epoch=header.producer_epoch,
        base_sequence=header.base_sequence,
        is_transactional=header.is_transactional,
        max_timestamp=max_timestamp,
    )
    if len(rebuilt) > config.max_message_bytes:
        raise _too_large(len(rebuilt), config)
    return bytearray(rebuilt)
