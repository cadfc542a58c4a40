"""The wire protocol: framing-level codecs over kafka-python's message classes and our own
message definitions.

kafka-python's own `__init__` imports its clients, and its message packages import every
one of their modules from their `__init__`; the codec imports only the module an API needs,
when the API is first used (`codec.KAFKA_PYTHON_MODULES`), so those `__init__` modules are
deferred here, before any of this package's modules imports from kafka-python, until
something asks the package for an attribute (`from kafka import KafkaProducer` still works).
"""

from minibroker.protocol.lazy_import import defer_package_init

defer_package_init("kafka")
for _package in ("admin", "consumer", "metadata", "producer"):
    defer_package_init(f"kafka.protocol.{_package}")
