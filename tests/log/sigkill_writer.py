"""Child process for the SIGKILL test: appends batches forever, acknowledging each on stdout.

Usage: python -m tests.log.sigkill_writer DATA_DIR SEED. Prints "ready", then one line per
append once `append` has returned: "partition base_offset size crc". Stops by itself after
MAX_APPENDS so that a lost parent never leaves it running.
"""

from __future__ import annotations

import random
import struct
import sys
import time
import uuid
from pathlib import Path

from minibroker.log import LogConfig, LogManager

from .log_testing import make_batch

TOPIC = "killed"
PARTITIONS = 4
MAX_APPENDS = 200_000
CONFIG = LogConfig(segment_bytes=16_384, index_interval_bytes=512, segment_index_bytes=1024)


def main(data_dir: Path, seed: int) -> None:
    rng = random.Random(seed)
    manager = LogManager(data_dir, node_id=0, cluster_id="kill", default_config=CONFIG)
    logs = {log.partition: log for log in manager.load()}
    for partition in range(PARTITIONS):
        if partition not in logs:
            logs[partition] = manager.create(TOPIC, partition, uuid.uuid4(), CONFIG)
    out = sys.stdout
    out.write("ready\n")
    out.flush()
    for count in range(MAX_APPENDS):
        partition = rng.randrange(PARTITIONS)
        records = rng.randint(1, 5)
        values = [rng.randbytes(rng.choice((1, 50, 400, 3000))) for _ in range(records)]
        batch = make_batch(values, timestamp=time.time_ns() // 1_000_000)
        now_ms = time.time_ns() // 1_000_000
        base = logs[partition].append(batch, 0, now_ms)
        (crc,) = struct.unpack_from(">I", batch, 17)
        out.write(f"{partition} {base} {len(batch)} {crc}\n")
        out.flush()
        if count % 97 == 0:
            manager.flush_due(now_ms)
            manager.checkpoint()


if __name__ == "__main__":
    main(Path(sys.argv[1]), int(sys.argv[2]))
