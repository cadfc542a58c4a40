"""Run one job with one real Kafka client: `run_client("java-4.3", job)` -> result dict.

The job protocol is in README.md. Each client's program runs as a subprocess (installed on
first use, see install.py) with the job on stdin and prints one JSON result line; this module
returns that result, `ok` true or false. A client that crashes, hangs past `timeout_s` or
prints no result raises ClientRunError carrying its stderr.

Java and kafkajs jobs go to a job server instead (job_server.py): one process per client,
started on its first job and shared by this pytest process, unless MINIBROKER_CLIENT_SERVERS=0
or the job needs a process of its own (needs_own_process).
"""

from __future__ import annotations

import atexit
import json
import os
import subprocess
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from tests.quick import require_external

from . import install
from .job_server import JobServer, ServerDied, ServerGone, ServerTimeout

CLIENTS = [
    "java-4.3",
    "java-3.9",
    "kafka-python-3",
    "kafka-python-2",
    "aiokafka",
    "confluent-kafka",
    "kcat",
    "kafkajs",
]

INSTALLERS: dict[str, Callable[[], install.ClientCommand]] = {
    "java-4.3": install.install_java_4_3,
    "java-3.9": install.install_java_3_9,
    "kafka-python-3": install.install_kafka_python_3,
    "kafka-python-2": install.install_kafka_python_2,
    "aiokafka": install.install_aiokafka,
    "confluent-kafka": install.install_confluent_kafka,
    "kcat": install.install_kcat,
    "kafkajs": install.install_kafkajs,
}

ALL_CODECS = frozenset({"none", "gzip", "snappy", "lz4", "zstd"})
PRODUCE_CONSUME = frozenset({"produce", "consume", "group_member"})
TRANSACTION_OPS = frozenset({"transform", "fence"})
ADMIN_OPS = frozenset(
    {
        "metadata",
        "create_topics",
        "delete_topics",
        "create_partitions",
        "describe_configs",
        "alter_configs",
        "list_offsets",
        "delete_records",
    }
)

GROUP_ADMIN_OPS = frozenset(
    {
        "list_groups",
        "describe_groups",
        "delete_groups",
        "list_group_offsets",
        "alter_group_offsets",
        "delete_group_offsets",
    }
)

ACL_OPS = frozenset({"create_acls", "describe_acls", "delete_acls"})

REPLICATION_OPS = frozenset({"elect_leaders", "alter_reassignments", "list_reassignments"})


@dataclass(frozen=True)
class Capabilities:
    """What a client's program can express; a job outside these gets the client's own error."""

    ops: frozenset[str]
    codecs: frozenset[str] = ALL_CODECS
    null_header_values: bool = True
    # A record with neither key nor value (kafka-python refuses to send one).
    null_key_and_value: bool = True
    # Headers come back in the order sent, also when names repeat non-adjacently.
    header_order: bool = True
    record_timestamps: bool = True  # the job may set each record's timestamp
    ack_timestamps: bool = True  # produce results carry the acknowledged timestamp
    consume_without_group: bool = True  # consumes by assignment, no group APIs needed
    transactions: bool = True  # produce jobs may carry a transactional_id
    # produce results carry throttle_time_ms_max, the broker's throttle time as the client saw it
    throttle_time: bool = True


