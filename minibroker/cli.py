"""`minibroker serve` runs a broker (or, with --nodes N, an in-process cluster of N nodes on
consecutive ports and node ids), `dump-log` prints segments, `healthcheck` probes one."""

from __future__ import annotations

import argparse
import asyncio
import gc
import logging
import os
import signal
import sys
from collections.abc import Coroutine, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from minibroker import healthcheck
from minibroker.config import (
    MAX_PORT,
    BrokerConfig,
    ConfigError,
    Listener,
    load_config,
    parse_overrides,
)
from minibroker.protocol.lazy_import import defer_package_init

if TYPE_CHECKING:
    from minibroker.server.broker import Broker


def _serve_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    serve = sub.add_parser("serve", help="run a broker until SIGTERM/SIGINT")
    serve.add_argument("--config", type=Path, help="a server.properties file")
    serve.add_argument(
        "--override", action="append", default=[], metavar="KEY=VALUE", help="a broker setting"
    )
    serve.add_argument(
        "--listen", type=_address, metavar="HOST:PORT", help="PLAINTEXT listener (port 0: any)"
    )
    serve.add_argument(
        "--advertised", type=_address, metavar="HOST:PORT", help="address told to clients"
    )
    serve.add_argument("--data-dir", type=Path, help="log.dirs")
    serve.add_argument("--in-memory", action="store_true", help="keep logs in memory only")
    serve.add_argument(
        "--nodes",
        type=_positive,
        default=1,
        help="run an in-process cluster of N nodes on consecutive ports and node ids",
    )
    serve.add_argument(
        "--kafka-version",
        metavar="X.Y",
        help="the Kafka release to emulate: 2.8, 3.0-3.9, 4.0-4.3 (default 4.3; the setting "
        "minibroker.emulate.kafka.version)",
    )
    serve.add_argument("--log-level", default="INFO", help="DEBUG, INFO, WARNING, ERROR")
    serve.add_argument(
        "--console",
        type=_host_port,
        metavar="HOST:PORT",
        help="serve the web console there (e.g. 127.0.0.1:8080; one for all --nodes)",
    )
    serve.add_argument(
        "--console-read-only", action="store_true", help="the console refuses every change"
    )
    serve.add_argument(
        "--schema-registry",
        type=_host_port,
        metavar="HOST:PORT",
        help="serve a Confluent-compatible Schema Registry there (e.g. 127.0.0.1:8081)",
    )
    serve.add_argument(
        "--kafka-ready-log",
        action="store_true",
        help="once ready, also print the lines Kafka logs then (for tools waiting for them)",
    )


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def _host_port(text: str) -> tuple[str, int]:
    host, separator, port = text.rpartition(":")
    if not separator or not port.isdigit() or int(port) > MAX_PORT:
        raise argparse.ArgumentTypeError(
            f"expected HOST:PORT with a port from 0 to {MAX_PORT}, not {text!r}"
        )
    return host.strip("[]") or "127.0.0.1", int(port)


def _address(text: str) -> str:
    """HOST:PORT as given, once its port is checked."""
    _host_port(text)
    return text


def _shifted(listeners: list[Listener], offset: int) -> str:
    """The listeners with every non-zero port moved up by `offset` (0 stays: any port)."""
    return ",".join(
        f"{item.name}://{item.host}:{item.port + offset if item.port else 0}" for item in listeners
    )


def node_configs(config: BrokerConfig, nodes: int) -> list[BrokerConfig]:
    """One config per node: node ids and listener ports consecutive from the given ones."""
    configs = [config]
    for offset in range(1, nodes):
        values = {
            "node.id": str(config.node_id + offset),
            "listeners": _shifted(config.listeners, offset),
        }
        if config.raw("advertised.listeners"):
            values["advertised.listeners"] = _shifted(config.advertised_listeners, offset)
        configs.append(config.with_values(**values))
    return configs


def serve_config(args: argparse.Namespace) -> BrokerConfig:
    settings = parse_overrides(args.override)
    if args.listen:
        settings["listeners"] = f"PLAINTEXT://{args.listen}"
    if args.advertised:
        settings["advertised.listeners"] = f"PLAINTEXT://{args.advertised}"
    if args.data_dir:
        settings["log.dirs"] = str(args.data_dir)
    if args.kafka_version:
        settings["minibroker.emulate.kafka.version"] = args.kafka_version
    return load_config(args.config, settings, os.environ)


