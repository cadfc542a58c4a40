"""Record batches that real clients sent, from the Produce frames in tests/data/golden-frames."""

from __future__ import annotations

import struct
from dataclasses import dataclass

from kafka.protocol.producer import ProduceRequest

from tests.reference import GOLDEN_FRAMES

_API_VERSION = struct.Struct(">h")


@dataclass(frozen=True)
class ClientBatch:
    client: str
    produce_version: int
    partition: int
    records: bytes

    @property
    def id(self) -> str:
        return f"{self.client}-v{self.produce_version}-p{self.partition}"


def client_batches() -> list[ClientBatch]:
    """Every partition's records from every captured Produce frame (header included)."""
    batches = []
    for path in sorted(GOLDEN_FRAMES.glob("*/Produce-v*.bin")):
        frame = path.read_bytes()
        (version,) = _API_VERSION.unpack_from(frame, 2)
        request = ProduceRequest.decode(frame, version=version, header=True)
        for topic in request.topic_data:
            for partition in topic.partition_data:
                batches.append(
                    ClientBatch(
                        path.parent.name, version, partition.index, bytes(partition.records)
                    )
                )
    if not batches:
        raise FileNotFoundError(f"no Produce frames under {GOLDEN_FRAMES}")
    return batches
