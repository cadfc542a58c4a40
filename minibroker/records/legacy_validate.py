"""Produce v0-2: validating legacy message sets (magic 0/1) and converting them to one v2 batch.

Kafka 3.x kept its logs in message format v2 and up-converted what old producers sent, in
`UnifiedLog.analyzeAndValidateRecords` and `LogValidator` (convertAndAssignOffsetsNonCompressed,
validateMessagesAndAssignOffsetsCompressed, buildRecordsAndAssignOffsets). Their checks, in
their order, as early rejects:

 1. no bytes at all                           no error, nothing appended (base offset -1)
 2. an entry cut short, under 14 bytes, fields
    not filling it, or bytes after the last   CORRUPT_MESSAGE  (Kafka drops a partial tail)
 3. magic outside 0..2                        CORRUPT_MESSAGE
 4. an entry larger than max.message.bytes    MESSAGE_TOO_LARGE
 5. an entry's CRC-32 mismatch                CORRUPT_MESSAGE
 6. a codec id 5-7                            UNSUPPORTED_COMPRESSION_TYPE
 7. a compressed entry and another entry      INVALID_RECORD  (one wrapper per partition)
 8. an entry of another magic than the first  INVALID_RECORD
 9. a wrapper: zstd, null value, undecodable
    or over the decompression bound, no inner
    messages, inner magic differing, an inner
    message compressed, a bad v1 wrapper offset INVALID_RECORD
10. an inner message's CRC-32 mismatch        CORRUPT_MESSAGE
11. key missing on a compacted topic          INVALID_RECORD   (record errors)
12. CreateTime timestamp out of range, or a
    producer-set LogAppendTime                INVALID_TIMESTAMP (record errors)
13. the converted batch over max.message.bytes MESSAGE_TOO_LARGE

Uncompressed messages are each their own "batch" in Kafka, so their record errors carry
index 0 and the first failing message is the one reported. The v2 batch keeps each message's
key, value and timestamp (v0: none, -1), has no headers and no producer id, and is written in
the topic's `compression.type` (`producer`: the wrapper's codec). A v2 batch in Produce v0-2
is validated as in v3+ (Kafka 3.x checked the magic only from Produce v3).
"""

from __future__ import annotations

from minibroker.protocol.errors import ErrorCode
from minibroker.records.batch import (
    MAGIC_V2,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    NO_TIMESTAMP,
    TIMESTAMP_CREATE_TIME,
    TIMESTAMP_LOG_APPEND_TIME,
    Buffer,
)
from minibroker.records.compression import CODEC_IDS, CODEC_NAMES, NONE
from minibroker.records.legacy import (
    MAGIC_OFFSET,
    LegacyFormatError,
    LegacyMessage,
    inner_messages_checked,
    iter_entries,
)
from minibroker.records.records import build_batch
from minibroker.records.validate import (
    CREATE_TIME,
    LOG_APPEND_TIME,
    InvalidRecords,
    ValidatedBatch,
    ValidationConfig,
    validate_produce_records,
)


def validate_old_produce_records(
    records: Buffer, config: ValidationConfig, now_ms: int, *, in_place: bool = False
) -> list[ValidatedBatch]:
    """One partition's records of a Produce v0-2 request: legacy messages converted to one
    v2 batch, or a v2 batch as in v3+. Raises `InvalidRecords`."""
    view = memoryview(records)
    if len(view) > MAGIC_OFFSET and view[MAGIC_OFFSET] == MAGIC_V2:
        return validate_produce_records(view, config, now_ms, in_place=in_place)
    return validate_legacy_records(view, config, now_ms)


def validate_legacy_records(
    records: Buffer, config: ValidationConfig, now_ms: int
) -> list[ValidatedBatch]:
    """A legacy message set checked as Kafka 3.x's LogValidator and converted to one v2 batch
    (no batch at all for no bytes)."""
    entries = _entries(records, config)
    if not entries:
        return []
    _check_shape(entries)
    messages: list[LegacyMessage] = []
    for entry in entries:
        messages.extend(_deep(entry, config, now_ms))
    return [_converted(messages, entries[0], config, now_ms)]


def _invalid(message: str) -> InvalidRecords:
    return InvalidRecords(ErrorCode.INVALID_RECORD, message)


def _corrupt(message: str) -> InvalidRecords:
    return InvalidRecords(ErrorCode.CORRUPT_MESSAGE, message)


def _format_error(error: LegacyFormatError) -> InvalidRecords:
    return _corrupt(error.message) if error.corrupt else _invalid(error.message)


