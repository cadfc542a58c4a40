"""Reference data the tests compare minibroker with, all found from inside the checkout.

- `GOLDEN_FRAMES`: request frames recorded from real clients (tests/data/golden-frames, see its
  README for where each came from and how to re-record them).
- `kafka_message_schemas()`: Apache Kafka 4.3's own message definitions
  (`common/message/*.json`), read from the kafka-clients-4.3.0.jar that the client installer
  fetches (tests/clients/install.py), so they are exactly what the Java client was built from.
"""

from __future__ import annotations

import functools
import zipfile
from pathlib import Path

from tests.clients import install

CHECKOUT = Path(__file__).resolve().parents[1]
GOLDEN_FRAMES = CHECKOUT / "tests" / "data" / "golden-frames"
KAFKA_VERSION = "4.3.0"
_MESSAGE_DIR = "common/message/"


@functools.cache
def kafka_message_schemas(kafka_version: str = KAFKA_VERSION) -> dict[str, str]:
    """Message name (`ProduceRequest`, ...) -> the JSON text of its definition, with comments."""
    jar = install.install_java_libs(kafka_version) / f"kafka-clients-{kafka_version}.jar"
    with zipfile.ZipFile(jar) as archive:
        schemas = {
            Path(name).stem: archive.read(name).decode()
            for name in archive.namelist()
            if name.startswith(_MESSAGE_DIR) and name.endswith(".json")
        }
    if not schemas:
        raise install.InstallError(f"{jar} holds no {_MESSAGE_DIR}*.json")
    return schemas
