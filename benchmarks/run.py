"""`scripts/bench`: every scenario against minibroker and librdkafka's mock cluster in one run.

python -m benchmarks.run [--runs 3]
    [--only P1,PR,F1,FE,FM,L1,R1,TLS,CG,P2,S1,FC,M1,RF,SPARK,CO,SC]
    [--json F]
    [--chart F]
    [--jvm-jars DIR]   (SPARK: Spark's JVM Kafka connector beside minikafka)

It ends with issue 40's targets, each met, missed or not measured in this run
(`benchmarks/targets.py`).
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import os
import platform
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from benchmarks import (
    console_load,
    fetch,
    fetch_rate,
    fixture_cycle,
    instructions,
    latency,
    memory,
    oldclient,
    produce,
    produce_cpu,
    request_rate,
    scale,
    startup,
    targets,
    tls,
)
from benchmarks.brokers import RunningBroker, start_minibroker, start_mock
from benchmarks.output import add_publish_flag, output_path
from benchmarks.procstat import wait_until_idle
from benchmarks.report import markdown_table, spread_text, write_chart, write_json
from benchmarks.stats import Spread, ratio
from minibroker.records.accel import active_path

SCENARIOS = (
    "P1",
    "PR",
    "F1",
    "FE",
    "FM",
    "L1",
    "R1",
    "TLS",
    "CG",
    "P2",
    "S1",
    "FC",
    "M1",
    "RF",
    "SPARK",
    "CO",
    "SC",
)
MB = 1e6
T = TypeVar("T")


def machine() -> str:
    model = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.machine(),
    )
    return f"{os.cpu_count()} cores, {model}, Python {platform.python_version()}"


def settle(scenario: str) -> float:
    idle = wait_until_idle()
    print(f"[{scenario}] host {idle:.0%} idle before the run", flush=True)
    return idle


def repeat(runs: int, action: Callable[[], T]) -> list[T]:
    return [action() for _ in range(runs)]


def p1_row(
    label: str, config: produce.ProduceConfig, brokers: tuple[RunningBroker, ...], runs: int
) -> dict[str, Any]:
    row: dict[str, Any] = {"config": label, "idle": settle("P1 " + label)}
    for broker in brokers:
        measured = [produce.run_p1(broker, config) for _ in range(runs)]
        row[broker.name] = {
            "mb_per_s": Spread.of([m.mb_per_s for m in measured]).as_dict(),
            "msg_per_s": Spread.of([m.msg_per_s for m in measured]).as_dict(),
            "cpu_s_per_gb": Spread.of([m.cpu_s_per_gb for m in measured]).as_dict(),
        }
    row["ratio"] = ratio(row["minibroker"]["mb_per_s"]["median"], row["mock"]["mb_per_s"]["median"])
    return row


def p1(mini: RunningBroker, mock: RunningBroker, runs: int) -> list[dict[str, Any]]:
    rows = [p1_row(config.label, config, (mini, mock), runs) for config in produce.CONFIGS]
    with tempfile.TemporaryDirectory() as tmp:
        in_memory = start_minibroker(Path(tmp), in_memory=True)
        try:
            config = produce.IN_MEMORY_CONFIG
            rows.append(p1_row(config.label + ", in memory", config, (in_memory, mock), runs))
        finally:
            in_memory.stop()
    print(
        markdown_table(
            [
                "P1 config",
                "minibroker MB/s",
                "mock MB/s",
                "ratio",
                "minibroker CPU-s/GB",
                "mock CPU-s/GB",
            ],
            [
                [
                    r["config"],
                    spread_text(r["minibroker"]["mb_per_s"]),
                    spread_text(r["mock"]["mb_per_s"]),
                    f"{r['ratio']:.2f}",
                    spread_text(r["minibroker"]["cpu_s_per_gb"], 2),
                    spread_text(r["mock"]["cpu_s_per_gb"], 2),
                ]
                for r in rows
            ],
        ),
        flush=True,
    )
    return rows


def pr(mini: RunningBroker, runs: int) -> dict[str, Any]:
    """Broker CPU per 64 KiB Produce request (requests counted in the log), total and user."""
    settle("PR")
    assert mini.data_dir is not None
    measured = [produce_cpu.cpu_per_request(mini, mini.data_dir, 100_000) for _ in range(runs)]
    result = {
        "cpu_us": Spread.of([total for total, _ in measured]).as_dict(),
        "user_cpu_us": Spread.of([user for _, user in measured]).as_dict(),
    }
    print(
        f"PR 64 KiB Produce request: {spread_text(result['cpu_us'])} broker CPU-us, "
        f"{spread_text(result['user_cpu_us'])} of them user",
        flush=True,
    )
    return result


def r1(mini: RunningBroker, mock: RunningBroker, runs: int) -> dict[str, Any]:
    """Broker CPU per single-message Produce (closed loop, window 64, the brokers' runs
    alternated), then minibroker's paced sweep."""
    settle("R1")
    measured: dict[str, list[dict[str, float]]] = {mini.name: [], mock.name: []}
    for _ in range(runs):
        for broker in (mini, mock):
            measured[broker.name].append(request_rate.measure(broker, 64, 5.0, broker is mock))
    result: dict[str, Any] = {
        name: {
            key: Spread.of([m[key] for m in runs_of]).as_dict()
            for key in ("requests_per_s", "broker_cpu_us_per_request")
        }
        for name, runs_of in measured.items()
    }
    for name in (mini.name, mock.name):
        print(
            f"R1 {name}: {spread_text(result[name]['broker_cpu_us_per_request'], 1)} broker "
            f"CPU-µs per request, {spread_text(result[name]['requests_per_s'])} requests/s",
            flush=True,
        )
    rows = request_rate.sweep(mini.bootstrap, 3.0)
    highest = request_rate.highest_sustained(rows)
    print(f"R1 highest paced rate with answer p99 <= 5 ms: {highest:,.0f} requests/s", flush=True)
    return {**result, "rows": rows, "highest_rate_p99_5ms": highest}


