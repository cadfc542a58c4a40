"""Which implementation of the produce path runs: the C accelerators, built by `pip install`
when a compiler is there (`minibroker.records._accel`: the record walk of records.py;
`minibroker.protocol._accel`: the Produce request walk of produce_request.py, and the whole
common Produce request of handlers/produce_native.py), or the pure-Python code, which is the
reference and the fallback (each C function answers only what the pure code would accept and
leaves everything else, every error included, to it).

MINIBROKER_PURE_PYTHON=1 (any value but "" and "0") forces the pure path; it is read once, at
import.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TypeAlias

from minibroker.records.batch import Buffer

PURE_PYTHON_ENV = "MINIBROKER_PURE_PYTHON"
NATIVE = "native"
PURE_PYTHON = "pure-python"

ScanFunction: TypeAlias = Callable[
    [Buffer, int, int, int, "int | None"], "tuple[int, int, int] | None"
]
"""scan(buf, pos, end, count, max_offset_delta): (min timestamp delta, max timestamp delta,
null keys) of records the pure scan accepts, None for anything else (the pure scan then
answers, errors included)."""


def pure_python_forced() -> bool:
    """Whether MINIBROKER_PURE_PYTHON asks for the pure-Python path."""
    return os.environ.get(PURE_PYTHON_ENV, "") not in ("", "0")


def _load_scan() -> ScanFunction | None:
    if pure_python_forced():
        return None
    try:
        from minibroker.records._accel import scan
    except ImportError:
        return None
    return scan


native_scan = _load_scan()


def active_path() -> str:
    """ "native" when the C accelerators run (they are built together), else "pure-python"."""
    return PURE_PYTHON if native_scan is None else NATIVE
