"""The site's shell, configuration and compose examples, run or loaded as written.

- `minibroker` CLI commands (`sh` blocks, with or without a `$ ` prompt) run in a shell
  against a fresh in-process broker (MINIBROKER_BOOTSTRAP); where the page shows their output
  (after the `$ ` line, or in the `text` block right after), the output must match it, with
  `...` standing for any lines and JSON timestamps not compared.
- `minibroker serve ...` lines start the real broker, on free ports instead of the page's
  8080/8081, and the console and registry they start must answer.
- Other commands (scripts/serve, docker build, ...) are run by the tests named in
  COVERED_ELSEWHERE; a command in none of these fails the test, so a new example gets a runner.
- `properties` blocks load through the broker's own config loader with no unknown setting;
  `yaml` compose files through the Kafka-image and MINIBROKER_ environment mapping and the
  `--override` parser, with every setting known to the broker.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
import yaml

from minibroker.config import (
    Listener,
    from_environment,
    from_kafka_image_environment,
    is_known_broker_setting,
    load_config,
    parse_overrides,
    parse_properties,
)
from minibroker.testing import KafkaBroker
from tests.docs.pages import REPO, Block, all_blocks

pytestmark = pytest.mark.clients

# Commands the pages show that other tests run (the command's start -> the test that runs it).
COVERED_ELSEWHERE = {
    "scripts/serve": "tests/scripts/test_serve_script.py",
    "scripts/test": ".ci/run",  # CI itself
    "scripts/compat": "tests/compat/test_matrix.py",  # the same matrix, by tests.compat
    "docker build": "tests/docker/test_image.py",
    "docker run": "tests/docker/test_image.py",
    "git clone <this repository>": "",  # a placeholder for where you got it
}
BLOCKS = all_blocks()
SH_BLOCKS = [b for b in BLOCKS if b.lang == "sh"]
RUN_TIMEOUT_S = 60


def _command_lines(block: Block) -> list[str]:
    """The block's commands without their trailing comments (and, in a transcript, only the
    `$ ` lines)."""
    lines = block.body.splitlines()
    if any(line.startswith("$ ") for line in lines):
        lines = [line[2:] for line in lines if line.startswith("$ ")]
    return [_strip_comment(line) for line in lines if line.strip() and not line.startswith("#")]


def _strip_comment(line: str) -> str:
    return re.sub(r"\s{2,}#.*$|\s+#\s.*$", "", line).rstrip()


def _kind(command: str) -> str:
    program = command.split("|")[-1].strip()
    if program.startswith("minibroker serve"):
        return "serve"
    if program.startswith("minibroker "):
        return "cli"
    for start in COVERED_ELSEWHERE:
        if command.startswith(start):
            return "elsewhere"
    return "unknown"


def test_every_command_has_a_runner() -> None:
    unknown = [
        (b.where, command)
        for b in SH_BLOCKS
        for command in _command_lines(b)
        if _kind(command) == "unknown"
    ]
    assert not unknown, f"commands no test runs (add them to COVERED_ELSEWHERE or here): {unknown}"
    for runner in filter(None, COVERED_ELSEWHERE.values()):
        assert (REPO / runner).exists(), runner


def test_only_known_languages() -> None:
    languages = {b.lang for b in BLOCKS if b.snippet is None}
    assert languages <= {"sh", "text", "properties", "yaml", "python"}, languages


# -- the CLI ------------------------------------------------------------------------------


def _expected_outputs(block: Block) -> list[tuple[str, list[str] | None]]:
    """(command, the output the page shows for it or None) for each command of the block."""
    lines = block.body.splitlines()
    if not any(line.startswith("$ ") for line in lines):
        commands = _command_lines(block)
        following = _following_text(block)
        return [(c, following if i == len(commands) - 1 else None) for i, c in enumerate(commands)]
    pairs: list[tuple[str, list[str] | None]] = []
    for line in lines:
        if line.startswith("$ "):
            pairs.append((_strip_comment(line[2:]), []))
        elif pairs:
            expected = pairs[-1][1]
            assert expected is not None
            expected.append(_strip_comment(line))
    return pairs


def _following_text(block: Block) -> list[str] | None:
    """The `text` block right after this one on its page (its shown output), if any."""
    page = [b for b in BLOCKS if b.page == block.page]
    end = block.line + block.body.count("\n") + 2
    after = [b for b in page if b.line in (end, end + 1) and b.lang == "text"]
    return after[0].body.splitlines() if after else None


def _same_line(expected: str, actual: str) -> bool:
    if expected.startswith("{"):
        want, got = json.loads(expected), json.loads(actual)
        want.pop("timestamp", None)
        got.pop("timestamp", None)
        return bool(want == got)
    return expected.split() == actual.split()


def _matches(expected: list[str], actual: list[str]) -> bool:
    """`expected` against `actual`, a `...` line standing for any number of lines."""
    if not expected:
        return not actual
    if expected[0] == "...":
        return any(_matches(expected[1:], actual[i:]) for i in range(len(actual) + 1))
    return (
        bool(actual) and _same_line(expected[0], actual[0]) and _matches(expected[1:], actual[1:])
    )


def _shell_env(bootstrap: str) -> dict[str, str]:
    env = dict(os.environ)
    env["MINIBROKER_BOOTSTRAP"] = bootstrap
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    return env


@pytest.mark.parametrize(
    "block",
    [b for b in SH_BLOCKS if any(_kind(c) == "cli" for c in _command_lines(b))],
    ids=lambda b: b.where,
)
def test_cli_examples_run_as_shown(block: Block) -> None:
    with KafkaBroker(storage="memory") as kafka:
        env = _shell_env(kafka.bootstrap_servers)
        for command, expected in _expected_outputs(block):
            assert _kind(command) == "cli", command
            result = subprocess.run(
                ["bash", "-c", command],
                capture_output=True,
                text=True,
                env=env,
                timeout=RUN_TIMEOUT_S,
            )
            output = (result.stdout + result.stderr).splitlines()
            wants_failure = expected and any("cannot connect" in line for line in expected)
            assert (result.returncode != 0) == bool(wants_failure), (command, output)
            if expected:
                assert _matches(expected, output), (block.where, command, expected, output)


# -- minibroker serve ---------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


SERVE_COMMANDS = sorted({c for b in SH_BLOCKS for c in _command_lines(b) if _kind(c) == "serve"})


@pytest.mark.parametrize("command", SERVE_COMMANDS)
def test_serve_examples_start(tmp_path: Path, command: str) -> None:
    ports: dict[str, int] = {}

    def free(match: re.Match[str]) -> str:
        ports[match.group(2)] = _free_port()
        return f"127.0.0.1:{ports[match.group(2)]}"

    argv = shlex.split(re.sub(r"(127\.0\.0\.1|0\.0\.0\.0):(808[01])", free, command))
    argv += ["--listen", "127.0.0.1:0", "--data-dir", str(tmp_path / "data")]
    process = subprocess.Popen(
        [sys.executable, "-m", "minibroker", *argv[1:]],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        assert process.stdout is not None
        deadline = time.monotonic() + RUN_TIMEOUT_S
        while time.monotonic() < deadline:
            line = process.stdout.readline()
            if not line or "minibroker ready on" in line:
                break
        assert "minibroker ready on" in line, line
        paths = {"8080": "/api/overview", "8081": "/subjects"}
        for page_port, port in ports.items():
            url = f"http://127.0.0.1:{port}{paths[page_port]}"
            with urllib.request.urlopen(url, timeout=30) as answer:
                assert answer.status == 200, url
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=30)


# -- configuration ------------------------------------------------------------------------


def _assert_known(names: list[str], where: str) -> None:
    unknown = [name for name in names if not is_known_broker_setting(name)]
    assert not unknown, f"{where}: not broker settings: {unknown}"


@pytest.mark.parametrize(
    "block", [b for b in BLOCKS if b.lang == "properties"], ids=lambda b: b.where
)
def test_properties_examples_load(
    block: Block, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    text = _strip_inline_comments(block.body)
    settings = parse_properties(text)
    _assert_known(list(settings), block.where)
    path = tmp_path / "server.properties"
    path.write_text(text)
    with caplog.at_level(logging.WARNING, logger="minibroker.config"):
        config = load_config(path, environ={})
    assert not caplog.records, [r.getMessage() for r in caplog.records]
    for listener in config.listeners:
        assert isinstance(listener, Listener)


def _strip_inline_comments(text: str) -> str:
    """The pages comment values after them (`key=value   # why`); a properties file cannot."""
    return "\n".join(re.sub(r"\s{2,}#.*$", "", line) for line in text.splitlines())


@pytest.mark.parametrize("block", [b for b in BLOCKS if b.lang == "yaml"], ids=lambda b: b.where)
def test_compose_examples_configure_the_broker(block: Block) -> None:
    text = (REPO / block.snippet).read_text() if block.snippet else block.body
    services = yaml.safe_load(text)["services"]
    for name, service in services.items():
        if "minibroker" not in str(service.get("image", "")):
            continue
        environ = {k: str(v) for k, v in (service.get("environment") or {}).items()}
        image_settings, ignored = from_kafka_image_environment(environ)
        settings = {**image_settings, **from_environment(environ)}
        command = service.get("command") or []
        overrides = [arg.removeprefix("--override=") for arg in command if "--override=" in arg]
        settings.update(parse_overrides(overrides))
        _assert_known(list(settings), f"{block.where} ({name})")
        assert settings or command, name
        for item in settings.get("listeners", "").split(","):
            if item:
                Listener.parse(item)
        # Kafka's KRaft settings are ignored, not taken as minibroker settings.
        assert all(not v.startswith("MINIBROKER_") for v in ignored)
