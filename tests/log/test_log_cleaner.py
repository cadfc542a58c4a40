"""The log cleaner (minibroker/log/cleaner.py) on both backends: golden cases worked out by
hand, a property test against a model, and an interrupted swap finished on reopening."""

from __future__ import annotations

import dataclasses
import struct
import tempfile
import uuid
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from minibroker.log import LogConfig, LogManager
from minibroker.log.blob import FileBlob
from minibroker.log.cleaner import clean_log
from minibroker.log.segmented import SegmentedLog
from minibroker.records.batch import ATTR_TRANSACTIONAL
from minibroker.records.compression import GZIP
from minibroker.records.records import build_batch, build_control_batch, iter_records

from .log_testing import (
    assert_indexes_point_at_batches,
    batch_last_offset,
    make_batch,
    split_batches,
)

TOPIC = "compacted"
NOW = 1_700_000_000_000
DAY_MS = 86_400_000
COMPACT = LogConfig(
    segment_bytes=400,
    index_interval_bytes=64,
    retention_ms=1,  # compact-only topics ignore time retention
    cleanup_policy="compact",
    min_cleanable_dirty_ratio=0.0,
)

Entry = tuple[int, bytes | None, bytes | None]  # (offset, key, value)


@pytest.fixture(params=["memory", "file"])
def data_dir(request: pytest.FixtureRequest, tmp_path: Path) -> Path | None:
    return tmp_path if request.param == "file" else None


def open_log(data_dir: Path | None, config: LogConfig = COMPACT) -> tuple[LogManager, SegmentedLog]:
    manager = LogManager(data_dir, node_id=0, cluster_id="c", default_config=config)
    log = manager.create(TOPIC, 0, uuid.uuid4(), config)
    assert isinstance(log, SegmentedLog)
    return manager, log


def append(log: SegmentedLog, pairs: list[tuple[bytes, bytes | None]], now: int = NOW) -> None:
    keys = [key for key, _ in pairs]
    values = [value for _, value in pairs]
    log.append(make_batch(values, keys=keys, timestamp=now), 0, now)


def entries(log: SegmentedLog) -> list[Entry]:
    """Every record, read as a consumer does: on from each batch's last offset + 1."""
    found: list[Entry] = []
    offset = log.log_start_offset
    while data := log.read(offset, 1 << 20):
        for batch in split_batches(data):
            found += [(r.offset, r.key, r.value) for r in iter_records(batch)]
            offset = batch_last_offset(batch) + 1
    return found


def keyed(pairs: str) -> list[tuple[bytes, bytes | None]]:
    """ "a1 b1 a- " -> [(b"a", b"1"), (b"b", b"1"), (b"a", None)] ("-": a tombstone)."""
    return [(p[0].encode(), None if p[1] == "-" else p[1:].encode()) for p in pairs.split()]


def test_latest_record_per_key_survives_with_its_offset(data_dir: Path | None) -> None:
    _, log = open_log(data_dir)
    append(log, keyed("a1 b1 c1"))  # 0-2
    log.roll(NOW)
    append(log, keyed("a2 b-"))  # 3-4
    log.roll(NOW)
    append(log, keyed("a3"))  # 5, active segment: not cleaned
    stats = clean_log(log, NOW)
    assert stats is not None and stats.records_removed == 2
    assert entries(log) == [(2, b"c", b"1"), (3, b"a", b"2"), (4, b"b", None), (5, b"a", b"3")]
    assert log.log_end_offset == 6
    assert [base for base, _ in log.segments()] == [0, 5]  # two closed segments became one
    # The batch keeps its base offset and last offset delta (0 and 2); offset 1 reads it.
    [rewritten] = split_batches(log.read(1, 100))
    assert struct.unpack_from(">q", rewritten)[0] == 0
    assert [r.offset for r in iter_records(rewritten)] == [2]
    if data_dir is not None:
        assert_indexes_point_at_batches(data_dir / f"{TOPIC}-0")


def test_tombstones_go_after_delete_retention(data_dir: Path | None) -> None:
    _, log = open_log(data_dir, dataclasses.replace(COMPACT, delete_retention_ms=DAY_MS))
    append(log, keyed("a1 b1"))
    append(log, keyed("a-"))
    log.roll(NOW)
    append(log, keyed("c1"))
    clean_log(log, NOW + 1000)
    assert entries(log) == [(1, b"b", b"1"), (2, b"a", None), (3, b"c", b"1")]
    log.roll(NOW)
    append(log, keyed("d1"))
    clean_log(log, NOW + DAY_MS + 10)
    assert entries(log) == [(1, b"b", b"1"), (3, b"c", b"1"), (4, b"d", b"1")]


