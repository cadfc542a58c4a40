"""The README's example test files run as a user runs them: their own pytest, the plugin found
through the installed entry point, no project conftest."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.clients

EXAMPLES = Path(__file__).parents[2] / "examples"


def run_example(example: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """pytest on a copy of `example` in `tmp_path`, as a user runs it."""
    shutil.copy(example, tmp_path / example.name)
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-q",
            "--asyncio-mode=auto",
            "-W",
            "ignore::DeprecationWarning",
            example.name,
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=240,
    )


@pytest.mark.parametrize(
    ("name", "tests"), [("test_with_minibroker.py", 4), ("test_schema_registry.py", 2)]
)
def test_example_file_passes(tmp_path: Path, name: str, tests: int) -> None:
    result = run_example(EXAMPLES / name, tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"{tests} passed" in result.stdout
