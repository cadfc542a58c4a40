"""Client quotas without the wire: Kafka's precedence of entities, AlterClientQuotas checks and
messages, persistence across a restart, and the rate, throttle and token-bucket arithmetic
against Kafka's formulas with explicit times."""

from __future__ import annotations

from pathlib import Path

import pytest

from minibroker.auth.quota_stats import DEFAULT, MutationQuota, QuotaManager, Rate
from minibroker.auth.quotas import ClientQuotas, entity_of
from minibroker.config import BrokerConfig
from minibroker.protocol.errors import ErrorCode
from minibroker.testing import KafkaBroker

T0 = 1_700_000_000_000  # a wall-clock time in ms, as Kafka's clocks give


def quotas_store(path: Path | None = None) -> ClientQuotas:
    return ClientQuotas.open(BrokerConfig(), path)


def alter_one(
    store: ClientQuotas, pairs: list[tuple[str, str | None]], ops: list[tuple[str, float | None]]
) -> tuple[ErrorCode, str | None]:
    [(_entity, result)] = store.alter([(entity_of(pairs), ops)])
    return result


# -- precedence -------------------------------------------------------------------------------

LEVELS: list[tuple[list[tuple[str, str | None]], float]] = [
    ([("user", "alice"), ("client-id", "app")], 1.0),
    ([("user", "alice"), ("client-id", None)], 2.0),
    ([("user", "alice")], 3.0),
    ([("user", None), ("client-id", "app")], 4.0),
    ([("user", None), ("client-id", None)], 5.0),
    ([("user", None)], 6.0),
    ([("client-id", "app")], 7.0),
    ([("client-id", None)], 8.0),
]


def test_the_most_specific_entity_applies_in_kafkas_order() -> None:
    store = quotas_store()
    for pairs, value in LEVELS:
        assert alter_one(store, pairs, [("producer_byte_rate", value)]) == (
            ErrorCode.NO_ERROR,
            None,
        )
    seen = []
    for pairs, _value in LEVELS:
        seen.append(store.produce.quota_for("alice", "app"))
        alter_one(store, pairs, [("producer_byte_rate", None)])
    assert seen == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]
    assert store.produce.quota_for("alice", "app") is None
    assert not store.enabled


def test_each_quota_key_falls_through_on_its_own() -> None:
    store = quotas_store()
    alter_one(store, [("user", "alice")], [("producer_byte_rate", 100.0)])
    alter_one(store, [("client-id", None)], [("consumer_byte_rate", 200.0)])
    assert store.produce.quota_for("alice", "app") == 100.0
    assert store.fetch.quota_for("alice", "app") == 200.0
    assert store.fetch.quota_for("bob", "other") == 200.0
    assert store.produce.quota_for("bob", "app") is None


def test_clients_matching_one_user_quota_share_its_rate() -> None:
    store = quotas_store()
    alter_one(store, [("user", "alice")], [("producer_byte_rate", 1000.0)])
    manager = store.produce
    assert manager.metric_tags("alice", "one") == manager.metric_tags("alice", "two")
    assert manager.record("alice", "one", 10_000, T0) == 0  # 10000 B over 10 s
    assert manager.record("alice", "two", 1, T0) > 0  # the same rate, now over the quota
    assert manager.record("bob", "one", 50_000, T0) == 0  # bob has no quota


def test_a_default_user_quota_is_measured_per_user() -> None:
    store = quotas_store()
    alter_one(store, [("user", None)], [("producer_byte_rate", 1000.0)])
    manager = store.produce
    assert manager.metric_tags("alice", "app") == ("alice", "")
    assert manager.record("alice", "app", 10_000, T0) == 0
    assert manager.record("bob", "app", 10_000, T0) == 0
    assert manager.record("alice", "app", 1, T0) > 0


