"""The Jepsen checker over hand-made histories: each anomaly is caught, clean histories
report nothing, and the results files are written."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from benchmarks.jepsen.checker import check, summary_text, write_results
from benchmarks.jepsen.history import History, Op, read_ops


class Builder:
    """Histories written by hand: each call records an operation's invoke and completion."""

    def __init__(self) -> None:
        self.history = History()

    def op(self, process: int, f: str, invoke: Any, outcome: str, value: Any) -> int:
        invoked = self.history.invoke(process, f, invoke)
        self.history.complete(invoked, outcome, value)  # type: ignore[arg-type]
        return invoked.index

    def send(
        self, process: int, key: str, value: str, offset: int | None, outcome: str = "ok"
    ) -> int:
        completed = (
            [["send", key, [offset, value]]] if offset is not None else [["send", key, value]]
        )
        return self.op(process, "send", [["send", key, value]], outcome, completed)

    def poll(self, process: int, reads: dict[str, list[list[Any]]], outcome: str = "ok") -> int:
        return self.op(process, "poll", [["poll"]], outcome, [["poll", reads]])

    def txn(
        self,
        process: int,
        sends: list[tuple[str, str, int]],
        reads: dict[str, list[list[Any]]],
        outcome: str = "ok",
    ) -> int:
        invoke = [["poll"], *[["send", key, value] for key, value, _ in sends]]
        done = [["poll", reads], *[["send", key, [offset, value]] for key, value, offset in sends]]
        return self.op(process, "txn", invoke, outcome, done)

    def committed(self, offsets: dict[str, int], group: str = "g") -> None:
        self.history.record("observer", "committed", {"group": group, "offsets": offsets})

    def share_ack(self, process: int, key: str, offset: int, value: str) -> None:
        self.history.record(
            process, "share-ack", {"group": "s", "key": key, "offset": offset, "value": value}
        )

    @property
    def ops(self) -> list[Op]:
        return self.history.ops


def types(builder: Builder) -> list[str]:
    return sorted(anomaly["type"] for anomaly in check(builder.ops).anomalies)


def clean_queue() -> Builder:
    b = Builder()
    b.send(0, "q/0", "a", 0)
    b.send(1, "q/0", "b", 1)
    b.send(0, "q/1", "c", 0)
    b.send(1, "q/1", "d", None, outcome="info")  # unknown, never read: fine
    b.poll(2, {"q/0": [[0, "a"], [1, "b"]]})
    b.poll(2, {"q/1": [[0, "c"]]})
    b.committed({"q/0": 1})
    b.committed({"q/0": 2, "q/1": 1})
    return b


def test_a_clean_queue_history_has_no_anomaly() -> None:
    result = check(clean_queue().ops)
    assert result.anomalies == []
    assert result.valid
    assert result.summary["writes"] == {
        "acknowledged": 3,
        "failed": 0,
        "indeterminate": 1,
        "acknowledged_unread": 0,
    }


def test_a_clean_transactional_history_has_no_anomaly() -> None:
    b = Builder()
    t1 = b.txn(0, [("x/0", "1", 0), ("x/1", "2", 0)], {})
    t2 = b.txn(1, [("x/0", "3", 1)], {"x/1": [[0, "2"]]})
    b.txn(0, [("x/1", "4", 1)], {"x/0": [[0, "1"], [1, "3"]]})
    b.txn(1, [("x/0", "5", 2)], {}, outcome="fail")  # aborted, never read
    b.poll(2, {"x/0": [[0, "1"], [1, "3"]], "x/1": [[0, "2"], [1, "4"]]})
    assert t1 < t2
    assert check(b.ops).anomalies == []


def test_an_acknowledged_write_no_read_saw_is_lost() -> None:
    b = clean_queue()
    b.send(0, "q/0", "e", 2)
    b.send(0, "q/0", "f", 3)
    b.poll(3, {"q/0": [[0, "a"], [1, "b"], [3, "f"]]})
    anomalies = check(b.ops).anomalies
    assert [(a["type"], a["value"], a["offset"]) for a in anomalies] == [("lost-write", "e", 2)]


def test_an_acknowledged_write_beyond_every_read_is_counted_not_lost() -> None:
    b = clean_queue()
    b.send(0, "q/0", "e", 2)
    result = check(b.ops)
    assert result.anomalies == []
    assert result.summary["writes"]["acknowledged_unread"] == 1


def test_an_offset_reused_by_another_value_is_reported_with_the_lost_write() -> None:
    # acks=1 then an unclean election: the new leader writes "e2" where "e" was acknowledged.
    b = clean_queue()
    b.send(0, "q/0", "e", 2)
    b.send(1, "q/0", "e2", 2)
    b.poll(3, {"q/0": [[0, "a"], [1, "b"], [2, "e2"]]})
    assert types(b) == ["inconsistent-offset", "lost-write"]


def test_a_value_at_two_offsets_is_a_duplicate() -> None:
    b = clean_queue()
    b.send(0, "q/0", "e", 2)
    b.poll(3, {"q/0": [[0, "a"], [1, "b"], [2, "e"], [3, "e"]]})
    anomalies = check(b.ops).anomalies
    assert [(a["type"], a["at"]) for a in anomalies] == [("duplicate", [["q/0", 2], ["q/0", 3]])]


