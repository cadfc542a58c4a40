"""A real browser for the console tests: Debian's headless Chromium driven through Selenium.

`install_chromium()` installs Debian's `chromium` and `chromium-driver` with apt-get when they
are missing (as tests/clients/install.py installs kcat), and the driver is started from those
paths explicitly (`Service(executable_path=...)`, `binary_location`), so Selenium Manager
never runs and nothing is downloaded at test time.

Fixtures (re-exported by tests/console/conftest.py):
- `chromium`: one headless Chromium for the session, a fixed window size;
- `browser`: that Chromium for one test, with a screenshot and the page's HTML saved under
  the artefacts directory when the test ends, whatever its outcome. The directory is
  `$MINIBROKER_CONSOLE_ARTIFACTS`, by default `test-artifacts/console/` at the repository's
  root (ignored by git).
"""

from __future__ import annotations

import os
import re
import shutil
from base64 import b64encode
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from selenium import webdriver
from selenium.common.exceptions import (
    StaleElementReferenceException,
    TimeoutException,
    WebDriverException,
)
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support.wait import WebDriverWait

from tests.clients.install import InstallError, locked, run_installer
from tests.quick import require_external

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS_ENV = "MINIBROKER_CONSOLE_ARTIFACTS"
DEFAULT_ARTIFACTS = REPO / "test-artifacts" / "console"
PACKAGES = ("chromium", "chromium-driver")
WINDOW = (1280, 900)
WAIT_S = 15.0
PAGE_LOAD_TIMEOUT_S = 30.0
CHROMIUM_FLAGS = (
    "--headless=new",
    "--no-sandbox",  # the tests may run as root, where Chromium's sandbox refuses to start
    "--disable-dev-shm-usage",  # containers give /dev/shm 64 MB, too small for the renderer
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-extensions",
    f"--window-size={WINDOW[0]},{WINDOW[1]}",
)


@dataclass(frozen=True)
class Chromium:
    browser: str
    driver: str


def installed_chromium() -> Chromium | None:
    browser, driver = shutil.which("chromium"), shutil.which("chromedriver")
    return Chromium(browser, driver) if browser and driver else None


def install_chromium() -> Chromium:
    """Debian's chromium and chromium-driver, installed with apt-get when missing."""
    with locked("chromium"):
        found = installed_chromium()
        if found is not None:
            return found
        apt_env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        install = ["apt-get", "install", "-y", "--no-install-recommends", *PACKAGES]
        try:
            run_installer(install, env=apt_env)
        except InstallError:
            run_installer(["apt-get", "update"], env=apt_env)
            run_installer(install, env=apt_env)
        found = installed_chromium()
        if found is None:
            raise InstallError(
                f"apt-get installed {PACKAGES} but chromium/chromedriver not on PATH"
            )
        return found


def start_chromium(chromium: Chromium) -> webdriver.Chrome:
    options = webdriver.ChromeOptions()
    options.binary_location = chromium.browser
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=chromium.driver), options=options)
    driver.set_page_load_timeout(PAGE_LOAD_TIMEOUT_S)
    return driver


def artifacts_dir() -> Path:
    configured = os.environ.get(ARTIFACTS_ENV)
    path = Path(configured) if configured else DEFAULT_ARTIFACTS
    path.mkdir(parents=True, exist_ok=True)
    return path


def artifact_stem(test_name: str) -> str:
    """A file name from a test's name: `test_x[param]` -> `test_x-param`."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", test_name).strip("-")


def save_artifacts(driver: webdriver.Chrome, stem: str) -> Path:
    """The current page as `<stem>.png` and `<stem>.html`; returns the screenshot's path."""
    folder = artifacts_dir()
    screenshot = folder / f"{stem}.png"
    if not driver.save_screenshot(str(screenshot)):
        raise RuntimeError(f"Chromium could not write {screenshot}")
    (folder / f"{stem}.html").write_text(driver.page_source)
    return screenshot


@pytest.fixture(scope="session")
def chromium() -> Iterator[webdriver.Chrome]:
    require_external("a browser (Chromium)")
    try:
        paths = install_chromium()
    except InstallError as exc:
        pytest.fail(f"Chromium could not be installed: {exc}", pytrace=False)
    try:
        driver = start_chromium(paths)
    except WebDriverException as exc:
        pytest.fail(f"headless Chromium did not start: {exc.msg}", pytrace=False)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture
