"""TLS principals: `ssl.principal.mapping.rules` parsed and applied as Kafka's SslPrincipalMapper
(the cases of Kafka's SslPrincipalMapperTest), certificate subjects in Java's RFC 2253 form,
and end to end, a client certificate's DN as the principal ACLs name."""

from __future__ import annotations

import datetime
import ssl
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from minibroker.auth.acls import ANONYMOUS
from minibroker.auth.principal import (
    MappingRule,
    NoMatchingRule,
    map_distinguished_name,
    parse_mapping_rules,
    rfc2253_name,
    tls_principal,
)
from minibroker.config import ConfigError
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.errors import ErrorCode
from minibroker.testing import AUTHORIZER_CONFIG, KafkaBroker
from tests.security.conftest import ssl_listener_settings
from tests.security.pki import Pki, make_pki
from tests.wire import WireClient

# -- rules: parsing ----------------------------------------------------------------------


def shown(rules: list[MappingRule]) -> str:
    """The rules as Kafka's SslPrincipalMapper.toString lists them."""
    parts = []
    for rule in rules:
        if rule.pattern is None:
            parts.append("DEFAULT")
            continue
        part = f"RULE:{rule.pattern.pattern}/{rule.replacement}"
        parts.append(part + (f"/{rule.case}" if rule.case else ""))
    return "[" + ", ".join(parts) + "]"


@pytest.mark.parametrize(
    "rules",
    [
        "DEFAULT",
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/",
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, DEFAULT",
        "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/",
        "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L",
        "RULE:^cn=(.?),ou=(.?),dc=(.?),dc=(.?)$/$1@$2/U",
        "RULE:^CN=([^,ADEFLTU,]+)(,.*|$)/$1/",
        "RULE:^CN=([^,DEFAULT,]+)(,.*|$)/$1/",
    ],
)
def test_valid_rules(rules: str) -> None:
    assert parse_mapping_rules(rules)


@pytest.mark.parametrize(
    "rules",
    [
        "default",
        "DEFAUL",
        "DEFAULT/L",
        "DEFAULT/U",
        "RULE:CN=(.*?),OU=ServiceUsers.*/$1",
        "rule:^CN=(.*?),OU=ServiceUsers.*$/$1/",
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L/U",
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/L",
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/U",
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/LU",
        "RULE:^CN=(unclosed$/$1/",
    ],
)
def test_invalid_rules(rules: str) -> None:
    with pytest.raises(ConfigError):
        parse_mapping_rules(rules)


@pytest.mark.parametrize(
    ("expected", "rules"),
    [
        ("[]", ""),
        ("[DEFAULT]", "DEFAULT"),
        ("[RULE:/]", "RULE://"),
        ("[RULE:/.*]", "RULE:/.*/"),
        ("[RULE:/.*/L]", "RULE:/.*/L"),
        ("[RULE:/, DEFAULT]", "RULE://,DEFAULT"),
        ("[RULE:/, DEFAULT]", "  RULE:// ,  DEFAULT  "),
        ("[RULE:   /     , DEFAULT]", "  RULE:   /     / ,  DEFAULT  "),
        ("[RULE:  /     /U, DEFAULT]", "  RULE:  /     /U   ,DEFAULT  "),
        (
            "[RULE:([A-Z]*)/$1/U, RULE:([a-z]+)/$1, DEFAULT]",
            "  RULE:([A-Z]*)/$1/U   ,RULE:([a-z]+)/$1/,   DEFAULT  ",
        ),
        # Empty rules are ignored.
        ("[]", ",   , , ,      , , ,   "),
        ("[RULE:/, DEFAULT]", ",,RULE://,,,DEFAULT,,"),
        ("[RULE: /   , DEFAULT]", ",  , RULE: /   /    ,,,   DEFAULT, ,   "),
        ("[RULE:   /  /U, DEFAULT]", "     ,  , RULE:   /  /U    ,,  ,DEFAULT, ,"),
        # Escape sequences.
        ("[RULE:\\/\\\\\\(\\)\\n\\t/\\/\\/]", "RULE:\\/\\\\\\(\\)\\n\\t/\\/\\//"),
        ("[RULE:\\**\\/+/*/L, RULE:\\/*\\**/**]", "RULE:\\**\\/+/*/L,RULE:\\/*\\**/**/"),
        # Rules whose patterns and replacements hold commas and rule-like text.
        (
            "[RULE:,RULE:,/,RULE:,\\//U, RULE:,/RULE:,, RULE:,RULE:,/L,RULE:,/L, RULE:, DEFAULT, "
            "/DEFAULT, DEFAULT]",
            "RULE:,RULE:,/,RULE:,\\//U,RULE:,/RULE:,/,RULE:,RULE:,/L,RULE:,/L,RULE:, DEFAULT, "
            "/DEFAULT/,DEFAULT",
        ),
    ],
)
def test_rules_splitting(expected: str, rules: str) -> None:
    assert shown(parse_mapping_rules(rules)) == expected


