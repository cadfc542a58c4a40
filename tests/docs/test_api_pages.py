"""The generated reference pages and what they are made of: every handler module's header
names its key and the versions the registry serves, the hand-written summary table of
docs/reference/apis.md has the ranges ApiVersions advertises, and every page renders."""

from __future__ import annotations

import re

import pytest

from minibroker.handlers.registry import HANDLER_MODULES, api_gates
from minibroker.protocol.releases import NEWEST, RELEASES
from tests.docs.pages import DOCS, hook, pages

HEADER = re.compile(r"^(\w+) \(key (\d+)\), versions? (\d+)(?:-(\d+))?(?=[ .])")


@pytest.mark.parametrize("key", sorted(HANDLER_MODULES), ids=lambda key: key.name)
def test_handler_header_names_its_key_and_versions(key: int) -> None:
    module, low, high = HANDLER_MODULES[key]
    first = hook().handler_header(module).split("\n", 1)[0]
    match = HEADER.match(first)
    assert match, f"minibroker/handlers/{module}.py: header must open 'Name (key N), versions A-B.'"
    name, number, first_version, last_version = match.groups()
    assert (name, int(number)) == (key.name, int(key))
    assert (int(first_version), int(last_version or first_version)) == (low, high)


def test_summary_table_has_the_advertised_ranges() -> None:
    gates = api_gates(RELEASES[NEWEST])
    advertised = {
        gate.spec.api_key.name: (gate.advertised_min, gate.max_version) for gate in gates.values()
    }
    text = (DOCS / "reference" / "apis.md").read_text()
    table = text[text.index("## At a glance") : text.index("## Every API key")]
    seen = set()
    for row in re.findall(r"^\| ([A-Z][^|]*) \| ([0-9][^|]*) \|", table, re.M):
        names = [n.strip() for n in row[0].split(" / ")]
        ranges = [r.strip() for r in row[1].split(" / ")]
        assert len(names) == len(ranges), row
        for name, shown in zip(names, ranges, strict=True):
            low, _, high = re.match(r"(\d+(?:-\d+)?)", shown).group(1).partition("-")  # type: ignore[union-attr]
            assert (int(low), int(high or low)) == advertised[name], (name, shown)
            seen.add(name)
    assert seen == set(advertised), set(advertised) ^ seen
    assert f"{len(HANDLER_MODULES)} API keys are served" in text


def test_every_page_renders() -> None:
    reference = hook()
    for page in pages():
        rendered = reference.render(page.read_text())
        assert "<!-- generated:" not in rendered, page


def test_cli_help_covers_every_command() -> None:
    reference = hook()
    help_text = reference.cli_help()
    for argv in reference.cli_commands():
        assert f"### `{' '.join(['minibroker', *argv])}`" in help_text
    assert "usage: minibroker topic create" in help_text
    assert "usage: minibroker serve" in help_text


def test_feature_pages_link_to_the_differences() -> None:
    """Each guide and feature page (the console, Kafka's lookalike of nothing, aside) links to
    its section of docs/differences.md, and every such link names a section there."""
    differences = (DOCS / "differences.md").read_text()
    sections = {
        re.sub(r"[^a-z0-9 -]", "", title.lower()).replace(" ", "-")
        for title in re.findall(r"^## (.+)$", differences, re.M)
    }
    for page in pages():
        relative = page.relative_to(DOCS).as_posix()
        if not relative.startswith(("guides/", "features/")) or relative == "features/console.md":
            continue
        anchors = re.findall(r"differences\.md#([a-z0-9-]+)", page.read_text())
        assert anchors, f"{relative} does not link to differences.md"
        assert set(anchors) <= sections, (relative, set(anchors) - sections)
