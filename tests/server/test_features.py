"""Feature flags: ApiVersions' supported and finalized features, UpdateFeatures (57) with
Kafka's errors, the levels kept across a restart, and ApiVersions v3+ client software name
validation (real clients still connect)."""

from __future__ import annotations

import re
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaAdminClient
from kafka.errors import InvalidUpdateVersionError

from minibroker.config import ConfigError
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.errors import ErrorCode
from minibroker.testing import KafkaBroker
from tests.clients.runner import run_ok
from tests.wire import WireClient

E = ErrorCode
SOFTWARE_NAME = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")  # Kafka's
UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE = 1, 2, 3
KAFKA_4_3_FEATURES = {
    "metadata.version",
    "transaction.version",
    "kraft.version",
    "group.version",
    "eligible.leader.replicas.version",
    "share.version",
    "streams.version",
}


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[KafkaBroker]:
    with KafkaBroker(data_dir=tmp_path / "data") as running:
        yield running


def api_versions(bootstrap: str, version: int = 4, name: str = "t", software: str = "1") -> Any:
    with WireClient(bootstrap) as client:
        if version < 3:
            return client.call(ApiKey.ApiVersions, version)
        return client.call(
            ApiKey.ApiVersions,
            version,
            client_software_name=name,
            client_software_version=software,
        )


def supported(response: Any) -> dict[str, tuple[int, int]]:
    return {f.name: (f.min_version, f.max_version) for f in response.supported_features}


def finalized(response: Any) -> dict[str, int]:
    return {f.name: f.max_version_level for f in response.finalized_features}


def update(bootstrap: str, *updates: tuple[str, int, int], version: int = 2, **fields: Any) -> Any:
    """UpdateFeatures with (feature, level, upgrade type) updates (v0: type 2 = downgrade)."""
    entries = []
    for feature, level, upgrade_type in updates:
        entry: dict[str, Any] = {"feature": feature, "max_version_level": level}
        if version == 0:
            entry["allow_downgrade"] = upgrade_type != UPGRADE
        else:
            entry["upgrade_type"] = upgrade_type
        entries.append(entry)
    with WireClient(bootstrap) as client:
        return client.call(
            ApiKey.UpdateFeatures, version, timeout_ms=5000, feature_updates=entries, **fields
        )


# ---- ApiVersions ----------------------------------------------------------------------------


def test_api_versions_v4_lists_kafka_4_3_features_and_finalizes_tv2(broker: KafkaBroker) -> None:
    response = api_versions(broker.bootstrap_servers)
    assert response.error_code == E.NO_ERROR
    assert set(supported(response)) == KAFKA_4_3_FEATURES
    assert supported(response)["transaction.version"] == (0, 2)
    assert supported(response)["metadata.version"] == (7, 30)
    # Only what minibroker serves can be finalized: KIP-848, share and streams groups,
    # eligible leader replicas.
    assert supported(response)["group.version"] == (0, 1)
    assert supported(response)["share.version"] == (0, 1)
    assert supported(response)["streams.version"] == (0, 1)
    assert finalized(response) == {
        "metadata.version": 30,
        "transaction.version": 2,
        "group.version": 1,
        "share.version": 1,
        "streams.version": 1,
        "eligible.leader.replicas.version": 1,
    }
    assert response.finalized_features_epoch == 1


def test_below_v4_a_supported_range_from_0_is_left_out(broker: KafkaBroker) -> None:
    response = api_versions(broker.bootstrap_servers, version=3)
    assert supported(response) == {"metadata.version": (7, 30)}
    assert finalized(response) == {
        "metadata.version": 30,
        "transaction.version": 2,
        "group.version": 1,
        "share.version": 1,
        "streams.version": 1,
        "eligible.leader.replicas.version": 1,
    }


@pytest.mark.parametrize("level", [0, 1])
def test_the_setting_chooses_tv1(tmp_path: Path, level: int) -> None:
    config = {"minibroker.transaction.version": level}
    with KafkaBroker(data_dir=tmp_path / "data", config=config) as running:
        response = api_versions(running.bootstrap_servers)
    expected = {
        "metadata.version": 30,
        "group.version": 1,
        "share.version": 1,
        "streams.version": 1,
        "eligible.leader.replicas.version": 1,
    }
    expected |= {"transaction.version": 1} if level else {}
    assert finalized(response) == expected


