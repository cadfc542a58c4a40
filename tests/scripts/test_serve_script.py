"""`scripts/serve` installs only when the packaging changed, quietly (scripts/lib/venv.sh).

The fast tests run the real script against a fake virtualenv ($MINIBROKER_VENV) whose `python`
records how it was called and whose `minibroker` prints the ready line; the slow one is a
fresh clone's first and second start with a real virtualenv and a real broker."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).parents[2]

FAKE_PYTHON = """#!/usr/bin/env bash
echo "$*" >> "$(dirname "$0")/calls"
if [ "${1:-}" = -m ] && [ -e "$(dirname "$0")/pip-fails" ]; then
    echo "ERROR: pretend pip failed"
    exit 1
fi
"""

FAKE_MINIBROKER = """#!/usr/bin/env bash
echo "minibroker ready on 127.0.0.1:1 ($*)"
"""


def _checkout(root: Path) -> Path:
    """The files scripts/serve reads: the scripts, the packaging and the C sources."""
    (root / "scripts" / "lib").mkdir(parents=True)
    for name in ("scripts/serve", "scripts/lib/venv.sh", "pyproject.toml", "setup.py"):
        shutil.copy2(REPO / name, root / name)
    for source in REPO.glob("minibroker/*/_accel.c"):
        target = root / source.relative_to(REPO)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)
    return root


def _fake_venv(venv: Path) -> Path:
    (venv / "bin").mkdir(parents=True)
    for name, text in (("python", FAKE_PYTHON), ("minibroker", FAKE_MINIBROKER)):
        (venv / "bin" / name).write_text(text)
        (venv / "bin" / name).chmod(0o755)
    return venv


def _serve(checkout: Path, venv: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MINIBROKER_VENV": str(venv)}
    return subprocess.run(
        [str(checkout / "scripts" / "serve"), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def _pip_calls(venv: Path) -> list[str]:
    calls = venv / "bin" / "calls"
    lines = calls.read_text().splitlines() if calls.exists() else []
    calls.unlink(missing_ok=True)
    return [line for line in lines if line.startswith("-m pip")]


@pytest.fixture
def fake(tmp_path: Path) -> tuple[Path, Path]:
    return _checkout(tmp_path / "checkout"), _fake_venv(tmp_path / "venv")


def test_installs_once_then_only_when_the_packaging_changes(fake: tuple[Path, Path]) -> None:
    checkout, venv = fake
    first = _serve(checkout, venv)
    assert first.returncode == 0, first.stderr
    assert _pip_calls(venv) == ["-m pip install -e ."]

    second = _serve(checkout, venv)
    assert second.returncode == 0, second.stderr
    assert _pip_calls(venv) == []
    assert second.stderr == ""

    for changed in ("setup.py", "pyproject.toml", "minibroker/records/_accel.c"):
        with (checkout / changed).open("a") as file:
            file.write("\n")
        assert _serve(checkout, venv).returncode == 0
        assert _pip_calls(venv) == ["-m pip install -e ."], changed
        assert _serve(checkout, venv).returncode == 0
        assert _pip_calls(venv) == [], changed


def test_a_venv_without_the_minibroker_command_is_reinstalled(fake: tuple[Path, Path]) -> None:
    checkout, venv = fake
    assert _serve(checkout, venv).returncode == 0
    _pip_calls(venv)
    (venv / "bin" / "minibroker").rename(venv / "bin" / "moved")
    _serve(checkout, venv)
    assert _pip_calls(venv) == ["-m pip install -e ."]


def test_a_failed_install_prints_pips_output_and_is_retried(fake: tuple[Path, Path]) -> None:
    checkout, venv = fake
    (venv / "bin" / "pip-fails").touch()
    failed = _serve(checkout, venv)
    assert failed.returncode != 0
    assert "pretend pip failed" in failed.stderr
    assert "ready" not in failed.stdout

    (venv / "bin" / "pip-fails").unlink()
    _pip_calls(venv)
    assert _serve(checkout, venv).returncode == 0
    assert _pip_calls(venv) == ["-m pip install -e ."]


def test_later_arguments_reach_minibroker_serve_after_the_defaults(
    fake: tuple[Path, Path],
) -> None:
    checkout, venv = fake
    result = _serve(checkout, venv, "--listen", "127.0.0.1:0")
    assert result.stdout.strip().endswith(
        "(serve --listen 127.0.0.1:9092 --data-dir ./data --listen 127.0.0.1:0)"
    )


def _start_until_ready(checkout: Path, data: Path) -> tuple[list[str], float]:
    """Run a real scripts/serve until its ready line; the lines up to it and the seconds."""
    env = {key: value for key, value in os.environ.items() if key != "MINIBROKER_VENV"}
    env["PYTHON"] = sys.executable
    started = time.monotonic()
    process = subprocess.Popen(
        [str(checkout / "scripts" / "serve"), "--listen", "127.0.0.1:0", "--data-dir", str(data)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    assert process.stdout is not None
    lines = []
    try:
        for line in process.stdout:
            lines.append(line.rstrip("\n"))
            if line.startswith("minibroker ready on 127.0.0.1:"):
                break
        return lines, time.monotonic() - started
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=30)


@pytest.mark.slow
def test_a_fresh_clone_starts_quietly_and_the_second_start_skips_the_install(
    tmp_path: Path,
) -> None:
    checkout = tmp_path / "clone"
    ignore = shutil.ignore_patterns("__pycache__", "*.so", "*.egg-info")
    for entry in ("scripts", "minibroker"):
        shutil.copytree(REPO / entry, checkout / entry, ignore=ignore)
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy2(REPO / name, checkout / name)

    first, first_seconds = _start_until_ready(checkout, tmp_path / "data")
    second, second_seconds = _start_until_ready(checkout, tmp_path / "data")
    print(f"first start ready in {first_seconds:.2f} s, second in {second_seconds:.2f} s")

    for lines in (first, second):
        assert lines and lines[-1].startswith("minibroker ready on"), lines
        assert not [line for line in lines if "warn" in line.lower()], lines
    assert any("installing" in line for line in first), first
    assert not any("installing" in line for line in second), second
    # pip shows the build backend's warnings (setuptools deprecations) since pip 25.
    install_log = (checkout / ".venv" / "minibroker-install.log").read_text()
    assert "Warning" not in install_log, install_log
