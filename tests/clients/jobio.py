"""The JSON job protocol, as the Python client programs speak it (see README.md).

Imported by the client programs, which run as scripts under whichever interpreter has their
client installed (kafka-python 2 lives in its own venv), so this module uses only the
standard library.
"""

from __future__ import annotations

import base64
import json
import os
import signal
import sys
import time
import traceback
from collections.abc import Callable, Mapping
from typing import Any

Job = dict[str, Any]
Result = dict[str, Any]
Handler = Callable[[Job], Result]

DEFAULT_TIMEOUT_MS = 30_000
# The real stdout: serve() points sys.stdout at stderr so that only the protocol's lines reach it.
_protocol_stream = sys.stdout


def read_job() -> Job:
    text = sys.argv[1] if len(sys.argv) > 1 else sys.stdin.read()
    job: Job = json.loads(text)
    return job


def b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode("ascii")


def unb64(text: str | None) -> bytes | None:
    return None if text is None else base64.b64decode(text)


def headers_out(headers: Any) -> list[list[str | None]]:
    """Client headers (name, bytes|None) pairs as the protocol's [name, b64|null] pairs."""
    return [
        [name if isinstance(name, str) else name.decode(), b64(value)]
        for name, value in headers or []
    ]


def headers_in(record: Mapping[str, Any]) -> list[tuple[str, bytes | None]]:
    return [(name, unb64(value)) for name, value in record.get("headers") or []]


# --- ACL bindings and filters (README.md): Kafka's enum names in jobs, its codes on the wire ---


def _codes(*names: str) -> dict[str, int]:
    return {name: code for code, name in enumerate(names)}


ACL_CODES = {
    "resource_type": _codes(
        "UNKNOWN",
        "ANY",
        "TOPIC",
        "GROUP",
        "CLUSTER",
        "TRANSACTIONAL_ID",
        "DELEGATION_TOKEN",
        "USER",
    ),
    "pattern_type": _codes("UNKNOWN", "ANY", "MATCH", "LITERAL", "PREFIXED"),
    "operation": _codes(
        "UNKNOWN",
        "ANY",
        "ALL",
        "READ",
        "WRITE",
        "CREATE",
        "DELETE",
        "ALTER",
        "DESCRIBE",
        "CLUSTER_ACTION",
        "DESCRIBE_CONFIGS",
        "ALTER_CONFIGS",
        "IDEMPOTENT_WRITE",
        "CREATE_TOKENS",
        "DESCRIBE_TOKENS",
        "TWO_PHASE_COMMIT",
    ),
    "permission_type": _codes("UNKNOWN", "ANY", "DENY", "ALLOW"),
}
ACL_FIELDS = (
    "resource_type",
    "resource_name",
    "pattern_type",
    "principal",
    "host",
    "operation",
    "permission_type",
)
# A binding's optional fields; a filter's absent fields match anything.
ACL_BINDING_DEFAULTS = {"pattern_type": "LITERAL", "host": "*", "permission_type": "ALLOW"}
ACL_FILTER_DEFAULTS = {
    "resource_type": "ANY",
    "pattern_type": "ANY",
    "operation": "ANY",
    "permission_type": "ANY",
}


def acl_codes(spec: Mapping[str, Any], defaults: Mapping[str, Any]) -> dict[str, Any]:
    """A job's binding or filter with its enum fields as Kafka's codes (names stay names)."""
    fields = {name: spec.get(name, defaults.get(name)) for name in ACL_FIELDS}
    for name, codes in ACL_CODES.items():
        fields[name] = codes[fields[name]]
    return fields


def acl_names(*values: Any) -> dict[str, Any]:
    """A binding for the result, from its seven fields in ACL_FIELDS order (enums as codes)."""
    fields = dict(zip(ACL_FIELDS, values, strict=True))
    for name, codes in ACL_CODES.items():
        fields[name] = next(known for known, code in codes.items() if code == int(fields[name]))
    return fields


class Deadline:
    """Milliseconds left of a job's `timeout_ms`."""

    def __init__(self, job: Job) -> None:
        self.end: float = time.monotonic() + job.get("timeout_ms", DEFAULT_TIMEOUT_MS) / 1000

    def remaining_ms(self) -> int:
        return max(0, int((self.end - time.monotonic()) * 1000))

    def expired(self) -> bool:
        return time.monotonic() >= self.end


def failure(exc: BaseException, error_name: str | None) -> Result:
    return {
        "ok": False,
        "error": f"{type(exc).__name__}: {exc}",
        "error_name": error_name,
        "traceback": traceback.format_exc(),
    }


def serve(
    handlers: Mapping[str, Handler], error_name: Callable[[BaseException], str | None]
) -> None:
    """Run the job from argv/stdin and print its one-line JSON result on the real stdout.

    Anything the client prints goes to stderr, so stdout carries only the result.
    """
    sys.stdout = sys.stderr
    job = read_job()
    handler = handlers.get(job["op"])
    result: Result
    if handler is None:
        result = {
            "ok": False,
            "error": f"unsupported op {job['op']!r}",
            "error_name": "UNSUPPORTED_OP",
        }
    else:
        try:
            result = handler(job)
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as exc:  # asyncio's CancelledError is not an Exception
            result = failure(exc, error_name(exc))
    crash = bool(result.pop("crash", False))
    _protocol_stream.write(json.dumps(result) + "\n")
    _protocol_stream.flush()
    if crash:
        os._exit(0)  # as a crashed client: nothing is closed, open transactions stay open


# --- the group_member op's event lines (README.md) ---


def event(name: str, **fields: Any) -> None:
    """Print one event line (before the result line) and flush it at once."""
    _protocol_stream.write(json.dumps({"event": name, **fields}) + "\n")
    _protocol_stream.flush()


def assigned(partitions: Any, **extra: Any) -> None:
    event("assigned", partitions=sorted(partitions), **extra)


def consumed(partition: int, offset: int, value: bytes | None, **extra: Any) -> None:
    event("record", **extra, partition=partition, offset=offset, value=b64(value))


class StopOnSigterm:
    """`requested` turns true on SIGTERM: the member closes its consumer and leaves."""

    requested = False

    def __init__(self) -> None:
        signal.signal(signal.SIGTERM, self._stop)

    def _stop(self, *_: object) -> None:
        self.requested = True