# -- rules: mapping ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("dn", "name"),
    [
        ("CN=Duke,OU=ServiceUsers,O=Org,C=US", "duke"),
        ("CN=Duke,OU=SME,O=mycp,L=Fulton,ST=MD,C=US", "duke@sme"),
        ("cn=duke,ou=sme,dc=mycp,dc=com", "DUKE@SME"),
        ("cN=duke,OU=JavaSoft,O=Sun Microsystems", "DUKE"),
        ("OU=JavaSoft,O=Sun Microsystems,C=US", "OU=JavaSoft,O=Sun Microsystems,C=US"),
    ],
)
def test_ssl_principal_mapper(dn: str, name: str) -> None:
    rules = parse_mapping_rules(
        ", ".join(
            [
                "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L",
                "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L",
                "RULE:^cn=(.*?),ou=(.*?),dc=(.*?),dc=(.*?)$/$1@$2/U",
                "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U",
                "DEFAULT",
            ]
        )
    )
    assert map_distinguished_name(rules, dn) == name


def test_comma_with_whitespace() -> None:
    rules = parse_mapping_rules("RULE:^CN=((\\\\, *|\\w)+)(,.*|$)/$1/,DEFAULT")
    assert map_distinguished_name(rules, "CN=Tkac\\, Adam,OU=ITZ,DC=geodis,DC=cz") == "Tkac\\, Adam"


def test_the_first_matching_rule_wins_and_a_rule_must_match_the_whole_dn() -> None:
    rules = parse_mapping_rules("RULE:CN=(.*)/$1/, RULE:.*CN=(.*?),.*/$1/U, DEFAULT")
    assert map_distinguished_name(rules, "CN=alice") == "alice"
    assert map_distinguished_name(rules, "OU=x,CN=bob,O=y") == "BOB"
    assert map_distinguished_name(rules, "OU=x") == "OU=x"


def test_a_dn_no_rule_matches_fails() -> None:
    with pytest.raises(NoMatchingRule, match="No rules apply to OU=x"):
        map_distinguished_name(parse_mapping_rules("RULE:^CN=(.*)$/$1/"), "OU=x")
    with pytest.raises(NoMatchingRule):
        map_distinguished_name(parse_mapping_rules(""), "CN=alice")


@pytest.mark.parametrize(
    ("rule", "name"),
    [
        # Java takes the longest group number that exists: $12 is group 1 then "2".
        ("RULE:^CN=(.*)$/$12/", "alice2"),
        # A reference to a group that does not exist is kept literally (Kafka escapes it).
        ("RULE:^CN=(.*)$/$1-$2/", "alice-$2"),
        ("RULE:^CN=(.*)$/$10/", "alice0"),
        # Backslash escapes as in Java's replacement strings.
        ("RULE:^CN=(.*)$/\\$1:$1/", "$1:alice"),
        ("RULE:^CN=(.*)$/a\\\\b/", "a\\b"),
        ("RULE:^CN=(.*)$/x\\/y/", "x/y"),
        ("RULE:^CN=(?P<who>.*)$/${who}!/", "alice!"),
    ],
)
def test_replacements_follow_java(rule: str, name: str) -> None:
    assert map_distinguished_name(parse_mapping_rules(rule), "CN=alice") == name


