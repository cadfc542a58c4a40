"""MkDocs hook: the reference pages' generated parts, made from the code at every build.

A page asks for a generated part with a line of its own, `<!-- generated: NAME -->`; the hook
replaces it with the Markdown of `GENERATORS[NAME]()`. Everything here reads minibroker's own
tables (no network, no broker started), so a build takes the same input on every machine:

- `broker-settings`, `topic-settings`, `group-settings`: `minibroker.config.BROKER_CONFIGS`,
  `TOPIC_CONFIGS` and `minibroker.groups.group_configs.GROUP_CONFIG_DEFS`, with minibroker's
  default, Kafka's (`KAFKA_DEFAULTS` below, where the two differ) and whether Kafka lets it
  change at run time;
- `api-table`, `api-details`, `release-matrix`: the handler registry
  (`minibroker.handlers.registry`), each handler module's header docstring (read from the
  source, not imported) and the release table (`minibroker.protocol.releases`);
- `cli-help`, `serve-usage`: `--help` of every `minibroker` command (or the usage of
  `minibroker serve`), from the real parsers.

tests/docs/ imports this file to check the pages against the code.
"""

from __future__ import annotations

import ast
import contextlib
import io
import os
import re
import warnings
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
MARKER = re.compile(r"^<!-- generated: ([a-z-]+) -->$", re.MULTILINE)
LONG_MAX = "9223372036854775807"
INT_MAX = "2147483647"

# Kafka 4.3's default of each broker setting whose default in minibroker is not Kafka's
# (minibroker's own `minibroker.*` settings have none). Every other setting has Kafka's default.
KAFKA_DEFAULTS: dict[str, str | None] = {
    "node.id": "-1 (required in KRaft mode)",
    "broker.id": "-1",
    "listeners": "PLAINTEXT://:9092",
    "group.initial.rebalance.delay.ms": "3000",
    "queued.max.request.bytes": "-1",
    "offsets.topic.replication.factor": "3",
    "transaction.state.log.replication.factor": "3",
    "transaction.state.log.min.isr": "2",
    "share.coordinator.state.topic.replication.factor": "3",
    "share.coordinator.state.topic.min.isr": "2",
    "sasl.enabled.mechanisms": "GSSAPI",
}

# Where the guides explain a setting, by the longest matching name prefix.
SETTING_PAGES: tuple[tuple[str, str], ...] = (
    ("listener", "../getting-started.md#running-a-broker"),
    ("advertised.listeners", "../guides/docker.md"),
    ("ssl.", "../guides/security.md"),
    ("sasl.", "../guides/security.md"),
    ("connection.failed.authentication", "../guides/security.md"),
    ("authorizer.", "../guides/security.md#authorization-acls-and-client-quotas"),
    ("super.users", "../guides/security.md#authorization-acls-and-client-quotas"),
    ("allow.everyone", "../guides/security.md#authorization-acls-and-client-quotas"),
    ("quota.", "../guides/security.md#client-quotas"),
    ("controller.quota.", "../guides/security.md#client-quotas"),
    ("minibroker.scram", "../guides/security.md"),
    ("minibroker.console", "../features/console.md"),
    ("minibroker.emulate", "../features/emulation.md"),
    ("minibroker.transaction", "../features/transactions.md"),
    ("minibroker.fsync", "../features/storage.md"),
    ("minibroker.max.decompressed", "../features/limits.md"),
    ("socket.", "../features/limits.md"),
    ("max.connection", "../features/limits.md"),
    ("queued.max", "../features/limits.md"),
    ("connections.max.idle", "../features/limits.md"),
    ("log.", "../features/storage.md"),
    ("num.partitions", "../getting-started.md#running-a-broker"),
    ("replica.", "../guides/clusters.md#replication-in-clusters"),
    ("min.insync", "../guides/clusters.md#replication-in-clusters"),
    ("unclean.", "../guides/clusters.md#replication-in-clusters"),
    ("default.replication", "../guides/clusters.md#replication-in-clusters"),
    ("offsets.topic.replication", "../guides/clusters.md#replication-in-clusters"),
    ("transaction.state.log.replication", "../guides/clusters.md#replication-in-clusters"),
    ("transaction.state.log.min.isr", "../guides/clusters.md#replication-in-clusters"),
    ("share.coordinator.state.topic.replication", "../guides/clusters.md#replication-in-clusters"),
    ("share.coordinator.state.topic.min", "../guides/clusters.md#replication-in-clusters"),
    ("transaction", "../features/transactions.md"),
    ("producer.id", "../features/transactions.md"),
    ("group.consumer", "../features/consumer-groups.md"),
    ("group.share", "../features/share-groups.md"),
    ("share.", "../features/share-groups.md"),
    ("group.initial", "../features/consumer-groups.md"),
    ("telemetry", "../guides/testing.md#client-telemetry-kip-714"),
    ("max.incremental.fetch", "apis.md"),
    ("max.request.partition", "apis.md"),
)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _value(value: str | None) -> str:
    if value is None:
        return "*(none)*"
    if value == "":
        return '`""`'
    if value == LONG_MAX:
        return "`Long.MAX_VALUE`"
    if value == INT_MAX:
        return "`Integer.MAX_VALUE`"
    return f"`{_cell(value)}`"


