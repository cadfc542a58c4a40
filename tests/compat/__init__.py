"""Real-client compatibility matrix: every client of tests/clients x a fixed set of scenarios,
against minibroker (started here) or any Kafka-compatible broker (`--bootstrap`).

`scripts/compat --help`; the scenarios are in scenarios.py, the cells that cannot pass in
expected.py.
"""
