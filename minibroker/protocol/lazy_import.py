"""Importing a package's submodules without running the package's own `__init__`."""

from __future__ import annotations

import importlib.util
import sys
from typing import Any


def defer_package_init(name: str) -> None:
    """Let the submodules of package `name` be imported without running the package's own
    `__init__` until the package itself is asked for an attribute (then it runs, and the
    package is whole). kafka-python's `__init__` modules import every client and every
    message class (most of `serve`'s start when nothing else is used); crc32c's reads its
    version through importlib.metadata (10-15 ms). Does nothing to a package already imported.
    """
    if name in sys.modules:
        return
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None or spec.submodule_search_locations is None:
        return
    loader = spec.loader
    package = importlib.util.module_from_spec(spec)

    def complete_package(attribute: str) -> Any:
        del package.__dict__["__getattr__"]
        loader.exec_module(package)
        return getattr(package, attribute)

    package.__dict__["__getattr__"] = complete_package
    sys.modules[name] = package
