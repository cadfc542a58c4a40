"""Jepsen-style checking of an in-process minibroker cluster under faults: concurrent
real-client workloads record every operation in a `History`, a seeded nemesis injects faults
through the cluster's fault API, and `check` reads the whole history for anomalies.
`scripts/jepsen` runs it (benchmarks.jepsen.run); docs/features/jepsen.md describes it."""
