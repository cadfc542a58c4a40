"""Short Jepsen runs on an in-process 3-node cluster with confluent-kafka clients, under the
same seeded `leader-alone` faults (a partition's followers stop fetching until its leader is
the ISR alone, then the leader stops): the unsafe configuration (acks=1, unclean election)
loses acknowledged writes and the checker reports them; the safe one (acks=all,
min.insync.replicas=2, RF 3) loses nothing. A third, safe, on 5 nodes: cut links between
two nodes and crashes (power cuts through the power-loss model: the node's replica logs
recovered from a synced or torn crash image) lose nothing either; nor do crashes with Java
kafka-clients 4.3 in every role (producers, consumers in both group protocols, transactional
read-write workers, share consumers)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.jepsen.checker import Result
from benchmarks.jepsen.run import Clients, Options, run

pytestmark = [pytest.mark.clients, pytest.mark.slow]
SECONDS = 8.0
SEED = 7
FAULTS = ("leader-alone",)
CONFLUENT = Clients()
JAVA = Clients(producers="java", consumers="java", txn="java", share="java")


def short_run(
    tmp_path: Path,
    *,
    unsafe: bool,
    nodes: int = 3,
    faults: tuple[str, ...] = FAULTS,
    clients: Clients = CONFLUENT,
    seconds: float = SECONDS,
) -> Result:
    result = run(
        Options(
            seconds=seconds,
            seed=SEED,
            unsafe=unsafe,
            out=tmp_path,
            nodes=nodes,
            clients=clients,
            faults=faults,
            fault_interval_s=1.0,
        )
    )
    assert (tmp_path / "history.jsonl").stat().st_size > 0
    assert result.summary["crashed_threads"] == []
    assert result.summary["fault_events"] >= 1
    # the safe run acknowledges far fewer: acks=all writes wait while the ISR is the leader alone
    assert result.summary["writes"]["acknowledged"] > 20
    assert result.summary["transactions"]["committed"] > 10
    assert set(result.summary["fault_kinds"]) == set(faults)
    if "crash-node" in faults:
        assert result.summary["offsets_lost_in_crashes"] > 0
        # through the power-loss model: every crash left a crash image
        crashes = result.summary["fault_kinds"]["crash-node"]
        assert sum(result.summary["crash_images"].values()) == crashes
    return result


def test_the_unsafe_configuration_loses_acknowledged_writes(tmp_path: Path) -> None:
    anomalies = short_run(tmp_path, unsafe=True).counts()
    assert anomalies["lost-write"] > 0


def test_the_safe_configuration_loses_nothing(tmp_path: Path) -> None:
    anomalies = short_run(tmp_path, unsafe=False).counts()
    assert anomalies == {}


def test_cut_links_and_crashes_on_five_nodes_lose_nothing(tmp_path: Path) -> None:
    faults = ("cut-link", "crash-node")
    anomalies = short_run(tmp_path, unsafe=False, nodes=5, faults=faults).counts()
    assert anomalies == {}


def test_java_clients_under_crashes_lose_nothing(tmp_path: Path) -> None:
    # longer: the Java workers' JVM starts, and their groups form, within the run
    result = short_run(tmp_path, unsafe=False, faults=("crash-node",), clients=JAVA, seconds=12)
    assert result.counts() == {}
    with (tmp_path / "history.jsonl").open() as lines:
        ops = [json.loads(line) for line in lines]
    java_sends = [
        op for op in ops if op["f"] == "send" and op["type"] == "ok" and "." in str(op["process"])
    ]
    assert len(java_sends) > 20
    recorded = result.summary["java_operations"]
    assert recorded["records-polled"] > 20  # the Java group members' polls
    assert recorded["txn-ok"] > 10
    assert recorded["share-ack-record"] > 20
