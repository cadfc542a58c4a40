"""A broker on a background thread with its own event loop, for synchronous clients."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from types import TracebackType

from minibroker.config import BrokerConfig
from minibroker.server.broker import Broker


class ThreadedBroker:
    """`with ThreadedBroker(data_dir=...) as broker: broker.bootstrap_servers`.

    `restart()` stops the broker cleanly and starts a new one on the same port and data.
    """

    def __init__(
        self,
        data_dir: Path | None = None,
        settings: Mapping[str, str] | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        loop_factory: Callable[[], asyncio.AbstractEventLoop] = asyncio.new_event_loop,
    ) -> None:
        self._data_dir = data_dir
        self._settings = dict(settings or {})
        self._host = host
        self._port = port
        self._loop = loop_factory()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self.broker: Broker | None = None

    def _config(self) -> BrokerConfig:
        values = {"listeners": f"PLAINTEXT://{self._host}:{self._port}", **self._settings}
        if self._data_dir is not None:
            values["log.dirs"] = str(self._data_dir)
        return BrokerConfig(values)

    def call(self, coroutine: object, timeout: float = 30.0) -> object:
        future: concurrent.futures.Future[object] = asyncio.run_coroutine_threadsafe(
            coroutine,  # type: ignore[arg-type]
            self._loop,
        )
        return future.result(timeout)

    async def _start(self) -> Broker:
        broker = Broker(self._config(), in_memory=self._data_dir is None)
        await broker.start()
        return broker

    def start(self) -> ThreadedBroker:
        if not self._thread.is_alive():
            self._thread.start()
        broker = self.call(self._start())
        assert isinstance(broker, Broker)
        self.broker = broker
        self._port = broker.bound[0].port
        return self

    def stop(self) -> None:
        if self.broker is not None:
            self.call(self.broker.stop())
            self.broker = None

    def restart(self) -> None:
        self.stop()
        self.start()

    def close(self) -> None:
        self.stop()
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()

    @property
    def bootstrap_servers(self) -> str:
        return f"{self._host}:{self._port}"

    @property
    def port(self) -> int:
        return self._port

    def __enter__(self) -> ThreadedBroker:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
