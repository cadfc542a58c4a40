"""TLS for SSL and SASL_SSL listeners: an `ssl.SSLContext` built from Kafka's `ssl.*` settings.

Keystores and truststores are read in PEM form only: Python's ssl module cannot read JKS or
PKCS12 stores, so `ssl.keystore.type`/`ssl.truststore.type` other than PEM is a ConfigError
that says so. A keystore is `ssl.keystore.location` (one PEM file holding the private key and
the certificate chain) or the inline `ssl.keystore.certificate.chain` + `ssl.keystore.key`;
`ssl.key.password` decrypts an encrypted (PKCS#8) key. A truststore is
`ssl.truststore.location` or the inline `ssl.truststore.certificates`; without one, client
certificates are checked against the system's CAs. `ssl.client.auth` is none, requested or
required, as in Kafka. Every setting may be given per listener as
`listener.name.<listener>.ssl.*`.

Inline PEM values may have their line breaks replaced by spaces (a properties value joined
with `\\` continuations), as Kafka accepts: blocks are re-wrapped before loading.
"""

from __future__ import annotations

import re
import ssl
import tempfile
import textwrap
from collections.abc import Callable
from pathlib import Path

from minibroker.config import BrokerConfig, ConfigError

TLS_PROTOCOLS = ("SSL", "SASL_SSL")

_CLIENT_AUTH = {
    "none": ssl.CERT_NONE,
    "requested": ssl.CERT_OPTIONAL,
    "required": ssl.CERT_REQUIRED,
}

_TLS_VERSIONS = {
    "TLSv1.2": ssl.TLSVersion.TLSv1_2,
    "TLSv1.3": ssl.TLSVersion.TLSv1_3,
}

_PEM_BLOCK = re.compile(r"-----BEGIN ([A-Z0-9 ]+)-----(.*?)-----END \1-----", re.DOTALL)

Setting = Callable[[str], str | None]


def pem_blocks(text: str) -> list[tuple[str, str]]:
    """(label, block) for each PEM block in `text`, re-wrapped at 64 columns."""
    blocks = []
    for match in _PEM_BLOCK.finditer(text):
        label, body = match.group(1), "".join(match.group(2).split())
        lines = "\n".join(textwrap.wrap(body, 64))
        blocks.append((label, f"-----BEGIN {label}-----\n{lines}\n-----END {label}-----\n"))
    return blocks


def server_context(config: BrokerConfig, listener_name: str) -> ssl.SSLContext | None:
    """The TLS context of an SSL/SASL_SSL listener; None for PLAINTEXT/SASL_PLAINTEXT."""
    if config.security_protocol(listener_name) not in TLS_PROTOCOLS:
        return None

    def setting(name: str) -> str | None:
        return config.listener_value(listener_name, name)

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    _set_protocol_versions(context, setting)
    _load_keystore(context, setting, listener_name)
    client_auth = (setting("ssl.client.auth") or "none").strip().lower()
    if client_auth not in _CLIENT_AUTH:
        raise ConfigError(f"Invalid value {client_auth} for configuration ssl.client.auth")
    _load_truststore(context, setting, client_auth != "none")
    context.verify_mode = _CLIENT_AUTH[client_auth]
    return context


def _set_protocol_versions(context: ssl.SSLContext, setting: Setting) -> None:
    names = [item.strip() for item in (setting("ssl.enabled.protocols") or "").split(",")]
    versions = [_TLS_VERSIONS[name] for name in names if name in _TLS_VERSIONS]
    if not versions:
        raise ConfigError(
            f"ssl.enabled.protocols {','.join(names)} names none of {', '.join(_TLS_VERSIONS)}"
        )
    context.minimum_version = min(versions)
    context.maximum_version = max(versions)


def _require_pem(setting: Setting, store: str) -> None:
    store_type = (setting(f"ssl.{store}.type") or "JKS").strip().upper()
    if store_type != "PEM":
        raise ConfigError(
            f"ssl.{store}.type {store_type} is not supported: minibroker reads PEM {store}s "
            f"only; set ssl.{store}.type=PEM"
        )


def _load_keystore(context: ssl.SSLContext, setting: Setting, listener_name: str) -> None:
    location = setting("ssl.keystore.location")
    chain = setting("ssl.keystore.certificate.chain")
    key = setting("ssl.keystore.key")
    if not location and not (chain and key):
        raise ConfigError(
            f"listener {listener_name} uses TLS and needs a keystore: ssl.keystore.type=PEM "
            "with ssl.keystore.location, or ssl.keystore.certificate.chain and ssl.keystore.key"
        )
    _require_pem(setting, "keystore")
    if location:
        text = _read(location, "ssl.keystore.location")
    else:
        assert chain is not None and key is not None
        text = key + "\n" + chain
    blocks = pem_blocks(text)
    keys = [block for label, block in blocks if label.endswith("PRIVATE KEY")]
    certificates = [block for label, block in blocks if label == "CERTIFICATE"]
    if len(keys) != 1 or not certificates:
        raise ConfigError(
            "a PEM keystore needs one private key and at least one certificate; found "
            f"{len(keys)} key(s) and {len(certificates)} certificate(s)"
        )
    password = setting("ssl.key.password") or None
    with tempfile.TemporaryDirectory(prefix="minibroker-tls-") as folder:
        path = Path(folder) / "keystore.pem"
        path.write_text(keys[0] + "".join(certificates))
        try:
            context.load_cert_chain(path, password=password)
        except (ssl.SSLError, ValueError) as exc:
            raise ConfigError(f"cannot load the PEM keystore: {exc}") from exc


def _load_truststore(context: ssl.SSLContext, setting: Setting, verify_clients: bool) -> None:
    location = setting("ssl.truststore.location")
    certificates = setting("ssl.truststore.certificates")
    if not location and not certificates:
        if verify_clients:
            context.load_default_certs(ssl.Purpose.CLIENT_AUTH)
        return
    _require_pem(setting, "truststore")
    text = _read(location, "ssl.truststore.location") if location else certificates or ""
    blocks = [block for label, block in pem_blocks(text) if label == "CERTIFICATE"]
    if not blocks:
        raise ConfigError("the PEM truststore holds no certificate")
    try:
        context.load_verify_locations(cadata="".join(blocks))
    except ssl.SSLError as exc:
        raise ConfigError(f"cannot load the PEM truststore: {exc}") from exc


def _read(location: str, name: str) -> str:
    try:
        return Path(location).read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{name} {location}: {exc}") from exc
