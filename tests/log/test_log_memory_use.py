"""1,000 open partitions do not hold their data in memory (figures printed; no time asserted).

Run by hand for the figures: python -m tests.log.measure_partitions /tmp/somewhere
(add --nofile 1024 for a common user descriptor limit, --memory for the memory log).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]


def test_thousand_partitions_keep_their_data_on_disk(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "tests.log.measure_partitions", str(tmp_path), "--nofile", "1024"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=240,
        check=True,
    )
    print("\n" + result.stdout)
    _tag, data_bytes, rss_growth, max_fds = result.stdout.splitlines()[-1].split()
    assert int(data_bytes) >= 240 * 2**20
    # Holding the data would grow RSS by at least data_bytes; metadata is far below a tenth.
    assert int(rss_growth) < int(data_bytes) // 10
    assert int(max_fds) < 1024
