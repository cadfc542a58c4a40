"""Combining share-partition state batches (`groups/share/state_batches.py`) with the cases of
Kafka 4.3's `PersisterStateBatchCombinerTest`."""

from __future__ import annotations

import pytest

from minibroker.groups.share.state_batches import combine_state_batches
from minibroker.groups.share.state_records import StateBatch

Batch = tuple[int, int, int, int]  # first offset, last offset, delivery state, delivery count

# (name, stored, new, start offset, expected)
CASES: list[tuple[str, list[Batch], list[Batch], int, list[Batch]]] = [
    ("same state, same offsets", [(100, 110, 0, 1)], [(100, 110, 0, 1)], -1, [(100, 110, 0, 1)]),
    ("same state, new ends before", [(100, 110, 0, 1)], [(100, 105, 0, 1)], -1, [(100, 110, 0, 1)]),
    ("same state, new ends after", [(100, 110, 0, 1)], [(100, 115, 0, 1)], -1, [(100, 115, 0, 1)]),
    ("same state, new inside", [(100, 110, 0, 1)], [(105, 108, 0, 1)], -1, [(100, 110, 0, 1)]),
    ("same state, contiguous", [(100, 110, 0, 1)], [(111, 115, 0, 1)], -1, [(100, 115, 0, 1)]),
    ("higher count wins", [(100, 110, 0, 1)], [(100, 110, 0, 2)], -1, [(100, 110, 0, 2)]),
    ("lower count loses", [(100, 110, 0, 3)], [(100, 110, 0, 1)], -1, [(100, 110, 0, 3)]),
    (
        "higher, same first, ends before",
        [(100, 110, 0, 1)],
        [(100, 105, 0, 2)],
        -1,
        [(100, 105, 0, 2), (106, 110, 0, 1)],
    ),
    (
        "lower, same first, ends before",
        [(100, 110, 0, 3)],
        [(100, 105, 0, 1)],
        -1,
        [(100, 110, 0, 3)],
    ),
    (
        "higher, same first, ends after",
        [(100, 110, 0, 1)],
        [(100, 115, 0, 2)],
        -1,
        [(100, 115, 0, 2)],
    ),
    (
        "lower, same first, ends after",
        [(100, 110, 0, 3)],
        [(100, 115, 0, 1)],
        -1,
        [(100, 110, 0, 3), (111, 115, 0, 1)],
    ),
    (
        "higher state inside",
        [(100, 115, 0, 1)],
        [(105, 110, 1, 1)],
        -1,
        [(100, 104, 0, 1), (105, 110, 1, 1), (111, 115, 0, 1)],
    ),
    ("lower state inside", [(100, 115, 1, 1)], [(105, 110, 0, 1)], -1, [(100, 115, 1, 1)]),
    (
        "higher, same last",
        [(100, 110, 0, 1)],
        [(105, 110, 0, 2)],
        -1,
        [(100, 104, 0, 1), (105, 110, 0, 2)],
    ),
    ("lower, same last", [(100, 110, 0, 2)], [(105, 110, 0, 1)], -1, [(100, 110, 0, 2)]),
    (
        "higher, overlapping after",
        [(100, 110, 0, 1)],
        [(105, 115, 0, 2)],
        -1,
        [(100, 104, 0, 1), (105, 115, 0, 2)],
    ),
    (
        "lower, overlapping after",
        [(100, 110, 0, 2)],
        [(105, 115, 0, 1)],
        -1,
        [(100, 110, 0, 2), (111, 115, 0, 1)],
    ),
    ("stored cut at the start offset", [(100, 130, 0, 1)], [], 120, [(120, 130, 0, 1)]),
    ("new cut at the start offset", [], [(100, 130, 0, 1)], 120, [(120, 130, 0, 1)]),
    ("nothing", [], [], 120, []),
]


@pytest.mark.parametrize(
    ("stored", "new", "start", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_combine_as_kafka(
    stored: list[Batch], new: list[Batch], start: int, expected: list[Batch]
) -> None:
    combined = combine_state_batches(
        [StateBatch(*b) for b in stored], [StateBatch(*b) for b in new], start
    )
    assert [
        (b.first_offset, b.last_offset, b.delivery_state, b.delivery_count) for b in combined
    ] == expected