def tls_figures(mini: RunningBroker, runs: int) -> dict[str, Any]:
    """R1, FE and FM with TLS on, beside plaintext (`benchmarks/tls.py`): the mock has no TLS
    listener, so the reference is minibroker's own plaintext figure."""
    settle("TLS")
    results = tls.compare(mini, runs)
    print(
        markdown_table(
            [
                "TLS",
                "plaintext CPU-µs/request",
                "TLS CPU-µs/request",
                "CPU ratio",
                "plaintext requests/s",
                "TLS requests/s",
                "rate ratio",
            ],
            [
                [
                    TLS_LABELS[figure],
                    spread_text(row["plaintext"]["broker_cpu_us"], 1),
                    spread_text(row["tls"]["broker_cpu_us"], 1),
                    f"{row['broker_cpu_us_ratio']:.2f}",
                    spread_text(row["plaintext"]["requests_per_s"]),
                    spread_text(row["tls"]["requests_per_s"]),
                    f"{row['requests_per_s_ratio']:.2f}",
                ]
                for figure, row in results.items()
            ],
        ),
        flush=True,
    )
    return results


def cg() -> dict[str, Any]:
    """Instructions per request under callgrind (`benchmarks/instructions.py`), or why not."""
    reason = instructions.missing_tool()
    if reason is not None:
        print(f"CG skipped: {reason}", flush=True)
        return {"skipped": reason}
    settle("CG")
    counted = instructions.measure()
    for kind, count in counted.items():
        print(f"CG {kind}: {count:,.0f} broker instructions per request (callgrind)", flush=True)
    return {"instructions_per_request": counted}


def fc(runs: int) -> dict[str, Any]:
    settle("FC")
    result: dict[str, Any] = {}
    for storage in ("memory", "disk"):
        wall, cpu = fixture_cycle.measure(storage, runs)
        result[storage] = {"wall_ms": wall, "cpu_ms": cpu}
    result["disk_over_memory"] = ratio(result["disk"]["wall_ms"], result["memory"]["wall_ms"])
    print(f"FC fixture cycle: {result}", flush=True)
    return result


