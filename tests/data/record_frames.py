"""Record the request frames real clients send, for tests/data/golden-frames-style test data.

    python -m tests.data.record_frames --out /tmp/frames [--client java-4.3 ...] [--upstream H:P]

Starts a recording proxy on 127.0.0.1 in front of a broker (an in-process minibroker advertising
the proxy's address, or `--upstream`, a broker already told to advertise the proxy), runs a
produce and a consume-in-a-group job with each client (tests/clients/runner.py) and writes the
first frame of every API key and version each client sent: `<out>/<client>/<Api>-v<N>.bin`
(request header and body, without the 4-byte size prefix) and `<out>/index.json`.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import json
import socket
import struct
import tempfile
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from minibroker.protocol.api_keys import ApiKey
from minibroker.testing.threaded import ThreadedBroker
from tests.clients.mock_proxy import read_frame
from tests.clients.runner import CLIENTS, run_ok

_HEADER = struct.Struct(">hhi")


class RecordingProxy:
    """Forwards connections to `upstream`; keeps the first frame per (client, key, version)."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self.client = ""
        self.frames: dict[tuple[str, int, int], bytes] = {}
        self._lock = threading.Lock()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            downstream, _ = self._listener.accept()
            upstream = socket.create_connection(self.upstream)
            threading.Thread(
                target=self._requests, args=(downstream, upstream), daemon=True
            ).start()
            threading.Thread(target=self._answers, args=(upstream, downstream), daemon=True).start()

    def _requests(self, downstream: socket.socket, upstream: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while (frame := read_frame(downstream)) is not None:
                api_key, api_version, _ = _HEADER.unpack_from(frame)
                with self._lock:
                    self.frames.setdefault((self.client, api_key, api_version), frame)
                upstream.sendall(struct.pack(">i", len(frame)) + frame)
        upstream.close()

    @staticmethod
    def _answers(upstream: socket.socket, downstream: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while chunk := upstream.recv(65536):
                downstream.sendall(chunk)
        downstream.close()


def exercise(client: str, bootstrap: str) -> None:
    """Produce three records, then consume them in a group (commits offsets)."""
    topic = f"rec-{uuid.uuid4().hex[:6]}"
    records = [
        {"key": None, "value": base64.b64encode(f"v{n}".encode()).decode(), "headers": []}
        for n in range(3)
    ]
    run_ok(client, {"op": "produce", "bootstrap": bootstrap, "topic": topic, "records": records})
    run_ok(
        client,
        {"op": "consume", "bootstrap": bootstrap, "topic": topic, "group": topic, "count": 3},
    )


def index_entry(client: str, key: int, version: int, frame: bytes) -> dict[str, Any]:
    _, _, correlation_id = _HEADER.unpack_from(frame)
    (id_length,) = struct.unpack_from(">h", frame, _HEADER.size)
    client_id = None if id_length < 0 else frame[10 : 10 + id_length].decode()
    return {
        "file": f"{client}/{ApiKey(key).name}-v{version}.bin",
        "client": client,
        "client_id": client_id,
        "api_key": key,
        "api_name": f"{ApiKey(key).name}Request",
        "api_version": version,
        "correlation_id": correlation_id,
        "size": len(frame),
    }


def write(frames: dict[tuple[str, int, int], bytes], out: Path) -> None:
    entries = []
    for (client, key, version), frame in sorted(frames.items()):
        entry = index_entry(client, key, version, frame)
        (out / client).mkdir(parents=True, exist_ok=True)
        (out / entry["file"]).write_bytes(frame)
        entries.append(entry)
    index = {"frame_format": "request frame without the 4-byte size prefix", "frames": entries}
    (out / "index.json").write_text(json.dumps(index, indent=1) + "\n")


@contextlib.contextmanager
def upstream_broker(given: str | None, proxy_port: int) -> Iterator[tuple[str, int]]:
    if given is not None:
        host, _, port = given.rpartition(":")
        yield host, int(port)
        return
    with (
        tempfile.TemporaryDirectory() as data,
        ThreadedBroker(
            Path(data),
            {"advertised.listeners": f"PLAINTEXT://127.0.0.1:{proxy_port}"},
        ) as broker,
    ):
        host, _, port = broker.bootstrap_servers.rpartition(":")
        yield host, int(port)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--client", action="append", choices=CLIENTS)
    parser.add_argument("--upstream", help="host:port of a broker advertising the proxy")
    args = parser.parse_args()
    proxy = RecordingProxy(("127.0.0.1", 0))
    with upstream_broker(args.upstream, proxy.port) as upstream:
        proxy.upstream = upstream
        for client in args.client or CLIENTS:
            proxy.client = client
            exercise(client, f"127.0.0.1:{proxy.port}")
    write(proxy.frames, args.out)
    print(f"{len(proxy.frames)} frames in {args.out}")


if __name__ == "__main__":
    main()
