"""CreateTopics (key 19), versions 0-7 (v0-1 only under an emulated Kafka 2.8-3.9).

Behaviour: checks run in the order of Kafka's ControllerApis and ReplicationControlManager:
a name given more than once gets one INVALID_REQUEST entry; `__cluster_metadata`
INVALID_REQUEST; an illegal name, or one that collides with an existing topic once '.'
and '_' are unified, INVALID_TOPIC_EXCEPTION; an existing topic TOPIC_ALREADY_EXISTS; a
null config value or an unknown or invalid topic config INVALID_CONFIG. Then either a
manual assignment (num_partitions and replication_factor must be -1; every partition
0..n-1 once, on registered nodes, none twice, all with as many replicas) or num_partitions
(-1: `num.partitions`) and replication_factor (-1: `default.replication.factor`), placed over
the live nodes as Kafka's striped placer does; a replication factor above the live node count
is INVALID_REPLICATION_FACTOR ("only N broker(s) are registered"). More than one replica
makes a replicated topic (cluster/replicas.py); one replica on another node moves the
partition's leader there. `validate_only` runs every check
and creates nothing. Like Kafka's controller, a request that would write more than 10000
metadata records (a topic, its configs and partitions each count one) fails whole with
POLICY_VIOLATION, which also bounds the work one request can cause. The timeout is not
used: creation is immediate, and the partitions of one request are made durable together
before the answer (their fsyncs grouped, log/syncs.py; the topic configs written once).

Authorization, as Kafka's ControllerApis: a topic needs CREATE on the cluster or on the topic,
else TOPIC_AUTHORIZATION_FAILED ("Authorization failed."), listed after the other answers
(the duplicates' included) and not checked further; `__cluster_metadata` and duplicates are
answered as above whatever the ACLs. A topic created for a principal without DESCRIBE_CONFIGS
on it is answered with `topic_config_error_code` TOPIC_AUTHORIZATION_FAILED and no configs,
partition count or replication factor (-1).

With a `controller_mutation_rate` quota (minibroker/auth/quotas.py), each topic that passed
every check counts its partitions against the client's token bucket: from v6 a topic is
refused THROTTLING_QUOTA_EXCEEDED once the bucket is exhausted (strict, as Kafka), before v6
it is created; either way the answer carries the throttle time.

Version notes: v0 has no `validate_only` (v1+); error messages are v1+ and the throttle time
v2+; v0-3 clients must give num_partitions and replication_factor (Kafka checks it in the
client, the broker takes -1 from any version); v5+ answers the new topic's partition count,
replication factor and every config with its source (num_partitions/replication_factor -1 on
errors); v7 adds the topic id (in a validate-only answer a random id, as Kafka does).
"""

from __future__ import annotations

import uuid
from collections import Counter
from dataclasses import dataclass
from typing import Any

from minibroker.auth.acls import AclOperation, ResourceType
from minibroker.auth.quota_stats import MutationQuota
from minibroker.auth.throttle import (
    THROTTLING_QUOTA_EXCEEDED_MESSAGE,
    mutation_quota,
    mutation_throttle,
)
from minibroker.cluster.assignments import (
    MAX_RECORDS_PER_USER_OP,
    TOO_LARGE_OPERATION,
    assignment_error,
    check_manual_replicas,
    placed_replicas,
)
from minibroker.cluster.describe_configs import topic_config_entries
from minibroker.cluster.state import Cluster, TopicError, check_topic_name
from minibroker.config import ConfigError, validate_topic_configs
from minibroker.handlers.registry import handles
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import new_response, struct_type
from minibroker.protocol.errors import ErrorCode
from minibroker.server.context import RequestContext

_Result = struct_type(ApiKey.CreateTopics, "response", "CreatableTopicResult")
_Config = struct_type(
    ApiKey.CreateTopics, "response", "CreatableTopicResult", "CreatableTopicConfigs"
)
_NULL_TOPIC_ID = uuid.UUID(int=0)
USE_DEFAULT = -1
METADATA_TOPIC = "__cluster_metadata"
STRICT_QUOTA_VERSION = 6  # THROTTLING_QUOTA_EXCEEDED per topic from v6; older: throttle only
_DENIED = "Authorization failed."


def _unified(name: str) -> str:
    return name.replace(".", "_")


def _check_name(cluster: Cluster, name: str) -> None:
    if name == METADATA_TOPIC:
        raise TopicError(
            ErrorCode.INVALID_REQUEST, f"Creation of internal topic {METADATA_TOPIC} is prohibited."
        )
    check_topic_name(name)
    if "." in name or "_" in name:
        for existing in cluster.topics:
            if existing != name and _unified(existing) == _unified(name):
                raise TopicError(
                    ErrorCode.INVALID_TOPIC_EXCEPTION,
                    f"Topic '{name}' collides with existing topic: {existing}",
                )
    if name in cluster.topics:
        raise TopicError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")


