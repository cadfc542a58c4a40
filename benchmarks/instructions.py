"""CG: the instructions the broker executes per request, counted by callgrind: the regression
figure of issue 40, which, unlike CPU time, does not move with the host's load.

`minibroker serve` (on disk) runs under `valgrind --tool=callgrind --instr-atstart=no`; once
its topics exist, instrumentation is switched on (`callgrind_control -i on`), a warm-up
runs, the counters are zeroed, exactly `COUNT` requests are answered on one connection with
`WINDOW` in flight, and the counters are dumped: the dump's instructions (Ir) over `COUNT`.
They include what the broker's loop does meanwhile (timers, idle wake-ups), as CPU time does.

- produce: R1's single-message Produce (v9, acks=1, 100-byte value).
- idempotent produce: the same from an idempotent producer (its id and epoch from
  InitProducerId, each request the next sequence: `request_rate.ProducerFrames`).
- fetch: an empty Fetch answered at once (v16 by topic id, max_wait_ms 0).
- long poll: FE's empty long poll (the same Fetch, max_wait_ms 10).
- small fetch: FM's Fetch, one 1-message batch from the middle of a partition of `PRELOAD`
  (partition limit 1 byte).

`scripts/bench` installs valgrind with apt-get where it can; skipped, with the reason printed,
when it is not installed (Debian: `apt-get install valgrind`).

    python -m benchmarks.instructions [--count 2000] [--window 16]

`--window 1` answers each request before the next is sent, so each is read and written on
its own, as FE and FM's consumers send them: it adds the per-read and per-write costs that 16
in flight share.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import tempfile
from pathlib import Path

from benchmarks import fetch_rate, request_rate
from benchmarks.brokers import RunningBroker, receive, start_minibroker

COUNT = 2000
WINDOW = 16
FETCH_TOPIC = "cg-fetch"
SMALL_TOPIC = "cg-small"
TOOLS = ("valgrind", "callgrind_control")


def missing_tool() -> str | None:
    """Why the figure cannot be measured here, or None."""
    absent = [tool for tool in TOOLS if shutil.which(tool) is None]
    if absent:
        return f"{' and '.join(absent)} not installed (Debian: apt-get install valgrind)"
    return None


def _exchange(
    broker: RunningBroker, frames: request_rate.Frames, count: int, window: int = WINDOW
) -> None:
    """`count` requests answered on one connection, `window` in flight."""
    with broker.connect() as sock:
        sent = min(window, count)
        sock.sendall(request_rate.take(frames, sent))
        pending = bytearray()
        answered = 0
        while answered < count:
            chunk = receive(sock, 1 << 20)
            if not chunk:
                raise RuntimeError("the broker closed the connection")
            pending += chunk
            done = len(fetch_rate.answer_sizes(pending))
            answered += done
            more = min(done, count - sent)
            if more:
                sock.sendall(request_rate.take(frames, more))
                sent += more


def _callgrind(pid: int, command: str) -> None:
    # vgdb, which it runs, reports each command on stderr
    subprocess.run(
        ["callgrind_control", command, str(pid)],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _instructions(dump: Path) -> int:
    for line in dump.read_text().splitlines():
        if line.startswith("summary:"):
            return int(line.split()[1])
    raise RuntimeError(f"no summary line in {dump}")


def _frames(broker: RunningBroker) -> dict[str, request_rate.Frames]:
    request_rate.create_topic(broker.bootstrap)
    fetch_rate.create_topics(broker.bootstrap, [FETCH_TOPIC, SMALL_TOPIC], mock=False)
    ids = fetch_rate.topic_ids(broker.bootstrap, [FETCH_TOPIC, SMALL_TOPIC])
    preload = fetch_rate.preload_frame([SMALL_TOPIC])
    fetch_rate.request(broker.bootstrap, preload, fetch_rate.PRELOAD, None)
    topic_id = ids[FETCH_TOPIC]
    producer = request_rate.init_producer_id(broker.bootstrap)
    return {
        "produce": request_rate.produce_frame(request_rate.TOPIC, b"v" * 100),
        "idempotent produce": request_rate.ProducerFrames(
            request_rate.TOPIC, b"v" * 100, *producer
        ),
        "fetch": fetch_rate.fetch_frames(topic_id, 0, 1 << 20, max_wait_ms=0).frame(0),
        "long poll": fetch_rate.fetch_frames(topic_id, 0, 1 << 20).frame(0),
        "small fetch": fetch_rate.fetch_frames(ids[SMALL_TOPIC], 0, 1).frame(
            fetch_rate.PRELOAD // 2
        ),
    }


def measure(count: int = COUNT, window: int = WINDOW) -> dict[str, float]:
    """Instructions per request of each kind (see the module's docstring)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind"
        out.mkdir()
        wrapper = [
            "valgrind",
            "--quiet",
            f"--log-file={out}/valgrind.log",  # its own messages, not the benchmark's output
            "--tool=callgrind",
            "--instr-atstart=no",
            f"--callgrind-out-file={out}/callgrind.out",
        ]
        broker = start_minibroker(Path(tmp) / "data", wrapper=wrapper)
        try:
            kinds = _frames(broker)
            _callgrind(broker.pid, "--instr=on")
            results = {}
            for number, (kind, frames) in enumerate(kinds.items(), start=1):
                _exchange(broker, frames, WINDOW * 4, window)  # warm up
                _callgrind(broker.pid, "--zero")
                _exchange(broker, frames, count, window)
                _callgrind(broker.pid, "--dump")
                results[kind] = _instructions(out / f"callgrind.out.{number}") / count
        finally:
            broker.stop()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--count", type=int, default=COUNT)
    parser.add_argument("--window", type=int, default=WINDOW, help="requests in flight")
    args = parser.parse_args()
    reason = missing_tool()
    if reason is not None:
        print(f"CG skipped: {reason}")
        return
    for kind, instructions in measure(args.count, args.window).items():
        print(f"CG {kind}: {instructions:,.0f} instructions per request")


if __name__ == "__main__":
    main()
