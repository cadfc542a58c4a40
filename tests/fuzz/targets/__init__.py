"""Coverage-guided fuzz targets (atheris), one module per kind of outside bytes.

Each module has `test_one_input(data: bytes)`, which raises only on a broken invariant (an
undocumented exception, the native and pure-Python paths disagreeing), and `seeds()`, the
seed corpus: real client bytes from the golden frames and what the project's own encoders
write. `tests.fuzz.run` fuzzes them; tests/fuzz/test_coverage_fuzz.py runs them in CI."""

from __future__ import annotations

from pathlib import Path

TARGETS = ("requests", "records", "compression", "internal_records", "recovery_files")

GOLDEN_FRAMES = Path("/work/shared/reference/golden-frames")