def _configs(topic: Any) -> dict[str, str]:
    null_configs = [config.name for config in topic.configs if config.value is None]
    if null_configs:
        raise TopicError(
            ErrorCode.INVALID_CONFIG,
            "Null value not supported for topic configs: " + ",".join(null_configs),
        )
    configs = {config.name: config.value for config in topic.configs}
    try:
        validate_topic_configs(configs)
    except ConfigError as exc:
        raise TopicError(ErrorCode.INVALID_CONFIG, str(exc)) from exc
    return configs


def _manual_assignments(topic: Any, registered: set[int]) -> list[list[int]]:
    if topic.replication_factor != USE_DEFAULT:
        raise TopicError(
            ErrorCode.INVALID_REQUEST,
            "A manual partition assignment was specified, but replication factor was not "
            "set to -1.",
        )
    if topic.num_partitions != USE_DEFAULT:
        raise TopicError(
            ErrorCode.INVALID_REQUEST,
            "A manual partition assignment was specified, but numPartitions was not set to -1.",
        )
    seen: set[int] = set()
    replication_factor: int | None = None
    for assignment in topic.assignments:
        if assignment.partition_index in seen:
            raise assignment_error(
                "Found multiple manual partition assignments for partition "
                f"{assignment.partition_index}"
            )
        check_manual_replicas(assignment.broker_ids, registered, replication_factor)
        replication_factor = len(assignment.broker_ids)
        seen.add(assignment.partition_index)
    if seen != set(range(len(seen))):
        raise assignment_error("partitions should be a consecutive 0-based integer sequence")
    by_index = {a.partition_index: list(a.broker_ids) for a in topic.assignments}
    return [by_index[index] for index in range(len(seen))]


def _assignments(ctx: RequestContext, topic: Any) -> list[list[int]]:
    """Each new partition's replicas: the request's, or placed over the live nodes."""
    if topic.assignments:
        return _manual_assignments(topic, set(ctx.broker.nodes.brokers))
    if topic.replication_factor < USE_DEFAULT or topic.replication_factor == 0:
        raise TopicError(
            ErrorCode.INVALID_REPLICATION_FACTOR,
            "Replication factor must be larger than 0, or -1 to use the default value.",
        )
    if topic.num_partitions < USE_DEFAULT or topic.num_partitions == 0:
        raise TopicError(
            ErrorCode.INVALID_PARTITIONS,
            "Number of partitions was set to an invalid non-positive value.",
        )
    config = ctx.broker.config
    replication_factor = topic.replication_factor
    if replication_factor == USE_DEFAULT:
        replication_factor = config.get_int("default.replication.factor")
    num_partitions = int(topic.num_partitions)
    if num_partitions == USE_DEFAULT:
        num_partitions = config.get_int("num.partitions")
    return placed_replicas(ctx.broker.nodes.reachable(), num_partitions, replication_factor)


@dataclass(frozen=True)
class _Plan:
    name: str
    assignments: list[list[int]]
    configs: dict[str, str]

    @property
    def num_partitions(self) -> int:
        return len(self.assignments)

    @property
    def metadata_records(self) -> int:
        """What Kafka's controller would write: the topic, its configs, its partitions."""
        return 1 + len(self.configs) + self.num_partitions


def _created(ctx: RequestContext, plan: _Plan, topic_id: uuid.UUID) -> Any:
    entries = topic_config_entries(ctx.broker.config, plan.configs)
    return _Result(
        name=plan.name,
        topic_id=topic_id,
        error_code=ErrorCode.NO_ERROR,
        error_message=None,
        topic_config_error_code=ErrorCode.NO_ERROR,
        num_partitions=plan.num_partitions,
        replication_factor=len(plan.assignments[0]),
        configs=[
            _Config(
                name=entry.name,
                value=entry.value,
                read_only=entry.read_only,
                config_source=entry.source,
                is_sensitive=entry.sensitive,
            )
            for entry in entries
        ],
    )


def _failed(name: str, error: ErrorCode, message: str | None) -> Any:
    return _Result(
        name=name,
        topic_id=_NULL_TOPIC_ID,
        error_code=error,
        error_message=message,
        topic_config_error_code=ErrorCode.NO_ERROR,
        num_partitions=-1,
        replication_factor=-1,
        configs=[],
    )