# -- AlterClientQuotas checks -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pairs", "ops", "message"),
    [
        ([], [("producer_byte_rate", 1.0)], "Invalid empty client quota entity"),
        (
            [("group", "g")],
            [("producer_byte_rate", 1.0)],
            "Unhandled client quota entity type: group",
        ),
        ([("user", "")], [("producer_byte_rate", 1.0)], "Empty user not supported"),
        (
            [("ip", "1.2.3.4"), ("user", "a")],
            [("connection_creation_rate", 1.0)],
            "Invalid quota entity combination, IP entity shouldnot be combined with User or "
            "ClientId",
        ),
        (
            [("ip", "not a host!")],
            [("connection_creation_rate", 1.0)],
            "not a host! is not a valid IP or resolvable host.",
        ),
        ([("user", "a")], [("nope", 1.0)], "Invalid configuration key nope"),
        (
            [("ip", None)],
            [("producer_byte_rate", 1.0)],
            "Invalid configuration key producer_byte_rate",
        ),
        (
            [("user", "a")],
            [("request_percentage", 0.0)],
            "Quota request_percentage must be greater than 0",
        ),
        (
            [("user", "a")],
            [("producer_byte_rate", 1.5)],
            "producer_byte_rate cannot be a fractional value.",
        ),
        (
            [("user", "a")],
            [("producer_byte_rate", 1e19)],
            "Proposed value for producer_byte_rate is too large for a LONG.",
        ),
        (
            [("ip", "::1")],
            [("connection_creation_rate", 3e9)],
            "Proposed value for connection_creation_rate is too large for an INT.",
        ),
        (
            [("user", "a"), ("client-id", "c")],
            [("producer_byte_rate", 1.0), ("producer_byte_rate", 2.0)],
            "Ignoring duplicate entity ClientQuotaEntity(entries={client-id=c, user=a})",
        ),
    ],
)
def test_alterations_kafka_refuses(
    pairs: list[tuple[str, str | None]], ops: list[tuple[str, float | None]], message: str
) -> None:
    store = quotas_store()
    assert alter_one(store, pairs, ops) == (ErrorCode.INVALID_REQUEST, message)
    assert store.entities() == {}


def test_valid_values_removals_and_validate_only() -> None:
    store = quotas_store()
    entity = entity_of([("user", "a")])
    results = store.alter(
        [(entity, [("request_percentage", 12.5), ("producer_byte_rate", 1024.0)])],
        validate_only=True,
    )
    assert results == [(entity, (ErrorCode.NO_ERROR, None))]
    assert store.entities() == {}
    store.alter([(entity, [("request_percentage", 12.5), ("producer_byte_rate", 1024.0)])])
    assert store.entities() == {entity: {"request_percentage": 12.5, "producer_byte_rate": 1024.0}}
    # Removing a key the entity lacks is no error, and removals are not validated.
    assert alter_one(store, [("user", "a")], [("unknown", None), ("request_percentage", None)]) == (
        ErrorCode.NO_ERROR,
        None,
    )
    assert store.entities() == {entity: {"producer_byte_rate": 1024.0}}
    assert alter_one(store, [("ip", None)], [("connection_creation_rate", 10.0)])[0] == 0
    assert not store.fetch.enabled and store.produce.enabled


def test_an_entity_given_twice_keeps_the_first_change_and_answers_an_error() -> None:
    store = quotas_store()
    entity = entity_of([("client-id", "c")])
    results = store.alter(
        [(entity, [("consumer_byte_rate", 10.0)]), (entity, [("consumer_byte_rate", 20.0)])]
    )
    assert results == [
        (
            entity,
            (
                ErrorCode.INVALID_REQUEST,
                "Ignoring duplicate entity ClientQuotaEntity(entries={client-id=c})",
            ),
        )
    ]
    assert store.entities() == {entity: {"consumer_byte_rate": 10.0}}


# -- persistence --------------------------------------------------------------------------------


def test_quotas_survive_a_restart(tmp_path: Path) -> None:
    with KafkaBroker(storage="disk", data_dir=tmp_path) as broker:
        broker.set_quota(user="alice", client_id=DEFAULT, producer_byte_rate=2048)
        broker.set_quota(client_id=DEFAULT, request_percentage=25.5)
        broker.set_quota(ip="10.0.0.1", connection_creation_rate=5)
        before = broker.quotas()
        broker.restart()
        assert broker.quotas() == before
        broker.remove_quota("request_percentage", client_id=DEFAULT)
    assert (tmp_path / "minibroker-client-quotas.json").exists()
    reopened = ClientQuotas.open(BrokerConfig(), tmp_path)
    assert reopened.entities() == {
        entity_of([("user", "alice"), ("client-id", None)]): {"producer_byte_rate": 2048.0},
        entity_of([("ip", "10.0.0.1")]): {"connection_creation_rate": 5.0},
    }
    assert reopened.produce.quota_for("alice", "any") == 2048.0 and reopened.enabled


