"""Who may use the console.

When any listener uses SASL, every request needs HTTP basic credentials that the broker's
SASL would accept (minibroker/server/http_auth.py: checked off the event loop, failures
answered after `connection.failed.authentication.delay.ms`). Without SASL the console is open
(bound to 127.0.0.1 unless configured otherwise), its principal `User:ANONYMOUS`.

With an authorizer (`authorizer.class.name`), the console acts as `User:<name>` and needs
ALTER on the CLUSTER resource for everything (a super user, or an ACL granting it): it reads
every topic's records and changes topics and groups, which only a cluster administrator may.

Browsers are held to the console's own pages (minibroker/server/http_guard.py): writes from
another site's page are refused, as are requests whose `Host` is not an IP address,
localhost, the console's bound address or a name of `minibroker.console.allowed.hosts`
(DNS rebinding); every answer forbids framing and content sniffing and carries a
Content-Security-Policy letting pages load only the console's own script and stylesheet.
"""

from __future__ import annotations

from minibroker.auth.acls import CLUSTER_NAME, AclOperation, ResourceType
from minibroker.server.broker import Broker

ALLOWED_HOSTS_CONFIG = "minibroker.console.allowed.hosts"


def authorized(broker: Broker, principal: str, host: str) -> bool:
    """Whether the principal may use the console (always, without an authorizer)."""
    authorizer = broker.authorizer
    if authorizer is None:
        return True
    return authorizer.authorize(
        principal, host, AclOperation.ALTER, ResourceType.CLUSTER, CLUSTER_NAME
    )


def allowed_host_names(broker: Broker) -> frozenset[str]:
    """The host names besides localhost and IP addresses the console answers under."""
    names = broker.config.get_str(ALLOWED_HOSTS_CONFIG).split(",")
    return frozenset(name.strip().lower() for name in names if name.strip())