def test_a_poll_out_of_offset_order_is_reported() -> None:
    b = clean_queue()
    b.poll(3, {"q/0": [[1, "b"], [0, "a"]]})
    assert types(b) == ["out-of-order"]


def test_a_read_of_an_aborted_write_is_reported() -> None:
    b = clean_queue()
    b.txn(0, [("q/1", "x", 1)], {}, outcome="fail")
    b.poll(3, {"q/1": [[0, "c"], [1, "x"]]})
    assert types(b) == ["aborted-read"]


def test_a_read_of_a_value_nobody_wrote_is_reported() -> None:
    b = clean_queue()
    b.poll(3, {"q/1": [[0, "c"], [1, "ghost"]]})
    assert types(b) == ["phantom-read"]


def test_a_committed_offset_going_backwards_is_reported() -> None:
    b = clean_queue()
    b.committed({"q/0": 1})
    anomalies = check(b.ops).anomalies
    assert [(a["type"], a["earlier"]["offset"], a["later"]["offset"]) for a in anomalies] == [
        ("committed-offset-backwards", 2, 1)
    ]


def test_a_share_record_accepted_twice_is_reported() -> None:
    b = clean_queue()
    b.share_ack(4, "q/0", 0, "a")
    b.share_ack(5, "q/0", 1, "b")
    assert types(b) == []
    b.share_ack(5, "q/0", 0, "a")
    assert types(b) == ["share-double-accept"]


def test_a_write_write_cycle_is_g0() -> None:
    # t1 writes x/0 before t2, t2 writes x/1 before t1.
    b = Builder()
    t1 = b.txn(0, [("x/0", "1", 0), ("x/1", "2", 1)], {})
    t2 = b.txn(1, [("x/0", "3", 1), ("x/1", "4", 0)], {})
    b.poll(2, {"x/0": [[0, "1"], [1, "3"]], "x/1": [[0, "4"], [1, "2"]]})
    anomalies = check(b.ops).anomalies
    assert [a["type"] for a in anomalies] == ["G0"]
    edges = {(source, kind, target) for source, kind, target in anomalies[0]["cycle"]}
    assert edges == {(t1, "ww", t2), (t2, "ww", t1)}


def test_a_cycle_through_a_read_is_g1c() -> None:
    # t2 read t1's x/0 write, but t2's x/1 write precedes t1's.
    b = Builder()
    t1 = b.txn(0, [("x/0", "1", 0), ("x/1", "2", 1)], {})
    t2 = b.txn(1, [("x/1", "4", 0)], {"x/0": [[0, "1"]]})
    b.poll(2, {"x/0": [[0, "1"]], "x/1": [[0, "4"], [1, "2"]]})
    anomalies = check(b.ops).anomalies
    assert [a["type"] for a in anomalies] == ["G1c"]
    edges = {(source, kind, target) for source, kind, target in anomalies[0]["cycle"]}
    assert edges == {(t1, "wr", t2), (t2, "ww", t1)}


def test_aborted_and_unknown_transactions_make_no_cycle() -> None:
    b = Builder()
    b.txn(0, [("x/0", "1", 0), ("x/1", "2", 1)], {}, outcome="info")
    b.txn(1, [("x/0", "3", 1), ("x/1", "4", 0)], {})
    b.poll(2, {"x/0": [[0, "1"], [1, "3"]], "x/1": [[0, "4"], [1, "2"]]})
    assert types(b) == []


def test_results_are_written_and_the_history_reads_back(tmp_path: Path) -> None:
    b = clean_queue()
    b.poll(3, {"q/1": [[0, "c"], [1, "ghost"]]})
    result = check(b.ops)
    write_results(tmp_path, b.ops, result)
    assert read_ops(tmp_path / "history.jsonl") == b.ops
    assert [a["type"] for a in json.loads((tmp_path / "anomalies.json").read_text())] == [
        "phantom-read"
    ]
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["valid"] is False
    assert summary["anomalies"]["phantom-read"] == 1
    text = summary_text(result)
    assert "phantom-read 1" in text
    assert text.endswith("INVALID")


def test_a_write_read_once_then_missing_from_the_final_drain_is_lost() -> None:
    b = clean_queue()
    b.send(0, "q/0", "e", 2)
    b.poll(2, {"q/0": [[2, "e"]]})
    assert types(b) == []
    drain = b.history.invoke("final", "poll", [["poll"]])
    b.history.complete(drain, "ok", [["poll", {"q/0": [[0, "a"], [1, "b"], [2, "f"]]}]])
    assert types(b) == ["inconsistent-offset", "lost-write", "phantom-read"]


def test_an_acknowledged_write_past_the_final_drain_is_lost() -> None:
    b = clean_queue()
    b.send(0, "q/0", "e", 2)
    drain = b.history.invoke("final", "poll", [["poll"]])
    b.history.complete(drain, "ok", [["poll", {"q/0": [[0, "a"], [1, "b"]]}]])
    anomalies = check(b.ops).anomalies
    assert [(a["type"], a["value"]) for a in anomalies] == [("lost-write", "e")]


def test_an_unfinished_drain_does_not_count_as_the_end() -> None:
    b = clean_queue()
    b.send(0, "q/0", "e", 2)
    drain = b.history.invoke("final", "poll", [["poll"]])
    b.history.complete(drain, "info", [["poll", {"q/0": [[0, "a"], [1, "b"]]}]])
    assert types(b) == []
