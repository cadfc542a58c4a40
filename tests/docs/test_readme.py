"""README.md stays short, and its examples are the ones CI runs: the tests are
examples/docs/test_first_test.py's and test_spark_streaming.py's, the compose file is
docker/docker-compose.yml (without its comments), the commands are Getting started's (run by
test_commands.py), and its links lead to files that exist."""

from __future__ import annotations

import re

import yaml

from tests.docs.pages import DOCS, REPO

README = (REPO / "README.md").read_text()
MAX_LINES = 250


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"^```{lang}\n(.*?)^```", README, re.M | re.S)


def test_readme_is_short() -> None:
    assert len(README.splitlines()) <= MAX_LINES


def test_readme_tests_are_the_example_files() -> None:
    first, spark = _blocks("python")
    examples = REPO / "examples" / "docs"
    assert first.strip() in (examples / "test_first_test.py").read_text()
    assert spark.strip() in (examples / "test_spark_streaming.py").read_text()


def test_readme_compose_is_the_dev_compose_file() -> None:
    (compose,) = _blocks("yaml")
    assert yaml.safe_load(compose) == yaml.safe_load(
        (REPO / "docker" / "docker-compose.yml").read_text()
    )


def test_readme_commands_are_run_elsewhere() -> None:
    getting_started = (DOCS / "getting-started.md").read_text()
    for block in _blocks("sh"):
        for line in block.splitlines():
            command = re.sub(r"\s{2,}#.*$", "", line).strip()
            assert command in getting_started, command


def test_readme_links_exist() -> None:
    for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README):
        if not target.startswith("http"):
            assert (REPO / target).exists(), target
