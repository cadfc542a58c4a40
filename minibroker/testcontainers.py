"""A drop-in for Testcontainers' `KafkaContainer`, backed by an in-process minibroker.

```python
# from testcontainers.kafka import KafkaContainer            (or testcontainers.community.kafka)
from minibroker.testcontainers import KafkaContainer

with KafkaContainer() as kafka:
    producer = Producer({"bootstrap.servers": kafka.get_bootstrap_server()})
```

Nothing else in the tests changes: the constructor takes testcontainers-python's arguments
(`image`, `port`, ... and any container keyword, all accepted), `start()` returns the
container, `stop()` and the context manager end it, and `get_bootstrap_server()`,
`get_container_host_ip()` and `get_exposed_port()` give the address. There is no Docker:
the broker runs on a background thread of the test process (`minibroker.testing.KafkaBroker`,
reachable as `.broker` for minibroker's own helpers), on 127.0.0.1 and a free port, with its
data in a temporary directory removed on `stop()`.

Configuration follows the Kafka images' convention: `with_env("KAFKA_AUTO_CREATE_TOPICS_ENABLE",
"false")` sets `auto.create.topics.enable` (strip `KAFKA_`, lower-case, `_` -> `.`, `__` -> `_`,
`___` -> `-`), for the broker settings minibroker knows; `CLUSTER_ID` and `with_cluster_id()`
set `cluster.id`. Settings about the container's own network (listeners, advertised
listeners, controller quorum, log.dirs) do not apply in-process and are left out, as are
names minibroker does not know. `with_bind_ports(port, host_port)` on the Kafka port picks
the broker's port. Other `with_*` methods are accepted and return the container; the few
methods that need a real container (`exec`, `get_wrapped_container`, file copies, ...) raise
`NotImplementedError`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from os import PathLike
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

if TYPE_CHECKING:
    from minibroker.testing.cluster import KafkaBroker

__all__ = ["ContainerStartException", "KafkaContainer", "broker_settings", "setting_name"]

HOST = "127.0.0.1"

# KAFKA_* variables that configure the container's networking or storage, not the broker
# minibroker runs in-process (which listens on HOST and keeps its data in a temporary dir).
CONTAINER_ONLY_SETTINGS = frozenset(
    {
        "advertised.listeners",
        "controller.listener.names",
        "controller.quorum.voters",
        "inter.broker.listener.name",
        "listener.security.protocol.map",
        "listeners",
        "log.dir",
        "log.dirs",
        "process.roles",
        "zookeeper.connect",
    }
)


class ContainerStartException(RuntimeError):
    """Asked for something that exists only once the container has started (as in
    `testcontainers.core.exceptions`)."""


def setting_name(variable: str) -> str | None:
    """`KAFKA_AUTO_CREATE_TOPICS_ENABLE` -> `auto.create.topics.enable`; None when the name
    does not start with `KAFKA_` (the Kafka images' convention for broker settings)."""
    from minibroker.config import apache_kafka_setting, bitnami_kafka_setting

    return apache_kafka_setting(variable) or bitnami_kafka_setting(variable)


def broker_settings(env: Mapping[str, object]) -> dict[str, str]:
    """The broker settings an environment sets: KAFKA_* (and CLUSTER_ID) names that map to a
    setting minibroker knows and that applies to an in-process broker."""
    from minibroker.config import BROKER_CONFIGS

    settings: dict[str, str] = {}
    for variable, value in env.items():
        name = setting_name(variable)
        if name in BROKER_CONFIGS and name not in CONTAINER_ONLY_SETTINGS:
            settings[name] = str(value)
    return settings


def _docker_only(what: str) -> NotImplementedError:
    return NotImplementedError(
        f"{what} needs a Docker container; minibroker.testcontainers runs the broker "
        "in this process (use testcontainers' own KafkaContainer for that)"
    )


class KafkaContainer:
    """testcontainers-python's `KafkaContainer`, with an in-process minibroker behind it."""

    TC_START_SCRIPT = "/tc-start.sh"
    MIN_KRAFT_TAG = "7.0.0"

    def __init__(
        self,
        image: str = "confluentinc/cp-kafka:7.6.0",
        port: int = 9093,
        wait_strategy_check_string: str = r".*\[KafkaServer id=\d+\] started.*",
        listener_name: str = "PLAINTEXT",
        security_protocol: str = "PLAINTEXT",
        **kwargs: Any,
    ) -> None:
        if kwargs.pop("port_to_expose", None):
            raise ValueError("Use `port` instead of `port_to_expose`")
        if security_protocol != "PLAINTEXT":
            raise ValueError(
                f"security_protocol {security_protocol!r}: minibroker.testcontainers "
                "serves PLAINTEXT only"
            )
        self.image = image
        self.port = port
        self.listener_name = listener_name
        self.security_protocol = security_protocol
        self.kraft_enabled = False
        self.wait_for: re.Pattern[str] = re.compile(wait_strategy_check_string)
        self.boot_command = ""
        self.cluster_id = "MkU3OEVBNTcwNTJENDM2Qk"
        self.listeners = f"{listener_name}://0.0.0.0:{port},BROKER://0.0.0.0:9092"
        self.security_protocol_map = f"BROKER:PLAINTEXT,{listener_name}:{security_protocol}"
        self.env: dict[str, Any] = dict(kwargs.pop("env", None) or {})
        self.ports: dict[str, int | None] = {}
        self.volumes: dict[str, dict[str, str]] = {}
        self.tmpfs: dict[str, str] = {}
        self._kwargs = kwargs
        self._name: str | None = kwargs.pop("name", None)
        self._cluster_id_given = False
        self._broker: KafkaBroker | None = None
        self._stopped = False
        self.with_exposed_ports(*(kwargs.pop("ports", None) or ()), port)
        self._set_image_defaults()

    def _set_image_defaults(self) -> None:
        """The environment testcontainers' KafkaContainer gives the image (readable as
        `.env`; the group rebalance delay of 0 and the others that apply are honoured)."""
        self.with_env("KAFKA_LISTENERS", self.listeners)
        self.with_env("KAFKA_LISTENER_SECURITY_PROTOCOL_MAP", self.security_protocol_map)
        self.with_env("KAFKA_INTER_BROKER_LISTENER_NAME", "BROKER")
        self.with_env("KAFKA_BROKER_ID", "1")
        self.with_env("KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR", "1")
        self.with_env("KAFKA_OFFSETS_TOPIC_NUM_PARTITIONS", "1")
        self.with_env("KAFKA_LOG_FLUSH_INTERVAL_MESSAGES", "10000000")
        self.with_env("KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS", "0")

    # ---- Kafka configuration ----------------------------------------------------------

    def with_kraft(self) -> Self:
        """minibroker has no ZooKeeper to leave: recorded, and the cluster id applies."""
        self.kraft_enabled = True
        return self

    def with_cluster_id(self, cluster_id: str) -> Self:
        self.cluster_id = cluster_id
        self._cluster_id_given = True
        return self

    def configure(self) -> None:
        """Called by `start()`; the in-process broker has no boot script to write."""

    def broker_config(self) -> dict[str, str]:
        """The broker settings `start()` uses: the mapped environment and the cluster id."""
        settings = broker_settings(self.env)
        if self.kraft_enabled or self._cluster_id_given:
            settings.setdefault("cluster.id", self.cluster_id)
        return settings

    # ---- lifecycle --------------------------------------------------------------------

    def start(self, timeout: int = 30) -> Self:
        """Start the broker (ready on return; `timeout` is accepted for compatibility)."""
        from minibroker.testing.cluster import KafkaBroker

        if self._broker is not None:
            return self
        self.configure()
        broker = KafkaBroker(config=self.broker_config(), host=HOST, port=self._host_port())
        self._broker = broker.start()
        self._stopped = False
        return self

    def _host_port(self) -> int:
        return self.ports.get(str(self.port)) or 0

    def stop(self, force: bool = True, delete_volume: bool = True) -> None:
        broker, self._broker = self._broker, None
        if broker is not None:
            self._stopped = True
            broker.stop()

    def __enter__(self) -> Self:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def broker(self) -> KafkaBroker:
        """The running `minibroker.testing.KafkaBroker` (create_topic, records, faults...)."""
        if self._broker is None:
            raise ContainerStartException("Container is not started")
        return self._broker

    @property
    def status(self) -> str:
        if self._broker is not None:
            return "running"
        return "exited" if self._stopped else "not_started"

    # ---- addresses --------------------------------------------------------------------

    def get_bootstrap_server(self) -> str:
        return f"{self.get_container_host_ip()}:{self.get_exposed_port(self.port)}"

    def get_container_host_ip(self) -> str:
        return HOST

    def get_exposed_port(self, port: int) -> int:
        """The broker's port for the Kafka port (`port`); other ports are not served."""
        if int(port) != self.port:
            raise ValueError(
                f"port {port} is not served: minibroker.testcontainers serves the Kafka "
                f"port {self.port} only"
            )
        return self.broker.port

    def get_container_id(self) -> str:
        return f"minibroker-{self.broker.port}"

    # ---- container options: accepted, recorded, and returning the container -------------

    def with_env(self, key: str, value: str) -> Self:
        self.env[key] = value
        return self

    def with_envs(self, **variables: str) -> Self:
        self.env.update(variables)
        return self

    def with_env_file(self, env_file: str | PathLike[str]) -> Self:
        """KEY=VALUE lines (`#` comments, optional `export `, quotes stripped)."""
        with open(env_file, encoding="utf-8") as lines:
            for line in lines:
                key, sep, value = line.strip().removeprefix("export ").partition("=")
                if sep and not key.startswith("#"):
                    self.with_env(key.strip(), value.strip().strip("'\""))
        return self

    def with_bind_ports(self, container: str | int, host: str | int | None = None) -> Self:
        """On the Kafka port: the broker listens on `host` (a port number)."""
        port = str(container).partition("/")[0]
        self.ports[port] = int(str(host).partition("/")[0]) if host is not None else None
        return self

    def with_exposed_ports(self, *ports: str | int) -> Self:
        for port in ports:
            self.ports.setdefault(str(port).partition("/")[0], None)
        return self

    def with_network(self, network: Any) -> Self:
        self._kwargs["network"] = network
        return self

    def with_network_aliases(self, *aliases: str) -> Self:
        self._kwargs["network_aliases"] = list(aliases)
        return self

    def with_kwargs(self, **kwargs: Any) -> Self:
        self._kwargs = kwargs
        return self

    def with_command(self, command: str | list[str]) -> Self:
        self._kwargs["command"] = command
        return self

    def with_name(self, name: str) -> Self:
        self._name = name
        return self

    def with_volume_mapping(
        self, host: str | PathLike[str], container: str, mode: str = "ro"
    ) -> Self:
        self.volumes[str(host)] = {"bind": container, "mode": mode}
        return self

    def with_tmpfs_mount(self, container_path: str, size: str | None = None) -> Self:
        self.tmpfs[container_path] = size or ""
        return self

    def with_copy_into_container(
        self, transferable: Any, destination_in_container: str, mode: int = 0o644
    ) -> Self:
        """Accepted and ignored: the in-process broker reads no files from an image."""
        return self

    def maybe_emulate_amd64(self) -> Self:
        return self

    def waiting_for(self, strategy: Any) -> Self:
        """The broker is ready when `start()` returns; a wait strategy is not needed."""
        return self

    # ---- container introspection ------------------------------------------------------

    def get_logs(self) -> tuple[bytes, bytes]:
        """(stdout, stderr): empty, the broker logs through Python's `logging`."""
        if self._broker is None:
            raise ContainerStartException("Container should be started before getting logs")
        return b"", b""

    def reload(self) -> None:
        """Nothing to refresh: the broker's state is read directly."""

    def get_container_info(self) -> None:
        return None

    def tc_start(self) -> None:
        """The boot script testcontainers copies into the image: nothing to do in-process."""

    def get_wrapped_container(self) -> Any:
        raise _docker_only("get_wrapped_container()")

    def get_docker_client(self) -> Any:
        raise _docker_only("get_docker_client()")

    def exec(self, command: Any) -> Any:
        raise _docker_only("exec()")

    def wait(self) -> int:
        raise _docker_only("wait()")

    def create_file(self, content: bytes, path: str) -> None:
        raise _docker_only("create_file()")

    def copy_into_container(
        self, transferable: Any, destination_in_container: str, mode: int = 0o644
    ) -> None:
        raise _docker_only("copy_into_container()")

    def copy_from_container(self, source_in_container: str, destination_on_host: Any) -> None:
        raise _docker_only("copy_from_container()")
