"""The quick loop, `scripts/test --quick`: every test that needs no external runtime.

External runtimes are the ones a test starts outside this Python process and its venv: a JVM
(the Java clients, Spark), Node (kafkajs), kcat, kafka-python 2 (a venv of its own), the
Docker engine and a browser. Under `--quick` (which sets MINIBROKER_QUICK=1) a test, or a
fixture, that is about to start one is skipped with the runtime named; the full run
(`scripts/test`, CI) sets nothing and so runs and fails every such test, never skipping it.
"""

from __future__ import annotations

import os

import pytest

QUICK_ENV = "MINIBROKER_QUICK"


def quick_loop() -> bool:
    return os.environ.get(QUICK_ENV) == "1"


def require_external(runtime: str) -> None:
    """Called just before starting `runtime`: skips the test in the quick loop, else nothing."""
    if quick_loop():
        pytest.skip(f"needs {runtime}: runs in the full suite (scripts/test), not --quick")
