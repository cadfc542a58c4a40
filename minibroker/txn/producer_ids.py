"""Producer id allocation in blocks, as Kafka's ProducerIdManager takes blocks from its controller.

A block of PRODUCER_ID_BLOCK_SIZE ids is reserved by writing its range to
`<data dir>/minibroker-producer-id-block.json` (the content of ZooKeeper-era Kafka's
`/latest_producer_id_block` znode) before any id from it is handed out. After a restart
allocation continues with the next block, so ids are never reused; the unused rest of the old
block is skipped, as in Kafka. Without a data directory ids start at 0 on every start.
"""

from __future__ import annotations

import json
from pathlib import Path

from minibroker.log.checkpoints import write_atomically

PRODUCER_ID_BLOCK_SIZE = 1000
BLOCK_FILE = "minibroker-producer-id-block.json"
_BLOCK_FILE_VERSION = 1


class ProducerIdGenerator:
    def __init__(self, data_dir: Path | None, node_id: int = 0) -> None:
        self._path = None if data_dir is None else data_dir / BLOCK_FILE
        self._node_id = node_id
        self._next_id = self._stored_block_end() + 1
        self._block_end = self._next_id - 1

    def _stored_block_end(self) -> int:
        if self._path is None or not self._path.exists():
            return -1
        stored = json.loads(self._path.read_text())
        return int(stored["block_end"])

    def generate(self) -> int:
        if self._next_id > self._block_end:
            self._reserve_block(self._next_id)
        producer_id = self._next_id
        self._next_id += 1
        return producer_id

    def ensure_above(self, producer_id: int) -> None:
        """Never hand out `producer_id` or anything below it (ids found in producer state)."""
        if producer_id >= self._next_id:
            self._next_id = producer_id + 1

    def _reserve_block(self, block_start: int) -> None:
        block_end = block_start + PRODUCER_ID_BLOCK_SIZE - 1
        if self._path is not None:
            self._write_block(self._path, block_start, block_end)
        self._block_end = block_end

    def _write_block(self, path: Path, block_start: int, block_end: int) -> None:
        content = {
            "version": _BLOCK_FILE_VERSION,
            "broker": self._node_id,
            "block_start": str(block_start),
            "block_end": str(block_end),
        }
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(path, json.dumps(content))