def test_dirty_ratio_and_compaction_lag(data_dir: Path | None) -> None:
    config = dataclasses.replace(
        COMPACT, min_cleanable_dirty_ratio=0.5, min_compaction_lag_ms=60_000
    )
    _, log = open_log(data_dir, config)
    append(log, keyed("a1 b1 c1 d1"), now=NOW)
    log.roll(NOW)
    append(log, keyed("a2"), now=NOW + 50_000)
    log.roll(NOW + 50_000)
    append(log, keyed("z1"), now=NOW + 100_000)
    # The second segment is within min.compaction.lag.ms: only the first is cleanable.
    stats = clean_log(log, NOW + 100_000)
    assert stats is not None and stats.segments_cleaned == 1 and stats.records_removed == 0
    assert clean_log(log, NOW + 100_000) is None  # nothing dirty left below the lag
    # Now past the lag: dirty is one small segment against a large clean one (ratio < 0.5).
    assert clean_log(log, NOW + 200_000) is None
    assert len(entries(log)) == 6
    log.update_config(dataclasses.replace(config, min_cleanable_dirty_ratio=0.1))
    stats = clean_log(log, NOW + 200_000)
    assert stats is not None and stats.records_removed == 1
    assert [e[0] for e in entries(log)] == [1, 2, 3, 4, 5]


def test_segments_emptied_by_cleaning_are_merged_into_their_neighbours(
    data_dir: Path | None,
) -> None:
    """Regression (soak): a segment whose every record was superseded came out of a pass
    empty and was never grouped again, so a topic rewriting the same keys kept one more empty
    segment per roll, without bound (Kafka's grouping includes empty segments)."""
    _, log = open_log(data_dir)
    for round_number in range(40):  # each round's segment too large to share a group
        append(log, [(b"k%d" % key, b"%030d" % round_number) for key in range(6)])
        log.roll(NOW)
        clean_log(log, NOW)
    assert len(log.closed_segments()) <= 2
    assert [(key, value) for _, key, value in entries(log)] == [
        (b"k%d" % key, b"%030d" % 39) for key in range(6)
    ]


def test_delete_policy_is_not_compacted_and_compact_has_no_time_retention(
    data_dir: Path | None,
) -> None:
    _, log = open_log(data_dir, dataclasses.replace(COMPACT, cleanup_policy="delete"))
    append(log, keyed("a1 a2"))
    log.roll(NOW)
    assert clean_log(log, NOW) is None
    log.update_config(COMPACT)
    assert log.apply_retention(NOW + DAY_MS) == 0
    log.update_config(dataclasses.replace(COMPACT, cleanup_policy="compact,delete"))
    assert clean_log(log, NOW) is not None
    assert log.apply_retention(NOW + DAY_MS) == 1


def test_transactional_and_control_batches_are_kept_whole(data_dir: Path | None) -> None:
    _, log = open_log(data_dir)
    append(log, keyed("a1 b1"))  # 0-1
    transactional = make_batch(
        [b"t", b"u"],
        keys=[b"a", b"b"],
        timestamp=NOW,
        attributes=ATTR_TRANSACTIONAL,
        producer_id=7,
        producer_epoch=0,
        base_sequence=0,
    )
    log.append(transactional, 0, NOW)  # 2-3
    marker = build_control_batch(
        False, producer_id=7, producer_epoch=0, coordinator_epoch=0, timestamp=NOW
    )
    log.append(bytearray(marker), 0, NOW)  # 4: aborted
    append(log, keyed("a- a-"))  # 5-6
    log.roll(NOW)
    append(log, keyed("z1"))
    clean_log(log, NOW)
    # The aborted records stay (and do not supersede anything); "b1" survives them.
    assert [e[0] for e in entries(log)] == [1, 2, 3, 4, 6, 7]


def test_a_partly_kept_compressed_batch_is_rewritten_with_its_offsets(
    data_dir: Path | None,
) -> None:
    _, log = open_log(data_dir)
    records = [(k, b"v" + k, (), NOW + i) for i, k in enumerate([b"a", b"b", b"c", b"d"])]
    log.append(
        bytearray(
            build_batch(records, compression=GZIP, producer_id=3, producer_epoch=1, base_sequence=0)
        ),
        0,
        NOW,
    )
    append(log, keyed("b2 d2"))
    log.roll(NOW)
    append(log, keyed("z1"))
    clean_log(log, NOW)
    assert entries(log) == [
        (0, b"a", b"va"),
        (2, b"c", b"vc"),
        (4, b"b", b"2"),
        (5, b"d", b"2"),
        (6, b"z", b"1"),
    ]
    first = split_batches(log.read(0, 1 << 20))[0]
    base_offset, _, _, _, _, attributes, last_delta = struct.unpack_from(">qiibIhi", first)
    assert (base_offset, attributes & 7, last_delta) == (0, GZIP, 3)
    assert struct.unpack_from(">qhi", first, 43) == (3, 1, 0)  # producer id, epoch, sequence


