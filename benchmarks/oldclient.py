"""P2: kcat (Debian's librdkafka 2.0.2) with -z lz4|snappy|gzip: are the stored batches
compressed? Old librdkafka only compresses when Produce v0 is advertised."""

from __future__ import annotations

import subprocess
from collections import Counter
from pathlib import Path

from benchmarks.brokers import RunningBroker
from benchmarks.payloads import json_values
from benchmarks.produce import delete_topic, new_topic
from minibroker.records.batch import BatchHeader
from tests.clients.install import install_kcat

MESSAGES = 20_000
CODEC_NAMES = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}


def stored_codecs(partition_dir: Path) -> Counter[str]:
    """Batches per compression codec in the partition's segments."""
    codecs: Counter[str] = Counter()
    for segment in sorted(partition_dir.glob("*.log")):
        data = segment.read_bytes()
        position = 0
        while position + 61 <= len(data):
            header = BatchHeader.parse(data, position)
            codecs[CODEC_NAMES.get(int(header.compression), "?")] += 1
            position += header.size
    return codecs


def run_p2(broker: RunningBroker, codec: str) -> dict[str, object]:
    assert broker.data_dir is not None
    kcat = install_kcat().argv[-1]
    topic = new_topic(broker)
    values = [value.replace(b"\n", b" ") + b"\n" for value in json_values()]
    lines = b"".join(values[i % len(values)] for i in range(MESSAGES))
    try:
        subprocess.run(
            [kcat, "-P", "-b", broker.bootstrap, "-t", topic, "-p", "0", "-z", codec],
            input=lines,
            check=True,
            capture_output=True,
            timeout=120,
        )
        partition_dir = broker.data_dir / f"{topic}-0"
        codecs = stored_codecs(partition_dir)
        stored = sum(f.stat().st_size for f in partition_dir.glob("*.log"))
        return {"codec": codec, "batches": dict(codecs), "stored_bytes": stored, "raw": len(lines)}
    finally:
        delete_topic(broker, topic)
