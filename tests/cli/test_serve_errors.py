"""`minibroker serve` refusing what it cannot do, as a user sees it: the real CLI in a
subprocess. A busy address or a port outside 0-65535 ends with one error line naming the
address and exit status 2 (no traceback); a setting Kafka does not know is warned about once,
with Kafka's words, and the broker still starts."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from minibroker.protocol.api_keys import ApiKey
from tests.wire import WireClient

SERVE = [sys.executable, "-m", "minibroker", "serve", "--in-memory"]
TIMEOUT_S = 60


@pytest.fixture
def busy_address() -> Iterator[str]:
    """An address some other socket is listening on."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        yield f"127.0.0.1:{taken.getsockname()[1]}"


def serve(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*SERVE, *args], capture_output=True, text=True, timeout=TIMEOUT_S, stdin=subprocess.DEVNULL
    )


def assert_refused(result: subprocess.CompletedProcess[str], error_line: str) -> None:
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert error_line in result.stderr.splitlines(), result.stderr
    assert "ready" not in result.stdout


def test_busy_broker_address(busy_address: str) -> None:
    assert_refused(
        serve("--listen", busy_address),
        f"minibroker: listener PLAINTEXT failed to bind to {busy_address}: Address already in use",
    )


@pytest.mark.parametrize(
    ("option", "what"), [("--console", "console"), ("--schema-registry", "schema registry")]
)
def test_busy_web_address(busy_address: str, option: str, what: str) -> None:
    assert_refused(
        serve("--listen", "127.0.0.1:0", option, busy_address),
        f"minibroker: {what} failed to bind to {busy_address}: Address already in use",
    )


@pytest.mark.parametrize(
    "args",
    [
        ["--listen", "127.0.0.1:99999"],
        ["--listen", "127.0.0.1:-1"],
        ["--listen", "127.0.0.1:http"],
        ["--listen", "127.0.0.1:0", "--advertised", "localhost:65536"],
        ["--listen", "127.0.0.1:0", "--console", "127.0.0.1:99999"],
        ["--listen", "127.0.0.1:0", "--schema-registry", "127.0.0.1:99999"],
    ],
)
def test_port_outside_the_range_is_an_argument_error(args: list[str]) -> None:
    result = serve(*args)
    option, address = args[-2:]
    assert_refused(
        result,
        f"minibroker serve: error: argument {option}: expected HOST:PORT with a port from 0 to "
        f"65535, not {address!r}",
    )


def test_listener_port_outside_the_range_in_a_setting(tmp_path: Path) -> None:
    listener = "PLAINTEXT://127.0.0.1:99999"
    assert_refused(
        serve("--override", f"listeners={listener}"),
        f"minibroker: listener {listener!r} needs a port from 0 to 65535",
    )
    properties = tmp_path / "server.properties"
    properties.write_text(f"listeners={listener}\n")
    assert_refused(
        serve("--config", str(properties)),
        f"minibroker: listener {listener!r} needs a port from 0 to 65535",
    )


def test_unknown_settings_are_warned_about_once_and_the_broker_starts(tmp_path: Path) -> None:
    properties = tmp_path / "server.properties"
    properties.write_text("num.partitions=2\nnosuch.setting=1\nzookeeper.connect=zk:2181\n")
    process = subprocess.Popen(
        [
            *SERVE,
            "--listen",
            "127.0.0.1:0",
            "--config",
            str(properties),
            "--override",
            "nosuch.setting=2",
            "--override",
            "other.nosuch=x",
            "--override",
            "process.roles=broker",  # Kafka's, which minibroker does not act on: no warning
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert process.stdout is not None
        ready = process.stdout.readline()
        assert "ready" in ready
        with WireClient(ready.split()[-1]) as client:
            assert client.call(ApiKey.Metadata, 12, topics=None).brokers
    finally:
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=TIMEOUT_S)
    assert process.returncode == 0, stderr
    warnings = [line for line in stderr.splitlines() if "isn't a known config" in line]
    assert [line.split(": ", 1)[1] for line in warnings] == [
        "The configuration 'nosuch.setting' was supplied but isn't a known config.",
        "The configuration 'zookeeper.connect' was supplied but isn't a known config.",
        "The configuration 'other.nosuch' was supplied but isn't a known config.",
    ]
    assert all(" WARNING " in line for line in warnings)
