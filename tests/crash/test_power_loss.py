"""Power loss with `minibroker.fsync.on.ack=true`: every acknowledged record survives losing
everything that was not fsynced, at every crash point of a run.

A broker runs in-process under the interposer of powerloss.py while real confluent-kafka
clients produce (idempotent, acks=all) to a topic that rolls a segment every few batches and
indexes every batch, to a compacted topic the cleaner swaps segments in, and transactionally
(commits and aborts) to a third; a consumer commits group offsets and an admin client deletes
records (offset checkpoints). The broker then stops cleanly (its shutdown writes are crash
points too). Each crash image is opened by a new broker (recovery), which must hold every
record acknowledged before the crash point exactly once, the latest acknowledged value of every
compacted key, every acknowledged offset commit and record deletion, and the compacted topic's
config; a read_committed confluent-kafka consumer on a sample of the images sees every
acknowledged commit whole and no acknowledged abort. On another sample the power is lost
again while the broker recovers, and every image of that second run must recover as well.

POWER_LOSS_ROUNDS (default 40) sets the length of the run, so the number of crash points;
POWER_LOSS_SEED where torn writes are cut. A long run needs `--timeout 0` (pytest-timeout).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from confluent_kafka import (
    Consumer,
    IsolationLevel,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, OffsetSpec

from minibroker.log import LogConfig, LogManager, PartitionLog, syncs
from minibroker.records.records import iter_records
from minibroker.testing import KafkaBroker
from minibroker.testing.powerloss import SYNCED, CrashImage, PowerLossModel, syncs_skipped
from tests.log.log_testing import make_batch, split_batches

ROUNDS = int(os.environ.get("POWER_LOSS_ROUNDS", "40"))
SEED = int(os.environ.get("POWER_LOSS_SEED", "24"))  # where torn writes are cut
PLAIN, COMPACT, TXN = "plain", "compact", "txn"
KEYS = 4
# Both map to partition 0 of their internal topic's two, the one created lazily on first use.
GROUP = "pl-group"
TRANSACTIONAL_ID = "power-loss-txn"
CLIENT_CHECKS = 12
SECOND_POWER_LOSSES = 8
DEADLINE_S = 30.0
SHARED_MEMORY = Path("/dev/shm")
# Files the run must have written (so crash points fell around their writes).
COVERED = (
    ".index",
    ".txnindex",
    ".snapshot",
    ".cleaned",
    ".swap",
    "recovery-point-offset-checkpoint",
    "log-start-offset-checkpoint",
    "minibroker-topic-configs.json",
    "__consumer_offsets-0/",
    "__transaction_state-0/",
)
SETTINGS = {
    "minibroker.fsync.on.ack": "true",
    "offsets.topic.num.partitions": "2",
    "transaction.state.log.num.partitions": "2",
    "log.cleaner.backoff.ms": "50",
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "100",
}
TOPIC_CONFIGS = {
    PLAIN: {"segment.bytes": "1024", "index.interval.bytes": "1"},
    COMPACT: {
        "cleanup.policy": "compact",
        "segment.bytes": "1024",
        "min.cleanable.dirty.ratio": "0.01",
    },
    TXN: {"segment.bytes": "2048"},
}


@dataclass
class Ack:
    op: int  # the interposer's operation count when the client saw the acknowledgement


@dataclass
class RecordAck(Ack):
    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes


@dataclass
class TxnAck(Ack):
    values: list[bytes]
    committed: bool


@dataclass
class OffsetAck(Ack):
    offset: int
    requested: int = 0  # the operation count when the request was sent


@dataclass
class Run:
    model: PowerLossModel
    records: list[RecordAck] = field(default_factory=list)
    txns: list[TxnAck] = field(default_factory=list)
    txn_values: list[list[bytes]] = field(default_factory=list)
    commits: list[OffsetAck] = field(default_factory=list)
    deletions: list[OffsetAck] = field(default_factory=list)
    topics_created: int = 0

    def on_delivery(self, error: object, message: object) -> None:
        assert error is None, error
        self.records.append(
            RecordAck(
                self.model.op_count,
                message.topic(),  # type: ignore[attr-defined]
                message.partition(),  # type: ignore[attr-defined]
                message.offset(),  # type: ignore[attr-defined]
                message.key(),  # type: ignore[attr-defined]
                message.value(),  # type: ignore[attr-defined]
            )
        )


@pytest.fixture
def scratch(tmp_path: Path) -> Iterator[Path]:
    """A directory in memory (tmpfs) where there is one: the run and the hundreds of images
    create thousands of small files."""
    if not SHARED_MEMORY.is_dir():
        yield tmp_path
        return
    directory = Path(tempfile.mkdtemp(prefix="power-loss-", dir=SHARED_MEMORY))
    try:
        yield directory
    finally:
        shutil.rmtree(directory)


# -- the run under the interposer ------------------------------------------------------------


def _drive(broker: KafkaBroker, run: Run) -> None:
    bootstrap = broker.bootstrap_servers
    idempotent = Producer(
        {"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 0}
    )
    transactional = Producer(
        {
            "bootstrap.servers": bootstrap,
            "transactional.id": TRANSACTIONAL_ID,
            "transaction.timeout.ms": 10000,
        }
    )
    transactional.init_transactions(DEADLINE_S)
    committer = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP})
    admin = AdminClient({"bootstrap.servers": bootstrap})
    rounds = 0
    swap_deadline: float | None = None
    while rounds < ROUNDS or not run.model.saw(".swap"):
        if rounds >= ROUNDS:  # the cleaner has not swapped a segment in yet: a little more
            swap_deadline = swap_deadline or time.monotonic() + DEADLINE_S
            assert time.monotonic() < swap_deadline, "the cleaner never swapped a segment in"
        _produce_round(idempotent, run, rounds)
        _transaction(transactional, run, rounds)
        if rounds % 3 == 2:
            _commit_offset(committer, run)
        if rounds == ROUNDS // 2:
            _delete_records(admin, run)
        rounds += 1
    committer.close()


def _produce_round(producer: Producer, run: Run, round_number: int) -> None:
    for index in range(3):
        value = f"p{round_number}-{index}".encode()
        producer.produce(PLAIN, value, on_delivery=run.on_delivery)
        key = f"k{(round_number * 3 + index) % KEYS}".encode()
        value = f"c{round_number}-{index}".encode() + b"." * 60
        producer.produce(COMPACT, value, key=key, on_delivery=run.on_delivery)
    assert producer.flush(DEADLINE_S) == 0


def _transaction(producer: Producer, run: Run, round_number: int) -> None:
    values = [f"t{round_number}-{index}".encode() for index in range(3)]
    run.txn_values.append(values)
    producer.begin_transaction()
    for index, value in enumerate(values):
        producer.produce(TXN, value, partition=index % 2)
    committed = round_number % 3 != 1
    if committed:
        producer.commit_transaction(DEADLINE_S)
    else:
        producer.abort_transaction(DEADLINE_S)
    run.txns.append(TxnAck(run.model.op_count, values, committed))


def _commit_offset(consumer: Consumer, run: Run) -> None:
    offset = len(run.commits) + 1
    consumer.commit(offsets=[TopicPartition(PLAIN, 0, offset)], asynchronous=False)
    run.commits.append(OffsetAck(run.model.op_count, offset))


def _delete_records(admin: AdminClient, run: Run) -> None:
    offset = 4
    requested = run.model.op_count
    futures = admin.delete_records([TopicPartition(PLAIN, 0, offset)])
    for future in futures.values():
        future.result(DEADLINE_S)
    run.deletions.append(OffsetAck(run.model.op_count, offset, requested))


def _record_run(tmp_path: Path) -> Run:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    model = PowerLossModel(data_dir, tmp_path / "graveyard", SEED)
    run = Run(model)
    with model.installed(), KafkaBroker(config=SETTINGS, data_dir=data_dir) as broker:
        for name, configs in TOPIC_CONFIGS.items():
            broker.create_topic(name, partitions=2 if name == TXN else 1, config=configs)
        run.topics_created = model.op_count
        _drive(broker, run)
    return run


# -- recovery --------------------------------------------------------------------------------


def _check_image(image: CrashImage, run: Run, scratch: Path, with_client: bool) -> None:
    directory = image.materialise(scratch / image.name)
    try:
        _check_recovery(image, directory, run, with_client)
    finally:
        shutil.rmtree(directory)


def _check_second_power_loss(image: CrashImage, run: Run, scratch: Path) -> int:
    """Power lost again while the broker recovers `image` (and while it is checked and
    stopped): every crash image of that second run must recover as well. Returns how many."""
    directory = image.materialise(scratch / image.name)
    model = PowerLossModel(directory, scratch / f"{image.name}-graveyard")
    try:
        with model.installed():
            _check_recovery(image, directory, run, with_client=False)
        for second in model.images_taken:
            second.name = f"{image.name}-{second.name}"
            second.first_op = second.last_op = image.last_op
            _check_image(second, run, scratch, with_client=False)
    finally:
        shutil.rmtree(directory)
    return len(model.images_taken)


def _check_recovery(image: CrashImage, directory: Path, run: Run, with_client: bool) -> None:
    acked = image.last_op
    context = f"{image.name} (ops {image.first_op}..{image.last_op})"
    with KafkaBroker(config=SETTINGS, data_dir=directory) as broker:
        if run.topics_created > acked:
            return
        _check_topic_configs(broker, context)
        _check_plain(
            broker,
            [r for r in run.records if r.op <= acked and r.topic == PLAIN],
            run,
            acked,
            context,
        )
        _check_compacted(
            broker, [r for r in run.records if r.op <= acked and r.topic == COMPACT], context
        )
        _check_committed_txn_data(
            broker, [t for t in run.txns if t.op <= acked and t.committed], context
        )
        _check_offsets(broker, [c for c in run.commits if c.op <= acked], context)
        if with_client:
            _check_read_committed(broker, run, acked, context)


def _check_topic_configs(broker: KafkaBroker, context: str) -> None:
    topics = broker.node(broker.node_ids[0]).cluster.topics  # read only, the broker idle
    for name, configs in TOPIC_CONFIGS.items():
        assert name in topics, f"{context}: topic {name} is gone"
        assert topics[name].configs == configs, f"{context}: {name}: {topics[name].configs}"


def _check_plain(
    broker: KafkaBroker, acks: list[RecordAck], run: Run, acked: int, context: str
) -> None:
    stored = broker.records(PLAIN)
    values = Counter(record.value for record in stored)
    duplicated = [value for value, count in values.items() if count > 1]
    assert not duplicated, f"{context}: stored twice: {duplicated}"
    by_offset = {record.offset: record.value for record in stored}
    deleted_below = max((d.offset for d in run.deletions if d.op <= acked), default=0)
    assert not stored or stored[0].offset >= deleted_below, f"{context}: deleted records are back"
    # a deletion sent but not yet acknowledged may have taken effect
    maybe_deleted = max((d.offset for d in run.deletions if d.requested <= acked), default=0)
    lost = [a for a in acks if a.offset >= maybe_deleted and by_offset.get(a.offset) != a.value]
    assert not lost, f"{context}: acknowledged records lost: {lost[:5]}"


def _check_compacted(broker: KafkaBroker, acks: list[RecordAck], context: str) -> None:
    stored = broker.records(COMPACT)
    offsets = [record.offset for record in stored]
    assert len(offsets) == len(set(offsets)), f"{context}: offsets stored twice"
    latest_stored = {record.key: record.offset for record in stored}
    by_offset = {record.offset: record.value for record in stored}
    latest_acked = {ack.key: ack for ack in acks}
    for key, ack in latest_acked.items():
        newest = latest_stored.get(key, -1)
        assert newest >= ack.offset, f"{context}: key {key!r} lost its acknowledged value"
        if newest == ack.offset:
            assert by_offset[newest] == ack.value, f"{context}: key {key!r} has another value"


def _check_committed_txn_data(broker: KafkaBroker, txns: list[TxnAck], context: str) -> None:
    stored = Counter(broker.values(TXN))
    for txn in txns:
        counts = [stored[value] for value in txn.values]
        assert counts == [1] * len(txn.values), f"{context}: committed {txn.values}: {counts}"


def _check_offsets(broker: KafkaBroker, commits: list[OffsetAck], context: str) -> None:
    if not commits:
        return
    committed = broker.committed_offsets(GROUP).get((PLAIN, 0), -1)
    assert committed >= commits[-1].offset, f"{context}: offset commit lost ({committed})"


def _check_read_committed(broker: KafkaBroker, run: Run, acked: int, context: str) -> None:
    """What a read_committed client sees once the coordinator finished what the crash left:
    every transaction whole or absent, acknowledged commits present, acknowledged aborts not."""
    seen = Counter(_read_committed_values(broker))
    for values in run.txn_values:
        counts = {seen[value] for value in values}
        assert counts in ({0}, {1}), f"{context}: transaction {values} partly visible: {counts}"
    for txn in run.txns:
        if txn.op <= acked:
            visible = seen[txn.values[0]] == 1
            assert visible == txn.committed, f"{context}: {txn} visible={visible}"


def _read_committed_values(broker: KafkaBroker) -> list[bytes]:
    """After the producer restarts (its InitProducerId aborts what it left open), as an
    application would, rather than after the transaction timeout."""
    restarted = Producer(
        {"bootstrap.servers": broker.bootstrap_servers, "transactional.id": TRANSACTIONAL_ID}
    )
    restarted.init_transactions(DEADLINE_S)
    partitions = sorted(broker.end_offsets(TXN))
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    deadline = time.monotonic() + DEADLINE_S
    while (stable := _latest_offsets(admin, partitions, IsolationLevel.READ_COMMITTED)) != (
        _latest_offsets(admin, partitions, IsolationLevel.READ_UNCOMMITTED)
    ):
        assert time.monotonic() < deadline, "the recovered coordinator never ended the txns"
        time.sleep(0.05)
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "group.id": "read-committed-check",
            "isolation.level": "read_committed",
            "enable.partition.eof": True,
        }
    )
    consumer.assign([TopicPartition(TXN, partition, 0) for partition in partitions])
    values: list[bytes] = []
    at_end = {partition for partition, end in stable.items() if end == 0}
    while at_end != set(partitions):
        assert time.monotonic() < deadline, "the read_committed consumer never reached the end"
        message = consumer.poll(0.2)
        if message is None:
            continue
        error = message.error()
        if error is not None and error.code() != KafkaError._PARTITION_EOF:
            raise KafkaException(error)
        if error is not None:
            at_end.add(message.partition())
        else:
            values.append(message.value())
    consumer.close()
    return values


def _latest_offsets(
    admin: AdminClient, partitions: list[int], isolation: IsolationLevel
) -> dict[int, int]:
    query = {TopicPartition(TXN, partition): OffsetSpec.latest() for partition in partitions}
    futures = admin.list_offsets(query, isolation_level=isolation, request_timeout=DEADLINE_S)
    return {tp.partition: future.result().offset for tp, future in futures.items()}


def _sample(images: list[CrashImage], count: int) -> set[int]:
    """Indexes of `count` images spread evenly, the last one included."""
    step = max(1, len(images) // count)
    return {len(images) - 1 - i * step for i in range(min(count, len(images)))}


@pytest.mark.clients
@pytest.mark.slow
def test_acknowledged_data_survives_power_loss_at_every_crash_point(scratch: Path) -> None:
    run = _record_run(scratch)
    model = run.model
    images = model.images_taken
    for kind in COVERED:
        assert model.saw(kind), f"no crash point at a write of {kind}"
    sampled = _sample(images, CLIENT_CHECKS)
    twice = _sample(images, SECOND_POWER_LOSSES)
    second_images = 0
    with syncs_skipped():
        for index, image in enumerate(images):
            _check_image(image, run, scratch, with_client=index in sampled)
            if index in twice:
                second_images += _check_second_power_loss(image, run, scratch)
    synced = sum(1 for image in images if image.variant == SYNCED)
    print(
        f"\npower loss: {model.op_count} operations ({model.fsyncs} fsyncs), every one a crash "
        f"point: {synced} synced images and {len(images) - synced} torn ones recovered, "
        f"{len(sampled)} also read by a read_committed client; power lost again during "
        f"{len(twice)} of the recoveries: {second_images} more images recovered; "
        f"{len(run.records)} records, {len(run.txns)} transactions acknowledged"
    )


def test_a_new_partition_survives_power_loss_after_its_first_acknowledged_append(
    scratch: Path,
) -> None:
    """The partition directory's own entry in the data directory must be synced before the
    first append is acknowledged (regression: only the directory's contents were)."""
    data_dir = scratch / "data"
    data_dir.mkdir()
    model = PowerLossModel(data_dir, scratch / "graveyard")
    config = LogConfig(fsync_on_ack=True)
    with model.installed():
        manager = LogManager(data_dir, node_id=1, cluster_id="c", default_config=config)
        log = manager.create("fresh", 0, uuid.uuid4(), config)
        log.append(make_batch([b"acknowledged"]), 0, now_ms=0)
        acknowledged_at = model.op_count
        model.crash_now()
    [image] = [
        i for i in model.images_taken if i.variant == SYNCED and i.last_op >= acknowledged_at
    ]
    directory = image.materialise(scratch / image.name)
    recovered = LogManager(directory, node_id=1, cluster_id="c", default_config=config)
    [reopened] = recovered.load()
    assert reopened.log_end_offset == 1
    recovered.close()
    manager.close()


def test_topic_configs_survive_power_loss_once_the_topic_is_created(scratch: Path) -> None:
    """Regression: the configs file was renamed into place unsynced, so a power cut could
    leave it empty and the broker would not start."""
    data_dir = scratch / "data"
    data_dir.mkdir()
    model = PowerLossModel(data_dir, scratch / "graveyard")
    with model.installed(), KafkaBroker(config=SETTINGS, data_dir=data_dir) as broker:
        broker.create_topic(COMPACT, config=TOPIC_CONFIGS[COMPACT])
        created_at = model.op_count
    images = [image for image in model.images_taken if image.last_op >= created_at]
    assert images
    with syncs_skipped():
        for image in images:
            directory = image.materialise(scratch / image.name)
            with KafkaBroker(config=SETTINGS, data_dir=directory) as recovered:
                topics = recovered.node(recovered.node_ids[0]).cluster.topics
                assert topics[COMPACT].configs == TOPIC_CONFIGS[COMPACT], image.name


def test_without_fsync_on_ack_records_since_the_segment_began_are_at_risk(
    scratch: Path,
) -> None:
    """What the README says is at risk by default: acknowledged records still only in the
    page cache are gone after a power cut (the active segment was never fsynced)."""
    data_dir = scratch / "data"
    data_dir.mkdir()
    model = PowerLossModel(data_dir, scratch / "graveyard", SEED)
    settings = {**SETTINGS, "minibroker.fsync.on.ack": "false"}
    with model.installed(), KafkaBroker(config=settings, data_dir=data_dir) as broker:
        broker.create_topic(PLAIN)
        for index in range(10):
            broker.produce(PLAIN, b"%d" % index)
        model.crash_now()
        crashed_at = model.op_count
    [image] = [
        i
        for i in model.images_taken
        if i.variant == SYNCED and i.first_op <= crashed_at <= i.last_op
    ]
    with syncs_skipped(), KafkaBroker(data_dir=image.materialise(scratch / image.name)) as after:
        assert after.records(PLAIN) == []


def test_a_deleted_partition_stays_deleted_after_power_loss(scratch: Path) -> None:
    """Regression: the partition directory was removed file by file and its removal never
    synced, so a power cut brought the deleted partition back, whole or with files missing.
    Now every crash image recovers it whole (before the `-delete` rename is synced) or not
    at all, and no `-delete` directory is left after recovery."""
    data_dir = scratch / "data"
    data_dir.mkdir()
    model = PowerLossModel(data_dir, scratch / "graveyard", SEED)
    config = LogConfig(fsync_on_ack=True)
    with model.installed():
        manager = LogManager(data_dir, node_id=1, cluster_id="c", default_config=config)
        log = manager.create("doomed", 0, uuid.uuid4(), config)
        log.append(make_batch([b"acknowledged"]), 0, now_ms=0)
        deleting_from = model.op_count
        manager.delete("doomed", 0)
        deleted_at = model.op_count
        model.crash_now()
    images = [image for image in model.images_taken if image.last_op >= deleting_from]
    assert any(image.last_op >= deleted_at for image in images)
    for image in images:
        directory = image.materialise(scratch / image.name)
        recovered = LogManager(directory, node_id=1, cluster_id="c", default_config=config)
        end_offsets = [reopened.log_end_offset for reopened in recovered.load()]
        if image.last_op >= deleted_at:
            assert end_offsets == [], image.name
        else:
            assert end_offsets in ([], [1]), image.name
        assert not list(directory.glob("*-delete")), image.name
        recovered.close()
    manager.close()


def test_partitions_created_and_deleted_together_survive_power_loss_whole(
    scratch: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Many partitions created, then deleted, in one request each (grouped syncs, made with one
    `syncfs` each step at this count, the threshold lowered to keep the crash images few): at
    every crash point each partition comes back whole (an empty log) or not at all; once a
    request completed, all of them are there, or all gone."""
    monkeypatch.setattr(syncs, "SYNCFS_FROM", 8)
    count = 3 * syncs.SYNCFS_FROM
    data_dir = scratch / "data"
    data_dir.mkdir()
    model = PowerLossModel(data_dir, scratch / "graveyard", SEED)
    config = LogConfig()
    topic_id = uuid.uuid4()
    with model.installed():
        manager = LogManager(data_dir, node_id=1, cluster_id="c", default_config=config)
        with manager.grouped_syncs():
            for partition in range(count):
                manager.create("many", partition, topic_id, config)
        created_at = model.op_count
        model.crash_now()
        with manager.grouped_syncs():
            for partition in range(count):
                manager.delete("many", partition)
        deleted_at = model.op_count
        model.crash_now()
        manager.close()
    assert model.fsyncs < count, "expected syncfs, not one fsync per partition"
    for image in model.images_taken:
        directory = image.materialise(scratch / image.name)
        recovered = LogManager(directory, node_id=1, cluster_id="c", default_config=config)
        logs = recovered.load()
        assert [log.log_end_offset for log in logs] == [0] * len(logs), image.name
        # Before its partition.metadata is renamed into place a directory has no topic id yet.
        assert {log.topic_id for log in logs} <= {topic_id, uuid.UUID(int=0)}, image.name
        if image.first_op <= created_at <= image.last_op:
            assert [log.topic_id for log in logs] == [topic_id] * count, image.name
        if image.first_op >= deleted_at:
            assert logs == [], image.name
        recovered.close()


def _values_from(log: PartitionLog, offset: int) -> list[bytes | None]:
    """The values of single-record batches from `offset` to the log end."""
    values = []
    while offset < log.log_end_offset:
        batches = split_batches(log.read(offset, 1 << 20))
        assert batches, f"nothing at offset {offset}"
        values += [next(iter_records(batch)).value for batch in batches]
        offset += len(batches)
    return values


def test_retention_cut_short_by_power_loss_leaves_a_whole_log(scratch: Path) -> None:
    """Retention deleting segments (`retention.ms`), at every crash point: the recovered log
    opens, ends where it ended, and holds every offset from its log start up, each with its
    own record (a deleted segment comes back whole or not at all)."""
    data_dir = scratch / "data"
    data_dir.mkdir()
    model = PowerLossModel(data_dir, scratch / "graveyard", SEED)
    config = LogConfig(fsync_on_ack=True, segment_bytes=160, retention_ms=1000)
    appended = 12
    with model.installed():
        manager = LogManager(data_dir, node_id=1, cluster_id="c", default_config=config)
        log = manager.create("retained", 0, uuid.uuid4(), config)
        for offset in range(appended):
            log.append(make_batch([b"%d" % offset]), 0, now_ms=0)
        deleting_from = model.op_count
        manager.run_retention(now_ms=1_700_000_000_000 + 60_000)
        assert log.log_start_offset >= appended - 2  # all but the active segment
        model.crash_now()
    images = [image for image in model.images_taken if image.last_op >= deleting_from]
    assert len(images) > 4
    starts = set()
    for image in images:
        directory = image.materialise(scratch / image.name)
        recovered = LogManager(directory, node_id=1, cluster_id="c", default_config=config)
        [reopened] = recovered.load()
        assert reopened.log_end_offset == appended, image.name
        start = reopened.log_start_offset
        starts.add(start)
        assert _values_from(reopened, start) == [
            b"%d" % offset for offset in range(start, appended)
        ], image.name
        recovered.close()
    manager.close()
    assert len(starts) > 2, starts  # crash points before, during and after the deletions
