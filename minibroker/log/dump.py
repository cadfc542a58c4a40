"""`minibroker dump-log`: print segment and index files as Kafka's `kafka-dump-log.sh` does.

Same lines, same stderr reports (index mismatches, time-index errors, non-consecutive offsets),
so output can be compared with Kafka's tool line by line.
"""

from __future__ import annotations

import argparse
import struct
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, TextIO

from minibroker.records.batch import (
    ATTR_DELETE_HORIZON,
    HEADER_SIZE,
    LOG_OVERHEAD,
    TIMESTAMP_LOG_APPEND_TIME,
    BatchHeader,
    compute_crc,
)
from minibroker.records.records import iter_records

from .batch import header_is_plausible, parse_header
from .index import OFFSET_ENTRY, TIME_ENTRY
from .txnindex import ABORTED_TXN

_INT32_MAX = 2147483647
_CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
_CONTROL_TYPES = {0: "ABORT", 1: "COMMIT"}
_CONTROL_KEY = struct.Struct(">hh")
_END_TXN_VALUE = struct.Struct(">hi")


@dataclass
class _Reports:
    """What Kafka's tool prints to stderr after dumping every file."""

    index_mismatches: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    time_mismatches: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    time_out_of_order: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    time_offsets_not_found: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    non_consecutive: dict[str, list[tuple[int, int]]] = field(default_factory=dict)

    def print(self, err: TextIO) -> None:
        for name, pairs in self.index_mismatches.items():
            print(f"Mismatches in :{name}", file=err)
            for index_offset, log_offset in pairs:
                print(f"  Index offset: {index_offset}, log offset: {log_offset}", file=err)
        for name, pairs in self.time_mismatches.items():
            print(f"Found timestamp mismatch in :{name}", file=err)
            for index_ts, log_ts in pairs:
                print(f"  Index timestamp: {index_ts}, log timestamp: {log_ts}", file=err)
        for name, pairs in self.time_out_of_order.items():
            print(f"Found out of order timestamp in :{name}", file=err)
            for index_ts, previous in pairs:
                print(
                    f"  Index timestamp: {index_ts}, Previously indexed timestamp: {previous}",
                    file=err,
                )
        for pairs in self.time_offsets_not_found.values():
            print("The following indexed offsets are not found in the log.", file=err)
            for indexed, found in pairs:
                print(f"Indexed offset: {indexed}, found log offset: {found}", file=err)
        for name, pairs in self.non_consecutive.items():
            print(f"Non-consecutive offsets in {name}", file=err)
            for first, second in pairs:
                print(f"  {first} is followed by {second}", file=err)


def _iter_batches(file: BinaryIO) -> Iterator[tuple[int, BatchHeader, bytes]]:
    """(position, header, whole batch) of each batch until the data stops making sense."""
    position = 0
    while True:
        file.seek(position)
        head = file.read(HEADER_SIZE)
        if len(head) < HEADER_SIZE:
            return
        header = parse_header(head)
        if header.batch_length < HEADER_SIZE - LOG_OVERHEAD:
            return
        batch = head + file.read(header.size - HEADER_SIZE)
        if len(batch) < header.size:
            return
        yield position, header, batch
        position += header.size


def _last_sequence(header: BatchHeader) -> int:
    if header.base_sequence < 0:
        return -1
    return (header.base_sequence + header.last_offset_delta) % (_INT32_MAX + 1)


def _java_bool(value: bool) -> str:
    return "true" if value else "false"


def _timestamp_type(header: BatchHeader) -> str:
    return "LogAppendTime" if header.timestamp_type == TIMESTAMP_LOG_APPEND_TIME else "CreateTime"


def _codec(header: BatchHeader) -> str:
    codec = header.compression
    return _CODECS[codec] if codec < len(_CODECS) else f"unknown({codec})"


def _batch_line(position: int, header: BatchHeader, batch: bytes) -> str:
    delete_horizon = (
        f"OptionalLong[{header.base_timestamp}]"
        if header.attributes & ATTR_DELETE_HORIZON
        else "OptionalLong.empty"
    )
    return (
        f"baseOffset: {header.base_offset} lastOffset: {header.last_offset} "
        f"count: {header.records_count} baseSequence: {header.base_sequence} "
        f"lastSequence: {_last_sequence(header)} producerId: {header.producer_id} "
        f"producerEpoch: {header.producer_epoch} "
        f"partitionLeaderEpoch: {header.partition_leader_epoch} "
        f"isTransactional: {_java_bool(header.is_transactional)} "
        f"isControl: {_java_bool(header.is_control)} deleteHorizonMs: {delete_horizon} "
        f"position: {position} {_timestamp_type(header)}: {header.max_timestamp} "
        f"size: {header.size} magic: {header.magic} compresscodec: {_codec(header)} "
        f"crc: {header.crc} isvalid: {_java_bool(compute_crc(batch) == header.crc)}"
    )


