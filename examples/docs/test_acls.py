"""ACLs in a test (docs/guides/security.md): a broker with a SASL/SCRAM listener, the
StandardAuthorizer and a super user; users and bindings set without a client."""

from confluent_kafka import Producer

from minibroker.testing import KafkaBroker, secured_config


def test_alice_may_write_only_under_her_prefix():
    with KafkaBroker(config=secured_config()) as kafka:  # super user admin/admin-secret
        kafka.create_topic("orders-eu")
        kafka.create_topic("payments")
        kafka.add_user("alice", "alice-secret")  # SCRAM-SHA-256 and -512
        kafka.add_acl("User:alice", "WRITE", topic="orders-", pattern="prefixed")
        kafka.add_acl("User:alice", "DESCRIBE", topic="payments")
        kafka.add_acl("User:bob", "READ", group="billing", permission="deny")
        producer = Producer(
            {
                "bootstrap.servers": kafka.bootstrap_servers,
                "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": "SCRAM-SHA-256",
                "sasl.username": "alice",
                "sasl.password": "alice-secret",
            }
        )
        errors = {}

        def delivered(error, message):
            errors[message.topic()] = error

        for topic in ("orders-eu", "payments"):
            producer.produce(topic, b"tea", on_delivery=delivered)
        producer.flush(30)
        assert errors["orders-eu"] is None  # accepted
        assert errors["payments"].name() == "TOPIC_AUTHORIZATION_FAILED"

        kafka.remove_acls(principal="User:alice")
        assert all(acl.principal != "User:alice" for acl in kafka.acls())