def _page_for(name: str) -> str | None:
    best = max(
        (prefix for prefix, _ in SETTING_PAGES if name.startswith(prefix)), key=len, default=None
    )
    return dict(SETTING_PAGES)[best] if best is not None else None


def documented_settings() -> set[str]:
    """Every name the settings page documents (broker, topic and group settings)."""
    from minibroker.config import BROKER_CONFIGS, KAFKA_SETTINGS_READ, TOPIC_CONFIGS
    from minibroker.groups.group_configs import GROUP_CONFIG_DEFS

    return {*BROKER_CONFIGS, *TOPIC_CONFIGS, *GROUP_CONFIG_DEFS, *KAFKA_SETTINGS_READ}


# The broker settings table is split by area, a setting going to the first area whose prefix
# (or exact name) it matches; the last area takes the rest.
SETTING_AREAS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("minibroker's own", ("minibroker.",)),
    (
        "Node, listeners and connections",
        (
            "node.id",
            "broker.id",
            "cluster.id",
            "listener",
            "advertised.listeners",
            "socket.",
            "max.connection",
            "connections.",
            "queued.max",
            "num.network.threads",
            "num.io.threads",
            "background.threads",
            "metric.reporters",
            "controller.listener.names",
        ),
    ),
    ("Security", ("ssl.", "sasl.", "connection.failed.authentication", "authorizer.", "super.")),
    ("Authorization and quotas", ("allow.everyone", "quota.", "controller.quota.")),
    (
        "Topics, logs and retention",
        (
            "log.",
            "num.partitions",
            "auto.create",
            "delete.topic",
            "compression.",
            "message.max.bytes",
            "num.recovery",
        ),
    ),
    (
        "Replication",
        ("replica.", "num.replica", "default.replication", "min.insync", "unclean."),
    ),
    (
        "Consumer groups and offsets",
        (
            "group.consumer.",
            "group.min",
            "group.max",
            "group.initial",
            "offsets.",
            "offset.",
            "group.streams.",
        ),
    ),
    ("Share groups", ("group.share.", "share.")),
    ("Transactions and producers", ("transaction", "producer.")),
    ("Requests, fetch sessions and telemetry", ("",)),
)


def _area(name: str) -> str:
    return next(title for title, prefixes in SETTING_AREAS if name.startswith(prefixes))


def broker_settings() -> str:
    from minibroker.config import BROKER_CONFIGS, KAFKA_SETTINGS_READ

    sections = []
    names = [*BROKER_CONFIGS, *KAFKA_SETTINGS_READ]
    for title, _ in SETTING_AREAS:
        rows = sorted(name for name in names if _area(name) == title)
        if rows:
            sections.append(f"### {title}\n\n{_settings_table(rows)}\n")
    return "\n".join(sections)


def _settings_table(names: list[str]) -> str:
    from minibroker.config import BROKER_CONFIGS, DYNAMIC_BROKER_CONFIGS

    lines = [
        "| setting | minibroker's default | Kafka's default | notes |",
        "|---|---|---|---|",
    ]
    for name in names:
        if name not in BROKER_CONFIGS:
            lines.append(
                f"| `{name}` | *(none)* | same | list. Read only to leave these listeners "
                "(a KRaft controller's) unserved; [more](../guides/docker.md) |"
            )
            continue
        definition = BROKER_CONFIGS[name]
        if name.startswith("minibroker."):
            kafka = "—"
        elif name in KAFKA_DEFAULTS:
            kafka = "**" + _value(KAFKA_DEFAULTS[name]) + "**"
        else:
            kafka = "same"
        kind = definition.type.name.lower() + (", secret" if definition.sensitive else "")
        notes = [kind + (", *dynamic*." if name in DYNAMIC_BROKER_CONFIGS else ".")]
        if definition.doc:
            notes.append(_cell(definition.doc))
        page = _page_for(name)
        if page:
            notes.append(f"[more]({page})")
        lines.append(f"| `{name}` | {_value(definition.default)} | {kafka} | {' '.join(notes)} |")
    return "\n".join(lines)


def topic_settings() -> str:
    from minibroker.config import TOPIC_CONFIGS

    lines = ["| topic setting | type | default | broker synonyms |", "|---|---|---|---|"]
    for name in sorted(TOPIC_CONFIGS):
        definition = TOPIC_CONFIGS[name]
        synonyms = ", ".join(f"`{s}`" for s in definition.broker_synonyms)
        lines.append(
            f"| `{name}` | {definition.type.name.lower()} | {_value(definition.default)} "
            f"| {synonyms} |"
        )
    return "\n".join(lines)