def _text(data: bytes) -> str:
    return data.decode("utf-8", "replace")


def _record_lines(header: BatchHeader, batch: bytes, print_data: bool) -> Iterator[tuple[int, str]]:
    for record in iter_records(batch):
        sequence = -1
        if header.base_sequence >= 0:
            sequence = (header.base_sequence + record.offset - header.base_offset) % (
                _INT32_MAX + 1
            )
        key_size = -1 if record.key is None else len(record.key)
        value_size = -1 if record.value is None else len(record.value)
        header_keys = ",".join(key for key, _value in record.headers)
        line = (
            f"| offset: {record.offset} {_timestamp_type(header)}: {record.timestamp} "
            f"keySize: {key_size} valueSize: {value_size} "
            f"sequence: {sequence} headerKeys: [{header_keys}]"
        )
        if header.is_control:
            line += _control_text(record.key, record.value)
        elif print_data:
            if record.key is not None:
                line += f" key: {_text(record.key)}"
            if record.value is not None:
                line += f" payload: {_text(record.value)}"
        yield record.offset, line


def _control_text(key: bytes | None, value: bytes | None) -> str:
    if key is None or len(key) < _CONTROL_KEY.size:
        return " controlType: UNKNOWN(-1)"
    _version, control_type = _CONTROL_KEY.unpack_from(key)
    name = _CONTROL_TYPES.get(control_type)
    if name is None or value is None or len(value) < _END_TXN_VALUE.size:
        return f" controlType: UNKNOWN({control_type})"
    _value_version, coordinator_epoch = _END_TXN_VALUE.unpack_from(value)
    return f" endTxnMarker: {name} coordinatorEpoch: {coordinator_epoch}"


def dump_log_file(
    path: Path, *, deep: bool, print_data: bool, reports: _Reports, out: TextIO
) -> None:
    print(f"Log starting offset: {int(path.name.split('.')[0])}", file=out)
    valid_bytes = 0
    last_offset = -1
    with path.open("rb") as file:
        for position, header, batch in _iter_batches(file):
            print(_batch_line(position, header, batch), file=out)
            if deep:
                try:
                    for offset, line in _record_lines(header, batch, print_data):
                        if last_offset != -1 and offset != last_offset + 1:
                            pairs = reports.non_consecutive.setdefault(str(path.resolve()), [])
                            pairs.append((last_offset, offset))
                        last_offset = offset
                        print(line, file=out)
                except ValueError as error:
                    print(f"| could not decode records: {error}", file=out)
            valid_bytes += header.size
    trailing = path.stat().st_size - valid_bytes
    if trailing > 0:
        print(f"Found {trailing} invalid bytes at the end of {path.name}", file=out)


def _batch_at(log: BinaryIO, position: int, log_size: int) -> BatchHeader | None:
    """The header of the valid batch starting at `position`, or None if none starts there."""
    log.seek(position)
    head = log.read(HEADER_SIZE)
    if len(head) < HEADER_SIZE:
        return None
    header = parse_header(head)
    if not header_is_plausible(header, log_size - position):
        return None
    batch = head + log.read(header.size - HEADER_SIZE)
    return header if compute_crc(batch) == header.crc else None


def _log_of(index_path: Path) -> Path:
    return index_path.with_name(index_path.name.split(".")[0] + ".log")


def _base_offset(path: Path) -> int:
    return int(path.name.split(".")[0])


def _offset_entries(path: Path) -> list[tuple[int, int]]:
    base = _base_offset(path)
    data = path.read_bytes()
    whole = len(data) - len(data) % OFFSET_ENTRY.size
    return [(base + rel, pos) for rel, pos in OFFSET_ENTRY.iter_unpack(data[:whole])]


def dump_index_file(path: Path, *, verify_only: bool, reports: _Reports, out: TextIO) -> None:
    base = _base_offset(path)
    entries = _offset_entries(path)
    if not entries:
        print(f"{path} is empty.", file=out)
        return
    log_path = _log_of(path)
    log_size = log_path.stat().st_size
    with log_path.open("rb") as log:
        for slot, (offset, position) in enumerate(entries):
            if offset == base and slot > 0:
                return
            header = _batch_at(log, position, log_size)
            log_offset = -1 if header is None else header.last_offset
            if log_offset != offset:
                reports.index_mismatches.setdefault(str(path.resolve()), []).append(
                    (offset, log_offset)
                )
            if not verify_only:
                print(f"offset: {offset} position: {position}", file=out)


