"""A TCP proxy in front of librdkafka's mock cluster that lets Java and kafka-python 3 in.

Both clients open with ApiVersions v4. The mock answers versions it lacks with a body that
is neither Kafka's v0 fallback layout nor valid v4, so kafka-python 3 cannot decode it and
Java reads a throttle time of ~20 minutes from it and never sends another request. The proxy
rewrites that one answer into Kafka's own fallback (v0 layout, UNSUPPORTED_VERSION, key 18's
range), and rewrites broker addresses in Metadata and FindCoordinator answers to itself so
that every connection goes through it. It serves a one-broker mock cluster only.

Used by the harness self-test only; the broker's own tests talk to minibroker directly.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
from typing import Any

from kafka.protocol.metadata import FindCoordinatorResponse, MetadataResponse

API_VERSIONS, METADATA, FIND_COORDINATOR = 18, 3, 10
UNSUPPORTED_VERSION = 35
MOCK_API_VERSIONS_MAX = 2  # what the mock's own (malformed) fallback advertises


def read_exactly(sock: socket.socket, size: int) -> bytes | None:
    chunks = bytearray()
    while len(chunks) < size:
        chunk = sock.recv(size - len(chunks))
        if not chunk:
            return None
        chunks += chunk
    return bytes(chunks)


def read_frame(sock: socket.socket) -> bytes | None:
    size = read_exactly(sock, 4)
    return None if size is None else read_exactly(sock, struct.unpack(">i", size)[0])


def send_frame(sock: socket.socket, payload: bytes) -> None:
    sock.sendall(struct.pack(">i", len(payload)) + payload)


class MockClusterProxy:
    def __init__(self, mock_address: tuple[str, int]) -> None:
        self.mock_address = mock_address
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self.listener.getsockname()[1]
        self.closed = threading.Event()
        threading.Thread(target=self.accept_loop, daemon=True).start()

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def close(self) -> None:
        self.closed.set()
        self.listener.close()

    def accept_loop(self) -> None:
        while not self.closed.is_set():
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(self.mock_address)
            requests: dict[int, tuple[int, int]] = {}
            threading.Thread(
                target=self.pump_requests, args=(client, upstream, requests), daemon=True
            ).start()
            threading.Thread(
                target=self.pump_responses, args=(upstream, client, requests), daemon=True
            ).start()

    def pump_requests(
        self, client: socket.socket, upstream: socket.socket, requests: dict[int, tuple[int, int]]
    ) -> None:
        with client, upstream, contextlib.suppress(OSError):
            while (frame := read_frame(client)) is not None:
                api_key, version, correlation_id = struct.unpack_from(">hhi", frame)
                requests[correlation_id] = (api_key, version)
                send_frame(upstream, frame)

    def pump_responses(
        self, upstream: socket.socket, client: socket.socket, requests: dict[int, tuple[int, int]]
    ) -> None:
        with client, upstream, contextlib.suppress(OSError):
            while (frame := read_frame(upstream)) is not None:
                (correlation_id,) = struct.unpack_from(">i", frame)
                api_key, version = requests.pop(correlation_id, (-1, -1))
                send_frame(client, self.rewrite(api_key, version, frame))

    def rewrite(self, api_key: int, version: int, frame: bytes) -> bytes:
        if api_key == API_VERSIONS and version >= 3:
            (error_code,) = struct.unpack_from(">h", frame, 4)
            if error_code == UNSUPPORTED_VERSION:
                correlation_id = frame[:4]
                body = struct.pack(">hihhh", UNSUPPORTED_VERSION, 1, API_VERSIONS, 0, 2)
                return correlation_id + body
        if api_key == METADATA:
            return self.readdress(MetadataResponse, version, frame, "brokers")
        if api_key == FIND_COORDINATOR:
            return self.readdress(FindCoordinatorResponse, version, frame, "coordinators")
        return frame

    def readdress(self, response_type: Any, version: int, frame: bytes, field: str) -> bytes:
        # Response header: correlation id, then (flexible versions) tagged fields, here none.
        header_size = 5 if response_type.flexible_version_q(version) else 4
        response = response_type.decode(frame[header_size:], version=version)
        response._header = None  # kafka-python's decode leaves it unset; encode reads it
        if version < 4 and hasattr(response, "host"):
            response.host, response.port = "127.0.0.1", self.port
        for node in getattr(response, field, None) or []:
            node.host, node.port = "127.0.0.1", self.port
        return frame[:header_size] + bytes(response.encode(version=version))