def group_settings() -> str:
    from minibroker.groups.group_configs import GROUP_CONFIG_DEFS

    lines = [
        "| group config | type | Kafka's default | default from | bounds | meaning |",
        "|---|---|---|---|---|---|",
    ]
    for name in sorted(GROUP_CONFIG_DEFS):
        d = GROUP_CONFIG_DEFS[name]
        bounds = []
        if d.at_least is not None:
            bounds.append(f"at least {d.at_least}")
        if d.broker_min and d.broker_max:
            bounds.append(f"within `{d.broker_min}` and `{d.broker_max}`")
        if d.choices:
            bounds.append("one of " + ", ".join(f"`{c}`" for c in d.choices))
        synonym = f"`{d.broker_synonym}`" if d.broker_synonym else "Kafka's default"
        lines.append(
            f"| `{name}` | {d.type.name.lower()} | {_value(d.kafka_default)} | {synonym} "
            f"| {'; '.join(bounds)} | {_cell(d.doc)} |"
        )
    return "\n".join(lines)


def handler_header(module: str) -> str:
    """The opening docstring of `minibroker/handlers/<module>.py`, read from the source."""
    source = (ROOT / "minibroker" / "handlers" / f"{module}.py").read_text()
    return ast.get_docstring(ast.parse(source)) or ""


def _served() -> list[tuple[int, str, str, int, int, tuple[int, int] | None]]:
    """(key, name, module, lowest and highest version served, range under the default
    release) for every key in the registry, in key order."""
    from minibroker.handlers.registry import HANDLER_MODULES, api_gates
    from minibroker.protocol.releases import NEWEST, RELEASES

    gates = api_gates(RELEASES[NEWEST])
    rows = []
    for key, (module, low, high) in sorted(HANDLER_MODULES.items()):
        gate = gates.get(key)
        advertised = (gate.advertised_min, gate.max_version) if gate else None
        rows.append((int(key), key.name, module, low, high, advertised))
    return rows


def _range(low: int, high: int) -> str:
    return str(low) if low == high else f"{low}-{high}"


def _anchor(name: str) -> str:
    return name.lower()


def api_table() -> str:
    from minibroker.protocol.releases import NEWEST, RELEASES

    lines = [
        f"| key | API | served | advertised as Kafka {NEWEST} | first release | behaviour |",
        "|---|---|---|---|---|---|",
    ]
    for key, name, module, low, high, advertised in _served():
        first = next((r for r, release in RELEASES.items() if key in release.api_ranges), "—")
        summary = _summary(handler_header(module))
        lines.append(
            f"| {key} | [{name}](#{_anchor(name)}) | {_range(low, high)} "
            f"| {_range(*advertised) if advertised else 'not advertised'} | {first} "
            f"| {_cell(summary)} |"
        )
    return "\n".join(lines)


def _summary(header: str) -> str:
    """The first sentence of a header's "Behaviour:" paragraph (or of its second paragraph)."""
    paragraphs = [p.strip() for p in header.split("\n\n") if p.strip()]
    text = next((p for p in paragraphs if p.startswith("Behaviour")), "")
    if not text and len(paragraphs) > 1:
        text = paragraphs[1]
    text = re.sub(r"^Behaviour[^:]*:\s*", "", " ".join(text.split()))
    match = re.match(r"(.+?\.)(\s|$)", text)
    sentence = match.group(1) if match else text
    return _escape(sentence[:1].upper() + sentence[1:])


def _escape(text: str) -> str:
    """Markdown for plain docstring text: `*`, `_` and `<` outside code spans are literal."""
    parts = re.split(r"(`[^`]*`)", text)
    for i in range(0, len(parts), 2):
        parts[i] = (parts[i].replace("\\", "\\\\").replace("*", "\\*").replace("_", "\\_")).replace(
            "<", "&lt;"
        )
    return "".join(parts)


def _docstring_markdown(text: str) -> str:
    """A module header as Markdown: paragraphs and `- ` lists as written, indented blocks
    kept as code, other text escaped."""
    out: list[str] = []
    previous = ""
    in_list = False
    for line in text.splitlines():
        if line.startswith("    ") and (not previous.strip() or previous.startswith("    ")):
            out.append(line)
        else:
            if line.startswith("- ") and previous.strip() and not in_list:
                out.append("")  # a list needs a blank line before it
            elif in_list and line.strip() and not line.startswith(("- ", " ")):
                out.append("")  # text after a list starts a paragraph, not a list item's tail
            out.append(_escape(line))
        if line.startswith("- "):
            in_list = True
        elif not line.strip() or not line.startswith(" "):
            in_list = False
        previous = line
    return "\n".join(out)


