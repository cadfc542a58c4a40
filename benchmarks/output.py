"""Where benchmark and soak results go: `results/` (ignored by git), or with `--publish` the
files under `docs/` that the documentation's Benchmarks page shows."""

from __future__ import annotations

import argparse
from pathlib import Path

RESULTS = Path("results")
PUBLISHED = Path("docs")


def add_publish_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--publish",
        action="store_true",
        help=f"write to {PUBLISHED}/ (the Benchmarks page's figures) instead of {RESULTS}/",
    )


def output_path(name: str, publish: bool) -> Path:
    """`results/<name>`, or `docs/<name>` when publishing; the folder is made."""
    folder = PUBLISHED if publish else RESULTS
    folder.mkdir(parents=True, exist_ok=True)
    return folder / name