def test_a_setting_outside_the_supported_levels_is_refused_at_start() -> None:
    with pytest.raises(ConfigError, match=re.escape("transaction.version supports levels 0-2")):
        KafkaBroker(storage="memory", config={"minibroker.transaction.version": 3}).start()


# ---- UpdateFeatures -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("feature", "level", "upgrade_type", "message"),
    [
        (
            "transaction.version",
            3,
            UPGRADE,
            "Invalid update version 3 for feature transaction.version. Local controller 1 only "
            "supports versions 0-2",
        ),
        (
            "no.such.version",
            1,
            UPGRADE,
            "Invalid update version 1 for feature no.such.version. Local controller 1 does not "
            "support this feature.",
        ),
        (
            "group.version",
            2,
            UPGRADE,
            "Invalid update version 2 for feature group.version. Local controller 1 only "
            "supports versions 0-1",
        ),
        (
            "share.version",
            2,
            UPGRADE,
            "Invalid update version 2 for feature share.version. Local controller 1 only "
            "supports versions 0-1",
        ),
        (
            "streams.version",
            2,
            UPGRADE,
            "Invalid update version 2 for feature streams.version. Local controller 1 only "
            "supports versions 0-1",
        ),
        (
            "transaction.version",
            -1,
            SAFE_DOWNGRADE,
            "Invalid update version -1 for feature transaction.version. A feature version "
            "cannot be less than 0.",
        ),
        (
            "transaction.version",
            1,
            UPGRADE,
            "Invalid update version 1 for feature transaction.version. Can't downgrade the "
            "version of this feature without setting the upgrade type to either safe or unsafe "
            "downgrade.",
        ),
        (
            "transaction.version",
            1,
            7,
            "Invalid update version 1 for feature transaction.version. The controller does not "
            "support the given upgrade type.",
        ),
        (
            "metadata.version",
            29,
            SAFE_DOWNGRADE,
            "Invalid metadata.version 29. Refusing to perform the requested downgrade because it "
            "might delete metadata information. Retry using UNSAFE_DOWNGRADE if you want to "
            "force the downgrade to proceed.",
        ),
        (
            "metadata.version",
            29,
            UNSAFE_DOWNGRADE,
            "Invalid metadata.version 29. Unsafe metadata downgrade is not supported in this "
            "version.",
        ),
    ],
)
def test_update_features_errors(
    broker: KafkaBroker, feature: str, level: int, upgrade_type: int, message: str
) -> None:
    response = update(broker.bootstrap_servers, (feature, level, upgrade_type))
    assert (response.error_code, response.error_message) == (E.INVALID_UPDATE_VERSION, message)
    after = api_versions(broker.bootstrap_servers)
    assert finalized(after)["transaction.version"] == 2
    assert after.finalized_features_epoch == 1


def test_a_downgrade_type_to_a_higher_level_is_refused(tmp_path: Path) -> None:
    with KafkaBroker(data_dir=tmp_path, config={"minibroker.transaction.version": 1}) as running:
        response = update(running.bootstrap_servers, ("transaction.version", 2, SAFE_DOWNGRADE))
    assert response.error_code == E.INVALID_UPDATE_VERSION
    assert response.error_message == (
        "Invalid update version 2 for feature transaction.version. Can't downgrade to a newer "
        "version."
    )


def test_one_failing_update_fails_the_whole_request(broker: KafkaBroker) -> None:
    response = update(
        broker.bootstrap_servers,
        ("transaction.version", 1, SAFE_DOWNGRADE),
        ("streams.version", 2, UPGRADE),
        version=1,
        validate_only=False,
    )
    assert response.error_code == E.INVALID_UPDATE_VERSION
    assert "streams.version" in response.error_message
    assert response.results == []
    assert finalized(api_versions(broker.bootstrap_servers))["transaction.version"] == 2