CAPABILITIES: dict[str, Capabilities] = {
    "java-4.3": Capabilities(
        PRODUCE_CONSUME | ADMIN_OPS | GROUP_ADMIN_OPS | TRANSACTION_OPS | ACL_OPS | REPLICATION_OPS
    ),
    "java-3.9": Capabilities(
        PRODUCE_CONSUME | ADMIN_OPS | GROUP_ADMIN_OPS | TRANSACTION_OPS | ACL_OPS | REPLICATION_OPS
    ),
    "kafka-python-3": Capabilities(
        PRODUCE_CONSUME | ADMIN_OPS | GROUP_ADMIN_OPS | ACL_OPS,
        null_header_values=False,
        null_key_and_value=False,
    ),
    "kafka-python-2": Capabilities(
        PRODUCE_CONSUME, null_header_values=False, null_key_and_value=False
    ),
    "aiokafka": Capabilities(PRODUCE_CONSUME, throttle_time=False),
    # confluent-kafka's AdminClient has no DeleteConsumerGroupOffsets.
    "confluent-kafka": Capabilities(
        PRODUCE_CONSUME
        | ADMIN_OPS
        | GROUP_ADMIN_OPS - {"delete_group_offsets"}
        | TRANSACTION_OPS
        | ACL_OPS
    ),
    "kcat": Capabilities(
        PRODUCE_CONSUME,
        record_timestamps=False,
        ack_timestamps=False,
        transactions=False,
        throttle_time=False,
    ),
    "kafkajs": Capabilities(
        PRODUCE_CONSUME | ADMIN_OPS | ACL_OPS,
        null_header_values=False,
        header_order=False,
        consume_without_group=False,
    ),
}

# Room for JVM start-up and connection set-up on top of the job's own timeout_ms.
START_UP_ALLOWANCE_S = 30.0


class ClientRunError(RuntimeError):
    """The client program crashed, timed out or printed no result (not a Kafka error)."""


class ClientFailed(AssertionError):
    """run_ok: the client reported a failure (`ok` false) for a job expected to succeed."""


_commands: dict[str, install.ClientCommand] = {}
_commands_lock = threading.Lock()


def installed(name: str) -> install.ClientCommand:
    """Install `name` on first use in this process; raises install.InstallError.

    In the quick loop (tests/quick.py) every client program skips the test: each is a process
    of its own (a JVM, node, kcat, or a Python client's program)."""
    if name not in INSTALLERS:
        raise KeyError(f"unknown client {name!r}; known: {', '.join(CLIENTS)}")
    require_external(f"the {name} client")
    with _commands_lock:
        known = _commands.get(name)
    if known is None:
        known = INSTALLERS[name]()  # install.py's file locks serialise concurrent installs
        with _commands_lock:
            _commands[name] = known
    return known


def install_all(names: Iterable[str] = CLIENTS) -> dict[str, install.ClientCommand]:
    """Install several clients at once (downloads overlap); raises the first failure."""
    names = list(names)
    with ThreadPoolExecutor(max_workers=max(1, len(names))) as pool:
        return dict(zip(names, pool.map(installed, names), strict=True))


def servers_enabled() -> bool:
    """MINIBROKER_CLIENT_SERVERS=0 runs every job in a process of its own."""
    return os.environ.get("MINIBROKER_CLIENT_SERVERS", "1") != "0"


def needs_own_process(job: dict[str, Any]) -> bool:
    """Jobs that end their process on purpose (a crash: an open transaction, `crash_after`) or
    wait for a signal printing event lines (group_member, a holding share_consume)."""
    return (
        job.get("op") in ("group_member", "jepsen_workers")
        or bool(job.get("hold"))
        or job.get("transaction") == "open"
        or job.get("crash_after") is not None
    )


_servers: dict[str, JobServer] = {}
_servers_lock = threading.Lock()


def job_server(name: str) -> JobServer:
    """The running job server of client `name`, started (again, if it died) here."""
    command = installed(name)
    if command.server_argv is None:
        raise KeyError(f"{name} has no job server")
    with _servers_lock:
        server = _servers.get(name)
        if server is None or not server.alive:
            if not _servers:
                atexit.register(close_servers)
            server = JobServer(name, command.server_argv, command.env)
            _servers[name] = server
        return server


def close_servers() -> None:
    with _servers_lock:
        servers = list(_servers.values())
        _servers.clear()
    for server in servers:
        server.close()


