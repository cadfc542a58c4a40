"""Property: whatever the interleaving of transactional producers, commits and aborts, a
consumer that follows Kafka's read_committed algorithm over our Fetch answers (one batch per
fetch) sees exactly the committed and non-transactional records below the LSO, and the LSO is
the first offset of the oldest open transaction (else the high watermark)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.errors import ErrorCode
from minibroker.records.batch import BatchHeader, split_batches
from minibroker.records.control import read_end_txn_marker
from minibroker.testing.threaded import ThreadedBroker
from tests.txn.txn_wire import (
    FETCH_VERSION,
    READ_COMMITTED,
    create_topic,
    fetch_request,
    marker,
    produce,
    txn_batch,
)
from tests.wire import WireClient

PLAIN = 0
PRODUCERS = [1, 2, 3]
_topics = itertools.count()

# An operation: (producer, records) appends; (producer, "commit"/"abort") ends a transaction.
operation = st.one_of(
    st.tuples(st.sampled_from([PLAIN, *PRODUCERS]), st.integers(1, 3)),
    st.tuples(st.sampled_from(PRODUCERS), st.sampled_from(["commit", "abort"])),
)


@pytest.fixture(scope="module")
def broker() -> Iterator[ThreadedBroker]:
    with ThreadedBroker() as running:
        yield running


@dataclass
class Model:
    """What Kafka's semantics say the partition holds."""

    next_offset: int = 0
    sequences: dict[int, int] = field(default_factory=dict)
    open_txns: dict[int, list[int]] = field(default_factory=dict)  # producer -> offsets
    visible: list[int] = field(default_factory=list)  # committed or plain record offsets

    @property
    def last_stable_offset(self) -> int:
        firsts = [offsets[0] for offsets in self.open_txns.values()]
        return min(firsts, default=self.next_offset)


def apply(broker: ThreadedBroker, topic: str, model: Model, step: tuple[int, Any]) -> None:
    producer, what = step
    bootstrap = broker.bootstrap_servers
    if isinstance(what, int):
        offsets = list(range(model.next_offset, model.next_offset + what))
        if producer == PLAIN:
            batch = txn_batch(-1, -1, -1, what, transactional=False)
            model.visible += offsets
        else:
            sequence = model.sequences.get(producer, 0)
            batch = txn_batch(producer, 0, sequence, what)
            model.sequences[producer] = sequence + what
            model.open_txns.setdefault(producer, []).extend(offsets)
        assert produce(bootstrap, topic, batch).error_code == ErrorCode.NO_ERROR
        model.next_offset += what
        return
    commit = what == "commit"
    assert marker(broker, topic, producer, 0, commit=commit) == ErrorCode.NO_ERROR
    offsets = model.open_txns.pop(producer, [])
    if commit:
        model.visible = sorted(model.visible + offsets)
    model.next_offset += 1


def fetch_one_batch(client: WireClient, topic: str, offset: int) -> Any:
    request = fetch_request(topic, offset, READ_COMMITTED)
    request["topics"][0].partitions[0].partition_max_bytes = 1
    response = client.call(ApiKey.Fetch, FETCH_VERSION, **request)
    partition = response.responses[0].partitions[0]
    assert partition.error_code == ErrorCode.NO_ERROR
    return partition


def consume_read_committed(bootstrap: str, topic: str) -> tuple[list[int], int]:
    """Kafka's consumer (`CompletedFetch.nextFetchedBatch`): record offsets it delivers, and
    the LSO the broker answered."""
    delivered: list[int] = []
    aborted_producers: set[int] = set()
    offset = 0
    with WireClient(bootstrap) as client:
        while True:
            partition = fetch_one_batch(client, topic, offset)
            if not partition.records:
                return delivered, partition.last_stable_offset
            pending = sorted(
                (txn.first_offset, txn.producer_id) for txn in partition.aborted_transactions
            )
            for batch in split_batches(partition.records):
                header = BatchHeader.parse(batch)
                while pending and pending[0][0] <= header.last_offset:
                    aborted_producers.add(pending.pop(0)[1])
                if header.is_control:
                    stored = read_end_txn_marker(header, batch)
                    if stored is not None and not stored.commit:
                        aborted_producers.discard(header.producer_id)
                elif not (header.is_transactional and header.producer_id in aborted_producers):
                    delivered += range(header.base_offset, header.last_offset + 1)
                offset = header.last_offset + 1


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(steps=st.lists(operation, max_size=25))
def test_read_committed_consumer_sees_what_kafka_would(
    broker: ThreadedBroker, steps: list[tuple[int, Any]]
) -> None:
    topic = f"model-{next(_topics)}"
    # Small segments: transactions and their aborted entries span several of them.
    create_topic(broker.bootstrap_servers, topic, configs={"segment.bytes": "400"})
    model = Model()
    for step in steps:
        apply(broker, topic, model, step)
    delivered, last_stable_offset = consume_read_committed(broker.bootstrap_servers, topic)
    assert last_stable_offset == model.last_stable_offset
    assert delivered == [offset for offset in model.visible if offset < model.last_stable_offset]