def test_a_group_reference_without_any_group_fails_the_mapping() -> None:
    with pytest.raises(NoMatchingRule):
        map_distinguished_name(parse_mapping_rules("RULE:^CN=.*$/$1/"), "CN=alice")


# -- RFC 2253 names ------------------------------------------------------------------------


def subject(*rdns: tuple[tuple[str, str], ...]) -> tuple[tuple[tuple[str, str], ...], ...]:
    return rdns


def test_rfc2253_name_lists_the_last_rdn_first_with_java_keywords() -> None:
    name = subject(
        (("domainComponent", "com"),),
        (("countryName", "US"),),
        (("stateOrProvinceName", "CA"),),
        (("localityName", "SF"),),
        (("organizationName", "Acme"),),
        (("organizationalUnitName", "eng"),),
        (("streetAddress", "Main"),),
        (("userId", "a1"),),
        (("commonName", "alice"),),
    )
    assert rfc2253_name(name) == "CN=alice,UID=a1,STREET=Main,OU=eng,O=Acme,L=SF,ST=CA,C=US,DC=com"


def test_rfc2253_name_joins_a_multi_valued_rdn_with_plus() -> None:
    name = subject((("organizationName", "Acme"),), (("commonName", "alice"), ("userId", "a1")))
    assert rfc2253_name(name) == "CN=alice+UID=a1,O=Acme"


@pytest.mark.parametrize(
    ("value", "written"),
    [
        ("Acme, Inc.", "Acme\\, Inc."),
        ('a+b"c\\d<e>f;g', 'a\\+b\\"c\\\\d\\<e\\>f\\;g'),
        ("a=b", "a\\=b"),
        ("#1 and #2", "\\#1 and \\#2"),
        (" padded  ", "\\ padded\\ \\ "),
        ("  ", "\\ \\ "),
        ("in side", "in side"),
    ],
)
def test_rfc2253_values_are_escaped_as_java_escapes_them(value: str, written: str) -> None:
    assert rfc2253_name(subject((("commonName", value),))) == f"CN={written}"


def test_attributes_without_an_rfc2253_keyword_are_an_oid_and_der_hex() -> None:
    name = subject((("emailAddress", "a@b.c"),), (("commonName", "alice"),))
    assert rfc2253_name(name) == "CN=alice,1.2.840.113549.1.9.1=#16056140622e63"
    long_value = "x" * 200
    encoded = rfc2253_name(subject((("emailAddress", long_value),)))
    assert encoded == "1.2.840.113549.1.9.1=#1681c8" + long_value.encode().hex()


def test_tls_principal() -> None:
    rules = parse_mapping_rules("RULE:^CN=([^,]*),.*$/$1/L,DEFAULT")
    name = subject((("organizationName", "Acme"),), (("commonName", "Alice"),))
    assert tls_principal(name, rules) == "User:alice"
    assert tls_principal(subject((("commonName", "Bob"),)), rules) == "User:CN=Bob"
    assert tls_principal(None, rules) == ANONYMOUS
    assert tls_principal((), rules) == ANONYMOUS


# -- end to end: a client certificate's DN is the principal ACLs name ---------------------


@dataclass(frozen=True)
class ClientIdentity:
    cert: Path
    key: Path
    ca: Path


