"""The console tests' browser fixtures (tests/console/browser.py): `chromium`, `browser`."""

from tests.console.browser import browser, chromium

__all__ = ["browser", "chromium"]