def api_details() -> str:
    from minibroker.protocol.releases import RELEASES

    sections = []
    for key, name, module, low, high, _advertised in _served():
        released = [
            f"{r} {_range(*release.api_ranges[key])}"
            for r, release in RELEASES.items()
            if key in release.api_ranges
        ]
        header = handler_header(module).split("\n", 1)
        body = header[1].strip() if len(header) > 1 else ""
        sections.append(
            f"### {name}\n\n"
            f"Key {key}; served {_range(low, high)}"
            f" (`minibroker/handlers/{module}.py`); advertised by Kafka "
            f"{', '.join(released) if released else 'by no release minibroker emulates'}.\n\n"
            f"{_docstring_markdown(body)}\n"
        )
    return "\n".join(sections)


def release_matrix() -> str:
    from minibroker.protocol.api_keys import ApiKey
    from minibroker.protocol.releases import RELEASES

    names = list(RELEASES)
    keys = sorted({key for release in RELEASES.values() for key in release.api_ranges})
    lines = [
        "| key | API | " + " | ".join(names) + " |",
        "|---|---|" + "---|" * len(names),
    ]
    for key in keys:
        try:
            api = ApiKey(key).name
        except ValueError:
            api = "?"
        cells = [
            _range(*RELEASES[r].api_ranges[key]) if key in RELEASES[r].api_ranges else ""
            for r in names
        ]
        lines.append(f"| {key} | {api} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def unserved_apis() -> str:
    """The keys some release minibroker emulates advertised to clients but minibroker does
    not serve (ApiVersions leaves them out under every release)."""
    from minibroker.handlers.registry import HANDLER_MODULES
    from minibroker.protocol.api_keys import ApiKey
    from minibroker.protocol.releases import RELEASES

    served = {int(key) for key in HANDLER_MODULES}
    lines = ["| key | API | advertised by Kafka |", "|---|---|---|"]
    for key in sorted({k for release in RELEASES.values() for k in release.api_ranges} - served):
        releases = [r for r, release in RELEASES.items() if key in release.api_ranges]
        try:
            api = ApiKey(key).name
        except ValueError:
            api = "?"
        shown = releases[0] if len(releases) == 1 else f"{releases[0]} to {releases[-1]}"
        lines.append(f"| {key} | {api} | {shown} ({len(releases)} of the emulated releases) |")
    return "\n".join(lines)


def _help(argv: list[str]) -> str:
    """What `minibroker ARGV --help` prints, 100 columns wide."""
    from minibroker import cli

    buffer = io.StringIO()
    saved = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "100"
    try:
        with contextlib.redirect_stdout(buffer), contextlib.suppress(SystemExit):
            cli.main([*argv, "--help"])
    finally:
        if saved is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = saved
    return buffer.getvalue().rstrip()


def cli_commands() -> list[list[str]]:
    """Every command and subcommand of the `minibroker` CLI, as argv prefixes."""
    import argparse

    from minibroker.tools.main import build_parser

    def walk(parser: argparse.ArgumentParser, prefix: list[str]) -> Iterable[list[str]]:
        subparsers = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not subparsers:
            yield prefix
            return
        if prefix:
            yield prefix
        for action in subparsers:
            for name, child in action.choices.items():
                yield from walk(child, [*prefix, name])

    return [[], ["serve"], ["healthcheck"], ["dump-log"], *walk(build_parser(), [])]


def serve_usage() -> str:
    """The usage lines of `minibroker serve --help`, as a text block."""
    usage = _help(["serve"]).split("\n\n", 1)[0]
    return f"```text\n{usage}\n```"


def cli_help() -> str:
    sections = []
    for argv in cli_commands():
        title = " ".join(["minibroker", *argv])
        sections.append(f"### `{title}`\n\n```text\n{_help(argv)}\n```\n")
    return "\n".join(sections)


GENERATORS: dict[str, Callable[[], str]] = {
    "broker-settings": broker_settings,
    "topic-settings": topic_settings,
    "group-settings": group_settings,
    "api-table": api_table,
    "api-details": api_details,
    "release-matrix": release_matrix,
    "unserved-apis": unserved_apis,
    "cli-help": cli_help,
    "serve-usage": serve_usage,
}


def render(markdown: str) -> str:
    """The page with every `<!-- generated: NAME -->` line replaced by its Markdown."""

    def generate(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in GENERATORS:
            raise KeyError(f"no generator {name!r} (known: {', '.join(GENERATORS)})")
        # kafka-python's protocol schemas warn about importlib.resources as the CLI loads them.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            return GENERATORS[name]()

    return MARKER.sub(generate, markdown)


def on_page_markdown(markdown: str, **kwargs: Any) -> str:
    return render(markdown)
