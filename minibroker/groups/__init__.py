"""Consumer groups (classic, KIP-848 and share groups) and committed offsets: the coordinator
is coordinator.py; settings.py checks its broker settings without importing it."""
