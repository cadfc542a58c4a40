"""Produce validation and stored-batch decoding through both paths: the C accelerator
(`native`) and the pure-Python reference (`pure`) must accept the same batches with the same
results and reject the same batches with the same error, message and record errors.

The native run uses the built extension even under MINIBROKER_PURE_PYTHON=1; skipped only when
it was not built."""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minibroker.records import records
from minibroker.records.batch import HEADER_SIZE, LENGTH_OFFSET, write_crc
from minibroker.records.compression import NONE
from minibroker.records.records import CorruptRecordsError, build_batch, iter_records
from minibroker.records.validate import (
    CREATE_TIME,
    LOG_APPEND_TIME,
    InvalidRecords,
    ValidationConfig,
    validate_produce_records,
)
from tests.records.golden import ClientBatch, client_batches

native = pytest.importorskip("minibroker.records._accel")

NOW = 1_800_000_000_000
HOUR = 3_600_000


@contextmanager
def _path(scan: Any) -> Iterator[None]:
    saved = records.native_scan
    records.native_scan = scan
    try:
        yield
    finally:
        records.native_scan = saved


def _both(run: Callable[[], Any]) -> tuple[Any, Any]:
    with _path(native.scan):
        fast = run()
    with _path(None):
        pure = run()
    return fast, pure


def _validation(data: bytes, config: ValidationConfig, version: int = 9) -> Callable[[], Any]:
    def run() -> Any:
        try:
            (validated,) = validate_produce_records(
                bytearray(data), config, NOW, produce_version=version, in_place=True
            )
        except InvalidRecords as e:
            return (e.error_code, e.message, e.record_errors)
        return (bytes(validated.data), {**vars(validated), "data": None})

    return run


def _decoding(data: bytes) -> Callable[[], Any]:
    def run() -> Any:
        try:
            return list(iter_records(data))
        except CorruptRecordsError as e:
            return (e.message, e.record_index)

    return run


def _agree(data: bytes, config: ValidationConfig) -> None:
    fast, pure = _both(_validation(data, config))
    assert fast == pure
    fast, pure = _both(_decoding(data))
    assert fast == pure


_configs = st.builds(
    ValidationConfig,
    timestamp_type=st.sampled_from([CREATE_TIME, LOG_APPEND_TIME]),
    timestamp_before_max_ms=st.sampled_from([HOUR, 2**63 - 1]),
    timestamp_after_max_ms=st.sampled_from([HOUR, 2**63 - 1]),
    compacted=st.booleans(),
)
_records = st.lists(
    st.tuples(
        st.one_of(st.none(), st.binary(max_size=20)),
        st.one_of(st.none(), st.binary(max_size=300)),
        st.lists(
            st.tuples(st.text(max_size=3), st.one_of(st.none(), st.binary(max_size=3))), max_size=2
        ),
        st.one_of(st.integers(NOW - 2 * HOUR, NOW + 2 * HOUR), st.just(-1)),
    ),
    min_size=1,
    max_size=30,
)


@settings(max_examples=300, deadline=None)
@given(_records, _configs, st.data())
def test_valid_and_corrupted_batches_answer_alike(
    inputs: Any, config: ValidationConfig, data: Any
) -> None:
    batch = build_batch(inputs, compression=NONE)
    _agree(batch, config)
    corrupted = bytearray(batch)
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(HEADER_SIZE, len(corrupted) - 1))
        corrupted[at] = data.draw(st.integers(0, 255))
    if data.draw(st.booleans()):  # cut or extend the records, length field kept consistent
        cut = data.draw(st.integers(HEADER_SIZE, len(corrupted)))
        corrupted = corrupted[:cut] + data.draw(st.binary(max_size=4))
        struct.pack_into(">i", corrupted, LENGTH_OFFSET, len(corrupted) - 12)
    write_crc(corrupted)  # so that the corruption reaches the record walk
    _agree(bytes(corrupted), config)


@pytest.mark.parametrize("client", client_batches(), ids=lambda batch: batch.id)
def test_client_batches_answer_alike(client: ClientBatch) -> None:
    for config in (ValidationConfig(), ValidationConfig(compacted=True)):
        fast, pure = _both(_validation(client.records, config, client.produce_version))
        assert fast == pure


def test_a_64_kib_batch_of_1_kib_values_answers_alike() -> None:
    inputs = [(None, bytes([i]) * 1024, [], NOW + i % 7) for i in range(63)]
    _agree(build_batch(inputs), ValidationConfig())
