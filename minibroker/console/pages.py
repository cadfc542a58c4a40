"""The console's HTML: one function per page over the dicts of views.py, every value escaped.

Forms are left out in read-only mode. The `id` and `data-testid` attributes are the stable
hooks listed in the package docstring; console.js finds its elements through them too.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from html import escape
from typing import Any
from urllib.parse import quote

from minibroker.console.messages import MAX_LIMIT, POSITIONS, SEARCH_SCAN_LIMIT
from minibroker.console.views import Json

NAV = (
    ("overview", "/", "Overview"),
    ("topics", "/topics", "Topics"),
    ("groups", "/groups", "Groups"),
    ("transactions", "/transactions", "Transactions"),
)


def e(value: object) -> str:
    return escape("" if value is None else str(value), quote=True)


def path_part(value: str) -> str:
    return quote(value, safe="")


def topic_url(name: str, suffix: str = "") -> str:
    return f"/topics/{path_part(name)}{suffix}"


def group_url(group_id: str, suffix: str = "") -> str:
    return f"/groups/{path_part(group_id)}{suffix}"


def human_bytes(size: int | None) -> str:
    if size is None:
        return "in memory"
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} B"


def _attrs(attributes: Mapping[str, object]) -> str:
    return "".join(f' {name}="{e(value)}"' for name, value in attributes.items())


def layout(
    title: str, active: str, body: str, *, flash: tuple[str, str] | None, read_only: bool
) -> str:
    links = "".join(
        f'<a href="{href}" id="nav-{key}" data-testid="nav-{key}"'
        f"{' class=active' if key == active else ''}>{label}</a>"
        for key, href, label in NAV
    )
    banner = ""
    if read_only:
        banner = (
            '<div class="banner" id="read-only-banner" data-testid="read-only-banner">'
            "Read-only console: changes are disabled.</div>"
        )
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        '<meta name=viewport content="width=device-width, initial-scale=1">'
        f"<title>{e(title)} · minibroker</title>"
        '<link rel=icon href="data:,"><link rel=stylesheet href="/static/console.css">'
        '<script defer src="/static/console.js"></script></head>'
        f'<body data-page="{e(active)}"><header><span class=brand>minibroker</span>'
        f"<nav>{links}</nav></header>{banner}<main>{flash_html(flash)}"
        f"<h1>{e(title)}</h1>{body}</main></body></html>"
    )


def flash_html(flash: tuple[str, str] | None) -> str:
    if flash is None:
        return ""
    kind, message = flash
    return (
        f'<div id="flash" data-testid="flash" data-kind="{e(kind)}" class="flash flash-{e(kind)}"'
        f' role="{"alert" if kind == "error" else "status"}">{e(message)}</div>'
    )


def table(
    testid: str, headers: Iterable[str], rows: Iterable[str], empty: str = "Nothing yet."
) -> str:
    head = "".join(f"<th>{e(header)}</th>" for header in headers)
    body = "".join(rows)
    if not body:
        return f'<p class=empty data-testid="{testid}-empty">{e(empty)}</p>'
    return f'<table id="{testid}" data-testid="{testid}"><thead><tr>{head}</tr></thead>' + (
        f"<tbody>{body}</tbody></table>"
    )


def cells(values: Iterable[object]) -> str:
    return "".join(f"<td>{e(value)}</td>" for value in values)


def form(
    action: str, testid: str, fields: str, submit: str, *, cls: str = "", method: str = "post"
) -> str:
    return (
        f'<form method="{method}" action="{e(action)}" id="{testid}" data-testid="{testid}"'
        f' class="form {cls}">{fields}<button type=submit id="{testid.removesuffix("-form")}'
        f'-submit" data-testid="{testid.removesuffix("-form")}-submit">{e(submit)}</button></form>'
    )


def field(label: str, testid: str, name: str, value: object = "", **attributes: object) -> str:
    kind = attributes.pop("type", "text")
    return (
        f"<label>{e(label)} <input type={kind} name={name} id={testid} data-testid={testid}"
        f' value="{e(value)}"{_attrs(attributes)}></label>'
    )


def textarea(label: str, testid: str, name: str, value: str = "", **attributes: object) -> str:
    return (
        f"<label>{e(label)} <textarea name={name} id={testid} data-testid={testid}"
        f"{_attrs(attributes)}>{e(value)}</textarea></label>"
    )


def select(
    label: str, testid: str, name: str, options: Iterable[tuple[str, str]], chosen: str
) -> str:
    items = "".join(
        f'<option value="{e(value)}"{" selected" if value == chosen else ""}>{e(text)}</option>'
        for value, text in options
    )
    return (
        f"<label>{e(label)} <select name={name} id={testid} data-testid={testid}>{items}"
        "</select></label>"
    )


# ---- overview ---------------------------------------------------------------------------------


def overview_page(data: Json) -> str:
    nodes = [
        f'<tr data-testid="node-row" data-node-id="{node["id"]}">'
        + cells(
            [
                node["id"],
                "live" if node["live"] else "stopped",
                "yes" if node["controller"] else "",
                ", ".join(
                    f"{item['name']} {item['address']} ({item['protocol']})"
                    for item in node["listeners"]
                ),
            ]
        )
        + "</tr>"
        for node in data["nodes"]
    ]
    facts = [
        ("version", "Version", data["version"]),
        ("cluster-id", "Cluster id", data["cluster_id"]),
        ("uptime", "Uptime", f"{data['uptime_s']:.0f} s"),
        ("data-dir", "Data directory", data["data_dir"] or "in memory"),
        ("data-dir-size", "Data size", human_bytes(data["data_dir_bytes"])),
        ("topics", "Topics", data["topics"]),
        ("partitions", "Partitions", data["partitions"]),
        ("groups", "Groups", data["groups"]),
        ("open-transactions", "Open transactions", data["open_transactions"]),
    ]
    facts_html = "".join(
        f'<dt>{e(label)}</dt><dd id="overview-{key}" data-testid="overview-{key}">{e(value)}</dd>'
        for key, label, value in facts
    )
    sparklines = "".join(
        f'<figure class=spark><figcaption>{e(label)} <span class=spark-value id="rate-{key}"'
        f' data-testid="rate-{key}">-</span></figcaption>'
        f'<svg class=sparkline id="sparkline-{key}" data-testid="sparkline-{key}"'
        f' data-series="{series}" viewBox="0 0 300 60" preserveAspectRatio="none"></svg></figure>'
        for key, label, series in (
            ("produce-records", "Produced records/s", "produce_records_per_s"),
            ("produce-bytes", "Produced bytes/s", "produce_bytes_per_s"),
            ("consume-records", "Consumed (committed) records/s", "consume_records_per_s"),
        )
    )
    return (
        f"<dl class=facts>{facts_html}</dl>"
        f'<section class=sparks id="throughput" data-testid="throughput">{sparklines}</section>'
        "<h2>Nodes</h2>" + table("nodes-table", ["Node", "State", "Controller", "Listeners"], nodes)
    )


# ---- topics -----------------------------------------------------------------------------------


def _configs_text(configs: Mapping[str, str]) -> str:
    return ", ".join(f"{key}={value}" for key, value in configs.items())


def topics_page(topics: list[Json], read_only: bool, form_values: Mapping[str, str]) -> str:
    rows = [
        f'<tr data-testid="topic-row" data-topic="{e(t["name"])}">'
        f'<td><a href="{e(topic_url(t["name"]))}" data-testid="topic-link">{e(t["name"])}</a>'
        f"{' <span class=tag>internal</span>' if t['internal'] else ''}</td>"
        + cells(
            [
                t["partitions"],
                t["replication_factor"],
                human_bytes(t["size_bytes"]),
                t["messages"],
                t["end_offsets"],
                t["messages_per_s"],
                _configs_text(t["configs"]),
            ]
        )
        + f'<td><a href="{e(topic_url(t["name"], "/messages"))}">messages</a></td></tr>'
        for t in topics
    ]
    html = table(
        "topics-table",
        ["Topic", "Partitions", "RF", "Size", "Records", "End offsets", "Records/s", "Configs", ""],
        rows,
        "No topics yet.",
    )
    if read_only:
        return html
    fields = (
        field("Name", "create-topic-name", "name", form_values.get("name", ""), required="")
        + field(
            "Partitions",
            "create-topic-partitions",
            "partitions",
            form_values.get("partitions", ""),
            placeholder="num.partitions",
        )
        + field(
            "Replication factor",
            "create-topic-replication-factor",
            "replication_factor",
            form_values.get("replication_factor", ""),
            placeholder="default.replication.factor",
        )
        + textarea(
            "Configs (key=value per line)",
            "create-topic-configs",
            "configs",
            form_values.get("configs", ""),
            rows=3,
        )
    )
    return html + "<h2>Create a topic</h2>" + form("/topics", "create-topic-form", fields, "Create")


def topic_page(topic: Json, read_only: bool) -> str:
    name = topic["name"]
    partitions = [
        f'<tr data-testid="partition-row" data-partition="{p["partition"]}">'
        + cells(
            [
                p["partition"],
                p["leader"],
                ",".join(map(str, p["replicas"])),
                ",".join(map(str, p["isr"])),
                p["log_start_offset"],
                p["high_watermark"],
                p["last_stable_offset"],
                human_bytes(p["size_bytes"]),
            ]
        )
        + "</tr>"
        for p in topic["partition_details"]
    ]
    configs = [
        f'<tr data-testid="config-row" data-config="{e(c["name"])}"'
        f"{' class=override' if c['source'] == 'TOPIC_CONFIG' else ''}>"
        + cells([c["name"], c["value"], c["source"]])
        + "</tr>"
        for c in topic["all_configs"]
    ]
    html = (
        f'<p>Topic id <code data-testid="topic-id">{e(topic["topic_id"])}</code> · '
        f'<a href="{e(topic_url(name, "/messages"))}" id="browse-messages-link"'
        ' data-testid="browse-messages-link">Browse messages</a></p>'
        "<h2>Partitions</h2>"
        + table(
            "topic-partitions-table",
            [
                "Partition",
                "Leader",
                "Replicas",
                "ISR",
                "Log start",
                "High watermark",
                "LSO",
                "Size",
            ],
            partitions,
        )
    )
    if not read_only:
        html += _topic_forms(name, len(topic["partition_details"]))
    return (
        html
        + "<h2>Configs</h2>"
        + table("topic-configs-table", ["Name", "Value", "Source"], configs)
    )


def _topic_forms(name: str, partitions: int) -> str:
    add = form(
        topic_url(name, "/partitions"),
        "add-partitions-form",
        field("New partition count", "add-partitions-count", "count", partitions + 1),
        "Add partitions",
    )
    alter = form(
        topic_url(name, "/configs"),
        "alter-configs-form",
        textarea("Set (key=value per line)", "alter-configs-set", "set", rows=2)
        + field("Delete (names, comma-separated)", "alter-configs-delete", "delete"),
        "Alter configs",
    )
    delete_records = form(
        topic_url(name, "/delete-records"),
        "delete-records-form",
        select(
            "Partition",
            "delete-records-partition",
            "partition",
            [("all", "all"), *((str(i), str(i)) for i in range(partitions))],
            "all",
        )
        + field("Before offset (-1: high watermark)", "delete-records-offset", "offset", -1),
        "Delete records",
    )
    delete_topic = form(
        topic_url(name, "/delete"), "delete-topic-form", "", "Delete topic", cls="danger"
    )
    return (
        f"<section class=forms><h2>Change</h2>{add}{alter}{delete_records}{delete_topic}</section>"
    )


# ---- messages ---------------------------------------------------------------------------------


def _value_html(view: Json | None, testid: str) -> str:
    if view is None:
        return f'<td data-testid="{testid}" class=null>null</td>'
    utf8 = view["utf8"]
    text = utf8 if utf8 is not None else "(not UTF-8)"
    pretty = view["json"] if view["json"] is not None else text
    more = " …" if view["truncated"] else ""
    schema = view.get("schema")
    decoded = (
        ""
        if schema is None
        else f' data-schema-id="{schema["id"]}" data-schema-type="{e(schema["type"])}"'
        f' title="{e(schema["type"])} schema {schema["id"]} ({e(schema["subject"])})"'
    )
    return (
        f'<td data-testid="{testid}" data-size="{view["size"]}"{decoded}>'
        f'<span class=v-utf8 data-testid="{testid}-utf8">{e(text)}{more}</span>'
        f'<pre class=v-json data-testid="{testid}-json">{e(pretty)}{more}</pre>'
        f'<code class=v-hex data-testid="{testid}-hex">{e(view["hex"])}</code></td>'
    )


def message_rows(records: list[Json]) -> str:
    return "".join(
        f'<tr data-testid="message-row" data-partition="{r["partition"]}"'
        f' data-offset="{r["offset"]}">'
        f'<td data-testid="message-partition">{r["partition"]}</td>'
        f'<td data-testid="message-offset">{r["offset"]}</td>'
        f'<td data-testid="message-timestamp" title="{r["timestamp"]}">{e(r["time"])}</td>'
        + _value_html(r["key"], "message-key")
        + _value_html(r["value"], "message-value")
        + '<td data-testid="message-headers">'
        + e(
            json.dumps(
                {h["key"]: None if h["value"] is None else h["value"]["utf8"] for h in r["headers"]}
            )
            if r["headers"]
            else ""
        )
        + "</td></tr>"
        for r in records
    )


def messages_page(
    name: str,
    partitions: int,
    result: Json,
    browse: Mapping[str, Any],
    read_only: bool,
    produce_values: Mapping[str, str],
) -> str:
    partition_options = [("all", "all"), *((str(i), str(i)) for i in range(partitions))]
    filters = (
        select("Partition", "browse-partition", "partition", partition_options, browse["partition"])
        + select("From", "browse-from", "from", [(p, p) for p in POSITIONS], browse["from"])
        + field("Offset", "browse-offset", "offset", browse["offset"])
        + field(
            "Timestamp (ms or ISO 8601)", "browse-timestamp", "timestamp", browse["timestamp"] or ""
        )
        + field(
            "Limit", "browse-limit", "limit", browse["limit"], type="number", min=1, max=MAX_LIMIT
        )
        + field("Search key/value", "browse-query", "q", browse["q"])
    )
    html = form(topic_url(name, "/messages"), "browse-form", filters, "Show", method="get")
    search = result.get("search")
    if search is not None:
        html += (
            '<p id="search-summary" data-testid="search-summary" class=note>'
            f"{search['matches']} match(es) for “{e(search['query'])}”; scanned "
            f"{search['scanned']} record(s), at most {SEARCH_SCAN_LIMIT:,} per search"
            f"{' (limit reached: narrow the range to search further)' if search['limited'] else ''}"
            ".</p>"
        )
    # The live tail shows what is appended after the page was made.
    positions = ",".join(f"{p}:{o}" for p, o in sorted(result["end_offsets"].items()))
    html += (
        "<div class=toolbar>"
        + select(
            "Show values as",
            "value-format",
            "format",
            [("utf8", "UTF-8"), ("json", "JSON"), ("hex", "hex")],
            "utf8",
        )
        + '<label><input type=checkbox id="tail-toggle" data-testid="tail-toggle">'
        " Live tail</label>"
        '<span id="tail-status" data-testid="tail-status" class=note></span></div>'
        f'<table id="messages-table" data-testid="messages-table" class="messages format-utf8"'
        f' data-topic="{e(name)}" data-partition="{e(browse["partition"])}"'
        f' data-positions="{e(positions)}">'
        "<thead><tr><th>Partition</th><th>Offset</th><th>Time</th><th>Key</th><th>Value</th>"
        f"<th>Headers</th></tr></thead><tbody>{message_rows(result['records'])}</tbody></table>"
    )
    if not result["records"]:
        html += '<p class=empty data-testid="messages-empty">No records in this range.</p>'
    if not read_only:
        html += "<h2>Produce a message</h2>" + _produce_form(name, partitions, produce_values)
    return html


def _produce_form(name: str, partitions: int, values: Mapping[str, str]) -> str:
    fields = (
        select(
            "Partition",
            "produce-partition",
            "partition",
            [(str(i), str(i)) for i in range(partitions)],
            values.get("partition", "0"),
        )
        + field("Key (empty: null)", "produce-key", "key", values.get("key", ""))
        + textarea("Value", "produce-value", "value", values.get("value", ""), rows=4)
        + textarea(
            "Headers (JSON object)",
            "produce-headers",
            "headers",
            values.get("headers", ""),
            rows=2,
            placeholder='{"name": "value"}',
        )
    )
    return form(topic_url(name, "/messages"), "produce-form", fields, "Produce")


# ---- groups -----------------------------------------------------------------------------------


def groups_page(groups: list[Json]) -> str:
    rows = [
        f'<tr data-testid="group-row" data-group="{e(g["group_id"])}">'
        f'<td><a href="{e(group_url(g["group_id"]))}" data-testid="group-link">'
        f"{e(g['group_id'])}</a></td>"
        + cells([g["type"], g["state"], g["members"]])
        + f'<td data-testid="group-lag">{g["lag"]}</td></tr>'
        for g in groups
    ]
    return table("groups-table", ["Group", "Type", "State", "Members", "Lag"], rows, "No groups.")


def group_page(group: Json, read_only: bool) -> str:
    group_id = group["group_id"]
    members = [
        f'<tr data-testid="member-row" data-member="{e(m["member_id"])}">'
        + cells(
            [
                m["member_id"],
                m["client_id"],
                m["host"],
                m["instance_id"] or "",
                m["member_epoch"],
                "; ".join(
                    f"{topic}: {','.join(map(str, parts))}"
                    for topic, parts in m["assignment"].items()
                ),
            ]
        )
        + "</tr>"
        for m in group["members"]
    ]
    offsets = [
        f'<tr data-testid="offset-row" data-topic="{e(o["topic"])}"'
        f' data-partition="{o["partition"]}">'
        + cells([o["topic"], o["partition"], o["committed_offset"], o["log_end_offset"]])
        + f'<td data-testid="lag-value" class=lag>{e(o["lag"])}</td>'
        + cells([o["member_id"] or ""])
        + "</tr>"
        for o in group["offsets"]
    ]
    offset_label = "Start offset (SPSO)" if group["type"] == "share" else "Committed"
    html = (
        "<dl class=facts>"
        f'<dt>Type</dt><dd id="group-type" data-testid="group-type">{e(group["type"])}</dd>'
        f'<dt>State</dt><dd id="group-state" data-testid="group-state">{e(group["state"])}</dd>'
        f'<dt>Total lag</dt><dd id="group-lag" data-testid="group-lag">{group["lag"]}</dd></dl>'
        f"<figure class=chart><figcaption>Total lag over time</figcaption>"
        f'<svg id="lag-chart" data-testid="lag-chart" data-group="{e(group_id)}"'
        f' data-history="{e(json.dumps(group["lag_history"]))}"'
        ' viewBox="0 0 600 150" preserveAspectRatio="none"></svg></figure>'
        "<h2>Members</h2>"
        + table(
            "members-table",
            ["Member", "Client", "Host", "Instance", "Epoch", "Assignment"],
            members,
            "No members.",
        )
        + "<h2>Offsets and lag</h2>"
        + table(
            "offsets-table",
            ["Topic", "Partition", offset_label, "Log end", "Lag", "Member"],
            offsets,
            "No offsets.",
        )
    )
    if read_only:
        return html
    reset_fields = (
        select(
            "Reset to",
            "reset-target",
            "target",
            [
                ("earliest", "earliest"),
                ("latest", "latest"),
                ("timestamp", "timestamp"),
                ("offset", "offset"),
            ],
            "earliest",
        )
        + field("Offset or timestamp", "reset-value", "value")
        + field("Topic (empty: the group's partitions)", "reset-topic", "topic")
        + field("Partition (empty: all)", "reset-partition", "partition")
    )
    return (
        html
        + "<h2>Reset offsets</h2><p class=note>Only while the group is Empty.</p>"
        + form(group_url(group_id, "/reset"), "reset-offsets-form", reset_fields, "Reset")
        + "<h2>Delete</h2>"
        + form(
            group_url(group_id, "/delete"), "delete-group-form", "", "Delete group", cls="danger"
        )
    )


# ---- transactions -----------------------------------------------------------------------------


def transactions_page(data: Json) -> str:
    transactions = [
        f'<tr data-testid="transaction-row" data-transactional-id="{e(t["transactional_id"])}">'
        + cells(
            [
                t["transactional_id"],
                t["producer_id"],
                t["producer_epoch"],
                t["state"],
                t["timeout_ms"],
                ", ".join(t["partitions"]),
            ]
        )
        + "</tr>"
        for t in data["transactions"]
    ]
    partitions = [
        f'<tr data-testid="producer-partition-row" data-topic="{e(p["topic"])}"'
        f' data-partition="{p["partition"]}">'
        + cells([p["topic"], p["partition"], p["high_watermark"]])
        + f'<td data-testid="lso-value">{p["last_stable_offset"]}</td>'
        + cells(
            [
                "; ".join(
                    f"{x['producer_id']}/{x['producer_epoch']}"
                    + (
                        f" (open from {x['current_txn_start_offset']})"
                        if x["current_txn_start_offset"] is not None
                        else ""
                    )
                    for x in p["producers"]
                )
            ]
        )
        + "</tr>"
        for p in data["partitions"]
    ]
    return (
        "<h2>Open transactions</h2>"
        + table(
            "transactions-table",
            ["Transactional id", "Producer id", "Epoch", "State", "Timeout ms", "Partitions"],
            transactions,
            "No open transactions.",
        )
        + "<h2>Partitions: producers and last stable offset</h2>"
        + table(
            "producers-table",
            ["Topic", "Partition", "High watermark", "LSO", "Producers (id/epoch)"],
            partitions,
            "No partitions.",
        )
    )


def error_page(status: int, message: str, read_only: bool) -> str:
    body = '<p><a href="/">Back to the overview</a></p>'
    return layout(f"Error {status}", "", body, flash=("error", message), read_only=read_only)