def client_identity(folder: Path, name: x509.Name) -> ClientIdentity:
    """A client certificate with subject `name`, signed by a CA of its own."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "principal test CA")])
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=30))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=30))
        .sign(ca_key, hashes.SHA256())
    )
    identity = ClientIdentity(
        folder / "alice-cert.pem", folder / "alice-key.pem", folder / "alice-ca.pem"
    )
    identity.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    identity.key.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    identity.ca.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    return identity


ALICE_DN = "CN=alice,OU=eng,O=Acme\\, Inc.,C=US"


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def alice(pki: Pki) -> ClientIdentity:
    name = x509.Name(
        [
            x509.NameAttribute(NameOID.COUNTRY_NAME, "US"),
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Acme, Inc."),
            x509.NameAttribute(NameOID.ORGANIZATIONAL_UNIT_NAME, "eng"),
            x509.NameAttribute(NameOID.COMMON_NAME, "alice"),
        ]
    )
    return client_identity(pki.folder, name)


def tls_settings(pki: Pki, alice: ClientIdentity, rules: str = "DEFAULT") -> dict[str, str]:
    """A TLS listener asking for client certificates, trusting both test CAs; ACLs on."""
    truststore = pki.folder / "both-cas.pem"
    truststore.write_bytes(pki.ca.read_bytes() + alice.ca.read_bytes())
    settings = {
        **ssl_listener_settings(pki, "requested"),
        **AUTHORIZER_CONFIG,
        "ssl.truststore.location": str(truststore),
        "ssl.principal.mapping.rules": rules,
    }
    return settings


def tls_client(bootstrap: str, pki: Pki, identity: ClientIdentity | None) -> WireClient:
    context = ssl.create_default_context(cafile=pki.ca)
    if identity is not None:
        context.load_cert_chain(identity.cert, identity.key)
    client = WireClient(bootstrap)
    client.sock = context.wrap_socket(client.sock, server_hostname="127.0.0.1")
    return client


def describe_acls(client: WireClient) -> tuple[int, str | None]:
    response = client.call(
        ApiKey.DescribeAcls,
        3,
        resource_type_filter=1,
        resource_name_filter=None,
        pattern_type_filter=1,
        principal_filter=None,
        host_filter=None,
        operation=1,
        permission_type=1,
    )
    return response.error_code, response.error_message


@pytest.fixture(scope="module")
def tls_broker(pki: Pki, alice: ClientIdentity) -> Iterator[KafkaBroker]:
    with KafkaBroker(config=tls_settings(pki, alice), storage="memory") as broker:
        yield broker


def test_the_client_certificate_dn_is_the_principal_acls_name(
    tls_broker: KafkaBroker, pki: Pki, alice: ClientIdentity
) -> None:
    tls_broker.remove_acls()
    with tls_client(tls_broker.bootstrap_servers, pki, alice) as client:
        assert describe_acls(client) == (
            ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
            f"Request DescribeAcls from User:{ALICE_DN} is not authorized.",
        )
        tls_broker.add_acl(f"User:{ALICE_DN}", "DESCRIBE", cluster=True)
        assert describe_acls(client) == (ErrorCode.NO_ERROR, None)


def test_a_binding_for_another_dn_does_not_apply(
    tls_broker: KafkaBroker, pki: Pki, alice: ClientIdentity
) -> None:
    tls_broker.remove_acls()
    tls_broker.add_acl("User:CN=alice", "DESCRIBE", cluster=True)
    with tls_client(tls_broker.bootstrap_servers, pki, alice) as client:
        assert describe_acls(client)[0] == ErrorCode.CLUSTER_AUTHORIZATION_FAILED


def test_a_tls_client_without_certificate_is_anonymous(tls_broker: KafkaBroker, pki: Pki) -> None:
    tls_broker.remove_acls()
    tls_broker.add_acl(ANONYMOUS, "DESCRIBE", cluster=True)
    with tls_client(tls_broker.bootstrap_servers, pki, None) as client:
        assert describe_acls(client) == (ErrorCode.NO_ERROR, None)


def test_mapping_rules_name_the_principal(pki: Pki, alice: ClientIdentity) -> None:
    rules = "RULE:^CN=([^,]*),OU=([^,]*),.*$/$1@$2/U,DEFAULT"
    with KafkaBroker(config=tls_settings(pki, alice, rules), storage="memory") as broker:
        broker.add_acl("User:ALICE@ENG", "DESCRIBE", cluster=True)
        with tls_client(broker.bootstrap_servers, pki, alice) as client:
            assert describe_acls(client) == (ErrorCode.NO_ERROR, None)


def test_a_dn_no_rule_maps_closes_the_connection(pki: Pki, alice: ClientIdentity) -> None:
    with KafkaBroker(
        config=tls_settings(pki, alice, "RULE:^CN=bob$/bob/"), storage="memory"
    ) as broker:
        client = tls_client(broker.bootstrap_servers, pki, alice)
        with client, pytest.raises((ConnectionError, ssl.SSLError, OSError)):
            describe_acls(client)