def _offset_index_lookup(entries: list[tuple[int, int]], offset: int) -> int:
    position = 0
    for entry_offset, entry_position in entries:
        if entry_offset > offset:
            break
        position = entry_position
    return position


def dump_time_index_file(path: Path, *, verify_only: bool, reports: _Reports, out: TextIO) -> None:
    base = _base_offset(path)
    data = path.read_bytes()
    whole = len(data) - len(data) % TIME_ENTRY.size
    offset_entries = _offset_entries(path.with_name(path.name.split(".")[0] + ".index"))
    log_path = _log_of(path)
    log_size = log_path.stat().st_size
    name = str(path.resolve())
    previous_timestamp = -1
    with log_path.open("rb") as log:
        for slot, (timestamp, relative) in enumerate(TIME_ENTRY.iter_unpack(data[:whole])):
            offset = base + relative
            if offset == base and slot > 0:
                return
            found = _find_batch(log, _offset_index_lookup(offset_entries, offset), log_size, offset)
            if found is None or found.last_offset != offset:
                last = -1 if found is None else found.last_offset
                reports.time_offsets_not_found.setdefault(name, []).append((offset, last))
            else:
                if found.max_timestamp != timestamp:
                    reports.time_mismatches.setdefault(name, []).append(
                        (timestamp, found.max_timestamp)
                    )
                if previous_timestamp >= timestamp:
                    reports.time_out_of_order.setdefault(name, []).append(
                        (timestamp, previous_timestamp)
                    )
            if not verify_only:
                print(f"timestamp: {timestamp} offset: {offset}", file=out)
            previous_timestamp = timestamp


def dump_txn_index_file(path: Path, *, out: TextIO) -> None:
    """Kafka's `dumpTxnIndex`: one line per aborted transaction."""
    data = path.read_bytes()
    for version, producer_id, first, last, last_stable in ABORTED_TXN.iter_unpack(
        data[: len(data) - len(data) % ABORTED_TXN.size]
    ):
        print(
            f"version: {version} producerId: {producer_id} firstOffset: {first} "
            f"lastOffset: {last} lastStableOffset: {last_stable}",
            file=out,
        )


def _find_batch(log: BinaryIO, position: int, log_size: int, offset: int) -> BatchHeader | None:
    """The first batch from `position` whose last offset is >= `offset`."""
    while position < log_size:
        header = _batch_at(log, position, log_size)
        if header is None:
            return None
        if header.last_offset >= offset:
            return header
        position += header.size
    return None


def _parse_arguments(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="minibroker dump-log",
        description="Print Kafka log segments (.log) and indexes (.index, .timeindex, .txnindex).",
    )
    parser.add_argument("paths", nargs="*", metavar="FILE", help="segment or index files")
    parser.add_argument("--files", default="", help="comma-separated files, as Kafka's tool")
    parser.add_argument(
        "--print-data-log", action="store_true", help="print the records' keys and values"
    )
    parser.add_argument("--deep-iteration", action="store_true", help="print every record")
    parser.add_argument(
        "--verify-index-only", action="store_true", help="check index entries, do not print them"
    )
    arguments = parser.parse_args(argv)
    arguments.paths += [name for name in arguments.files.split(",") if name]
    if not arguments.paths:
        parser.error("no files given")
    return arguments


def dump_log_main(argv: list[str]) -> int:
    arguments = _parse_arguments(argv)
    out, err = sys.stdout, sys.stderr
    reports = _Reports()
    status = 0
    for name in arguments.paths:
        path = Path(name)
        print(f"Dumping {path}", file=out)
        try:
            if path.suffix == ".log":
                deep = arguments.deep_iteration or arguments.print_data_log
                dump_log_file(
                    path, deep=deep, print_data=arguments.print_data_log, reports=reports, out=out
                )
            elif path.suffix == ".index":
                dump_index_file(
                    path, verify_only=arguments.verify_index_only, reports=reports, out=out
                )
            elif path.suffix == ".timeindex":
                dump_time_index_file(
                    path, verify_only=arguments.verify_index_only, reports=reports, out=out
                )
            elif path.suffix == ".txnindex":
                dump_txn_index_file(path, out=out)
            else:
                print(f"Ignoring unknown file {path}", file=err)
        except OSError as error:
            print(f"{path}: {error.strerror or error}", file=err)
            status = 1
    reports.print(err)
    return status
