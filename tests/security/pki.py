"""Test certificates made on the fly: a CA, a server certificate and a client certificate.

The server certificate names 127.0.0.1 and localhost, so clients that check host names accept
it. Files are PEM; `server.pem`/`client.pem` hold the key and the chain together (the form of
Kafka's PEM keystore file), and `*-key.pem`/`*-cert.pem` hold them apart for clients that
want two files.
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


@dataclass(frozen=True)
class Pki:
    folder: Path

    @property
    def ca(self) -> Path:
        return self.folder / "ca.pem"

    def keystore(self, who: str) -> Path:
        """Key + certificate chain in one PEM file (Kafka's `ssl.keystore.type=PEM` file)."""
        return self.folder / f"{who}.pem"

    def key(self, who: str) -> Path:
        return self.folder / f"{who}-key.pem"

    def cert(self, who: str) -> Path:
        return self.folder / f"{who}-cert.pem"


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _builder(
    subject: str, issuer: str, public_key: ec.EllipticCurvePublicKey
) -> x509.CertificateBuilder:
    now = datetime.datetime.now(datetime.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(_name(subject))
        .issuer_name(_name(issuer))
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=30))
    )


def make_pki(folder: Path) -> Pki:
    folder.mkdir(parents=True, exist_ok=True)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_cert = (
        _builder("minibroker test CA", "minibroker test CA", ca_key.public_key())
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(ca_key, hashes.SHA256())
    )
    ca_pem = ca_cert.public_bytes(serialization.Encoding.PEM)
    pki = Pki(folder)
    pki.ca.write_bytes(ca_pem)
    leaves = {
        "server": (
            ExtendedKeyUsageOID.SERVER_AUTH,
            [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))],
        ),
        "client": (ExtendedKeyUsageOID.CLIENT_AUTH, [x509.DNSName("client")]),
    }
    for who, (usage, names) in leaves.items():
        key = ec.generate_private_key(ec.SECP256R1())
        cert = (
            _builder(who, "minibroker test CA", key.public_key())
            .add_extension(x509.SubjectAlternativeName(names), critical=False)
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
            .sign(ca_key, hashes.SHA256())
        )
        cert_pem = cert.public_bytes(serialization.Encoding.PEM)
        pki.key(who).write_bytes(_key_pem(key))
        pki.cert(who).write_bytes(cert_pem + ca_pem)
        pki.keystore(who).write_bytes(_key_pem(key) + cert_pem + ca_pem)
    return pki
