"""`minibroker serve --schema-registry HOST:PORT`: the registry of a served broker, its
schemas kept in the data directory across a restart of the process."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.registry.http import Registry

WAIT_S = 30.0


@contextmanager
def served(data_dir: Path) -> Iterator[Registry]:
    process = subprocess.Popen(
        [sys.executable, "-m", "minibroker", "serve", "--listen", "127.0.0.1:0",
         "--data-dir", str(data_dir), "--schema-registry", "127.0.0.1:0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )  # fmt: skip
    try:
        assert process.stdout is not None
        lines = [process.stdout.readline(), process.stdout.readline()]
        found = re.search(r"minibroker schema registry on (http://\S+)", "".join(lines))
        assert found, lines
        yield Registry(found.group(1))
    finally:
        process.terminate()
        assert process.wait(WAIT_S) == 0


def test_serve_schema_registry_keeps_schemas_across_restarts(tmp_path: Path) -> None:
    schema = json.dumps({"type": "enum", "name": "Suit", "symbols": ["HEARTS", "SPADES"]})
    with served(tmp_path) as registry:
        first = registry.register("cards-value", schema).json["id"]
        registry.put("/config", {"compatibility": "FULL_TRANSITIVE"})
    with served(tmp_path) as registry:
        assert registry.get(f"/schemas/ids/{first}").json == {"schema": schema.replace(" ", "")}
        assert registry.get("/config").json == {"compatibilityLevel": "FULL_TRANSITIVE"}
        assert registry.register("cards-value", schema).json == {"id": first}
