"""`minibroker.emulate.kafka.version` gates the cluster administration keys by release, over
the wire: WriteTxnMarkers (27: v0-1 up to 3.9, v1 in 4.0-4.1, v1-2 from 4.2, KIP-1228),
UnregisterBroker (64: KRaft brokers from 3.3), AddRaftVoter/RemoveRaftVoter (80/81: 3.9 on,
AddRaftVoter v1 from 4.2)."""

from __future__ import annotations

import pytest

from minibroker.protocol.api_keys import ApiKey
from minibroker.testing import KafkaBroker
from tests.wire import WireClient

KEYS = (
    ApiKey.WriteTxnMarkers,
    ApiKey.UnregisterBroker,
    ApiKey.AddRaftVoter,
    ApiKey.RemoveRaftVoter,
)
ADVERTISED: dict[str, dict[int, tuple[int, int]]] = {
    "3.2": {ApiKey.WriteTxnMarkers: (0, 1)},
    "3.3": {ApiKey.WriteTxnMarkers: (0, 1), ApiKey.UnregisterBroker: (0, 0)},
    "3.8": {ApiKey.WriteTxnMarkers: (0, 1), ApiKey.UnregisterBroker: (0, 0)},
    "3.9": {
        ApiKey.WriteTxnMarkers: (0, 1),
        ApiKey.UnregisterBroker: (0, 0),
        ApiKey.AddRaftVoter: (0, 0),
        ApiKey.RemoveRaftVoter: (0, 0),
    },
    "4.1": {
        ApiKey.WriteTxnMarkers: (1, 1),
        ApiKey.UnregisterBroker: (0, 0),
        ApiKey.AddRaftVoter: (0, 0),
        ApiKey.RemoveRaftVoter: (0, 0),
    },
    "4.3": {
        ApiKey.WriteTxnMarkers: (1, 2),
        ApiKey.UnregisterBroker: (0, 0),
        ApiKey.AddRaftVoter: (0, 1),
        ApiKey.RemoveRaftVoter: (0, 0),
    },
}


@pytest.mark.parametrize("release", sorted(ADVERTISED))
def test_each_release_advertises_the_keys_it_served(release: str) -> None:
    config = {"minibroker.emulate.kafka.version": release}
    with (
        KafkaBroker(config=config, storage="memory") as broker,
        WireClient(broker.bootstrap_servers) as client,
    ):
        response = client.call(
            ApiKey.ApiVersions, 3, client_software_name="t", client_software_version="1"
        )
    advertised = {
        key.api_key: (key.min_version, key.max_version)
        for key in response.api_keys
        if key.api_key in KEYS
    }
    assert advertised == ADVERTISED[release]
