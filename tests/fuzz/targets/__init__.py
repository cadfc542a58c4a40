"""Coverage-guided fuzz targets (atheris), one module per kind of outside bytes.

Each module has `test_one_input(data: bytes)`, which raises only on a broken invariant (an
undocumented exception, the native and pure-Python paths disagreeing), and `seeds()`, the
seed corpus: real client bytes from the golden frames and what the project's own encoders
write. `tests.fuzz.run` fuzzes them; tests/fuzz/test_coverage_fuzz.py runs them in CI."""

from __future__ import annotations

import importlib
from typing import Any

TARGETS = ("requests", "records", "compression", "internal_records", "recovery_files", "segments")


def built_extension(module: str, name: str) -> Any:
    """`name` from a C accelerator if it was built (even under MINIBROKER_PURE_PYTHON)."""
    try:
        return getattr(importlib.import_module(module), name)
    except ImportError:
        return None
