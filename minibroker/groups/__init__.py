"""Consumer groups (classic protocol) and committed offsets; see coordinator.py."""

from minibroker.groups.coordinator import GroupCoordinator

__all__ = ["GroupCoordinator"]