def run_client(
    name: str, job: dict[str, Any], timeout_s: float | None = None, *, keep_stderr: bool = False
) -> dict[str, Any]:
    """Run `job` with client `name`; return its result (`ok` true or false).

    `timeout_s` bounds the whole job (start-up included); by default the job's `timeout_ms`
    plus start-up. `keep_stderr`: the result carries the program's `stderr` also when `ok`.
    """
    command = installed(name)
    if timeout_s is None:
        timeout_s = job.get("timeout_ms", 30_000) / 1000 + START_UP_ALLOWANCE_S
    if command.server_argv is not None and servers_enabled() and not needs_own_process(job):
        result, stderr = run_on_server(name, job, timeout_s)
    else:
        result, stderr = run_in_process(name, command, job, timeout_s)
    if not result.get("ok"):
        result["client"] = name
    if keep_stderr or not result.get("ok"):
        result["stderr"] = stderr[-20_000:]
    return result


def run_in_process(
    name: str, command: install.ClientCommand, job: dict[str, Any], timeout_s: float
) -> tuple[dict[str, Any], str]:
    """The job's result and stderr from a process of its own."""
    try:
        done = subprocess.run(
            command.argv,
            input=json.dumps(job),
            capture_output=True,
            text=True,
            timeout=timeout_s,
            env={**os.environ, **command.env},
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        stderr = (
            exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else exc.stderr
        )
        raise ClientRunError(
            f"{name} {job.get('op')}: no result within {timeout_s:.0f} s; stderr:\n{stderr or ''}"
        ) from exc
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    try:
        result: dict[str, Any] = json.loads(lines[-1])
    except (IndexError, ValueError) as exc:
        raise ClientRunError(
            f"{name} {job.get('op')}: exit code {done.returncode}, no JSON result\n"
            f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}"
        ) from exc
    return result, done.stderr


def run_on_server(name: str, job: dict[str, Any], timeout_s: float) -> tuple[dict[str, Any], str]:
    """The job's result and stderr from the client's job server.

    A job that never reached the server (it had just died) goes to a new one; a job in flight
    when it died fails with the server's stderr.
    """
    label = f"{name} {job.get('op')}"
    try:
        try:
            reply = job_server(name).run(job, timeout_s)
        except ServerGone:
            reply = job_server(name).run(job, timeout_s)
    except ServerTimeout as exc:
        raise ClientRunError(
            f"{label}: no result within {timeout_s:.0f} s (job server); stderr:\n{exc.stderr}"
        ) from exc
    except ServerDied as exc:
        raise ClientRunError(f"{label}: {exc}") from exc
    stderr = str(reply.get("stderr", ""))
    if "crash" in reply:
        raise ClientRunError(
            f"{label}: the job crashed (a process of its own would have died), no result\n"
            f"{reply['crash']}\nstderr:\n{stderr}"
        )
    result: dict[str, Any] = reply["result"]
    return result, stderr


def start_client(name: str, job: dict[str, Any]) -> subprocess.Popen[str]:
    """Start a long-running job (`group_member`) with stdout piped for its event lines.

    The program leads a process group of its own (kcat's runs kcat as a child), so that
    `os.killpg(process.pid, signal.SIGKILL)` crashes all of it; `process.terminate()` asks
    the program to stop cleanly.
    """
    command = installed(name)
    process = subprocess.Popen(
        command.argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **command.env},
        start_new_session=True,
    )
    assert process.stdin is not None
    process.stdin.write(json.dumps(job))
    process.stdin.close()
    return process


def run_ok(name: str, job: dict[str, Any], timeout_s: float | None = None) -> dict[str, Any]:
    """run_client, raising ClientFailed (with the client's error and stderr) unless ok."""
    result = run_client(name, job, timeout_s)
    if not result.get("ok"):
        raise ClientFailed(
            f"{name} {job.get('op')} failed: {result.get('error')}\n"
            f"{result.get('traceback', '')}\nstderr:\n{result.get('stderr', '')}"
        )
    return result
