"""scripts/test runs pytest-xdist with `--dist loadgroup`: the tests of one group (tests/conftest.py
XDIST_GROUPS) must land on one worker, or two workers would each start Docker or Spark, and the
second would wait on the Docker engine's lock until the first worker's session ends."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tests.conftest import XDIST_GROUPS


def test_grouped_tests_run_on_one_worker(tmp_path: Path) -> None:
    (tmp_path / "test_grouped.py").write_text(
        "import pytest\n\n"
        "@pytest.mark.xdist_group('costly')\n"
        "@pytest.mark.parametrize('n', range(8))\n"
        "def test_grouped(n):\n    pass\n\n"
        "@pytest.mark.parametrize('n', range(8))\n"
        "def test_free(n):\n    pass\n"
    )
    argv = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:minibroker"]
    ran = subprocess.run(
        [*argv, "-n", "2", "--dist", "loadgroup", "-v", str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    workers = set(re.findall(r"\[(gw\d+)\] .*PASSED .*test_grouped\[\d\]@costly", ran.stdout))
    assert len(workers) == 1, ran.stdout


def test_the_groups_name_existing_tests() -> None:
    checkout = Path(__file__).resolve().parents[1]
    assert all((checkout / prefix).exists() for prefix in XDIST_GROUPS)
