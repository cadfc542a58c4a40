"""librdkafka's mock cluster in a process of its own, so that its CPU time can be measured:
prints `host:port` of its broker, then serves until stdin closes."""

from __future__ import annotations

import sys

from confluent_kafka import Producer


def main() -> None:
    holder = Producer({"test.mock.num.brokers": 1, "log_level": 0})
    broker = next(iter(holder.list_topics(timeout=10).brokers.values()))
    print(f"{broker.host}:{broker.port}", flush=True)
    sys.stdin.read()


if __name__ == "__main__":
    main()
