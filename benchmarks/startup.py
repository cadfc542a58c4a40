"""S1: from start to the first answered ApiVersions — in-process (memory and disk storage),
`minibroker serve` from spawn, and the mock cluster (created until its first answer)."""

from __future__ import annotations

import asyncio
import socket
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from confluent_kafka import Producer

from minibroker.config import BrokerConfig
from minibroker.server.broker import Broker

API_VERSIONS_V0 = struct.pack(">hhih", 18, 0, 1, 5) + b"bench"
REQUEST = struct.pack(">i", len(API_VERSIONS_V0)) + API_VERSIONS_V0


async def _ask_api_versions(host: str, port: int) -> None:
    reader, writer = await asyncio.open_connection(host, port)
    writer.write(REQUEST)
    size = struct.unpack(">i", await reader.readexactly(4))[0]
    await reader.readexactly(size)
    writer.close()


async def _in_process(data_dir: Path | None) -> float:
    settings = {"listeners": "PLAINTEXT://127.0.0.1:0"}
    if data_dir is not None:
        settings["log.dirs"] = str(data_dir)
    started = time.perf_counter()
    broker = Broker(BrokerConfig(settings), in_memory=data_dir is None)
    await broker.start()
    await _ask_api_versions(broker.bound[0].host, broker.bound[0].port)
    elapsed = time.perf_counter() - started
    await broker.stop()
    return elapsed


def in_process_ms(storage: str) -> float:
    if storage == "memory":
        return asyncio.run(_in_process(None)) * 1000
    with tempfile.TemporaryDirectory() as tmp:
        return asyncio.run(_in_process(Path(tmp))) * 1000


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _answered(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
            sock.sendall(REQUEST)
            return len(sock.recv(4)) == 4
    except OSError:
        return False


def serve_ms() -> float:
    """Spawn `minibroker serve` and poll until it answers ApiVersions."""
    port = _free_port()
    with tempfile.TemporaryDirectory() as tmp:
        argv = [sys.executable, "-m", "minibroker", "serve", "--listen", f"127.0.0.1:{port}"]
        argv += ["--data-dir", tmp, "--log-level", "WARNING"]
        started = time.perf_counter()
        process = subprocess.Popen(argv, stdout=subprocess.DEVNULL)
        try:
            while not _answered(port):
                if process.poll() is not None:
                    raise RuntimeError("minibroker serve exited during startup")
                time.sleep(0.001)
            return (time.perf_counter() - started) * 1000
        finally:
            process.terminate()
            process.wait(15)


def mock_ms() -> float:
    started = time.perf_counter()
    holder = Producer({"test.mock.num.brokers": 1, "log_level": 0})
    holder.list_topics(timeout=10)
    return (time.perf_counter() - started) * 1000
