"""`minibroker healthcheck`: exit 0 when the broker completes an ApiVersions round trip.

Docker's HEALTHCHECK runs it inside the container every few seconds, so it stays light: the
standard library and `minibroker.config` only, one hand-built ApiVersions v0 request (the
version every Kafka broker answers, with an empty body). Without `--bootstrap` it reads the
same configuration as `minibroker serve` (`--config`, `MINIBROKER_*` variables, `--override`)
and connects to the first listener; a wildcard host means this machine's loopback address.
"""

from __future__ import annotations

import argparse
import os
import socket
import struct
import sys
from dataclasses import dataclass
from pathlib import Path

from minibroker.config import BrokerConfig, ConfigError, Listener, load_config, parse_overrides
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.errors import ErrorCode

API_VERSIONS_V0 = 0
CORRELATION_ID = 0x4D42  # "MB"
CLIENT_ID = b"minibroker-healthcheck"
MAX_RESPONSE_BYTES = 1 << 20

_SIZE = struct.Struct(">i")
_REQUEST_HEADER_V1 = struct.Struct(">hhih")
_RESPONSE_PREFIX = struct.Struct(">ihi")  # correlation id, error code, api_keys count
_API_VERSION_ENTRY = struct.Struct(">hhh")  # api key, min version, max version

_LOOPBACK_FOR_WILDCARD = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}


class HealthCheckFailed(Exception):
    """The broker did not answer, or answered something other than a healthy ApiVersions."""


@dataclass(frozen=True)
class ApiVersionsResult:
    error_code: int
    api_keys: dict[int, tuple[int, int]]


def address_to_check(config: BrokerConfig) -> tuple[str, int]:
    """Where a client on this machine reaches the broker's first listener."""
    listeners: list[Listener] = config.listeners
    if not listeners:
        raise HealthCheckFailed("no listeners configured")
    first = listeners[0]
    return _LOOPBACK_FOR_WILDCARD.get(first.host, first.host), first.port


def api_versions_request() -> bytes:
    header = _REQUEST_HEADER_V1.pack(
        ApiKey.ApiVersions, API_VERSIONS_V0, CORRELATION_ID, len(CLIENT_ID)
    )
    payload = header + CLIENT_ID
    return _SIZE.pack(len(payload)) + payload


def parse_api_versions_v0(body: bytes) -> ApiVersionsResult:
    if len(body) < _RESPONSE_PREFIX.size:
        raise HealthCheckFailed(f"ApiVersions response of {len(body)} bytes is too short")
    correlation_id, error_code, count = _RESPONSE_PREFIX.unpack_from(body)
    if correlation_id != CORRELATION_ID:
        raise HealthCheckFailed(f"response has correlation id {correlation_id}")
    expected_size = _RESPONSE_PREFIX.size + max(count, 0) * _API_VERSION_ENTRY.size
    if len(body) != expected_size:
        raise HealthCheckFailed(f"ApiVersions response is {len(body)} bytes, not {expected_size}")
    entries = (
        _API_VERSION_ENTRY.unpack_from(body, _RESPONSE_PREFIX.size + i * _API_VERSION_ENTRY.size)
        for i in range(max(count, 0))
    )
    return ApiVersionsResult(error_code, {key: (low, high) for key, low, high in entries})


def _recv_exactly(sock: socket.socket, size: int) -> bytes:
    data = bytearray()
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise HealthCheckFailed("connection closed before the response was complete")
        data += chunk
    return bytes(data)


def check(host: str, port: int, timeout: float) -> ApiVersionsResult:
    """One ApiVersions round trip; raises HealthCheckFailed unless the broker is healthy."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.sendall(api_versions_request())
            (size,) = _SIZE.unpack(_recv_exactly(sock, _SIZE.size))
            if not 0 < size <= MAX_RESPONSE_BYTES:
                raise HealthCheckFailed(f"response frame size {size}")
            result = parse_api_versions_v0(_recv_exactly(sock, size))
    except OSError as exc:
        raise HealthCheckFailed(f"{host}:{port}: {exc}") from exc
    if result.error_code != ErrorCode.NO_ERROR:
        raise HealthCheckFailed(f"ApiVersions answered error code {result.error_code}")
    if ApiKey.ApiVersions not in result.api_keys:
        raise HealthCheckFailed("ApiVersions response does not list ApiVersions")
    return result


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    _add_arguments(sub.add_parser("healthcheck", help="exit 0 if the broker answers ApiVersions"))


def _add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--bootstrap", metavar="HOST:PORT", help="default: the first listener")
    parser.add_argument("--config", type=Path, help="a server.properties file")
    parser.add_argument(
        "--override", action="append", default=[], metavar="KEY=VALUE", help="a broker setting"
    )
    parser.add_argument("--timeout", type=float, default=3.0, help="seconds (default 3)")


def main(args: argparse.Namespace) -> int:
    try:
        if args.bootstrap:
            host, _, port = args.bootstrap.rpartition(":")
            address = host.strip("[]"), int(port)
        else:
            config = load_config(args.config, parse_overrides(args.override), os.environ)
            address = address_to_check(config)
        check(*address, timeout=args.timeout)
    except (HealthCheckFailed, ConfigError, ValueError, OSError) as exc:
        print(f"minibroker healthcheck: unhealthy: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    # `python -m minibroker.healthcheck`: the image's HEALTHCHECK, which Docker runs every
    # second, without the imports of the `minibroker` command's other subcommands.
    _parser = argparse.ArgumentParser(prog="minibroker healthcheck")
    _add_arguments(_parser)
    sys.exit(main(_parser.parse_args()))