def browser(
    chromium: webdriver.Chrome, request: pytest.FixtureRequest
) -> Iterator[webdriver.Chrome]:
    """The session's Chromium on a blank page; its last page is saved when the test ends."""
    chromium.delete_all_cookies()
    chromium.get("about:blank")
    browser_log(chromium)  # drop what earlier tests' pages logged
    try:
        yield chromium
    finally:
        save_artifacts(chromium, artifact_stem(request.node.name))


# --- waiting on the page -------------------------------------------------------------------


def wait_until(
    driver: webdriver.Chrome,
    condition: Callable[[webdriver.Chrome], object],
    what: str,
    timeout: float = WAIT_S,
) -> object:
    """WebDriverWait on `condition`; a timeout fails with `what` and the page's visible text."""
    try:
        # A live page replaces elements between finding one and reading it: look again.
        wait = WebDriverWait(
            driver, timeout, poll_frequency=0.1, ignored_exceptions=[StaleElementReferenceException]
        )
        return wait.until(condition)
    except TimeoutException:
        body = driver.find_element(By.TAG_NAME, "body").text
        raise AssertionError(
            f"timed out after {timeout}s waiting for {what}; page:\n{body}"
        ) from None


def element(driver: webdriver.Chrome, css: str, timeout: float = WAIT_S) -> WebElement:
    """The first element matching `css`, once it is on the page."""

    def found(d: webdriver.Chrome) -> WebElement | None:
        matches = d.find_elements(By.CSS_SELECTOR, css)
        return matches[0] if matches else None

    result = wait_until(driver, found, f"an element {css!r}", timeout)
    assert isinstance(result, WebElement)
    return result


def text_of(driver: webdriver.Chrome, css: str) -> str:
    """The visible text of every element matching `css`, one per line ('' when none)."""
    return "\n".join(match.text for match in driver.find_elements(By.CSS_SELECTOR, css))


def wait_for_text(driver: webdriver.Chrome, css: str, text: str, timeout: float = WAIT_S) -> str:
    """Wait until an element matching `css` shows `text`; return that element's text."""

    def shown(d: webdriver.Chrome) -> str | None:
        for match in d.find_elements(By.CSS_SELECTOR, css):
            if text in match.text:
                return str(match.text)
        return None

    result = wait_until(driver, shown, f"{text!r} in {css!r}", timeout)
    return str(result)


def browser_log(driver: webdriver.Chrome) -> list[dict[str, Any]]:
    """The browser's console log since the last call (Chromium clears it once read)."""
    entries: list[dict[str, Any]] = driver.get_log("browser")  # type: ignore[no-untyped-call]
    return entries


def javascript_errors(driver: webdriver.Chrome) -> list[str]:
    """The page's uncaught JavaScript errors since the last call (network errors aside)."""
    return [
        str(entry["message"])
        for entry in browser_log(driver)
        if entry["level"] == "SEVERE" and entry.get("source") == "javascript"
    ]


@contextmanager
def basic_auth(driver: webdriver.Chrome, user: str, password: str) -> Iterator[None]:
    """Every request of the browser carries these HTTP basic credentials meanwhile."""
    token = b64encode(f"{user}:{password}".encode()).decode()
    driver.execute_cdp_cmd("Network.enable", {})
    driver.execute_cdp_cmd(
        "Network.setExtraHTTPHeaders", {"headers": {"Authorization": f"Basic {token}"}}
    )
    try:
        yield
    finally:
        driver.execute_cdp_cmd("Network.setExtraHTTPHeaders", {"headers": {}})


def wait_for_exact_text(
    driver: webdriver.Chrome, css: str, text: str, timeout: float = WAIT_S
) -> None:
    """Wait until the first element matching `css` shows exactly `text` (trimmed)."""

    def shown(d: webdriver.Chrome) -> bool:
        matches = d.find_elements(By.CSS_SELECTOR, css)
        return bool(matches) and matches[0].text.strip() == text

    wait_until(driver, shown, f"{css!r} to show exactly {text!r}", timeout)
