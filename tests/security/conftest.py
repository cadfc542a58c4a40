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
