"""Idempotent producers retrying a batch whose acknowledgement was lost.

A small TCP proxy sits between the client and the broker (the broker advertises the proxy's
address, so every connection goes through it). It forwards everything, except that the
first Produce response is swallowed and that connection dropped: the batch is stored, the
client never hears so, and it retries with the same producer id, epoch and sequence. The
broker must answer the retry with the original offsets and store the records once.
"""

from __future__ import annotations

import base64
import contextlib
import socket
import struct
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from minibroker.protocol.api_keys import ApiKey
from minibroker.records.batch import BatchHeader, split_batches
from minibroker.testing.threaded import ThreadedBroker
from tests.clients.runner import run_ok

pytestmark = pytest.mark.clients


def _read_exactly(sock: socket.socket, size: int) -> bytes | None:
    data = bytearray()
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            return None
        data += chunk
    return bytes(data)


def _read_frame(sock: socket.socket) -> bytes | None:
    size = _read_exactly(sock, 4)
    if size is None:
        return None
    body = _read_exactly(sock, struct.unpack(">i", size)[0])
    return None if body is None else size + body


def _hang_up(sock: socket.socket) -> None:
    """shutdown() first: a bare close() leaves a socket that another thread reads open."""
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    sock.close()


class AckDroppingProxy:
    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.target_port = 0
        self.dropped = threading.Event()
        self._produce_ids: set[int] = set()
        self._lock = threading.Lock()

    def start(self, target_port: int) -> None:
        self.target_port = target_port
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.target_port))
            threading.Thread(target=self._requests, args=(client, upstream), daemon=True).start()
            threading.Thread(target=self._responses, args=(upstream, client), daemon=True).start()

    def _requests(self, client: socket.socket, upstream: socket.socket) -> None:
        try:
            while (frame := _read_frame(client)) is not None:
                api_key, _, correlation_id = struct.unpack_from(">hhi", frame, 4)
                if api_key == ApiKey.Produce:
                    with self._lock:
                        self._produce_ids.add(correlation_id)
                upstream.sendall(frame)
        except OSError:
            pass
        finally:
            _hang_up(upstream)

    def _responses(self, upstream: socket.socket, client: socket.socket) -> None:
        try:
            while (frame := _read_frame(upstream)) is not None:
                (correlation_id,) = struct.unpack_from(">i", frame, 4)
                with self._lock:
                    is_produce = correlation_id in self._produce_ids
                if is_produce and not self.dropped.is_set():
                    self.dropped.set()
                    break
                client.sendall(frame)
        except OSError:
            pass
        finally:
            _hang_up(client)
            _hang_up(upstream)

    def close(self) -> None:
        self.listener.close()


@pytest.fixture
def proxied_broker(tmp_path: Path) -> Iterator[tuple[ThreadedBroker, AckDroppingProxy]]:
    proxy = AckDroppingProxy()
    settings = {"advertised.listeners": f"PLAINTEXT://127.0.0.1:{proxy.port}"}
    with ThreadedBroker(data_dir=tmp_path / "data", settings=settings) as running:
        proxy.start(running.port)
        yield running, proxy
    proxy.close()


RETRY_CONFIGS: dict[str, dict[str, Any]] = {
    "java-4.3": {"retries": "5", "retry.backoff.ms": "50"},
    "confluent-kafka": {"enable.idempotence": "true", "retry.backoff.ms": "50"},
    "kafka-python-3": {"retry_backoff_ms": 50},
}


@pytest.mark.parametrize("client", sorted(RETRY_CONFIGS))
def test_retried_batch_is_stored_once(
    proxied_broker: tuple[ThreadedBroker, AckDroppingProxy], client: str
) -> None:
    running, proxy = proxied_broker
    records = [
        {
            "key": None,
            "value": base64.b64encode(b"once-%d" % i).decode(),
            "headers": [],
            "partition": 0,
        }
        for i in range(10)
    ]
    result = run_ok(
        client,
        {
            "op": "produce",
            "bootstrap": f"127.0.0.1:{proxy.port}",
            "topic": "retried",
            "records": records,
            "idempotent": True,
            "config": RETRY_CONFIGS[client],
        },
    )
    assert proxy.dropped.is_set(), "the proxy never saw a Produce response to drop"
    assert sorted(r["offset"] for r in result["results"]) == list(range(10))
    assert running.broker is not None
    partition = running.broker.cluster.partition("retried", 0)
    assert partition is not None
    assert partition.log.log_end_offset == 10
    headers = [BatchHeader.parse(b) for b in split_batches(partition.log.read(0, 1 << 20))]
    assert sum(h.records_count for h in headers) == 10
    assert all(h.producer_id >= 0 for h in headers)
