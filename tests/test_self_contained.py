"""A bare clone runs the suite: nothing under tests/ or scripts/ names a path outside the checkout.

What the tests need lives in the checkout (tests/data/) or comes from what the tests install
(tests/reference.py reads Kafka's message definitions from the kafka-clients jar); caches the
installers fill (`$MINIBROKER_CLIENTS_CACHE`) are made by the tests themselves.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

CHECKOUT = Path(__file__).resolve().parents[1]
SCANNED = ("tests", "scripts")
SKIPPED_PARTS = {"node_modules", "__pycache__", "golden-frames"}
THIS = Path(__file__).resolve()
# Places that exist only on the project's own machines.
OUTSIDE_NAMES = re.compile(r"/work/|\.\./shared|shared/reference|\.mirror/|/shared/")
PARENTS_INDEX = re.compile(r"parents\[(\d+)\]((?:\.parent\b)*)")
PARENT_CHAIN = re.compile(r"Path\(__file__\)(?:\.resolve\(\))?((?:\.parent\b)+)")


def scanned_files() -> list[Path]:
    files = []
    for top in SCANNED:
        for path in sorted((CHECKOUT / top).rglob("*")):
            relative = path.relative_to(CHECKOUT)
            if path.is_file() and not SKIPPED_PARTS & set(relative.parts) and path != THIS:
                files.append(path)
    return files


def levels_up(line: str) -> int:
    """How many directories above a file's own folder a `Path(__file__)` expression climbs."""
    deepest = 0
    for index, parents in PARENTS_INDEX.findall(line):
        deepest = max(deepest, int(index) + parents.count(".parent"))
    for parents in PARENT_CHAIN.findall(line):
        deepest = max(deepest, parents.count(".parent") - 1)
    return deepest


def names_outside(line: str, depth: int) -> bool:
    """`line`, in a file `depth` folders below the checkout, names a path outside it."""
    return bool(OUTSIDE_NAMES.search(line)) or levels_up(line) > depth


def outside_references(path: Path) -> list[str]:
    try:
        text = path.read_text()
    except UnicodeDecodeError:
        return []
    depth = len(path.relative_to(CHECKOUT).parts) - 1  # folders between the checkout and it
    return [
        f"{path.relative_to(CHECKOUT)}:{number}: {line.strip()}"
        for number, line in enumerate(text.splitlines(), 1)
        if names_outside(line, depth)
    ]


def test_the_scan_sees_the_tests_and_scripts() -> None:
    names = {str(path.relative_to(CHECKOUT)) for path in scanned_files()}
    assert {"tests/reference.py", "scripts/test", "tests/conftest.py"} <= names


@pytest.mark.parametrize(
    ("line", "relative", "outside"),
    [
        ('GOLDEN = Path("/work/shared/reference/golden-frames")', "tests/x/a.py", True),
        ('ROOT = Path(__file__).resolve().parents[2].parent / "shared"', "tests/x/a.py", True),
        ("ROOT = Path(__file__).resolve().parents[2]", "tests/x/a.py", False),
        ("ROOT = Path(__file__).resolve().parents[1]", "tests/a.py", False),
        ("ROOT = Path(__file__).parent.parent.parent", "tests/x/a.py", False),
        ("ROOT = Path(__file__).parent.parent.parent.parent", "tests/x/a.py", True),
        ('cat "$(dirname "$0")/../../shared/notes"', "scripts/a", True),
    ],
)
def test_the_scan_tells_inside_from_outside(line: str, relative: str, outside: bool) -> None:
    assert names_outside(line, len(Path(relative).parts) - 1) == outside


def test_no_file_names_a_path_outside_the_checkout() -> None:
    found = [hit for path in scanned_files() for hit in outside_references(path)]
    assert found == []
