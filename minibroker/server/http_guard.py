"""What the web console and the Schema Registry refuse from browsers: writes sent by another
site's page, write bodies a page can send without a CORS preflight, and (the console) pages
asked for under a host name other than its own.

A page on another site can make the browser send a form or a `text/plain` POST to a local
service without asking first (no CORS preflight), with basic credentials the browser
remembers. Browsers name that page's origin (`Origin`, or `Sec-Fetch-Site: cross-site`);
scripts such as curl and the Kafka clients send neither and are let through. DNS rebinding
points a name of the attacker's at 127.0.0.1, making their page same-origin with the service:
the request then carries their name as its `Host`, which is refused.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

from aiohttp import web

READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
LOCAL_NAMES = frozenset({"localhost"})
# The console's pages load only its own script and stylesheet and fetch only its own API.
CONSOLE_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
    ),
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
}


def cross_site(request: web.Request) -> bool:
    """A request a browser sent from another site's page."""
    origin = request.headers.get("Origin")
    if origin is None:
        return request.headers.get("Sec-Fetch-Site", "same-origin") == "cross-site"
    return urlsplit(origin).netloc != request.host


def declared_content_type(request: web.Request) -> str:
    """The `Content-Type` without parameters; "" when there is none (where aiohttp would say
    `application/octet-stream`): a page's fetch of an untyped Blob sends none."""
    return request.content_type if "Content-Type" in request.headers else ""


def json_content_type(request: web.Request) -> bool:
    """`application/json` or a Schema Registry JSON type (`application/vnd.schemaregistry.v1+json`,
    `application/vnd.schemaregistry+json`): types a page may send only after a preflight."""
    content_type = declared_content_type(request)
    return content_type == "application/json" or (
        content_type.startswith("application/vnd.schemaregistry") and content_type.endswith("+json")
    )


def allowed_host(request: web.Request, bound_host: str, names: frozenset[str]) -> bool:
    """Whether `Host` names this service: an IP address (no name to rebind), localhost, the
    address it is bound to, or one of `names`."""
    try:
        host = urlsplit(f"//{request.host}").hostname
    except ValueError:
        return False
    if host is None:
        return False
    if host in LOCAL_NAMES or host == bound_host.lower() or host in names:
        return True
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True
