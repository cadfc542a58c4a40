"""A broker starts without the handlers its first requests do not need (issue 40): a handler
module is imported when its key is first requested. Checked by the modules imported, never by
time."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from minibroker.handlers import load_all
from minibroker.handlers.registry import HANDLER_MODULES, REGISTRY

# Started in a fresh interpreter: serve's imports, one broker started, one ApiVersions answered,
# then a Metadata and a FindCoordinator; the minibroker modules imported after each step.
SCRIPT = textwrap.dedent(
    """
    import asyncio, json, sys
    from minibroker.protocol.lazy_import import defer_package_init
    defer_package_init("kafka")
    defer_package_init("crc32c")
    import minibroker.cli
    from minibroker.config import BrokerConfig
    from minibroker.server.broker import Broker
    from tests.wire import WireClient

    def imported():
        return sorted(m for m in sys.modules if m.startswith("minibroker."))

    async def main():
        steps = {}
        broker = Broker(BrokerConfig({"listeners": "PLAINTEXT://127.0.0.1:0"}), in_memory=True)
        await broker.start()
        steps["started"] = imported()
        with WireClient(broker.bootstrap_servers) as client:
            versions = await asyncio.to_thread(client.call, 18, 3)
            assert versions.error_code == 0, versions
            steps["api_versions"] = imported()
            await asyncio.to_thread(client.call, 3, 12, topics=None)
            steps["metadata"] = imported()
            found = await asyncio.to_thread(
                client.call, 10, 4, key_type=0, coordinator_keys=["g"]
            )
            assert found.coordinators[0].error_code == 0, found
            steps["find_coordinator"] = imported()
        await broker.stop()
        print(json.dumps(steps))

    asyncio.run(main())
    """
)


def _imports() -> dict[str, list[str]]:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, check=True, timeout=60
    )
    steps: dict[str, list[str]] = json.loads(done.stdout.splitlines()[-1])
    return steps


def _handlers(modules: list[str]) -> list[str]:
    return [m.removeprefix("minibroker.handlers.") for m in modules if "handlers." in m]


def test_first_requests_import_only_their_handlers() -> None:
    steps = _imports()
    assert _handlers(steps["started"]) == ["registry"]
    assert _handlers(steps["api_versions"]) == ["api_versions", "registry"]
    assert _handlers(steps["metadata"]) == ["api_versions", "metadata", "registry"]
    assert _handlers(steps["find_coordinator"]) == [
        "api_versions",
        "find_coordinator",
        "metadata",
        "registry",
    ]


def test_every_registered_module_serves_its_key() -> None:
    load_all()
    for key, (module, low, high) in HANDLER_MODULES.items():
        spec = REGISTRY[key]
        assert (spec.module, spec.min_version, spec.max_version) == (module, low, high)
        assert spec.handler.__module__ == f"minibroker.handlers.{module}"