def _plan(ctx: RequestContext, topic: Any) -> _Plan | Any:
    """What to create, or the failed result."""
    try:
        _check_name(ctx.broker.cluster, topic.name)
        configs = _configs(topic)
        return _Plan(topic.name, _assignments(ctx, topic), configs)
    except TopicError as exc:
        return _failed(topic.name, exc.error_code, exc.message)


def _admitted(cluster: Cluster, plan: _Plan, quota: MutationQuota) -> bool:
    """Kafka counts a topic's partitions against the controller mutation quota once every
    other check passed."""
    cluster.check_new_topic(plan.name, plan.num_partitions, plan.configs)
    return quota.record(plan.num_partitions)


def _create(
    ctx: RequestContext,
    plan: _Plan,
    validate_only: bool,
    describable: set[str],
    quota: MutationQuota | None,
) -> Any:
    cluster = ctx.broker.cluster
    try:
        if quota is not None and not _admitted(cluster, plan, quota):
            return _failed(
                plan.name, ErrorCode.THROTTLING_QUOTA_EXCEEDED, THROTTLING_QUOTA_EXCEEDED_MESSAGE
            )
        if validate_only:
            cluster.check_new_topic(plan.name, plan.num_partitions, plan.configs)
            topic_id = uuid.uuid4()
        else:
            topic_id = create_with_assignments(ctx, plan.name, plan.assignments, plan.configs)
    except TopicError as exc:
        return _failed(plan.name, exc.error_code, exc.message)
    if plan.name not in describable:
        return _created_without_configs(plan.name, topic_id)
    return _created(ctx, plan, topic_id)


def create_with_assignments(
    ctx: RequestContext, name: str, assignments: list[list[int]], configs: dict[str, str]
) -> uuid.UUID:
    """Create the topic; a single replica placed on another node moves its leader there."""
    topic = ctx.broker.cluster.create_topic(name, len(assignments), configs, assignments)
    nodes = ctx.broker.nodes
    if topic.replication_factor == 1 and len(nodes.brokers) > 1:
        for partition, replicas in zip(topic.partitions, assignments, strict=True):
            if replicas[0] in nodes.live:
                nodes.move_leader(partition, replicas[0])
    return topic.topic_id


def _created_without_configs(name: str, topic_id: uuid.UUID) -> Any:
    """A topic created for a principal that may not DESCRIBE_CONFIGS it (Kafka's controller
    leaves out the configs, partition count and replication factor)."""
    result = _failed(name, ErrorCode.NO_ERROR, None)
    result.topic_id = topic_id
    result.topic_config_error_code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
    return result


def _creatable(ctx: RequestContext, names: set[str]) -> set[str]:
    """The names the principal may create: all with CREATE on the cluster, else those with
    CREATE on the topic."""
    if ctx.authorize_cluster(AclOperation.CREATE):
        return names
    return ctx.authorized_names(AclOperation.CREATE, ResourceType.TOPIC, names)


@handles(ApiKey.CreateTopics, 0, 7)
async def handle_create_topics(ctx: RequestContext, request: Any) -> Any:
    counts = Counter(topic.name for topic in request.topics)
    unique = {name for name, count in counts.items() if count == 1}
    creatable = _creatable(ctx, unique - {METADATA_TOPIC}) | ({METADATA_TOPIC} & unique)
    describable = ctx.authorized_names(AclOperation.DESCRIBE_CONFIGS, ResourceType.TOPIC, unique)
    planned = [_plan(ctx, topic) for topic in request.topics if topic.name in creatable]
    plans = [plan for plan in planned if isinstance(plan, _Plan)]
    quota = mutation_quota(ctx, STRICT_QUOTA_VERSION)
    if sum(plan.metadata_records for plan in plans) > MAX_RECORDS_PER_USER_OP:
        results = [
            _failed(topic.name, ErrorCode.POLICY_VIOLATION, TOO_LARGE_OPERATION)
            for topic in request.topics
        ]
    else:
        with ctx.broker.cluster.grouped_writes():
            results = [
                _create(ctx, plan, request.validate_only, describable, quota)
                if isinstance(plan, _Plan)
                else plan
                for plan in planned
            ]
        # Kafka answers a name given more than once with a single error entry.
        for name in dict.fromkeys(name for name, count in counts.items() if count > 1):
            results.append(_failed(name, ErrorCode.INVALID_REQUEST, "Duplicate topic name."))
        for name in dict.fromkeys(topic.name for topic in request.topics):
            if name in unique and name not in creatable:
                results.append(_failed(name, ErrorCode.TOPIC_AUTHORIZATION_FAILED, _DENIED))
    throttle = mutation_throttle(ctx, quota)
    return new_response(
        ApiKey.CreateTopics, ctx.api_version, throttle_time_ms=throttle, topics=results
    )
