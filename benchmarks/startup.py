"""S1: from start to the first answered ApiVersions — in-process (memory and disk storage),
`minibroker serve` from spawn, and the mock cluster (created until its first answer)."""

from __future__ import annotations

import asyncio
import compileall
import socket
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from confluent_kafka import Producer

import minibroker
from minibroker.testing.cluster import AsyncKafkaCluster, Storage

API_VERSIONS_V0 = struct.pack(">hhih", 18, 0, 1, 5) + b"bench"
REQUEST = struct.pack(">i", len(API_VERSIONS_V0)) + API_VERSIONS_V0


async def _ask_api_versions(host: str, port: int) -> None:
    reader, writer = await asyncio.open_connection(host, port)
    writer.write(REQUEST)
    size = struct.unpack(">i", await reader.readexactly(4))[0]
    await reader.readexactly(size)
    writer.close()


async def _first_answer(nodes: int, storage: Storage) -> float:
    started = time.perf_counter()
    async with AsyncKafkaCluster(nodes, storage=storage, record_requests=False) as cluster:
        host, port = cluster.address(cluster.node_ids[0]).rsplit(":", 1)
        await _ask_api_versions(host, int(port))
        return time.perf_counter() - started


def in_process_ms(storage: Storage) -> float:
    """A broker started in this process (module already imported) until its first answer."""
    return asyncio.run(_first_answer(1, storage)) * 1000


def cluster_ms() -> float:
    return asyncio.run(_first_answer(3, "memory")) * 1000


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


def _compile_minibroker() -> None:
    """Bytecode for every module, as pip writes it when it installs the package (and the
    Docker image has it). Without it an editable checkout under PYTHONDONTWRITEBYTECODE (set
    here, as in many CI and container setups) compiles all ~130 modules at every start."""
    compileall.compile_dir(Path(minibroker.__file__).parent, quiet=1)


def serve_ms() -> float:
    """Spawn `minibroker serve` (bytecode compiled, as installed) and poll until it answers
    ApiVersions."""
    _compile_minibroker()
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