def f1(mini: RunningBroker, runs: int) -> dict[str, Any]:
    settle("F1")
    measured = fetch.run_f1(mini, runs)
    result = {
        "mb_per_s": Spread.of([m.mb_per_s for m in measured]).as_dict(),
        "cpu_s_per_gb": Spread.of([m.cpu_s_per_gb for m in measured]).as_dict(),
    }
    print(
        f"F1 fetch: {spread_text(result['mb_per_s'])} MB/s, "
        f"{spread_text(result['cpu_s_per_gb'], 2)} CPU-s/GB (mock: not comparable, it keeps 5 MiB)",
        flush=True,
    )
    return result


def fetch_rates(
    mini: RunningBroker, mock: RunningBroker, scenarios: list[str], runs: int
) -> dict[str, Any]:
    """FE (empty long polls) and FM (one small batch per Fetch) by 100 consumers: broker
    CPU-µs per Fetch, the brokers' runs alternated."""
    results: dict[str, Any] = {}
    for broker in (mini, mock):
        fetch_rate.prepare(broker.bootstrap, mock=broker is mock)
    for scenario in scenarios:
        row: dict[str, Any] = {"idle": settle(scenario)}
        measured: dict[str, list[dict[str, float]]] = {mini.name: [], mock.name: []}
        for _ in range(runs):
            for broker in (mini, mock):
                measured[broker.name].append(fetch_rate.measure(broker, scenario, 3.0))
        for name, runs_of in measured.items():
            row[name] = {
                key: Spread.of([m[key] for m in runs_of]).as_dict()
                for key in ("fetches_per_s", "broker_cpu_us_per_fetch")
            }
        row["cpu_ratio"] = ratio(
            row[mini.name]["broker_cpu_us_per_fetch"]["median"],
            row[mock.name]["broker_cpu_us_per_fetch"]["median"],
        )
        results[scenario] = row
    print(
        markdown_table(
            ["100 consumers", "minibroker CPU-µs/Fetch", "mock CPU-µs/Fetch", "ratio", "Fetches/s"],
            [
                [
                    FETCH_LABELS[scenario],
                    spread_text(row[mini.name]["broker_cpu_us_per_fetch"], 1),
                    spread_text(row[mock.name]["broker_cpu_us_per_fetch"], 1),
                    f"{row['cpu_ratio']:.2f}",
                    spread_text(row[mini.name]["fetches_per_s"]),
                ]
                for scenario, row in results.items()
            ],
        ),
        flush=True,
    )
    return results


FETCH_LABELS = {
    "FE": "FE empty long poll (10 ms)",
    "FM": "FM one 1-message batch per Fetch",
}
TLS_LABELS = {"R1": "R1 single-message Produce (window 64)", **FETCH_LABELS}


def l1(mini: RunningBroker, mock: RunningBroker) -> list[dict[str, Any]]:
    rows = []
    for rate in (1000, 10_000):
        for broker in (mini, mock):
            settle(f"L1 {broker.name} {rate}/s")
            rows.append({"broker": broker.name, **latency.measure(broker, rate).summary()})
    print(
        markdown_table(
            ["L1", "ack p50/p99/p99.9 ms", "end-to-end p50/p99/p99.9 ms"],
            [
                [
                    f"{r['broker']} {r['rate']}/s",
                    "/".join(f"{v:.2f}" for v in r["ack"].values()),
                    "/".join(f"{v:.2f}" for v in r["end_to_end"].values()),
                ]
                for r in rows
            ],
        ),
        flush=True,
    )
    return rows


def p2(mini: RunningBroker) -> list[dict[str, Any]]:
    settle("P2")
    rows = [oldclient.run_p2(mini, codec) for codec in ("lz4", "snappy", "gzip")]
    for row in rows:
        print(
            f"P2 kcat -z {row['codec']}: stored batches {row['batches']}, "
            f"{row['stored_bytes'] / MB:.1f} MB stored for {row['raw'] / MB:.1f} MB sent",
            flush=True,
        )
    return rows


def s1(runs: int) -> dict[str, Any]:
    settle("S1")
    startup.in_process_ms("memory")
    result = {
        "in_process_memory_ms": Spread.of(repeat(runs, lambda: startup.in_process_ms("memory"))),
        "in_process_disk_ms": Spread.of(repeat(runs, lambda: startup.in_process_ms("disk"))),
        "in_process_3_nodes_ms": Spread.of(repeat(runs, startup.cluster_ms)),
        "serve_ms": Spread.of(repeat(runs, startup.serve_ms)),
        "mock_ms": Spread.of(repeat(runs, startup.mock_ms)),
    }
    for name, spread in result.items():
        print(f"S1 {name}: {spread.median:.2f} ({spread.low:.2f}-{spread.high:.2f})", flush=True)
    return {name: spread.as_dict() for name, spread in result.items()}


