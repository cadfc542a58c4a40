"""CI gate: the whole compatibility matrix against minibroker. A cell that expected.py does not
list must pass; a listed failure that now passes is reported (a warning) so the list is kept
current."""

from __future__ import annotations

import warnings
from collections.abc import Iterator

import pytest

from tests.clients.runner import CLIENTS, install_all
from tests.compat.expected import KNOWN_FAILURES, NOT_APPLICABLE
from tests.compat.matrix import markdown, run_matrix, summary
from tests.compat.scenarios import SCENARIOS, Context
from tests.compat.target import OwnBroker

# Cells at once: each runs one or two client processes; more only queue on 2 cores.
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
@pytest.mark.timeout(3600)
def test_every_cell_expected_to_pass_passes(minibroker: OwnBroker) -> None:
    install_all()
    ctx = Context(minibroker.bootstrap, own_broker=True)
    matrix = run_matrix(ctx, "minibroker", CLIENTS, list(SCENARIOS), PARALLEL_CELLS)
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
