"""The documentation site's pages and code blocks, for the tests of tests/docs/."""

from __future__ import annotations

import importlib.util
import re
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
SNIPPET = re.compile(r'^--8<-- "([^"]+)"$')
_FENCE = re.compile(
    r"^(?P<indent> *)```(?P<lang>[\w-]*)[^\n]*\n(?P<body>.*?)^(?P=indent)```", re.M | re.S
)


@dataclass(frozen=True)
class Block:
    page: str  # relative to docs/
    line: int
    lang: str
    body: str

    @property
    def where(self) -> str:
        return f"docs/{self.page}:{self.line}"

    @property
    def snippet(self) -> str | None:
        """The file a block includes whole (`--8<-- "path"` as its only line), if it does."""
        match = SNIPPET.match(self.body.strip())
        return match.group(1) if match else None


def pages() -> list[Path]:
    return sorted(path for path in DOCS.rglob("*.md") if "hooks" not in path.parts)


def blocks(page: Path) -> list[Block]:
    text = page.read_text()
    found = []
    for match in _FENCE.finditer(text):
        indent = len(match.group("indent"))
        body = "\n".join(line[indent:] for line in match.group("body").splitlines())
        line = text.count("\n", 0, match.start()) + 1
        found.append(Block(str(page.relative_to(DOCS)), line, match.group("lang"), body))
    return found


def all_blocks() -> list[Block]:
    return [block for page in pages() for block in blocks(page)]


def hook() -> ModuleType:
    """docs/hooks/reference_pages.py, the generator of the reference pages."""
    path = DOCS / "hooks" / "reference_pages.py"
    spec = importlib.util.spec_from_file_location("reference_pages", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