def test_the_testing_api_refuses_what_kafka_refuses() -> None:
    with KafkaBroker(storage="memory") as broker:
        with pytest.raises(ValueError, match="Invalid configuration key bytes"):
            broker.set_quota(user="alice", bytes=1)
        broker.set_quota(user=DEFAULT, consumer_byte_rate=1)
        assert broker.quotas() == {(("user", None),): {"consumer_byte_rate": 1.0}}
        broker.remove_quota(user=DEFAULT)
        assert broker.quotas() == {}


# -- arithmetic -------------------------------------------------------------------------------


def kafka_throttle(total: float, window_ms: int, quota: float) -> int:
    """Kafka's QuotaUtils.throttleTime: (rate - quota) / quota * window, rounded."""
    rate = total / (window_ms / 1000)
    return int((rate - quota) / quota * window_ms + 0.5)


def test_the_rate_counts_at_least_samples_minus_one_windows() -> None:
    rate = Rate(samples=11, window_ms=1000)
    rate.record(5000, T0)
    assert rate.window_size(T0) == 10_000
    assert rate.measure(T0) == 500.0
    rate.record(5000, T0 + 10_500)  # a new window; the first sample is still monitored
    assert rate.window_size(T0 + 10_500) == 10_500
    assert rate.measure(T0 + 10_500) == 10_000 / 10.5
    assert rate.measure(T0 + 11_000) == 5000 / 10.5  # the first sample idle too long: reset
    later = T0 + 10_500 + 11_000  # every sample idle for samples * window
    assert rate.measure(later) == 0.0


def test_byte_rate_throttle_is_kafkas_formula_uncapped() -> None:
    manager = QuotaManager(samples=11, window_seconds=1)
    manager.update("alice", None, 1000.0)
    assert manager.record("alice", "c", 5000, T0) == 0
    assert manager.record("alice", "c", 10_000, T0 + 500) == kafka_throttle(15_000, 10_500, 1000.0)
    assert manager.record("alice", "c", 1_000_000, T0 + 600) == kafka_throttle(
        1_015_000, 10_600, 1000.0
    )
    assert manager.record("alice", "c", 0, T0 + 600) > 1_000_000  # no cap on byte rates


def test_request_percentage_throttle_is_capped_at_one_window() -> None:
    manager = QuotaManager(samples=11, window_seconds=2, max_throttle_ms=2000)
    manager.update(None, DEFAULT, 1.0)
    assert manager.record("anyone", "c", 5.0, T0) == 0  # 5 over 20 s
    assert manager.record("anyone", "c", 100.0, T0) == 2000


def test_fetch_cap_is_quota_times_samples_minus_one_windows() -> None:
    store = quotas_store()
    alter_one(store, [("client-id", "c")], [("consumer_byte_rate", 100.0)])
    assert store.max_fetch_bytes("User:ANONYMOUS", "c") == 1000
    assert store.max_fetch_bytes("User:ANONYMOUS", "other") is None


def mutation_quota(strict: bool, clock: list[int]) -> MutationQuota:
    manager = QuotaManager(samples=11, window_seconds=1)
    manager.update(DEFAULT, None, 2.0)
    return MutationQuota(manager, manager.bucket("u", "c", clock[0]), strict, lambda: clock[0])


def test_strict_mutation_quota_refuses_once_the_bucket_is_empty() -> None:
    clock = [T0]
    quota = mutation_quota(strict=True, clock=clock)
    assert quota.record(30)  # burst 22 (11 windows of 2/s): accepted, the bucket at -8
    assert quota.throttle_time_ms() == 0
    assert not quota.record(1)
    assert quota.throttle_time_ms() == 4000  # 8 tokens at 2 per second
    clock[0] += 1500
    assert quota.throttle_time_ms() == 2500
    clock[0] += 3000  # refilled to +1
    assert quota.record(1)


def test_permissive_mutation_quota_accepts_and_throttles() -> None:
    clock = [T0]
    quota = mutation_quota(strict=False, clock=clock)
    assert quota.record(30)
    assert quota.throttle_time_ms() == 4000
    assert quota.record(2)
    assert quota.throttle_time_ms() == 5000
