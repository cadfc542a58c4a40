"""The one list of matrix cells that are not expected to pass, each with its reason.

- NOT_APPLICABLE: the client (or its harness program) cannot express the scenario; the cell
  is not run and shows `n/a` with the reason.
- KNOWN_FAILURES: the cell runs and is expected to fail (a minibroker gap, a client bug, or
  an interface another engineer is adding); it shows `fail (known)`. When one starts
  passing, the matrix reports it so that this list is kept current.

Every other cell must pass against minibroker (tests/compat/test_matrix.py).
"""

from __future__ import annotations

NOT_APPLICABLE: dict[tuple[str, str], str] = {
    ("kcat", "transactions"): "kcat has no transactional producer",
    ("kcat", "delete-records"): "kcat has no admin API",
    ("kcat", "admin"): "kcat has no admin API",
}

KNOWN_FAILURES: dict[tuple[str, str], str] = {
    ("kafka-python-3", "restart"): (
        "kafka-python 3.0.12 (intermittent): a group consumer's poll() raises "
        "KafkaConnectionError (111 ECONNREFUSED) when its coordinator lookup refreshes "
        "metadata while the broker is down"
    ),
}


def expectation(client: str, scenario: str) -> tuple[str, str]:
    """("pass" | "fail" | "n/a", reason) for one cell."""
    if (client, scenario) in NOT_APPLICABLE:
        return "n/a", NOT_APPLICABLE[client, scenario]
    if (client, scenario) in KNOWN_FAILURES:
        return "fail", KNOWN_FAILURES[client, scenario]
    return "pass", ""
