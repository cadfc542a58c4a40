"""The `minikafka` data source: Spark's Kafka connector over the Python Data Source API.

Driver-side objects (`KafkaBatchReader.partitions`, `KafkaStreamReader`) only talk
Metadata and ListOffsets; executors fetch and produce (`read`, `write`) with clients of
their own, created inside the task, because readers and writers are pickled to them.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    DataSourceStreamArrowWriter,
    DataSourceStreamReader,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    ReadMinRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from minibroker.spark import FORMAT
from minibroker.spark.offsets import (
    OffsetRange,
    OffsetReader,
    Offsets,
    from_json,
    plan_ranges,
    rate_limit,
    report_data_loss,
    to_json,
)
from minibroker.spark.options import (
    SinkOptions,
    SourceOptions,
    parse_sink_options,
    parse_source_options,
)
from minibroker.spark.reader import read_range, source_ddl
from minibroker.spark.writer import SinkColumns, check_columns, produce_batches

log = logging.getLogger(__name__)


@dataclass
class KafkaInputPartition(InputPartition):
    span: OffsetRange


@dataclass
class KafkaWriterCommitMessage(WriterCommitMessage):
    records: int


class KafkaDataSource(DataSource):
    """`spark.read.format("minikafka")`: Kafka topics with Spark's Kafka connector schema."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> str:
        return source_ddl(parse_source_options(self.options, streaming=False).include_headers)

    def reader(self, schema: StructType) -> KafkaBatchReader:
        return KafkaBatchReader(parse_source_options(self.options, streaming=False))

    def streamReader(self, schema: StructType) -> KafkaStreamReader:
        return KafkaStreamReader(parse_source_options(self.options, streaming=True))

    def writer(self, schema: StructType, overwrite: bool) -> KafkaWriter:
        if overwrite:
            raise ValueError(
                "Save mode Overwrite not allowed for Kafka. Allowed save modes are Append and "
                "ErrorIfExists (default)."
            )
        options = parse_sink_options(self.options)
        if options.exactly_once:
            raise ValueError("Option 'exactlyOnce' is for streaming writes")
        return KafkaWriter(options, _sink_columns(schema, options))

    def streamWriter(self, schema: StructType, overwrite: bool) -> KafkaStreamWriter:
        options = parse_sink_options(self.options)
        return KafkaStreamWriter(options, _sink_columns(schema, options))


def _sink_columns(schema: StructType, options: SinkOptions) -> SinkColumns:
    types = {field.name: field.dataType.simpleString() for field in schema.fields}
    return check_columns(types, options.topic)


def _read(
    options: SourceOptions, partition: InputPartition, group_id: str
) -> Iterator[pa.RecordBatch]:
    assert isinstance(partition, KafkaInputPartition)
    return read_range(options, partition.span, group_id)


class KafkaBatchReader(DataSourceReader):
    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self.group_id = options.executor_group_id(str(uuid.uuid4()))

    def partitions(self) -> Sequence[KafkaInputPartition]:
        offsets = OffsetReader(self.options)
        try:
            found = offsets.topic_partitions()
            start = offsets.resolve(self.options.starting, found, starting=True)
            end = offsets.resolve(self.options.ending, found, starting=False)
        finally:
            offsets.close()
        for tp in found:
            if start[tp] > end[tp]:
                raise ValueError(
                    f"Starting offset {start[tp]} of {tp[0]}-{tp[1]} is after its ending "
                    f"offset {end[tp]}"
                )
        ranges = plan_ranges(
            start, end, self.options.min_partitions, self.options.max_records_per_partition
        )
        return [KafkaInputPartition(span) for span in ranges]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return _read(self.options, partition, self.group_id)


class KafkaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Offsets are `{"topic": {"partition": nextOffset}}`, as in the connector's checkpoint.

    Admission control as Spark's `KafkaMicroBatchStream`: `minOffsetsPerTrigger` delays a
    batch until that many offsets are available or `maxTriggerDelay` has passed since the
    last batch; `maxOffsetsPerTrigger` caps a batch. The Python API carries one read limit,
    so the default one only tells Spark a limit exists; both come from the options."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self.group_id = options.executor_group_id(str(uuid.uuid4()))
        self.offsets = OffsetReader(options)
        self.target: Offsets | None = None
        self.last_trigger_ms = time.time() * 1000

    def initialOffset(self) -> dict[str, dict[str, int]]:
        found = self.offsets.topic_partitions()
        return to_json(self.offsets.resolve(self.options.starting, found, starting=True))

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.options.max_offsets_per_trigger is not None:
            return ReadMaxRows(self.options.max_offsets_per_trigger)
        if self.options.min_offsets_per_trigger is not None:
            return ReadMinRows(self.options.min_offsets_per_trigger)
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self.target = self._available()

    def _available(self) -> Offsets:
        return self.offsets.latest(self.offsets.topic_partitions())

    def reportLatestOffset(self) -> dict[str, dict[str, int]]:
        return to_json(self._available())

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        begin = from_json(start)
        available = self.target if self.target is not None else self._available()
        new = [tp for tp in available if tp not in begin]
        begin.update(self.offsets.earliest(new))
        end = {tp: available.get(tp, offset) for tp, offset in begin.items()}
        if isinstance(limit, ReadAllAvailable):
            return to_json(end)
        if self.target is None and self._delay(begin, end):
            return to_json(begin)
        if self.options.max_offsets_per_trigger is not None:
            end = rate_limit(begin, end, self.options.max_offsets_per_trigger)
        return to_json(end)

    def _delay(self, begin: Offsets, end: Offsets) -> bool:
        """Too few new offsets for minOffsetsPerTrigger, and maxTriggerDelay not yet over
        (Spark's `delayBatch`; Trigger.AvailableNow never waits)."""
        minimum = self.options.min_offsets_per_trigger
        if minimum is None:
            return False
        now = time.time() * 1000
        if now - self.last_trigger_ms >= self.options.max_trigger_delay_ms:
            self.last_trigger_ms = now
            return False
        if sum(end[tp] - begin[tp] for tp in end) < minimum:
            return True
        self.last_trigger_ms = now
        return False

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> list[KafkaInputPartition]:
        begin, until = from_json(start), from_json(end)
        new = [tp for tp in until if tp not in begin]
        begin.update(self.offsets.earliest(new))
        for tp in sorted(set(begin) - set(until)):
            report_data_loss(self.options.fail_on_data_loss, f"{tp[0]}-{tp[1]} is gone")
        for tp, offset in until.items():
            if offset < begin[tp]:
                report_data_loss(
                    self.options.fail_on_data_loss,
                    f"{tp[0]}-{tp[1]}'s offset was changed from {begin[tp]} to {offset}",
                )
                begin[tp] = offset
        ranges = plan_ranges(
            begin, until, self.options.min_partitions, self.options.max_records_per_partition
        )
        return [KafkaInputPartition(span) for span in ranges]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return _read(self.options, partition, self.group_id)

    def commit(self, end: dict[str, Any]) -> None:
        """The checkpoint is the truth; nothing is committed to Kafka (as Spark's source)."""

    def stop(self) -> None:
        self.offsets.close()


class KafkaWriter(DataSourceArrowWriter):
    def __init__(self, options: SinkOptions, columns: SinkColumns) -> None:
        self.options = options
        self.columns = columns

    def write(self, iterator: Iterator[pa.RecordBatch]) -> KafkaWriterCommitMessage:
        return KafkaWriterCommitMessage(produce_batches(self.options, self.columns, iterator))

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        log.info("Kafka write committed: %d records", _records(messages))

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        log.warning("Kafka write aborted after %d records (they stay written)", _records(messages))


class KafkaStreamWriter(DataSourceStreamArrowWriter):
    def __init__(self, options: SinkOptions, columns: SinkColumns) -> None:
        self.options = options
        self.columns = columns

    def write(self, iterator: Iterator[pa.RecordBatch]) -> KafkaWriterCommitMessage:
        return KafkaWriterCommitMessage(produce_batches(self.options, self.columns, iterator))

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        log.info("Kafka batch %d committed: %d records", batchId, _records(messages))

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        log.warning("Kafka batch %d aborted after %d records", batchId, _records(messages))


def _records(messages: list[WriterCommitMessage | None]) -> int:
    return sum(m.records for m in messages if isinstance(m, KafkaWriterCommitMessage))
