"""The image's start: `docker run` to the first ApiVersions answer, and to Docker's healthy.

    python -m benchmarks.image_start [--image minibroker] [--runs 10] [-- ARGUMENTS ...]

ARGUMENTS replace the image's command (its default starts the web console and the Schema
Registry too; `-- --log-level INFO` starts the broker alone, as the Kafka images do).

Each run starts a container on Docker's default bridge with the broker's port published on
127.0.0.1 (as Testcontainers does; `--host-network`: on the host's network), asks ApiVersions
every 20 ms from the moment `docker run` is started until one is answered, then polls Docker
until it reports the container healthy, and removes the container. Printed: the image's size
and, for each milestone, the median, the fastest and the slowest of the runs, beside
apache/kafka-native's published start-up figures (KIP-974: the broker process from start to
"Kafka Server started").
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import struct
import subprocess
import time
import uuid
from dataclasses import dataclass

API_VERSIONS_V0 = struct.pack(">hhih", 18, 0, 1, 5) + b"bench"
REQUEST = struct.pack(">i", len(API_VERSIONS_V0)) + API_VERSIONS_V0
PROBE_INTERVAL_S = 0.02
HEALTH_POLL_INTERVAL_S = 0.05
TIMEOUT_S = 60.0
# KIP-974 ("Docker Image for GraalVM based Native Kafka Broker"), average broker start-up:
# native binary 110-140 ms depending on GC and PGO, the JVM broker 1,150-1,200 ms.
KAFKA_NATIVE_PUBLISHED = (
    "apache/kafka-native (KIP-974): broker start ~110-140 ms; JVM ~1150-1200 ms"
)


@dataclass(frozen=True)
class Run:
    answered_s: float  # `docker run` started -> first ApiVersions answer
    process_to_answer_s: float  # the container's process start (Docker's StartedAt) -> answer
    healthy_s: float  # `docker run` started -> Docker reports healthy


def docker(*args: str) -> str:
    done = subprocess.run(["docker", *args], capture_output=True, text=True, check=True)
    return done.stdout.strip()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def answers_api_versions(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
            sock.sendall(REQUEST)
            header = sock.recv(4)
            if len(header) < 4:
                return False
            (size,) = struct.unpack(">i", header)
            received = 0
            while received < size:
                chunk = sock.recv(size - received)
                if not chunk:
                    return False
                received += len(chunk)
            return True
    except OSError:
        return False


def docker_timestamp(text: str) -> float:
    """Seconds since the epoch from Docker's RFC 3339 time with nanoseconds."""
    from datetime import UTC, datetime

    whole, _, fraction = text.rstrip("Z").partition(".")
    seconds = datetime.fromisoformat(whole).replace(tzinfo=UTC).timestamp()
    return seconds + float(f"0.{fraction or 0}")


def network_options(port: int, host_network: bool) -> list[str]:
    """The broker on 127.0.0.1:`port`: published from the default bridge, or on the host's
    network with its listener moved there."""
    if not host_network:
        return ["-p", f"127.0.0.1:{port}:9092"]
    listener = f"PLAINTEXT://127.0.0.1:{port}"
    return [
        "--network",
        "host",
        "-e",
        f"MINIBROKER_LISTENERS={listener}",
        "-e",
        f"MINIBROKER_ADVERTISED_LISTENERS={listener}",
    ]


def one_run(image: str, arguments: list[str], host_network: bool) -> Run:
    port, name = free_port(), f"minibroker-bench-{uuid.uuid4().hex[:12]}"
    started = time.monotonic()
    subprocess.Popen(
        [
            "docker",
            "run",
            "--detach",
            "--name",
            name,
            *network_options(port, host_network),
            image,
            *arguments,
        ],
        stdout=subprocess.DEVNULL,
    )
    try:
        while not answers_api_versions(port):
            if time.monotonic() - started > TIMEOUT_S:
                raise SystemExit(f"{name}: no ApiVersions answer after {TIMEOUT_S} s")
            time.sleep(PROBE_INTERVAL_S)
        answered = time.monotonic() - started
        answered_at = time.time()
        while True:
            state = json.loads(docker("inspect", "--format", "{{json .State}}", name))
            if state.get("Health", {}).get("Status") == "healthy":
                break
            if time.monotonic() - started > TIMEOUT_S:
                raise SystemExit(f"{name}: not healthy after {TIMEOUT_S} s")
            time.sleep(HEALTH_POLL_INTERVAL_S)
        healthy = time.monotonic() - started
        process_start = docker_timestamp(str(state["StartedAt"]))
        return Run(answered, answered_at - process_start, healthy)
    finally:
        subprocess.run(["docker", "rm", "--force", name], capture_output=True, check=False)


def spread(values: list[float]) -> str:
    millis = sorted(value * 1000 for value in values)
    return f"median {statistics.median(millis):.0f} ms (min {millis[0]:.0f}, max {millis[-1]:.0f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--image", default="minibroker")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument(
        "--host-network",
        action="store_true",
        help="the host's network instead of a port published from the bridge (give the "
        "broker alone: -- --log-level INFO)",
    )
    parser.add_argument("arguments", nargs="*", help="the container's command (after --)")
    args = parser.parse_args()
    size = int(docker("image", "inspect", "--format", "{{.Size}}", args.image))
    runs = [one_run(args.image, args.arguments, args.host_network) for _ in range(args.runs)]
    command = " ".join(args.arguments) or "the image's default command"
    network = "the host's network" if args.host_network else "a port published on 127.0.0.1"
    print(f"image {args.image}: {size / 1e6:.0f} MB; {args.runs} runs of {command}, {network}")
    print(f"docker run -> first ApiVersions answer: {spread([r.answered_s for r in runs])}")
    print(f"container process start -> answer: {spread([r.process_to_answer_s for r in runs])}")
    print(f"docker run -> Docker reports healthy: {spread([r.healthy_s for r in runs])}")
    print(KAFKA_NATIVE_PUBLISHED)


if __name__ == "__main__":
    main()
