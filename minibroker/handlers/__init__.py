"""One module per Kafka API. Importing this package registers every handler."""

import importlib
import pkgutil

_loaded = False


def load_all() -> None:
    """Import every handler module once (each broker start calls this)."""
    global _loaded
    if _loaded:
        return
    for module in pkgutil.iter_modules(__path__):
        if module.name != "registry":
            importlib.import_module(f"{__name__}.{module.name}")
    _loaded = True
