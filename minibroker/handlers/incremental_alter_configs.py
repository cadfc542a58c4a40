"""IncrementalAlterConfigs (key 44), versions 0-1.

Behaviour: SET, DELETE, APPEND and SUBTRACT on a topic's overrides, checked as Kafka's
broker and controller check them (see `cluster/alter_configs.py`): a resource named twice
is INVALID_REQUEST for both, duplicate keys or a null value for anything but DELETE
INVALID_REQUEST, APPEND/SUBTRACT on a non-LIST config or an unknown or invalid topic config
INVALID_CONFIG, an unknown topic UNKNOWN_TOPIC_OR_PARTITION. `validate_only` checks
without changing anything. On a broker resource (this node's id, or "" for the
cluster-wide default) the ops change its dynamic broker configs, checked as Kafka's broker
checks them (`cluster/dynamic_configs.py`): a static setting is INVALID_REQUEST ("Cannot
update these configs dynamically: [name]"), deleting one succeeds; changes are stored in
the data directory and applied to every node at once (topic defaults such as
`log.retention.ms` reach topics without their own override). On a CLIENT_METRICS
resource (16) the ops change a client telemetry subscription (`metrics`, `interval.ms`,
`match`; APPEND/SUBTRACT on the two lists), checked as Kafka's `ClientMetricsConfigs`
(unknown config or empty name INVALID_REQUEST, bad pattern or number INVALID_CONFIG);
deleting every config removes the subscription. A BROKER_LOGGER resource (8, this node's
id) sets or resets this process's log levels as Kafka's `RuntimeLoggerManager` does
(`cluster/broker_loggers.py`); AlterConfigs refuses it ("Unknown resource type 8"). A
GROUP resource (32) changes a group's config overrides (`consumer.session.timeout.ms`,
`consumer.heartbeat.interval.ms`, the share and streams ones; `groups/group_configs.py`),
checked as Kafka's `GroupConfig.validate` on the resulting overrides merged over the
broker's `group.*` settings (INVALID_CONFIG with Kafka's messages; APPEND/SUBTRACT
INVALID_CONFIG, no group config being a LIST), kept in the data directory; a group needs
not exist, and deleting a group keeps its configs, as in Kafka.

Authorization (as AlterConfigs, `handlers/alter_configs.py`): ALTER_CONFIGS on the cluster
for broker, broker-logger and client-metrics resources, on the topic or the group for the
others, else CLUSTER_/TOPIC_/GROUP_AUTHORIZATION_FAILED with Kafka's message, checked after
the broker's own checks (a broker logger's before its name, as Kafka's RuntimeLoggerManager).

Version notes: v1 is the flexible encoding of v0.
"""

from __future__ import annotations

from typing import Any

from minibroker.cluster.alter_configs import ConfigOp
from minibroker.handlers.alter_configs import answer_config_changes
from minibroker.handlers.registry import handles
from minibroker.protocol.api_keys import ApiKey
from minibroker.server.context import RequestContext


@handles(ApiKey.IncrementalAlterConfigs, 0, 1)
async def handle_incremental_alter_configs(ctx: RequestContext, request: Any) -> Any:
    return answer_config_changes(
        ctx,
        request,
        ApiKey.IncrementalAlterConfigs,
        lambda config: ConfigOp(config.name, config.config_operation, config.value),
        incremental=True,
    )
