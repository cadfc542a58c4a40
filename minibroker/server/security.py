"""Each listener's security, resolved once at start: its protocol, TLS context and SASL set-up.

`listener.security.protocol.map` gives the protocol (PLAINTEXT, SSL, SASL_PLAINTEXT,
SASL_SSL). SASL listeners offer `sasl.enabled.mechanisms` (or
`listener.name.<listener>.sasl.enabled.mechanisms`); PLAIN users come from
`listener.name.<listener>.plain.sasl.jaas.config`, as Kafka configures them.
"""

from __future__ import annotations

import logging
import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field

from minibroker.config import BrokerConfig, ConfigError
from minibroker.security.jaas import plain_users
from minibroker.security.sasl import PLAIN, SUPPORTED_MECHANISMS
from minibroker.security.tls import server_context

log = logging.getLogger(__name__)

SASL_PROTOCOLS = ("SASL_PLAINTEXT", "SASL_SSL")


@dataclass(frozen=True)
class ListenerSecurity:
    protocol: str
    tls: ssl.SSLContext | None = None
    sasl_mechanisms: tuple[str, ...] = ()
    plain_users: Mapping[str, str] = field(default_factory=dict)

    @property
    def sasl(self) -> bool:
        return bool(self.sasl_mechanisms)


def listener_security(config: BrokerConfig, listener_name: str) -> ListenerSecurity:
    protocol = config.security_protocol(listener_name)
    tls = server_context(config, listener_name)
    if protocol not in SASL_PROTOCOLS:
        return ListenerSecurity(protocol, tls)
    mechanisms = _enabled_mechanisms(config, listener_name)
    users: dict[str, str] = {}
    if PLAIN in mechanisms:
        jaas = config.listener_value(listener_name, "plain.sasl.jaas.config")
        users = plain_users(jaas) if jaas else {}
        if not users:
            log.warning(
                "listener %s offers PLAIN but no user can log in: set "
                'listener.name.%s.plain.sasl.jaas.config with user_<name>="<password>"',
                listener_name,
                listener_name.lower(),
            )
    return ListenerSecurity(protocol, tls, mechanisms, users)


def _enabled_mechanisms(config: BrokerConfig, listener_name: str) -> tuple[str, ...]:
    text = config.listener_value(listener_name, "sasl.enabled.mechanisms") or ""
    mechanisms = tuple(item.strip().upper() for item in text.split(",") if item.strip())
    unsupported = [name for name in mechanisms if name not in SUPPORTED_MECHANISMS]
    if unsupported or not mechanisms:
        raise ConfigError(
            f"sasl.enabled.mechanisms of listener {listener_name}: "
            f"{', '.join(unsupported) or 'none'} not supported; minibroker serves "
            f"{', '.join(SUPPORTED_MECHANISMS)}"
        )
    return mechanisms
