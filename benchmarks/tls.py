"""TLS: `minibroker serve` with an SSL listener, its clients (raw sockets and librdkafka), and
the per-request figures (R1, FE, FM) with TLS beside plaintext.

The certificate is made for the run (a self-signed EC P-256 certificate for 127.0.0.1, with
the `cryptography` package of the test extra, which `scripts/bench` installs); the broker
reads it as Kafka's PEM keystore file, the clients trust it as their CA.
"""

from __future__ import annotations

import datetime
import ipaddress
import socket
import ssl
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from benchmarks import fetch_rate, request_rate
from benchmarks.brokers import RunningBroker, start_minibroker
from benchmarks.stats import Spread, ratio

HOST = "127.0.0.1"


@dataclass(frozen=True)
class TlsClient:
    """What a client needs to reach the TLS listener: the certificate it trusts."""

    ca_file: Path

    def wrap(self, sock: socket.socket) -> socket.socket:
        context = ssl.create_default_context(cafile=str(self.ca_file))
        return context.wrap_socket(sock, server_hostname=HOST)

    def client_settings(self) -> dict[str, Any]:
        """librdkafka's settings for it."""
        return {"security.protocol": "SSL", "ssl.ca.location": str(self.ca_file)}


def self_signed(folder: Path) -> tuple[Path, TlsClient]:
    """A PEM keystore (key and certificate) for 127.0.0.1, and a client trusting it."""
    folder.mkdir(parents=True, exist_ok=True)
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "minibroker benchmark")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=7))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(HOST))]),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )
    certificate_pem = certificate.public_bytes(serialization.Encoding.PEM)
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    keystore, ca_file = folder / "server.pem", folder / "ca.pem"
    keystore.write_bytes(key_pem + certificate_pem)
    ca_file.write_bytes(certificate_pem)
    return keystore, TlsClient(ca_file)


def start_tls_minibroker(data_dir: Path, folder: Path) -> RunningBroker:
    """`minibroker serve` on disk with one SSL listener (certificate files in `folder`)."""
    keystore, client = self_signed(folder)
    broker = start_minibroker(
        data_dir,
        f"listeners=SSL://{HOST}:0",
        "ssl.keystore.type=PEM",
        f"ssl.keystore.location={keystore}",
        listen=False,
    )
    broker.tls = client
    return broker


FIGURES = ("R1", "FE", "FM")


def measure(figure: str, broker: RunningBroker) -> dict[str, float]:
    """One run of R1 (single-message Produce, closed loop, window 64), FE or FM (100
    consumers' Fetches): requests/s and broker CPU-µs per request."""
    if figure == "R1":
        produced = request_rate.measure(broker, 64, 5.0)
        return {
            "requests_per_s": produced["requests_per_s"],
            "broker_cpu_us": produced["broker_cpu_us_per_request"],
        }
    fetched = fetch_rate.measure(broker, figure, 3.0)
    return {
        "requests_per_s": fetched["fetches_per_s"],
        "broker_cpu_us": fetched["broker_cpu_us_per_fetch"],
    }


def compare(plaintext: RunningBroker, runs: int) -> dict[str, Any]:
    """Each figure against `plaintext` and a TLS broker started beside it, their runs
    alternated; the TLS figures over the plaintext ones."""
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        secure = start_tls_minibroker(Path(tmp) / "data", Path(tmp) / "tls")
        try:
            for broker in (plaintext, secure):
                fetch_rate.prepare(broker.bootstrap, tls=broker.tls)
            for figure in FIGURES:
                measured: dict[str, list[dict[str, float]]] = {"plaintext": [], "tls": []}
                for _ in range(runs):
                    measured["plaintext"].append(measure(figure, plaintext))
                    measured["tls"].append(measure(figure, secure))
                row: dict[str, Any] = {
                    name: {
                        key: Spread.of([m[key] for m in runs_of]).as_dict()
                        for key in ("requests_per_s", "broker_cpu_us")
                    }
                    for name, runs_of in measured.items()
                }
                for key in ("requests_per_s", "broker_cpu_us"):
                    row[f"{key}_ratio"] = ratio(
                        row["tls"][key]["median"], row["plaintext"][key]["median"]
                    )
                results[figure] = row
        finally:
            secure.stop()
    return results