def run(args: argparse.Namespace) -> dict[str, Any]:
    results: dict[str, Any] = {"date": datetime.date.today().isoformat(), "machine": machine()}
    # the broker child inherits this environment (MINIBROKER_PURE_PYTHON), so the same path
    results["produce_path"] = active_path()
    print(f"minibroker produce path: {results['produce_path']}", flush=True)
    chosen = set(args.only.split(",")) if args.only else set(SCENARIOS)
    with tempfile.TemporaryDirectory() as tmp:
        mini = start_minibroker(Path(tmp) / "data")
        mock = start_mock()
        try:
            idle_rss = memory.settle_rss(mini)
            if "P1" in chosen:
                results["P1"] = p1(mini, mock, args.runs)
            if "PR" in chosen:
                results["PR"] = pr(mini, args.runs)
            if "F1" in chosen:
                results["F1"] = f1(mini, args.runs)
            if fetch_scenarios := [s for s in ("FE", "FM") if s in chosen]:
                results.update(fetch_rates(mini, mock, fetch_scenarios, args.runs))
            if "M1" in chosen:
                results["M1"] = {
                    "idle_rss_mb": idle_rss / MB,
                    "rss_after_load_mb": memory.settle_rss(mini) / MB,
                    "rss_1000_partitions_mb": memory.rss_with_partitions(mini) / MB,
                }
                print(f"M1 RSS MB: {results['M1']}", flush=True)
            if "L1" in chosen:
                results["L1"] = l1(mini, mock)
            if "R1" in chosen:
                results["R1"] = r1(mini, mock, args.runs)
            if "TLS" in chosen:
                results["TLS"] = tls_figures(mini, args.runs)
            if "P2" in chosen:
                results["P2"] = p2(mini)
        finally:
            mini.stop()
            mock.stop()
    if "CG" in chosen:
        results["CG"] = cg()
    if "S1" in chosen:
        results["S1"] = s1(max(5, args.runs))
    if "FC" in chosen:
        results["FC"] = fc(max(10, args.runs))
    if "RF" in chosen:
        results["RF"] = rf(args.runs)
    if "SPARK" in chosen:
        results["SPARK"] = spark_rows(args.jvm_jars)
    if "CO" in chosen:
        results["CO"] = co(args.runs)
    if "SC" in chosen:
        results["SC"] = sc()
    return results


def sc() -> dict[str, Any]:
    """Many partitions (10,000; 100,000 with `python -m benchmarks.scale --partitions
    100000`), 1,000 groups, 10,000 idle connections (benchmarks/scale.py)."""
    result: dict[str, Any] = {"idle": settle("SC")}
    partitions = scale.run(10_000, 50)
    print(scale.report(partitions), flush=True)
    result["partitions"] = dataclasses.asdict(partitions)
    in_memory = scale.in_memory(10_000, 50)
    print(scale.report_in_memory(in_memory), flush=True)
    result["in_memory"] = dataclasses.asdict(in_memory)
    result["fetch_session"] = scale.fetch_session_cost(5000)
    print(f"SC fetch session: {result['fetch_session']}", flush=True)
    result["groups"] = scale.groups_restart(1000)
    print(f"SC 1,000 groups: {result['groups']}", flush=True)
    result["idle_connections"] = scale.idle_connections(10_000)
    print(f"SC 10,000 idle connections: {result['idle_connections']}", flush=True)
    return result


def co(runs: int) -> dict[str, Any]:
    """A paced 10k msg/s producer against `serve` with and without a polled `--console`."""
    settle("CO")
    result = console_load.compare(runs)
    for line in console_load.report_lines(result):
        print(line, flush=True)
    return result


