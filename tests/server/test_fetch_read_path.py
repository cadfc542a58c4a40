"""The Fetch read path's shortcuts answer what the long way answers.

- A partition read at or past its upper bound (high watermark, or last stable offset for
  read_committed) within [log start, log end] is not read from the log: the handler relies on
  the log answering nothing there, whatever the log's segments and log start offset.
- A session answer that includes every partition read keeps the reads as they are; one that
  includes some keeps those, in the reads' order, and drops the others' records.
"""

from __future__ import annotations

import tempfile
import uuid
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from minibroker.cluster.fetch_sessions import Requested, Wanted
from minibroker.handlers.fetch import PartitionRead, _included
from minibroker.log import LogConfig, LogManager

from ..log.log_testing import make_batch

CONFIG = LogConfig(segment_bytes=600, index_interval_bytes=64, retention_ms=-1)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    on_disk=st.booleans(),
    batch_sizes=st.lists(st.integers(1, 4), max_size=25),
    data=st.data(),
)
def test_the_log_has_nothing_at_or_past_the_upper_bound(
    on_disk: bool, batch_sizes: list[int], data: st.DataObject
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        manager = LogManager(
            Path(tmp) if on_disk else None, node_id=0, cluster_id="c", default_config=CONFIG
        )
        try:
            log = manager.create("t", 0, uuid.uuid4(), CONFIG)
            for step, records in enumerate(batch_sizes):
                log.append(bytearray(make_batch([b"v" * 40] * records)), 0, 1_000 + step)
            log.delete_records_before(data.draw(st.integers(0, log.log_end_offset)))
            offset = data.draw(st.integers(log.log_start_offset, log.log_end_offset))
            upper = data.draw(st.integers(0, offset))
            assert log.read_batches(offset, data.draw(st.integers(1, 5_000)), upper) is None
        finally:
            manager.close()


def _read(topic: str, index: int, records: bytes = b"") -> PartitionRead:
    read = PartitionRead(Requested((topic, index), topic, Wanted(0, 1 << 20)))
    read.records = records
    return read


def test_a_full_answer_keeps_the_reads() -> None:
    reads = [_read("a", 0, b"x"), _read("a", 1), _read("b", 0, b"y")]
    assert _included(reads, [read.key for read in reads]) is reads


def test_a_partial_answer_keeps_the_included_in_order_and_drops_the_others_records() -> None:
    reads = [_read("a", 0, b"x"), _read("a", 1, b"z"), _read("b", 0, b"y")]
    kept = _included(reads, [("b", 0), ("a", 0)])
    assert [read.key for read in kept] == [("a", 0), ("b", 0)]
    assert reads[1].records == b""
    assert [read.records for read in kept] == [b"x", b"y"]