def test_validate_only_changes_nothing(broker: KafkaBroker) -> None:
    response = update(
        broker.bootstrap_servers,
        ("transaction.version", 1, SAFE_DOWNGRADE),
        version=1,
        validate_only=True,
    )
    assert response.error_code == E.NO_ERROR
    assert [(r.feature, r.error_code) for r in response.results] == [
        ("transaction.version", E.NO_ERROR)
    ]
    assert finalized(api_versions(broker.bootstrap_servers))["transaction.version"] == 2


def test_a_downgrade_and_an_upgrade_are_kept_across_restarts(broker: KafkaBroker) -> None:
    bootstrap = broker.bootstrap_servers
    response = update(bootstrap, ("transaction.version", 1, SAFE_DOWNGRADE), version=0)
    assert (response.error_code, response.error_message) == (E.NO_ERROR, None)
    assert [(r.feature, r.error_code) for r in response.results] == [
        ("transaction.version", E.NO_ERROR)
    ]
    broker.restart()
    after = api_versions(broker.bootstrap_servers)
    assert finalized(after) == {
        "metadata.version": 30,
        "transaction.version": 1,
        "group.version": 1,
        "share.version": 1,
        "streams.version": 1,
        "eligible.leader.replicas.version": 1,
    }
    assert after.finalized_features_epoch == 2
    # level 0 removes the feature from the finalized list; then back to TV2
    assert update(bootstrap, ("transaction.version", 0, UNSAFE_DOWNGRADE)).error_code == 0
    assert "transaction.version" not in finalized(api_versions(bootstrap))
    assert update(bootstrap, ("transaction.version", 2, UPGRADE)).error_code == E.NO_ERROR
    broker.restart()
    after = api_versions(broker.bootstrap_servers)
    assert finalized(after)["transaction.version"] == 2
    assert after.finalized_features_epoch == 4


def test_group_version_0_turns_the_consumer_group_protocol_off(broker: KafkaBroker) -> None:
    """As Kafka: at group.version 0 ConsumerGroupHeartbeat and ConsumerGroupDescribe answer
    UNSUPPORTED_VERSION; upgraded to 1 again, a member joins."""
    bootstrap = broker.bootstrap_servers
    join = {
        "group_id": "g",
        "member_id": "m-1",
        "member_epoch": 0,
        "instance_id": None,
        "rack_id": None,
        "rebalance_timeout_ms": 30_000,
        "subscribed_topic_names": ["t"],
        "subscribed_topic_regex": None,
        "server_assignor": None,
        "topic_partitions": [],
    }
    assert update(bootstrap, ("group.version", 0, SAFE_DOWNGRADE)).error_code == E.NO_ERROR
    with WireClient(bootstrap) as client:
        refused = client.call(ApiKey.ConsumerGroupHeartbeat, 1, **join)
        assert (refused.error_code, refused.error_message) == (E.UNSUPPORTED_VERSION, None)
        described = client.call(
            ApiKey.ConsumerGroupDescribe, 1, group_ids=["g"], include_authorized_operations=False
        )
        assert [g.error_code for g in described.groups] == [E.UNSUPPORTED_VERSION]
    assert update(bootstrap, ("group.version", 1, UPGRADE)).error_code == E.NO_ERROR
    with WireClient(bootstrap) as client:
        joined = client.call(ApiKey.ConsumerGroupHeartbeat, 1, **join)
        assert (joined.error_code, joined.member_epoch) == (E.NO_ERROR, 1)


def test_share_version_0_turns_share_groups_off(broker: KafkaBroker) -> None:
    """As Kafka: at share.version 0 ShareGroupHeartbeat and ShareGroupDescribe answer
    UNSUPPORTED_VERSION; upgraded to 1 again, a member joins."""
    bootstrap = broker.bootstrap_servers
    join = {
        "group_id": "s",
        "member_id": "m-1",
        "member_epoch": 0,
        "rack_id": None,
        "subscribed_topic_names": ["t"],
    }
    assert update(bootstrap, ("share.version", 0, SAFE_DOWNGRADE)).error_code == E.NO_ERROR
    with WireClient(bootstrap) as client:
        refused = client.call(ApiKey.ShareGroupHeartbeat, 1, **join)
        assert (refused.error_code, refused.error_message) == (E.UNSUPPORTED_VERSION, None)
        described = client.call(
            ApiKey.ShareGroupDescribe, 1, group_ids=["s"], include_authorized_operations=False
        )
        assert [g.error_code for g in described.groups] == [E.UNSUPPORTED_VERSION]
    assert update(bootstrap, ("share.version", 1, UPGRADE)).error_code == E.NO_ERROR
    with WireClient(bootstrap) as client:
        joined = client.call(ApiKey.ShareGroupHeartbeat, 1, **join)
        assert (joined.error_code, joined.member_epoch) == (E.NO_ERROR, 1)


