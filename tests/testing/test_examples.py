"""The README's example test file runs as a user runs it: its own pytest, the plugin found
through the installed entry point, no project conftest."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.clients

EXAMPLE = Path(__file__).parents[2] / "examples" / "test_with_minibroker.py"


def test_example_file_passes(tmp_path: Path) -> None:
    shutil.copy(EXAMPLE, tmp_path / EXAMPLE.name)
    result = subprocess.run(
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
            EXAMPLE.name,
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "4 passed" in result.stdout
