"""One module per Kafka API, imported when its key is first requested (registry.py)."""

import importlib
import pkgutil

_loaded = False


def load_all() -> None:
    """Import every handler module once (tests and tools that walk every handler)."""
    global _loaded
    if _loaded:
        return
    for module in pkgutil.iter_modules(__path__):
        if module.name != "registry":
            importlib.import_module(f"{__name__}.{module.name}")
    _loaded = True
