"""What a process and the host use, from /proc: CPU seconds, RSS, and how idle the host is."""

from __future__ import annotations

import os
import time
from pathlib import Path

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of `pid` (fields 14 and 15 of /proc/<pid>/stat)."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def user_cpu_seconds(pid: int) -> float:
    """User CPU time of `pid` alone: what the broker's own code costs, without the kernel's
    copies and system calls."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat[stat.rindex(")") + 2 :].split()[11]) / CLOCK_TICKS


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for {pid}")


def _cpu_times() -> tuple[int, int]:
    """(idle, total) jiffies of the whole host."""
    values = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = values[3] + values[4]
    return idle, sum(values)


def host_idle_fraction(window_s: float = 1.0) -> float:
    idle0, total0 = _cpu_times()
    time.sleep(window_s)
    idle1, total1 = _cpu_times()
    return (idle1 - idle0) / max(1, total1 - total0)


def wait_until_idle(threshold: float = 0.8, patience_s: float = 30.0) -> float:
    """Wait (up to `patience_s`) for the host to be at least `threshold` idle; return the last
    measured idle fraction so the report can say how idle it was."""
    deadline = time.monotonic() + patience_s
    idle = host_idle_fraction()
    while idle < threshold and time.monotonic() < deadline:
        idle = host_idle_fraction()
    return idle