def _entries(records: Buffer, config: ValidationConfig) -> list[LegacyMessage]:
    """The shallow entries, with Kafka's per-batch checks of analyzeAndValidateRecords."""
    entries = []
    try:
        for message, crc_ok in iter_entries(records):
            if message.entry_size > config.max_message_bytes:
                raise InvalidRecords(
                    ErrorCode.MESSAGE_TOO_LARGE,
                    f"The record batch size is {message.entry_size} bytes which exceeds the "
                    f"maximum configured value of {config.max_message_bytes}.",
                )
            if not crc_ok:
                raise _corrupt(f"Record is corrupt (stored crc = {message.crc})")
            if message.codec not in CODEC_IDS:
                raise InvalidRecords(
                    ErrorCode.UNSUPPORTED_COMPRESSION_TYPE,
                    f"Unknown compression type id: {message.codec}",
                )
            entries.append(message)
    except LegacyFormatError as e:
        raise _format_error(e) from None
    return entries


def _check_shape(entries: list[LegacyMessage]) -> None:
    first = entries[0]
    if len(entries) > 1 and any(entry.codec != NONE for entry in entries):
        raise _invalid("Compressed outer record has more than one batch")
    for entry in entries:
        if entry.magic != first.magic:
            raise _invalid(
                f"Batch magic {entry.magic} is not the same as the first batch's magic byte "
                f"{first.magic}"
            )


def _deep(entry: LegacyMessage, config: ValidationConfig, now_ms: int) -> list[LegacyMessage]:
    """The entry's records (a wrapper's inner messages), each checked as Kafka's
    validateRecord; record errors raised for the entry as a whole."""
    if entry.codec == NONE:
        messages = [entry]
    else:
        try:
            checked = inner_messages_checked(entry, config.max_decompressed_bytes)
        except LegacyFormatError as e:
            raise _format_error(e) from None
        for message, crc_ok in checked:
            if not crc_ok:
                raise _corrupt(f"Record is corrupt (stored crc = {message.crc})")
        messages = [message for message, _ in checked]
    errors: list[tuple[int, str]] = []
    timestamp_error = False
    for index, message in enumerate(messages):
        error = _record_error(entry, message, config, now_ms)
        if error is not None:
            timestamp_error = timestamp_error or error[0]
            errors.append((index, error[1]))
    if errors:
        raise _record_errors(errors, timestamp_error)
    return messages


def _record_error(
    batch: LegacyMessage, message: LegacyMessage, config: ValidationConfig, now_ms: int
) -> tuple[bool, str] | None:
    """(is a timestamp error, message) for a record Kafka refuses, else None."""
    if config.compacted and message.key is None:
        return False, "Compacted topic cannot accept message without key"
    if config.timestamp_type == CREATE_TIME and message.timestamp != NO_TIMESTAMP:
        lowest = now_ms - config.timestamp_before_max_ms
        highest = now_ms + config.timestamp_after_max_ms
        if not lowest <= message.timestamp <= highest:
            return True, (
                f"Timestamp {message.timestamp} of message with offset {message.offset} is out "
                f"of range. The timestamp should be within [{lowest}, {highest}]"
            )
    elif batch.timestamp_type == TIMESTAMP_LOG_APPEND_TIME:
        return True, (
            f"Invalid timestamp type in message with offset {message.offset}. Producer should "
            "not set timestamp type to LogAppendTime."
        )
    return None


def _record_errors(errors: list[tuple[int, str]], timestamp_error: bool) -> InvalidRecords:
    if timestamp_error:
        return InvalidRecords(
            ErrorCode.INVALID_TIMESTAMP,
            "One or more records have been rejected due to invalid timestamp",
            errors,
        )
    return InvalidRecords(
        ErrorCode.INVALID_RECORD,
        f"One or more records have been rejected due to {len(errors)} record errors in total, "
        f"and only showing the first three errors at most: {errors[:3]}",
        errors,
    )


def _converted(
    messages: list[LegacyMessage], first: LegacyMessage, config: ValidationConfig, now_ms: int
) -> ValidatedBatch:
    target = first.codec if config.compression_type == "producer" else None
    codec = CODEC_NAMES[config.compression_type] if target is None else target
    log_append_time = config.timestamp_type == LOG_APPEND_TIME
    data = build_batch(
        [(message.key, message.value, (), message.timestamp) for message in messages],
        compression=codec,
        timestamp_type=TIMESTAMP_LOG_APPEND_TIME if log_append_time else TIMESTAMP_CREATE_TIME,
        max_timestamp=now_ms if log_append_time else None,
    )
    if len(data) > config.max_message_bytes:
        raise InvalidRecords(
            ErrorCode.MESSAGE_TOO_LARGE,
            f"Message batch size is {len(data)} bytes which exceeds the maximum configured "
            f"size of {config.max_message_bytes}.",
        )
    max_timestamp = now_ms if log_append_time else max(m.timestamp for m in messages)
    return ValidatedBatch(
        data=bytearray(data),
        producer_id=NO_PRODUCER_ID,
        producer_epoch=NO_PRODUCER_EPOCH,
        base_sequence=NO_SEQUENCE,
        record_count=len(messages),
        is_transactional=False,
        max_timestamp=max(NO_TIMESTAMP, max_timestamp),
        log_append_time_ms=now_ms if log_append_time else NO_TIMESTAMP,
    )
