"""CI gate: the whole compatibility matrix against minibroker, one test per scenario (every
client), so that pytest-xdist workers share the matrix out, each against a broker of its own.
A cell that expected.py does not list must pass; a listed failure that now passes is reported
(a warning) so the list is kept current."""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.clients.runner import CLIENTS, install_all
from tests.compat import cli
from tests.compat.expected import KNOWN_FAILURES, NOT_APPLICABLE, expectation
from tests.compat.matrix import markdown, run_matrix, summary
from tests.compat.scenarios import SCENARIOS, Context
from tests.compat.target import OwnBroker

# Cells at once (the clients of one scenario): each runs one or two client jobs; more only
# queue on 2 cores.
PARALLEL_CELLS = 3


@pytest.fixture(scope="module")
def minibroker() -> Iterator[OwnBroker]:
    with OwnBroker() as broker:
        yield broker


def test_expected_lists_name_known_cells() -> None:
    for client, scenario in [*NOT_APPLICABLE, *KNOWN_FAILURES]:
        assert client in CLIENTS and scenario in SCENARIOS, (client, scenario)
    assert not set(NOT_APPLICABLE) & set(KNOWN_FAILURES)


@pytest.mark.clients
@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_every_cell_expected_to_pass_passes(minibroker: OwnBroker, scenario: str) -> None:
    install_all()
    ctx = Context(minibroker.bootstrap, own_broker=True)
    matrix = run_matrix(ctx, "minibroker", CLIENTS, [scenario], PARALLEL_CELLS)
    print(markdown(matrix))
    print(summary(matrix))
    for cell in matrix.cells:
        if cell.unexpected_pass:
            warnings.warn(
                f"{cell.client} {cell.scenario} passes but tests/compat/expected.py lists it as "
                f"failing ({cell.expected_reason}): remove it from the list",
                stacklevel=1,
            )
    regressions = [cell for cell in matrix.cells if cell.regression]
    assert not regressions, "\n\n".join(
        f"{cell.client} {cell.scenario}: {cell.reason}\n{cell.detail[-4000:]}"
        for cell in regressions
    )


def test_expectations_follow_the_emulated_release() -> None:
    assert expectation("java-4.3", "consumer-protocol", "3.9")[0] == "n/a"
    assert expectation("java-4.3", "consumer-protocol", "4.0") == ("pass", "")
    assert expectation("java-4.3", "share-group", "4.0")[0] == "n/a"
    assert expectation("java-4.3", "share-group", "4.1") == ("pass", "")
    assert expectation("kafka-python-3", "connect-metadata", "3.6")[0] == "fail"
    assert expectation("kafka-python-3", "connect-metadata", "3.7") == ("pass", "")
    assert expectation("kafka-python-3", "connect-metadata") == ("pass", "")


def test_kafka_version_runs_the_matrix_per_release(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "matrix.json"
    argv = ["--clients", "kafka-python-3", "--scenarios", "connect-metadata,consumer-protocol"]
    assert cli.main([*argv, "--kafka-version", "2.8,4.3", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "## Kafka 2.8 (emulated)" in printed and "## Kafka 4.3 (emulated)" in printed
    assert "| connect and metadata | 2.8 fail (known) · 4.3 pass |" in printed
    matrices = json.loads(out.read_text())["kafka_versions"]
    assert list(matrices) == ["2.8", "4.3"]
    statuses = {(c["scenario"], c["status"]) for c in matrices["2.8"]["cells"]}
    assert statuses == {("connect-metadata", "fail"), ("consumer-protocol", "n/a")}


def test_kafka_version_refuses_an_unknown_release() -> None:
    with pytest.raises(SystemExit, match=r"unknown Kafka release: 2\.7"):
        cli.main(["--kafka-version", "2.7"])
