"""The web console: topics, messages, groups and lag, transactions — in the broker itself.

Started by `minibroker serve --console 127.0.0.1:8080 [--console-read-only]` and, in tests,
by `KafkaBroker(console=True)` (`broker.console_url`) or
`@pytest.mark.minibroker(console=True)` (`kafka_broker.console_url`). It is an aiohttp
application on the broker's own event loop, reading the broker's state directly (never a
Kafka client): server-rendered HTML with a little JavaScript (static/console.js), and the same
data as JSON under /api/.

Pages and API (every page's data also as JSON; writes are forms POSTing and redirecting back
with a flash message, or JSON bodies):

    GET  /                                  GET /api/overview, GET /api/throughput
    GET  /topics                            GET /api/topics
    POST /topics (create form)              POST /api/topics {"name", "partitions",
                                                 "replication_factor", "configs": {}}
    GET  /topics/{name}                     GET /api/topics/{name}
    POST /topics/{name}/delete              DELETE /api/topics/{name}
    POST /topics/{name}/partitions          POST /api/topics/{name}/partitions {"count"}
    POST /topics/{name}/configs             POST /api/topics/{name}/configs
                                                 {"set": {k: v}, "delete": [k]}
    POST /topics/{name}/delete-records      POST /api/topics/{name}/delete-records
                                                 {"partition": n|"all", "offset": n|-1}
    GET  /topics/{name}/messages            GET /api/topics/{name}/messages
         ?partition=all|N &from=beginning|offset|timestamp|end &offset=N
         &timestamp=ms|ISO-8601 &limit=1..500 &q=substring &after=P:O,P:O (live tail)
    POST /topics/{name}/messages (produce)  POST /api/topics/{name}/messages
                                                 {"partition" (0), "key", "value",
                                                  "headers": {}} (null key/value: null)
    GET  /groups                            GET /api/groups
    GET  /groups/{id}                       GET /api/groups/{id}
    POST /groups/{id}/reset                 POST /api/groups/{id}/reset {"target":
                                                 earliest|latest|timestamp|offset, "value",
                                                 "topic", "partition"}
    POST /groups/{id}/delete                DELETE /api/groups/{id}
    GET  /transactions                      GET /api/transactions

Bad input answers 4xx — `{"error": "..."}` from the API, the message in the page's flash
otherwise (unknown topic or group 404, a non-empty group 409, a record over
max.message.bytes 413, anything else 400). Read-only mode answers 403 to every write and
hides the forms. A write from another site's page (an `Origin` other than the console's, or
`Sec-Fetch-Site: cross-site`) is refused 403, a JSON API body without a JSON content type
415, and a request whose `Host` is not an IP address, localhost, the bound address or a name
of `minibroker.console.allowed.hosts` 403. Every answer carries a Content-Security-Policy,
`X-Frame-Options: DENY` and `X-Content-Type-Options: nosniff`. With SASL on the listeners
every request needs HTTP basic credentials of a SASL user (401 with WWW-Authenticate
otherwise, failures answered after the failed-authentication delay); with an authorizer,
that principal needs ALTER on the cluster (403 otherwise). See auth.py.

Stable hooks for browser tests (`id` and `data-testid` are equal where both are given):

- every page: nav links `nav-overview`, `nav-topics`, `nav-groups`, `nav-transactions`;
  the flash message `flash` (attribute `data-kind` "ok" or "error"); in read-only mode the
  banner `read-only-banner`; `body[data-page]` names the page.
- overview: `overview-version`, `overview-cluster-id`, `overview-uptime`,
  `overview-data-dir`, `overview-data-dir-size`, `overview-topics`, `overview-partitions`,
  `overview-groups`, `overview-open-transactions`; `nodes-table` with rows `node-row`
  (`data-node-id`); sparklines (SVG, drawn by console.js from /api/throughput every second)
  `sparkline-produce-records`, `sparkline-produce-bytes`, `sparkline-consume-records`, each
  with its current rate in `rate-produce-records`, `rate-produce-bytes`,
  `rate-consume-records`.
- topics list: `topics-table`, rows `topic-row` (`data-topic`) with a `topic-link`; the
  create form `create-topic-form`: `create-topic-name`, `create-topic-partitions`,
  `create-topic-replication-factor`, `create-topic-configs` (key=value lines),
  `create-topic-submit`.
- topic page: `topic-id`, `browse-messages-link`, `topic-partitions-table` with rows
  `partition-row` (`data-partition`), `topic-configs-table` with rows `config-row`
  (`data-config`); forms `add-partitions-form` (`add-partitions-count`,
  `add-partitions-submit`), `alter-configs-form` (`alter-configs-set` key=value lines,
  `alter-configs-delete` comma-separated names, `alter-configs-submit`),
  `delete-records-form` (`delete-records-partition` select, `delete-records-offset`,
  `delete-records-submit`), `delete-topic-form` (`delete-topic-submit`).
- messages page: the browse form `browse-form` (GET): `browse-partition` (select: all, 0..),
  `browse-from` (select: beginning, offset, timestamp, end), `browse-offset`,
  `browse-timestamp`, `browse-limit`, `browse-query`, `browse-submit`; a search's
  `search-summary` ("N match(es) ...; scanned M record(s), at most 10,000 per search");
  `value-format` (select utf8/json/hex: which rendering the value and key cells show);
  `tail-toggle` (checkbox: live tail, polling the API every second and appending the rows
  of records appended since the page was made, marked class `fresh`) and
  `tail-status`; `messages-table` with rows `message-row` (`data-partition`,
  `data-offset`) and cells `message-partition`, `message-offset`, `message-timestamp`,
  `message-key`, `message-value` (each holding `message-value-utf8`, `message-value-json`,
  `message-value-hex`; likewise for the key), `message-headers` (JSON text);
  `messages-empty` when there is nothing to show; the produce form `produce-form`:
  `produce-partition` (select), `produce-key` (empty: null key), `produce-value`,
  `produce-headers` (a JSON object of strings), `produce-submit`. After producing, the
  page shows the partition's last records with the flash "Produced to partition P at
  offset O.".
- groups list: `groups-table`, rows `group-row` (`data-group`) with `group-link` and
  `group-lag`.
- group page: `group-type`, `group-state`, `group-lag` (total lag, refreshed by console.js
  every 2 seconds as are the per-partition lags), `lag-chart` (SVG of the total lag over
  time, sampled every 3 seconds), `members-table` with rows `member-row` (`data-member`),
  `offsets-table` with rows `offset-row` (`data-topic`, `data-partition`) holding a
  `lag-value` cell; the reset form `reset-offsets-form`: `reset-target` (select: earliest,
  latest, timestamp, offset), `reset-value`, `reset-topic`, `reset-partition`,
  `reset-offsets-submit`; `delete-group-form` with `delete-group-submit`.
- transactions page: `transactions-table`, rows `transaction-row`
  (`data-transactional-id`); `producers-table`, rows `producer-partition-row`
  (`data-topic`, `data-partition`) holding an `lso-value` cell.
- an empty table is replaced by a paragraph `<table id>-empty` (e.g. `groups-table-empty`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from minibroker.console.app import Console
    from minibroker.server.broker import Broker

__all__ = ["Console", "start_console"]


async def start_console(
    broker: Broker, host: str, port: int, *, read_only: bool = False
) -> Console:
    """Serve the console for `broker` (a cluster's first node: the one owning the state) on
    host:port (port 0: any free one); `console.url`, `await console.stop()`."""
    from minibroker.console.app import start_console as start

    return await start(broker, host, port, read_only=read_only)


def __getattr__(name: str) -> object:
    if name == "Console":
        from minibroker.console.app import Console

        return Console
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
