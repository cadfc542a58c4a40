"""The codec's table of kafka-python modules (imported per API when first used) is
kafka-python's: every API key with a message class there is in the table, under the module
that defines its request and response classes."""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys
from typing import Any

from kafka.protocol.api_message import ApiMessage

from minibroker.protocol import codec

PACKAGES = ("admin", "consumer", "metadata", "producer")


def _every_message_class() -> dict[tuple[int, str], Any]:
    for name in PACKAGES:
        package = importlib.import_module(f"kafka.protocol.{name}")
        for module in pkgutil.iter_modules(package.__path__):
            importlib.import_module(f"kafka.protocol.{name}.{module.name}")
    importlib.import_module("kafka.protocol.sasl")
    classes: dict[tuple[int, str], Any] = {}
    pending = list(ApiMessage.__subclasses__())
    while pending:
        cls = pending.pop()
        pending.extend(cls.__subclasses__())
        own = cls.__module__.startswith("kafka.protocol.")  # not one built from a definition
        if own and cls._class_version is None and getattr(cls, "_json", None):
            classes[(cls.API_KEY, cls.type)] = cls
    return classes


def test_the_table_names_the_module_of_every_kafka_python_message_class() -> None:
    every = _every_message_class()
    assert {key for key, _ in every} == set(codec.KAFKA_PYTHON_MODULES)
    for (key, kind), cls in every.items():
        assert cls.__module__ == f"kafka.protocol.{codec.KAFKA_PYTHON_MODULES[key]}", (key, kind)
        assert codec.request_class(key) is every[(key, "request")]
        assert codec.response_class(key) is every[(key, "response")]


def test_a_fresh_process_imports_only_the_modules_of_the_apis_it_uses() -> None:
    probe = (
        "import sys\n"
        "from minibroker.protocol import codec\n"
        "assert codec.response_class(18) is not None\n"
        "print(sorted(m for m in sys.modules if m.startswith('kafka.protocol.') "
        "and m.count('.') == 3))\n"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout
    assert "kafka.protocol.metadata.api_versions" in loaded
    assert "kafka.protocol.admin.topics" not in loaded
    assert "kafka.protocol.consumer.group" not in loaded
