from __future__ import annotations

from pathlib import Path

import pytest

from tests.security.pki import Pki, make_pki


@pytest.fixture(scope="session")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


def ssl_listener_settings(pki: Pki, client_auth: str = "none", name: str = "SSL") -> dict[str, str]:
    """A TLS listener on a free port with the test server certificate (PEM keystore file)."""
    return {
        "listeners": f"{name}://127.0.0.1:0",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(pki.keystore("server")),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(pki.ca),
        "ssl.client.auth": client_auth,
    }


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


USERS = {"alice": "alice-secret", "bob": "bob-secret"}
PLAIN_JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'username="admin" password="admin-secret" '
    + " ".join(f'user_{name}="{password}"' for name, password in USERS.items())
    + ";"
)
SCRAM_USERS = (
    "SCRAM-SHA-256=[name=alice,password=alice-secret],"
    "SCRAM-SHA-512=[name=alice,password=alice-secret],"
    "SCRAM-SHA-256=[name=bob,password=bob-secret,iterations=8192]"
)


def sasl_listener_settings(
    protocol: str = "SASL_PLAINTEXT", pki: Pki | None = None
) -> dict[str, str]:
    """A SASL listener (PLAIN users alice and bob; SCRAM alice with both hashes, bob 256)."""
    settings = {
        "listeners": f"{protocol}://127.0.0.1:0",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        f"listener.name.{protocol.lower()}.plain.sasl.jaas.config": PLAIN_JAAS,
        "minibroker.scram.credentials": SCRAM_USERS,
    }
    if protocol == "SASL_SSL":
        assert pki is not None
        tls = ssl_listener_settings(pki)
        del tls["listeners"]
        settings.update(tls)
    return settings
