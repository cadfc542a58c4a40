"""A connection's principal, as Kafka's DefaultKafkaPrincipalBuilder names it.

- SASL (PLAIN, SCRAM): `User:<authorization id>`.
- TLS with a client certificate: `User:<name>`, the name being the certificate subject's
  distinguished name in RFC 2253 form (as Java's `X500Principal.getName()`: last RDN first,
  `CN=alice,OU=eng,O=acme,C=US`) mapped through `ssl.principal.mapping.rules`:
  `DEFAULT` keeps the DN, `RULE:<regex>/<replacement>/[L|U]` rewrites a DN the regex matches
  whole (Java's replacement syntax: `$1` back references, `\\` escapes; L/U lower or upper
  case); rules are split and checked as Kafka's SslPrincipalMapper does (empty ones ignored,
  anything after a rule's last `/[LU]` refused); the first rule that matches wins, and a DN no
  rule matches fails the connection's authentication, as in Kafka.
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
# Kafka's SslPrincipalMapper: the rules are first split on commas with the last alternative
# taking anything, then each piece must be one whole rule (or empty, which is ignored).
_RULE_PATTERN = r"(DEFAULT)|RULE:((\\.|[^\\/])*)/((\\.|[^\\/])*)/([LU]?).*?|(.*?)"
_RULE_SPLITTER = re.compile(r"\s*(" + _RULE_PATTERN + r")\s*(,\s*|$)")
_RULE_PARSER = re.compile(_RULE_PATTERN)
_BACK_REFERENCE = re.compile(r"\$([0-9]+)")
_DIGITS = "0123456789"
# Java's X500Principal RFC 2253 form escapes these anywhere in a value.
_ESCAPED = set(',=+<>#;"\\')
_EDGE_WHITESPACE = " \r"

Subject = Sequence[Sequence[tuple[str, str]]]


class NoMatchingRule(Exception):
    """No `ssl.principal.mapping.rules` rule maps the certificate's DN (or the one that matches
    has a replacement Java cannot apply, which fails the authentication all the same)."""


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
        groups = self.pattern.groups
        template = _escape_literal_back_references(self.replacement, groups)
        name = self.pattern.sub(lambda match: _java_replacement(template, match), dn)
        if self.case == "L":
            return name.lower()
        return name.upper() if self.case == "U" else name


def parse_mapping_rules(text: str) -> list[MappingRule]:
    rules: list[MappingRule] = []
    for split in _RULE_SPLITTER.finditer(text.strip()):
        rule = split.group(1)
        match = _RULE_PARSER.match(rule)
        if match is None or match.end() != len(rule):
            raise ConfigError(f"ssl.principal.mapping.rules: invalid rule `{rule}`")
        if match.group(1):
            rules.append(MappingRule(None))
        elif match.group(2) is not None:
            rules.append(MappingRule(_compile(match.group(2)), match.group(4), match.group(6)))
    return rules


def _compile(pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise ConfigError(
            f"ssl.principal.mapping.rules: invalid pattern `{pattern}`: {exc}"
        ) from exc


def _escape_literal_back_references(template: str, groups: int) -> str:
    """Kafka's escapeLiteralBackReferences: `$N` naming no group (after dropping trailing digits
    while N >= 10) becomes a literal `$N`. Positions are those of the template as given, as in
    Kafka."""
    if groups == 0:
        return template
    value = template
    for reference in _BACK_REFERENCE.finditer(template):
        digits = reference.group(1)
        if digits.startswith("0"):
            continue
        index = int(digits)
        while index > groups and index >= 10:
            index //= 10
        if index > groups:
            at = reference.start(1) - 1
            value = value[:at] + "\\" + value[at:]
    return value


def _java_replacement(template: str, match: re.Match[str]) -> str:
    """`template` expanded as Java's Matcher.appendReplacement expands it: `\\x` is `x`, `$N`
    the longest group number that exists, `${name}` a named group."""
    out: list[str] = []
    position = 0
    while position < len(template):
        char = template[position]
        if char == "\\" and position + 1 < len(template):
            out.append(template[position + 1])
            position += 2
        elif char == "$":
            group, position = _group_reference(template, position + 1, match)
            out.append(match.group(group) or "")
        else:
            out.append(char)
            position += 1
    return "".join(out)


def _group_reference(template: str, position: int, match: re.Match[str]) -> tuple[int | str, int]:
    if template.startswith("{", position):
        end = template.find("}", position)
        if end > position + 1 and template[position + 1 : end] in match.re.groupindex:
            return template[position + 1 : end], end + 1
    elif position < len(template) and template[position] in _DIGITS:
        number = int(template[position])
        position += 1
        while position < len(template) and template[position] in _DIGITS:
            longer = number * 10 + int(template[position])
            if longer > match.re.groups:
                break
            number, position = longer, position + 1
        if number <= match.re.groups:
            return number, position
    raise NoMatchingRule(f"Illegal group reference in replacement `{template}`")


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
    der = bytes([_IA5_STRING_TAG]) + _der_length(len(encoded)) + encoded
    return f"{_OIDS.get(kind, kind)}=#{der.hex()}"


def _der_length(size: int) -> bytes:
    if size < 0x80:
        return bytes([size])
    octets = size.to_bytes((size.bit_length() + 7) // 8, "big")
    return bytes([0x80 | len(octets)]) + octets


def _escape(value: str) -> str:
    """Java's AVA.toRFC2253String: `,=+<>#;"\\` escaped anywhere, NUL as `\\00`, and every
    leading and trailing space (or CR)."""
    escaped = "".join(
        "\\" + char if char in _ESCAPED else "\\00" if char == "\x00" else char for char in value
    )
    lead = len(escaped) - len(escaped.lstrip(_EDGE_WHITESPACE))
    trail = len(escaped.rstrip(_EDGE_WHITESPACE))
    return "".join(
        "\\" + char if index < lead or index >= trail else char
        for index, char in enumerate(escaped)
    )


def tls_principal(subject: Subject | None, rules: Sequence[MappingRule]) -> str:
    if not subject:
        return ANONYMOUS
    return "User:" + map_distinguished_name(rules, rfc2253_name(subject))
