"""A connection's principal, as Kafka's DefaultKafkaPrincipalBuilder names it.

- SASL (PLAIN, SCRAM): `User:<authorization id>`.
- TLS with a client certificate: `User:<name>`, the name being the certificate subject's
  distinguished name in RFC 2253 form (as Java's `X500Principal.getName()`: last RDN first,
  `CN=alice,OU=eng,O=acme,C=US`) mapped through `ssl.principal.mapping.rules`:
  `DEFAULT` keeps the DN, `RULE:<regex>/<replacement>/[L|U]` rewrites a DN the regex matches
  whole (`$1` back references, L/U lower or upper case); the first rule that matches wins, and
  a DN no rule matches fails the connection's authentication, as in Kafka.
- Anything else (PLAINTEXT, TLS without a client certificate): `User:ANONYMOUS`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from minibroker.auth.acls import ANONYMOUS
from minibroker.config import ConfigError

# Java's RFC 2253 keywords; other attributes are written as OID=#<DER hex>.
_KEYWORDS = {
    "commonName": "CN",
    "countryName": "C",
    "localityName": "L",
    "stateOrProvinceName": "ST",
    "organizationName": "O",
    "organizationalUnitName": "OU",
    "streetAddress": "STREET",
    "domainComponent": "DC",
    "userId": "UID",
}
_OIDS = {"emailAddress": "1.2.840.113549.1.9.1"}
_IA5_STRING_TAG = 0x16
_RULE = re.compile(
    r"\s*(?:(DEFAULT)|RULE:((?:\\.|[^\\/])*)/((?:\\.|[^\\/])*)/([LU]?)[^,]*?)\s*(?:,|$)"
)
_SPECIAL = set(',+"\\<>;')

Subject = Sequence[Sequence[tuple[str, str]]]


class NoMatchingRule(Exception):
    """No `ssl.principal.mapping.rules` rule applies to the certificate's DN."""


@dataclass(frozen=True)
class MappingRule:
    pattern: re.Pattern[str] | None  # None: DEFAULT
    replacement: str = ""
    case: str = ""

    def apply(self, dn: str) -> str | None:
        if self.pattern is None:
            return dn
        if self.pattern.fullmatch(dn) is None:
            return None
        name = self.pattern.sub(self.replacement, dn)
        if self.case == "L":
            return name.lower()
        return name.upper() if self.case == "U" else name


def parse_mapping_rules(text: str) -> list[MappingRule]:
    rules: list[MappingRule] = []
    position, text = 0, text.strip()
    while position < len(text):
        match = _RULE.match(text, position)
        if match is None or match.end() == position:
            raise ConfigError(f"ssl.principal.mapping.rules: invalid rule at {text[position:]!r}")
        if match.group(1):
            rules.append(MappingRule(None))
        else:
            replacement = re.sub(r"\$(\d)", r"\\\1", match.group(3))
            rules.append(MappingRule(re.compile(match.group(2)), replacement, match.group(4)))
        position = match.end()
    return rules


def map_distinguished_name(rules: Sequence[MappingRule], dn: str) -> str:
    for rule in rules:
        name = rule.apply(dn)
        if name is not None:
            return name
    raise NoMatchingRule(f"No rules apply to {dn}")


def rfc2253_name(subject: Subject) -> str:
    """The DN of a `getpeercert()` subject as Java's `X500Principal.getName()` writes it."""
    return ",".join(
        "+".join(_attribute(kind, value) for kind, value in rdn) for rdn in reversed(subject)
    )


def _attribute(kind: str, value: str) -> str:
    keyword = _KEYWORDS.get(kind)
    if keyword is not None:
        return f"{keyword}={_escape(value)}"
    encoded = value.encode()
    der = bytes([_IA5_STRING_TAG, len(encoded)]) + encoded
    return f"{_OIDS.get(kind, kind)}=#{der.hex()}"


def _escape(value: str) -> str:
    escaped = "".join("\\" + char if char in _SPECIAL else char for char in value)
    if escaped.startswith(("#", " ")):
        escaped = "\\" + escaped
    if escaped.endswith(" ") and not escaped.endswith("\\ "):
        escaped = escaped[:-1] + "\\ "
    return escaped


def tls_principal(subject: Subject | None, rules: Sequence[MappingRule]) -> str:
    if not subject:
        return ANONYMOUS
    return "User:" + map_distinguished_name(rules, rfc2253_name(subject))
