"""The emulated Kafka releases' fact table (`minibroker/protocol/release_table.py`) against its
sources, and the gating of the handler registry by a release."""

from __future__ import annotations

from pathlib import Path

from minibroker.handlers import load_all
from minibroker.handlers.registry import REGISTRY, api_gates
from minibroker.protocol import release_table
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.releases import NEWEST, RELEASES, find_release
from tests.protocol import derive_releases

RELEASE_NAMES = ["2.8", *(f"3.{n}" for n in range(10)), "4.0", "4.1", "4.2", "4.3"]


def _table() -> dict[str, dict[int, tuple[int, int]]]:
    return {name: dict(release.api_ranges) for name, release in RELEASES.items()}


def test_the_releases_are_2_8_to_4_3_newest_last() -> None:
    assert list(RELEASES) == RELEASE_NAMES
    assert NEWEST == "4.3"


def test_the_table_module_is_as_generated() -> None:
    assert Path(release_table.__file__).read_text() == derive_releases.render(_table())


def test_3_9_is_the_schemas_in_kafka_clients_3_9() -> None:
    assert derive_releases.release_ranges_3_9_from_jar() == _table()["3.9"]


def test_2_8_to_3_9_are_kafkas_schemas_at_each_release_branch() -> None:
    if derive_releases.KAFKA_REPO is None:
        # Without a clone of apache/kafka, a few well-known facts of the older releases.
        assert RELEASES["3.9"].api_ranges[ApiKey.Produce] == (0, 11)
        assert RELEASES["2.8"].api_ranges[ApiKey.ApiVersions] == (0, 3)
        assert RELEASES["3.0"].api_ranges[ApiKey.Fetch] == (0, 12)
        return
    derived = derive_releases.release_ranges_3x()
    assert derived == {name: _table()[name] for name in derived}


def test_4_3_is_the_schemas_in_kafka_clients_4_3() -> None:
    assert derive_releases.release_ranges_4_3() == _table()["4.3"]


def test_4_x_follow_3_9_with_their_changes() -> None:
    assert derive_releases.release_ranges_4x(_table()["3.9"]) == {
        name: _table()[name] for name in ("4.0", "4.1", "4.2")
    }


def test_what_releases_added_and_removed() -> None:
    def has(release: str, key: ApiKey) -> bool:
        return key in RELEASES[release].api_ranges

    assert not has("3.6", ApiKey.ConsumerGroupHeartbeat)
    assert has("3.7", ApiKey.ConsumerGroupHeartbeat)
    assert not has("3.7", ApiKey.DescribeTopicPartitions)
    assert has("3.8", ApiKey.DescribeTopicPartitions)
    assert not has("3.2", ApiKey.DescribeQuorum)  # ZooKeeper mode
    assert has("3.3", ApiKey.DescribeQuorum)  # KRaft
    assert not has("4.0", ApiKey.ShareFetch)
    assert RELEASES["4.1"].api_ranges[ApiKey.ShareFetch] == (1, 1)
    assert RELEASES["4.0"].api_ranges[ApiKey.Fetch] == (4, 17)
    assert RELEASES["4.0"].api_ranges[ApiKey.JoinGroup] == (0, 9)  # 4.0.1, KAFKA-19444


def test_kafka_4_advertises_produce_from_0_and_refuses_v0_to_v2() -> None:
    for name in ("4.0", "4.1", "4.2", "4.3"):
        assert RELEASES[name].api_ranges[ApiKey.Produce][0] == 0
        assert RELEASES[name].refused_below == {ApiKey.Produce: 3}
    assert RELEASES["3.9"].refused_below == {}


def test_patch_versions_name_their_line() -> None:
    assert find_release("3.9.1") is RELEASES["3.9"]
    assert find_release(" 4.0 ") is RELEASES["4.0"]
    assert find_release("3") is None
    assert find_release("2.7") is None


def test_gates_are_the_intersection_of_registry_and_release() -> None:
    load_all()
    for name, release in RELEASES.items():
        gates = api_gates(release)
        for key, gate in gates.items():
            low, high = release.api_ranges[key]
            spec = REGISTRY[key]
            assert gate.advertised_min == max(low, spec.min_version), (name, key)
            assert gate.max_version == min(high, spec.max_version), (name, key)
        assert set(gates) <= set(release.api_ranges) & set(REGISTRY)


def test_gating_under_3_9() -> None:
    load_all()
    gates = api_gates(RELEASES["3.9"])
    assert gates[ApiKey.ApiVersions].max_version == 4
    assert gates[ApiKey.Produce].max_version == 11
    assert gates[ApiKey.Produce].accepted_min == gates[ApiKey.Produce].advertised_min == 0
    assert ApiKey.ShareFetch not in gates
    assert ApiKey.ListConfigResources in gates  # ListClientMetricsResources v0
    assert gates[ApiKey.ListConfigResources].max_version == 0
    assert api_gates(RELEASES["2.8"])[ApiKey.ApiVersions].max_version == 3
    assert ApiKey.ConsumerGroupHeartbeat not in api_gates(RELEASES["3.6"])