def rf(runs: int) -> dict[str, Any]:
    """acks=all produce throughput to RF-3 and RF-1 topics of a 3-node `serve --nodes 3`."""
    config = produce.ProduceConfig(1 << 20, "all", "none")
    result: dict[str, Any] = {"config": config.label, "idle": settle("RF")}
    with tempfile.TemporaryDirectory() as tmp:
        cluster = start_minibroker(Path(tmp), nodes=3)
        try:
            for factor in (1, 3):
                measured = [produce.run_p1(cluster, config, factor) for _ in range(runs)]
                result[f"rf{factor}"] = {
                    "mb_per_s": Spread.of([m.mb_per_s for m in measured]).as_dict(),
                    "cpu_s_per_gb": Spread.of([m.cpu_s_per_gb for m in measured]).as_dict(),
                }
        finally:
            cluster.stop()
    result["rf3_over_rf1"] = ratio(
        result["rf3"]["mb_per_s"]["median"], result["rf1"]["mb_per_s"]["median"]
    )
    print(
        f"RF {config.label}, 3 in-process nodes: RF 1 {spread_text(result['rf1']['mb_per_s'])} "
        f"MB/s, RF 3 {spread_text(result['rf3']['mb_per_s'])} MB/s, "
        f"ratio {result['rf3_over_rf1']:.2f}",
        flush=True,
    )
    return result


SPARK_VALUE_BYTES = (100, 1024)


def spark_rows(jvm_jars: Path | None, rows: int = 200_000) -> dict[str, Any]:
    """Rows/s of a Spark batch write and read (local[2]) through the minikafka source at each
    value size; with `--jvm-jars` (a directory of Spark's JVM Kafka connector jars, which are
    not on PyPI) through Spark's own connector too, side by side. Keys: `<bytes>B`."""
    from benchmarks.spark_rows import local_spark, measure
    from minibroker.testing import KafkaBroker

    settle("SPARK")
    spark = local_spark(jvm_jars)
    results: dict[str, Any] = {}
    try:
        with KafkaBroker(storage="memory", record_requests=False) as broker:
            for size in SPARK_VALUE_BYTES:
                figures = measure(spark, broker.bootstrap_servers, rows, value_bytes=size)
                if jvm_jars is not None:
                    jvm = measure(
                        spark, broker.bootstrap_servers, rows, value_bytes=size, connector="kafka"
                    )
                    figures |= {f"jvm_{name}": value for name, value in jvm.items()}
                results[f"{size}B"] = figures
                print(spark_line(rows, size, figures), flush=True)
    finally:
        spark.stop()
    return results


def spark_line(rows: int, size: int, figures: dict[str, float]) -> str:
    line = (
        f"SPARK {rows:,} rows of {size} B: minikafka write {figures['write_rows_per_s']:,.0f} "
        f"rows/s, read {figures['read_rows_per_s']:,.0f} rows/s"
    )
    if "jvm_write_rows_per_s" not in figures:
        return line + " (no --jvm-jars: minikafka alone)"
    return line + (
        f"; JVM connector write {figures['jvm_write_rows_per_s']:,.0f} rows/s, "
        f"read {figures['jvm_read_rows_per_s']:,.0f} rows/s (minikafka/JVM write "
        f"{figures['write_rows_per_s'] / figures['jvm_write_rows_per_s']:.2f}x, read "
        f"{figures['read_rows_per_s'] / figures['jvm_read_rows_per_s']:.2f}x)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--only", help="comma-separated scenarios: " + ",".join(SCENARIOS))
    parser.add_argument("--json", type=Path, help="default: results/benchmarks.json")
    parser.add_argument("--chart", type=Path, help="default: results/benchmarks.png")
    parser.add_argument(
        "--jvm-jars",
        type=Path,
        help="SPARK: a directory of Spark's JVM Kafka connector jars, to compare with it",
    )
    add_publish_flag(parser)
    args = parser.parse_args()
    args.json = args.json or output_path("benchmarks.json", args.publish)
    args.chart = args.chart or output_path("benchmarks.png", args.publish)
    results = run(args)
    results["targets"] = targets.check(results)
    print(targets.table(results["targets"]), flush=True)
    write_json(results, args.json)
    write_chart(results, args.chart)
    print(f"wrote {args.json} and {args.chart}")


if __name__ == "__main__":
    main()
