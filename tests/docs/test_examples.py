"""Every Python example on the documentation site is a file CI runs: the pages include them
whole (`--8<-- "examples/..."`), and this runs the test files of examples/docs/ as a user runs
them (their own pytest in a directory of their own, the plugin found through its entry point,
no project conftest). The other included files have tests of their own (OTHER_RUNNERS)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.docs.pages import REPO, all_blocks
from tests.testing.test_examples import run_example

pytestmark = pytest.mark.clients

EXAMPLES = REPO / "examples" / "docs"
# Included files that other tests run, and the test that runs each.
OTHER_RUNNERS = {
    "examples/test_with_minibroker.py": "tests/testing/test_examples.py",
    "examples/test_schema_registry.py": "tests/testing/test_examples.py",
    "examples/testcontainers_example.py": "tests/testing/test_testcontainers.py",
    "examples/spark_pipeline.py": "tests/spark/test_streaming.py",
    "examples/docs/spark_minikafka.py": "tests/docs/test_spark_examples.py",
    "docker/docker-compose.yml": "tests/docker/test_image.py",
    "CONTRIBUTING.md": "",  # prose, not an example
}
TEST_FILES = sorted(path.name for path in EXAMPLES.glob("test_*.py"))


def test_every_python_block_is_an_included_file() -> None:
    inline = [b.where for b in all_blocks() if b.lang == "python" and b.snippet is None]
    assert not inline, f"write these as files under examples/docs/ and include them: {inline}"


def test_every_included_file_is_run_by_a_test() -> None:
    included = {b.snippet for b in all_blocks() if b.snippet is not None}
    for path in included:
        assert (REPO / path).is_file(), path
        if path.startswith("examples/docs/test_"):
            continue
        assert path in OTHER_RUNNERS, f"{path} is included by the docs but no test runs it"
        runner = OTHER_RUNNERS[path]
        if runner:
            assert Path(path).stem in (REPO / runner).read_text(), (path, runner)


def test_every_example_test_file_is_on_the_site() -> None:
    included = {b.snippet for b in all_blocks()}
    assert {f"examples/docs/{name}" for name in TEST_FILES} <= included


@pytest.mark.parametrize("name", TEST_FILES)
def test_example_passes(tmp_path: Path, name: str) -> None:
    result = run_example(EXAMPLES / name, tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert " passed" in result.stdout and "skipped" not in result.stdout
