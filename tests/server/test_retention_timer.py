"""Retention runs `log.initial.task.delay.ms` after a start, as Kafka's LogManager schedules
it, not a whole `log.retention.check.interval.ms` later: a broker restarted more often than
the interval (found by scripts/soak, killed every 3 minutes) still deletes expired segments."""

from __future__ import annotations

import time

from minibroker.testing import KafkaBroker

CONFIG = {
    "log.retention.check.interval.ms": 300_000,
    "log.initial.task.delay.ms": 200,
    "log.roll.ms": 1,
}


def test_first_retention_check_runs_soon_after_start() -> None:
    with KafkaBroker(config=CONFIG) as broker:
        broker.create_topic("expiring", config={"retention.ms": 1_000, "segment.ms": 1})
        for value in ("old-1", "old-2", "old-3"):
            broker.produce("expiring", value, timestamp_ms=int(time.time() * 1000) - 60_000)
            time.sleep(0.01)  # past segment.ms: each record rolls a new segment
        assert broker.values("expiring") == [b"old-1", b"old-2", b"old-3"]
        broker.restart()
        deadline = time.monotonic() + 20
        while len(broker.values("expiring")) > 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        # the expired closed segments are gone; the active one stays
        assert broker.values("expiring") == [b"old-3"]
