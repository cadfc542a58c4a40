"""The broker killed with SIGKILL under load, again and again: no acknowledged record lost.

Two idempotent acks=all confluent-kafka producers (child processes) write without pause; the
broker (`python -m minibroker serve`, a child process) is killed with SIGKILL after a random
number of further acknowledgements, KILLS times, and restarted each time on the same port
and data directory. At the end every acknowledged record is in the log exactly once, at the
offset it was acknowledged with; no value appears twice (acknowledged or not); each
producer's records are in sequence order within each partition; and every segment and index
passes `minibroker dump-log --deep-iteration` after recovery and a clean stop.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.errors import ErrorCode
from minibroker.records.batch import BatchHeader, split_batches
from minibroker.records.records import iter_records
from tests.fuzz.broker_process import BrokerProcess, dump_log_problems
from tests.wire import WireClient

REPO_ROOT = Path(__file__).resolve().parents[2]
KILLS = 5
PARTITIONS = 3
TOPIC = "crash"
PRODUCERS = ("p1", "p2")
DEADLINE_SECONDS = 120.0


class ProducerProcess:
    def __init__(self, bootstrap: str, name: str) -> None:
        self.name = name
        self.acks: list[tuple[int, int, str]] = []
        self.errors: list[dict[str, Any]] = []
        self.done: dict[str, Any] | None = None
        self._process = subprocess.Popen(
            [sys.executable, "-m", "tests.crash.producer", bootstrap, TOPIC, str(PARTITIONS), name],
            cwd=REPO_ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self._process.stdout is not None
        for line in self._process.stdout:
            item = json.loads(line)
            if isinstance(item, list):
                self.acks.append((item[0], item[1], item[2]))
            elif "done" in item:
                self.done = item
            else:
                self.errors.append(item)

    def finish(self) -> None:
        assert self._process.stdin is not None
        self._process.stdin.close()
        self._process.wait(timeout=DEADLINE_SECONDS + 60)
        self._reader.join(timeout=10)


def _wait_for(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + DEADLINE_SECONDS
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


def _acked(producers: list[ProducerProcess]) -> int:
    return sum(len(p.acks) for p in producers)


def _read_partition(client: WireClient, partition: int) -> list[tuple[int, str]]:
    records: list[tuple[int, str]] = []
    offset = 0
    while True:
        fetch_partition = {
            "partition": partition,
            "current_leader_epoch": -1,
            "fetch_offset": offset,
            "log_start_offset": -1,
            "partition_max_bytes": 1 << 20,
        }
        response = client.call(
            ApiKey.Fetch,
            12,
            replica_id=-1,
            max_wait_ms=0,
            min_bytes=0,
            max_bytes=1 << 20,
            isolation_level=0,
            session_id=0,
            session_epoch=-1,
            topics=[{"topic": TOPIC, "partitions": [fetch_partition]}],
            forgotten_topics_data=[],
            rack_id="",
        )
        answer = response.responses[0].partitions[0]
        assert answer.error_code == ErrorCode.NO_ERROR
        for batch in split_batches(answer.records or b""):
            assert not BatchHeader.parse(batch).is_control
            records += [(r.offset, (r.value or b"").decode()) for r in iter_records(batch)]
        if records:
            offset = records[-1][0] + 1
        if offset >= answer.high_watermark:
            return [r for r in records if r[0] < answer.high_watermark]


def test_sigkill_under_load_loses_no_acknowledged_record(tmp_path: Path) -> None:
    rng = random.Random()
    broker = BrokerProcess(
        tmp_path / "data",
        tmp_path / "broker.log",
        {
            "num.partitions": str(PARTITIONS),
            "log.segment.bytes": "65536",
            "log.index.interval.bytes": "1024",
        },
    )
    address = broker.start()
    port = broker.port
    with WireClient(address) as client:
        client.call(ApiKey.Metadata, 4, topics=[{"name": TOPIC}], allow_auto_topic_creation=True)
    producers = [ProducerProcess(address, name) for name in PRODUCERS]
    kills = 0
    try:
        for _ in range(KILLS):
            target = _acked(producers) + rng.randint(50, 1500)
            _wait_for(lambda t=target: _acked(producers) >= t, "acknowledgements before a kill")
            broker.kill()
            kills += 1
            broker.start(port)
        target = _acked(producers) + 500
        _wait_for(lambda: _acked(producers) >= target, "acknowledgements after the last restart")
        for producer in producers:
            producer.finish()
        with WireClient(address) as client:
            stored = {p: _read_partition(client, p) for p in range(PARTITIONS)}
        assert broker.stop() == 0
    finally:
        if broker.alive():
            broker.kill()

    acked = [ack for producer in producers for ack in producer.acks]
    print(f"\ncrash: {kills} SIGKILLs survived, {len(acked)} records acknowledged")
    assert kills == KILLS
    assert all(p.done == {"done": True, "undelivered": 0} for p in producers)
    assert [p.errors for p in producers] == [[] for _ in producers]
    values = [value for records in stored.values() for _, value in records]
    assert len(values) == len(set(values)), "a value is stored twice"
    at = {(p, offset): value for p, records in stored.items() for offset, value in records}
    assert all(at.get((p, offset)) == value for p, offset, value in acked)
    for records in stored.values():
        offsets = [offset for offset, _ in records]
        assert offsets == list(range(len(offsets)))
        by_producer: dict[str, list[str]] = defaultdict(list)
        for _, value in records:
            by_producer[value.rpartition("-")[0]].append(value)
        assert all(seq == sorted(seq) for seq in by_producer.values())
    assert dump_log_problems(tmp_path / "data") == []
    assert len(list((tmp_path / "data" / f"{TOPIC}-0").glob("*.log"))) > 1
