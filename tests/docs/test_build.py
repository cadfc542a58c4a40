"""The site builds with `mkdocs build --strict` (scripts/test builds it before pytest too; this
keeps `pytest tests/docs` whole), and what only the built site shows is right: the generated
parts are filled in, and the Python API page, made from docstrings, shows no example that CI
does not run (the examples are files under examples/, on the guides' pages)."""

from __future__ import annotations

import html
import os
import re
import subprocess
import sys
from pathlib import Path

from tests.docs.pages import REPO


def test_site_builds_strict_with_no_warning(tmp_path: Path) -> None:
    site = tmp_path / "site"
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        timeout=240,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "WARNING" not in output, output

    for page in site.rglob("index.html"):
        assert "<!-- generated:" not in page.read_text(), page

    python_api = (site / "reference" / "python-api" / "index.html").read_text()
    blocks = [
        html.unescape(re.sub(r"<[^>]+>", "", block))
        for block in re.findall(r"<pre.*?</pre>", python_api, re.S)
    ]
    examples = [b for b in blocks if re.search(r"^\s*(with |import |from |async with )", b, re.M)]
    assert not examples, examples
    settings = (site / "reference" / "settings" / "index.html").read_text()
    assert "minibroker.fsync.on.ack" in settings and "num.partitions" in settings