async def _serve(config: BrokerConfig, args: argparse.Namespace) -> None:
    from minibroker.server.broker import Broker

    first, *others = node_configs(config, args.nodes)
    broker = Broker(first, in_memory=args.in_memory)
    brokers = [broker, *(Broker(other, shared_with=broker) for other in others)]
    for node in brokers:
        await node.start()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    addresses = ",".join(node.bootstrap_servers for node in brokers)
    web_console = None
    if args.console is not None:
        from minibroker.console import start_console

        with _binding("console", *args.console):
            web_console = await start_console(
                broker, *args.console, read_only=args.console_read_only
            )
    registry = None
    if args.schema_registry is not None:
        from minibroker.registry import start_schema_registry

        with _binding("schema registry", *args.schema_registry):
            registry = await start_schema_registry(broker, *args.schema_registry)
    # What start-up built lives as long as the process: full collections need not walk it.
    gc.freeze()
    # Requests allocate many short-lived objects: at the default 700 allocations a young
    # collection ran every few Fetches (6-7% of the broker's CPU under empty long polls).
    gc.set_threshold(20_000, 20, 20)
    gc.enable()
    print(f"minibroker ready on {addresses}", flush=True)
    if args.kafka_ready_log:
        _print_kafka_ready_lines(brokers)
    if web_console is not None:
        print(f"minibroker console on {web_console.url}", flush=True)
    if registry is not None:
        print(f"minibroker schema registry on {registry.url}", flush=True)
    await stop.wait()
    logging.getLogger(__name__).info("stopping")
    if registry is not None:
        await registry.stop()
    if web_console is not None:
        await web_console.stop()
    for node in reversed(brokers):
        await node.stop()


def _print_kafka_ready_lines(brokers: list[Broker]) -> None:
    from datetime import datetime

    from minibroker.kafka_image import kafka_ready_lines

    for node in brokers:
        for line in kafka_ready_lines(node.config.node_id, os.environ, datetime.now()):
            print(line, flush=True)


@contextmanager
def _binding(what: str, host: str, port: int) -> Iterator[None]:
    try:
        yield
    except OSError as exc:
        from minibroker.server.broker import BindError

        raise BindError(what, host, port, exc) from exc


def run_event_loop(main: Coroutine[Any, Any, None]) -> None:
    """uvloop when it is installed (a default dependency where it builds), asyncio's own loop
    otherwise; one INFO line says which, and which produce path runs (native or pure)."""
    from minibroker.records.accel import active_path

    log = logging.getLogger(__name__)
    try:
        import uvloop
        from uvloop._version import __version__ as uvloop_version
    except ImportError:
        log.info("event loop: asyncio (uvloop is not installed); produce path: %s", active_path())
        asyncio.run(main)
    else:
        log.info("event loop: uvloop %s; produce path: %s", uvloop_version, active_path())
        uvloop.run(main)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="minibroker", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    _serve_parser(sub)
    healthcheck.add_parser(sub)
    from minibroker import tools  # standard library only: the clients load in tools.run

    tools.add_stubs(sub)
    dump = sub.add_parser(
        "dump-log", help="print .log/.index/.timeindex/.txnindex files", add_help=False
    )
    dump.add_argument("rest", nargs=argparse.REMAINDER)
    arguments = sys.argv[1:] if argv is None else argv
    if arguments[:1] and arguments[0] in tools.COMMANDS:
        return tools.run(arguments)
    if arguments[:1] == ["dump-log"]:
        # Its options come first, as in kafka-dump-log.sh; REMAINDER would refuse them there.
        from minibroker.log.dump import dump_log_main

        return dump_log_main(arguments[1:])
    args = parser.parse_args(arguments)
    if args.command == "healthcheck":
        return healthcheck.main(args)
    logging.basicConfig(
        level=args.log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    try:
        config = serve_config(args)
    except (ConfigError, OSError) as exc:
        print(f"minibroker: {exc}", file=sys.stderr)
        return 2
    defer_package_init("kafka")
    defer_package_init("crc32c")
    # Start-up (the broker's modules, their classes and tables, the broker) makes objects that
    # live as long as the process: no collection until _serve freezes them (some 30 collections,
    # ~4 ms, while the broker's modules are imported).
    gc.disable()
    try:
        from minibroker.log.manager import LogDirError
        from minibroker.server.broker import BindError

        try:
            run_event_loop(_serve(config, args))
        except (ConfigError, LogDirError, BindError) as exc:  # e.g. an unreadable TLS keystore
            print(f"minibroker: {exc}", file=sys.stderr)
            return 2
    finally:
        gc.enable()
    return 0