# ---- client software name and version (ApiVersions v3+) -------------------------------------


@pytest.mark.parametrize(
    ("name", "software"),
    [("", "1.0"), ("bad name", "1.0"), ("-java", "1.0"), ("java-", "1.0"), ("java", "1.0+x")],
)
def test_invalid_client_software_names_get_invalid_request(
    broker: KafkaBroker, name: str, software: str
) -> None:
    for version in (3, 4):
        with WireClient(broker.bootstrap_servers) as client:
            sent = client.send(
                ApiKey.ApiVersions,
                version,
                client_software_name=name,
                client_software_version=software,
            )
            frame = client.recv_frame()
        # Kafka's getErrorResponse at the request's version (kafka-python would decode an error
        # as v0): INVALID_REQUEST, no API (compact array of 0), throttle 0, no tagged fields.
        assert frame == struct.pack(">ihBiB", sent, E.INVALID_REQUEST, 1, 0, 0)


@pytest.mark.parametrize(
    ("name", "software"),
    [
        ("apache-kafka-java", "4.3.0"),
        ("confluent-kafka-python", "2.16.0-rdkafka-2.16.0"),
        ("librdkafka", "2.16.0"),
        ("a", "1"),
    ],
)
def test_valid_client_software_names_are_answered(
    broker: KafkaBroker, name: str, software: str
) -> None:
    response = api_versions(broker.bootstrap_servers, 4, name, software)
    assert response.error_code == E.NO_ERROR
    assert {key.api_key for key in response.api_keys} >= {ApiKey.Produce, ApiKey.UpdateFeatures}


def test_before_v3_there_is_no_software_name_to_check(broker: KafkaBroker) -> None:
    assert api_versions(broker.bootstrap_servers, 2).error_code == E.NO_ERROR


@pytest.mark.clients
@pytest.mark.parametrize(
    "client",
    [
        "java-4.3",
        "java-3.9",
        "confluent-kafka",
        "kcat",
        "kafka-python-3",
        "kafka-python-2",
        "aiokafka",
        "kafkajs",
    ],
)
def test_real_clients_pass_the_software_name_check(broker: KafkaBroker, client: str) -> None:
    broker.create_topic("names", partitions=1)
    run_ok(
        client,
        {
            "op": "produce",
            "bootstrap": broker.bootstrap_servers,
            "topic": "names",
            "records": [{"key": None, "value": "aGk=", "headers": [], "partition": 0}],
        },
    )
    assert broker.values("names") == [b"hi"]
    for request in broker.requests(ApiKey.ApiVersions):
        if request.api_version >= 3:  # kafkajs and aiokafka send older versions
            names = (request.body.client_software_name, request.body.client_software_version)
            assert all(SOFTWARE_NAME.fullmatch(name) for name in names), names


# ---- a real admin client ---------------------------------------------------------------------


@pytest.mark.clients
def test_kafka_python_3_describes_and_updates_features(broker: KafkaBroker) -> None:
    """kafka-python 3's KafkaAdminClient, as `kafka-features describe/downgrade` would."""
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers)
    try:
        described = admin.describe_features()
        assert described["transaction.version"] == {
            "supported": (0, 2),
            "finalized": (2, 2),
            "finalized_epoch": 1,
        }
        assert described["group.version"] == {
            "supported": (0, 1),
            "finalized": (1, 1),
            "finalized_epoch": 1,
        }
        downgrade = {"transaction.version": ("SAFE_DOWNGRADE", 1)}
        assert admin.update_features(downgrade) == {"transaction.version": "OK"}
        assert admin.describe_features()["transaction.version"]["finalized"] == (1, 1)
        with pytest.raises(InvalidUpdateVersionError, match="only supports versions 0-2"):
            admin.update_features({"transaction.version": 3})
    finally:
        admin.close()
