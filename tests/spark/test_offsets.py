"""Option parsing and offset planning, without Spark (pure functions)."""

from __future__ import annotations

import pytest

from minibroker.spark.offsets import OffsetRange, from_json, plan_ranges, rate_limit, to_json
from minibroker.spark.options import (
    Earliest,
    GlobalTimestamp,
    KafkaOptionError,
    Latest,
    SpecificOffsets,
    parse_source_options,
)

SERVERS = {"kafka.bootstrap.servers": "127.0.0.1:9"}


def test_checkpoint_shape_round_trips() -> None:
    offsets = {("a", 0): 5, ("a", 1): 7, ("b", 0): 0}
    assert to_json(offsets) == {"a": {"0": 5, "1": 7}, "b": {"0": 0}}
    assert from_json(to_json(offsets)) == offsets


def test_rate_limit_splits_in_proportion_to_lag() -> None:
    start = {("t", 0): 0, ("t", 1): 100, ("t", 2): 5}
    end = {("t", 0): 300, ("t", 1): 200, ("t", 2): 6}
    # lags 300, 100 and 1 of 401: the small partition still gets one offset.
    assert rate_limit(start, end, 40) == {("t", 0): 29, ("t", 1): 109, ("t", 2): 6}
    assert rate_limit(start, start, 40) == start


def test_min_partitions_and_max_records_split_ranges() -> None:
    start = {("t", 0): 0, ("t", 1): 10, ("t", 2): 4}
    end = {("t", 0): 90, ("t", 1): 20, ("t", 2): 4}
    assert plan_ranges(start, end, None, None) == [
        OffsetRange("t", 0, 0, 90),
        OffsetRange("t", 1, 10, 20),
    ]
    split = plan_ranges(start, end, 5, None)  # 100 offsets: ideal 20 per task, as Spark
    assert [(r.partition, r.start, r.end) for r in split] == [
        (0, 0, 18),
        (0, 18, 36),
        (0, 36, 54),
        (0, 54, 72),
        (0, 72, 90),
        (1, 10, 20),
    ]
    capped = plan_ranges(start, end, None, 40)
    assert [r.size for r in capped] == [30, 30, 30, 10]


def test_defaults_and_precedence_follow_the_connector() -> None:
    batch = parse_source_options({**SERVERS, "subscribe": "a, b"}, streaming=False)
    assert batch.subscription.topics == ("a", "b")
    assert (batch.starting, batch.ending) == (Earliest(), Latest())
    assert batch.fail_on_data_loss and not batch.include_headers
    stream = parse_source_options({**SERVERS, "subscribePattern": "in-.*"}, streaming=True)
    assert stream.starting == Latest()
    assert stream.subscription.matches("in-1") and not stream.subscription.matches("xin-1")
    both = parse_source_options(
        {**SERVERS, "assign": '{"a":[1,0]}', "startingOffsets": '{"a":{"0":3,"1":-2}}'},
        streaming=False,
    )
    assert both.subscription.assigned == (("a", 0), ("a", 1))
    assert both.starting == SpecificOffsets({("a", 0): 3, ("a", 1): -2})
    timed = parse_source_options(
        {**SERVERS, "subscribe": "a", "startingOffsets": "earliest", "startingTimestamp": "99"},
        streaming=False,
    )
    assert timed.starting == GlobalTimestamp(99)


@pytest.mark.parametrize(
    ("options", "streaming", "message"),
    [
        ({"subscribe": "a"}, False, "kafka.bootstrap.servers"),
        ({**SERVERS}, False, "Exactly one of"),
        ({**SERVERS, "subscribe": "a", "startingOffsets": "latest"}, False, "can't be latest"),
        ({**SERVERS, "subscribe": "a", "endingOffsets": '{"a":{"0":-2}}'}, False, "earliest"),
        ({**SERVERS, "subscribe": "a", "endingOffsets": "latest"}, True, "batch queries only"),
        ({**SERVERS, "subscribe": "a", "kafka.auto.offset.reset": "x"}, False, "not supported"),
        ({**SERVERS, "subscribe": "a", "kafka.isolation.level": "x"}, False, "isolation"),
        ({**SERVERS, "subscribe": "a", "maxOffsetsPerTrigger": "0"}, True, "positive"),
        ({**SERVERS, "assign": "[1]"}, False, "JSON object"),
    ],
)
def test_bad_options_are_refused(options: dict[str, str], streaming: bool, message: str) -> None:
    with pytest.raises(KafkaOptionError, match=message):
        parse_source_options(options, streaming)


def test_trigger_options_parse_as_spark_does() -> None:
    options = parse_source_options(
        {**SERVERS, "subscribe": "a", "minOffsetsPerTrigger": "5", "maxTriggerDelay": "30s"},
        streaming=True,
    )
    assert (options.min_offsets_per_trigger, options.max_trigger_delay_ms) == (5, 30_000)
    default = parse_source_options({**SERVERS, "subscribe": "a"}, streaming=True)
    assert (default.min_offsets_per_trigger, default.max_trigger_delay_ms) == (None, 900_000)
    for delay, ms in (("100ms", 100), ("2m", 120_000), ("250", 250), ("1 h", 3_600_000)):
        parsed = parse_source_options({**SERVERS, "subscribe": "a", "maxTriggerDelay": delay}, True)
        assert parsed.max_trigger_delay_ms == ms
    with pytest.raises(KafkaOptionError, match="maxTriggerDelay"):
        parse_source_options({**SERVERS, "subscribe": "a", "maxTriggerDelay": "soon"}, True)
    with pytest.raises(KafkaOptionError, match="minOffsetsPerTrigger"):
        parse_source_options({**SERVERS, "subscribe": "a", "minOffsetsPerTrigger": "0"}, True)


def test_executor_group_ids_follow_spark() -> None:
    def group(streaming: bool, **extra: str) -> str:
        options = parse_source_options({**SERVERS, "subscribe": "a", **extra}, streaming)
        return options.executor_group_id("u1")

    assert group(True) == "spark-kafka-source-u1-executor"
    assert group(False) == "spark-kafka-relation-u1-executor"
    assert group(True, groupIdPrefix="app") == "app-u1-executor"
    assert group(False, groupIdPrefix="app", **{"kafka.group.id": "fixed"}) == "fixed"


def test_fetch_offset_and_client_options() -> None:
    options = parse_source_options({**SERVERS, "subscribe": "a"}, streaming=False)
    assert (options.fetch_offset_num_retries, options.fetch_offset_retry_interval_ms) == (3, 1000)
    assert options.python_client == "auto"
    tuned = parse_source_options(
        {
            **SERVERS,
            "subscribe": "a",
            "fetchOffset.numRetries": "5",
            "fetchOffset.retryIntervalMs": "10",
            "pythonClient": "kafka-python",
        },
        streaming=False,
    )
    assert (tuned.fetch_offset_num_retries, tuned.fetch_offset_retry_interval_ms) == (5, 10)
    assert tuned.python_client == "kafka-python"
    with pytest.raises(KafkaOptionError, match="pythonClient"):
        parse_source_options({**SERVERS, "subscribe": "a", "pythonClient": "java"}, False)