def test_cleaned_log_reopens_with_the_same_records(tmp_path: Path) -> None:
    manager, log = open_log(tmp_path)
    for round_ in range(6):
        append(log, keyed(f"a{round_} b{round_} c{round_}"))
        log.roll(NOW)
    append(log, keyed("z1"))
    clean_log(log, NOW)
    before = entries(log)
    manager.close()
    reopened = LogManager(tmp_path, node_id=0, cluster_id="c", default_config=COMPACT)
    [log] = reopened.load()
    assert isinstance(log, SegmentedLog)
    assert entries(log) == before
    assert not [
        p
        for p in (tmp_path / f"{TOPIC}-0").iterdir()
        if p.suffix in {".swap", ".cleaned", ".deleted"}
    ]


class SimulatedCrash(Exception):
    pass


def three_segments(data_dir: Path) -> tuple[LogManager, SegmentedLog]:
    manager, log = open_log(data_dir)
    append(log, keyed("a1 b1"))
    log.roll(NOW)
    append(log, keyed("a2"))
    log.roll(NOW)
    append(log, keyed("z1"))
    return manager, log


# The swap renames 4 cleaned files to .swap, the 6 files of the two old segments to
# .deleted (they have no `.txnindex`: no aborted transactions), then the 4 swap files to
# their names: a crash after any number of them.
@pytest.mark.parametrize("renames_done", [0, 1, 3, 4, 5, 7, 10, 11, 13, 14])
def test_a_crash_during_the_swap_leaves_the_old_or_the_cleaned_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, renames_done: int
) -> None:
    manager, log = three_segments(tmp_path / "reference")
    before = entries(log)
    clean_log(log, NOW)
    after = entries(log)
    manager.close()

    manager, log = three_segments(tmp_path / "crashed")
    original_rename = FileBlob.rename_to
    done = 0

    def rename_or_crash(blob: FileBlob, path: Path) -> None:
        nonlocal done
        if done == renames_done:
            raise SimulatedCrash
        done += 1
        original_rename(blob, path)

    monkeypatch.setattr(FileBlob, "rename_to", rename_or_crash)
    if renames_done < 14:
        with pytest.raises(SimulatedCrash):
            clean_log(log, NOW)
    else:
        clean_log(log, NOW)
    monkeypatch.undo()
    manager.pool.close_all()  # no clean shutdown: the process died
    reopened = LogManager(tmp_path / "crashed", node_id=0, cluster_id="c", default_config=COMPACT)
    [log] = reopened.load()
    assert isinstance(log, SegmentedLog)
    assert entries(log) == (before if renames_done == 0 else after)
    directory = tmp_path / "crashed" / f"{TOPIC}-0"
    assert not [p for p in directory.iterdir() if p.suffix in {".swap", ".cleaned", ".deleted"}]
    assert_indexes_point_at_batches(directory)


# -- property: compaction against a model --------------------------------------------------

Op = tuple[str, list[tuple[bytes, bytes | None]]]
operations = st.lists(
    st.one_of(
        st.tuples(
            st.just("append"),
            st.lists(
                st.tuples(
                    st.sampled_from([b"a", b"b", b"c", b"d"]), st.sampled_from([b"x", b"y", None])
                ),
                min_size=1,
                max_size=4,
            ),
        ),
        st.tuples(st.just("roll"), st.just([])),
        st.tuples(st.just("clean"), st.just([])),
    ),
    max_size=25,
)


def check_cleaned(log: SegmentedLog, model: list[Entry]) -> None:
    found = entries(log)
    assert set(found) <= set(model), "a record changed or moved"
    assert log.log_end_offset == len(model)
    latest = {key: (offset, key, value) for offset, key, value in model}
    assert {e[1]: e for e in found} == latest  # the latest of each key survives, tombstones too
    clean_part = [e for e in found if e[0] < log.first_dirty_offset]
    assert len({key for _, key, _ in clean_part}) == len(clean_part)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=operations, on_disk=st.booleans())
def test_compaction_keeps_the_latest_record_of_each_key(ops: list[Op], on_disk: bool) -> None:
    with tempfile.TemporaryDirectory() as directory:
        manager, log = open_log(Path(directory) if on_disk else None)
        model: list[Entry] = []
        for op, pairs in ops:
            if op == "append":
                model += [(len(model) + i, k, v) for i, (k, v) in enumerate(pairs)]
                append(log, pairs)
            elif op == "roll":
                log.roll(NOW)
            else:
                clean_log(log, NOW)
                check_cleaned(log, model)
        clean_log(log, NOW)
        check_cleaned(log, model)
        if on_disk:
            before = entries(log)
            manager.close()
            reopened = LogManager(
                Path(directory), node_id=0, cluster_id="c", default_config=COMPACT
            )
            [log] = reopened.load()
            assert isinstance(log, SegmentedLog)
            assert entries(log) == before
            assert_indexes_point_at_batches(Path(directory) / f"{TOPIC}-0")
            reopened.close()
