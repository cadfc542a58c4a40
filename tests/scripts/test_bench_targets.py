"""`scripts/bench`'s issue-40 verdicts (benchmarks/targets.py) from a run's figures."""

from __future__ import annotations

from typing import Any

from benchmarks.targets import check, table


def spread(median: float) -> dict[str, float]:
    return {"median": median, "min": median, "max": median}


def p1_row(config: str, ratio: float, cpu_s_per_gb: float) -> dict[str, Any]:
    return {"config": config, "ratio": ratio, "minibroker": {"cpu_s_per_gb": spread(cpu_s_per_gb)}}


def results() -> dict[str, Any]:
    return {
        "R1": {
            "minibroker": {"broker_cpu_us_per_request": spread(11.5)},
            "rows": [{"rate": 10_000, "p99_ms": 6.0}],
            "highest_rate_p99_5ms": 30_000,
        },
        "FE": {"minibroker": {"broker_cpu_us_per_fetch": spread(12.5)}},
        "P1": [
            p1_row("batch 64KiB, acks=1, none", 0.69, 1.5),
            p1_row("batch 1MiB, acks=1, none", 0.95, 1.2),
        ],
        "TLS": {"R1": {"broker_cpu_us_ratio": 1.4}},
    }


def verdicts() -> dict[str, tuple[float | None, str]]:
    return {row["target"]: (row["value"], row["verdict"]) for row in check(results())}


def test_each_target_is_judged_by_its_own_bound() -> None:
    found = verdicts()
    assert found["R1 broker CPU per single-message Produce"] == (11.5, "met")
    assert found["R1 answer p99 at 10,000 paced requests/s"] == (6.0, "missed")
    assert found["R1 highest paced rate with answer p99 ≤ 5 ms"] == (30_000, "met")
    assert found["FE broker CPU per empty long-poll Fetch"] == (12.5, "missed")
    assert found["P1 64 KiB batches, ratio to the mock"] == (0.69, "missed")
    assert found["P1 64 KiB batches, broker CPU-s/GB"] == (1.5, "met")
    assert found["P1 1 MiB batches, ratio to the mock"] == (0.95, "met")
    assert found["P1 1 MiB batches, broker CPU-s/GB"] == (1.2, "missed")
    assert found["R1 with TLS, CPU ratio to plaintext"] == (1.4, "reported")


def test_a_scenario_that_did_not_run_is_not_measured() -> None:
    found = verdicts()
    assert found["FM broker CPU per small Fetch (100 consumers)"] == (None, "not measured")
    assert found["S1 in-process start (memory)"] == (None, "not measured")
    assert found["FE with TLS, CPU ratio to plaintext"] == (None, "not measured")


def test_the_table_shows_every_row() -> None:
    text = table(check(results()))
    assert "| R1 broker CPU per single-message Produce | 11.50 µs | ≤ 12 µs | met |" in text
    assert "| R1 highest paced rate with answer p99 ≤ 5 ms | 30,000/s | ≥ 30,000/s | met |" in text
    assert len(text.splitlines()) == 2 + len(check(results()))
