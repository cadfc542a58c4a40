"""A Confluent-compatible Schema Registry in the broker: the REST API confluent-kafka's
SchemaRegistryClient and serializers (and Confluent's documentation) use, for Avro, JSON Schema
and Protobuf, with schemas kept in the broker's own compacted `_schemas` topic.

Started by `minibroker serve --schema-registry 127.0.0.1:8081` and, in tests, by
`KafkaBroker(schema_registry=True)` or `@pytest.mark.minibroker(schema_registry=True)`
(`kafka_broker.schema_registry_url`; reading that property also starts it). aiohttp and the
format libraries are imported only when it starts.

Served (Confluent's paths; `{version}` is 1.. or `latest`/-1):

    GET    /schemas/types, /schemas?subjectPrefix=&deleted=&latestOnly=
    GET    /schemas/ids/{id}?format=   /schemas/ids/{id}/schema   .../subjects   .../versions
    GET    /subjects?subjectPrefix=&deleted=&deletedOnly=
    POST   /subjects/{s}                 look a schema up (?normalize=&deleted=)
    DELETE /subjects/{s}?permanent=      soft delete, then permanent
    GET    /subjects/{s}/versions        POST: register (?normalize=)
    GET    /subjects/{s}/versions/{version}[/schema|/referencedby]   DELETE ?permanent=
    POST   /compatibility/subjects/{s}/versions[/{version}]?verbose=
    GET/PUT/DELETE /config, /config/{s}?defaultToGlobal=
    GET/PUT /mode?force=, GET/PUT/DELETE /mode/{s}
    GET    /, /contexts, /v1/metadata/id

With SASL on the broker's listeners every request needs HTTP basic credentials of a SASL user;
with an authorizer, subjects are authorized on the topics they name (access.py).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from aiohttp import web

    from minibroker.registry.service import SchemaRegistry
    from minibroker.server.broker import Broker

from minibroker.registry.decode import register_running

log = logging.getLogger(__name__)


class RunningRegistry:
    """A serving registry: `url`, `registry` (its state), and `stop()`."""

    def __init__(self, broker: Broker, runner: web.AppRunner, registry: SchemaRegistry) -> None:
        self.broker = broker
        self._runner = runner
        self.registry = registry
        host, port = runner.addresses[0][:2]
        self.host, self.port = host, port
        shown = f"[{host}]" if ":" in host else host
        self.url = f"http://{shown}:{port}"

    async def stop(self) -> None:
        register_running(self.broker, None)
        await self._runner.cleanup()


async def start_schema_registry(broker: Broker, host: str, port: int) -> RunningRegistry:
    """Serve the registry for `broker` (a cluster's first node: the one owning the state) on
    host:port (port 0: any free one); its schemas are loaded from `_schemas` first."""
    from aiohttp import web

    from minibroker.registry.app import make_app
    from minibroker.registry.service import SchemaRegistry
    from minibroker.registry.store import SchemaStore

    registry = SchemaRegistry(SchemaStore(broker.cluster))
    runner = web.AppRunner(make_app(broker, registry), access_log=None, handle_signals=False)
    await runner.setup()
    site = web.TCPSite(runner, host, port, reuse_address=True)
    await site.start()
    running = RunningRegistry(broker, runner, registry)
    register_running(broker, registry)
    log.info("schema registry on %s", running.url)
    return running
