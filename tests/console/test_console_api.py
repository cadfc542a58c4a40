"""The web console over real HTTP: its JSON API and HTML forms against a real broker, with
confluent-kafka producing and consuming so that what the console reports is what a Kafka
client did; read-only mode, HTTP basic over the SASL users, the authorizer, `serve
--console`; and every bad input answered 4xx with a message (never a 500)."""

from __future__ import annotations

import base64
import json
import logging
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.error import HTTPError
from urllib.parse import urlencode, urlsplit
from urllib.request import HTTPRedirectHandler, Request, build_opener

import pytest
from confluent_kafka import Consumer, Producer, ShareConsumer, TopicPartition

from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.errors import ErrorCode
from minibroker.testing.cluster import KafkaBroker
from minibroker.testing.security import secured_config
from tests.wire import WireClient

WAIT_S = 30.0


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def text(self) -> str:
        return self.body.decode()

    @property
    def error(self) -> str:
        found = self.json["error"]
        assert isinstance(found, str)
        return found


class _NoRedirect(HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


class Http:
    """Plain HTTP calls to the console; redirects are returned, not followed."""

    def __init__(self, base: str, auth: tuple[str, str] | None = None) -> None:
        self.base = base
        self.auth = auth
        self._opener = build_opener(_NoRedirect)

    def call(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        form: dict[str, str] | None = None,
        raw: bytes | None = None,
        content_type: str = "application/json",
    ) -> Answer:
        data = raw
        headers = {}
        if body is not None:
            data = json.dumps(body).encode()
        if form is not None:
            data = urlencode(form).encode()
            content_type = "application/x-www-form-urlencoded"
        if data is not None:
            headers["Content-Type"] = content_type
        if self.auth is not None:
            token = base64.b64encode(":".join(self.auth).encode()).decode()
            headers["Authorization"] = f"Basic {token}"
        request = Request(self.base + path, data=data, method=method, headers=headers)
        try:
            with self._opener.open(request, timeout=WAIT_S) as response:
                return Answer(response.status, dict(response.headers), response.read())
        except HTTPError as exc:
            return Answer(exc.code, dict(exc.headers), exc.read())

    def get(self, path: str) -> Answer:
        return self.call("GET", path)

    def post(self, path: str, body: Any = None, **options: Any) -> Answer:
        return self.call("POST", path, body=body, **options)

    def follow(self, answer: Answer) -> Answer:
        assert answer.status == 303, answer.body[:500]
        location = urlsplit(answer.headers["Location"])
        return self.get(f"{location.path}?{location.query}")


def wait_for(condition: Callable[[], Any], what: str) -> Any:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


class _Collected(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture(scope="module", autouse=True)
def no_console_bug() -> Iterator[None]:
    """No request of this module reaches the console's catch-all (it logs and answers 500)."""
    collected = _Collected()
    console_log = logging.getLogger("minibroker.console")
    console_log.addHandler(collected)
    yield
    console_log.removeHandler(collected)
    assert [record.getMessage() for record in collected.records] == []


@pytest.fixture(scope="module")
def kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaBroker]:
    directory = tmp_path_factory.mktemp("console")
    with KafkaBroker(console=True, data_dir=directory) as broker:
        yield broker


@pytest.fixture(scope="module")
def http(kafka: KafkaBroker) -> Http:
    return Http(kafka.console_url)


def produce(kafka: KafkaBroker, topic: str, records: list[dict[str, Any]]) -> None:
    producer = Producer({"bootstrap.servers": kafka.bootstrap_servers, "linger.ms": 0})
    for record in records:
        producer.produce(topic, **record)
    assert producer.flush(WAIT_S) == 0


def consumer(kafka: KafkaBroker, group: str, **settings: Any) -> Consumer:
    return Consumer(
        {
            "bootstrap.servers": kafka.bootstrap_servers,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            **settings,
        }
    )


def consume(client: Consumer, count: int) -> list[Any]:
    messages: list[Any] = []
    deadline = time.monotonic() + WAIT_S
    while len(messages) < count and time.monotonic() < deadline:
        message = client.poll(0.2)
        if message is not None and message.error() is None:
            messages.append(message)
    assert len(messages) == count
    return messages


def create(http: Http, name: str, partitions: int = 1, **configs: str) -> None:
    answer = http.post("/api/topics", {"name": name, "partitions": partitions, "configs": configs})
    assert answer.status == 201, answer.body


# ---- wiring -----------------------------------------------------------------------------------


def test_console_url_serves_the_overview_of_this_broker(kafka: KafkaBroker, http: Http) -> None:
    page = http.get("/")
    assert page.status == 200
    assert page.headers["Content-Type"].startswith("text/html")
    assert 'data-testid="overview-version"' in page.text
    overview = http.get("/api/overview").json
    addresses = [item["address"] for item in overview["nodes"][0]["listeners"]]
    assert addresses == [kafka.bootstrap_servers]
    assert overview["nodes"][0]["live"] is True
    assert overview["data_dir"] == str(kafka.data_dir)
    assert overview["uptime_s"] >= 0


def test_static_files_are_served_from_the_package(http: Http) -> None:
    script = http.get("/static/console.js")
    assert script.status == 200
    assert script.headers["Content-Type"].startswith("text/javascript")
    assert b"startTail" in script.body
    assert http.get("/static/console.css").status == 200
    assert http.get("/static/other.js").status == 404


def test_serve_console_flag_serves_one_console_for_a_cluster() -> None:
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "minibroker",
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--in-memory",
            "--nodes",
            "2",
            "--console",
            "127.0.0.1:0",
            "--console-read-only",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert process.stdout is not None
        lines = [process.stdout.readline(), process.stdout.readline()]
        found = re.search(r"minibroker console on (http://\S+)", "".join(lines))
        assert found, lines
        console = Http(found.group(1))
        overview = console.get("/api/overview").json
        assert [node["id"] for node in overview["nodes"]] == [1, 2]
        refused = console.post("/api/topics", {"name": "t"})
        assert refused.status == 403
        assert "read-only" in refused.error
    finally:
        process.terminate()
        process.wait(WAIT_S)


# ---- topics -----------------------------------------------------------------------------------


def test_create_topic_through_the_api_is_listed_with_its_configs(http: Http) -> None:
    name = unique("created")
    create(http, name, partitions=3, **{"retention.ms": "60000"})
    listed = {topic["name"]: topic for topic in http.get("/api/topics").json["topics"]}
    assert listed[name]["partitions"] == 3
    assert listed[name]["configs"] == {"retention.ms": "60000"}
    detail = http.get(f"/api/topics/{name}").json
    assert [p["partition"] for p in detail["partition_details"]] == [0, 1, 2]
    retention = next(c for c in detail["all_configs"] if c["name"] == "retention.ms")
    assert retention == {"name": "retention.ms", "value": "60000", "source": "TOPIC_CONFIG"}


def test_create_topic_form_redirects_to_the_topic_with_a_flash(http: Http) -> None:
    name = unique("form")
    answer = http.post(
        "/topics",
        form={
            "name": name,
            "partitions": "2",
            "replication_factor": "",
            "configs": "cleanup.policy=compact",
        },
    )
    assert answer.headers["Location"].startswith(f"/topics/{name}?flash=")
    page = http.follow(answer)
    assert page.status == 200
    assert f"Topic {name} created." in page.text
    assert 'data-kind="ok"' in page.text
    assert page.text.count('data-testid="partition-row"') == 2
    assert http.get(f"/api/topics/{name}").json["configs"] == {"cleanup.policy": "compact"}


def test_add_partitions_alter_configs_and_delete_a_topic(http: Http) -> None:
    name = unique("changed")
    create(http, name)
    grown = http.post(f"/api/topics/{name}/partitions", {"count": 4})
    assert grown.status == 200
    assert grown.json["partitions"] == 4
    altered = http.post(
        f"/api/topics/{name}/configs", {"set": {"retention.bytes": "1048576"}, "delete": []}
    )
    assert altered.json["configs"] == {"retention.bytes": "1048576"}
    cleared = http.post(f"/api/topics/{name}/configs", {"delete": ["retention.bytes"]})
    assert cleared.json["configs"] == {}
    assert http.call("DELETE", f"/api/topics/{name}").json == {"deleted": name}
    assert http.get(f"/api/topics/{name}").status == 404


def test_topic_forms_change_the_topic(http: Http) -> None:
    name = unique("forms")
    create(http, name)
    page = http.follow(http.post(f"/topics/{name}/partitions", form={"count": "3"}))
    assert f"Topic {name} now has 3 partitions." in page.text
    page = http.follow(
        http.post(f"/topics/{name}/configs", form={"set": "segment.ms=100000\n", "delete": ""})
    )
    assert 'data-config="segment.ms" class=override' in page.text
    listing = http.follow(http.post(f"/topics/{name}/delete", form={}))
    assert f"Topic {name} deleted." in listing.text
    assert f'data-topic="{name}"' not in listing.text


def test_delete_records_moves_the_log_start(kafka: KafkaBroker, http: Http) -> None:
    name = unique("trimmed")
    create(http, name)
    produce(kafka, name, [{"value": f"v{i}".encode()} for i in range(10)])
    answer = http.post(f"/api/topics/{name}/delete-records", {"partition": 0, "offset": 4})
    assert answer.json == {"log_start_offsets": {"0": 4}}
    page = http.follow(
        http.post(f"/topics/{name}/delete-records", form={"partition": "all", "offset": "-1"})
    )
    assert "log start offsets now 0: 10" in page.text
    assert kafka.records(name) == []


# ---- messages ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def browsed(kafka: KafkaBroker, http: Http) -> str:
    """A 2-partition topic: partition 0 holds 5 records of several kinds, partition 1 three."""
    name = unique("browsed")
    create(http, name, partitions=2, **{"retention.ms": "-1"})  # its timestamps are in 1970
    produce(
        kafka,
        name,
        [
            {"key": b"k0", "value": b"plain text", "partition": 0, "timestamp": 1_000},
            {
                "key": b"k1",
                "value": b'{"id": 1, "needle": true}',
                "partition": 0,
                "timestamp": 2_000,
                "headers": [("trace", b"abc"), ("empty", None)],
            },
            {"key": None, "value": bytes([0, 159, 146, 150]), "partition": 0, "timestamp": 3_000},
            {"key": b"needle-key", "value": None, "partition": 0, "timestamp": 4_000},
            {"key": b"k4", "value": b"last", "partition": 0, "timestamp": 5_000},
            *(
                {"value": f"p1-{i}".encode(), "partition": 1, "timestamp": 1_500 + i}
                for i in range(3)
            ),
        ],
    )
    return name


def test_browse_shows_keys_values_headers_in_every_format(http: Http, browsed: str) -> None:
    result = http.get(f"/api/topics/{browsed}/messages?partition=0").json
    records = result["records"]
    assert [r["offset"] for r in records] == [0, 1, 2, 3, 4]
    assert records[0]["key"]["utf8"] == "k0"
    assert records[0]["value"]["utf8"] == "plain text"
    assert records[0]["timestamp"] == 1_000
    assert json.loads(records[1]["value"]["json"]) == {"id": 1, "needle": True}
    assert "\n" in records[1]["value"]["json"]
    assert records[1]["headers"][0] == {
        "key": "trace",
        "value": {"size": 3, "utf8": "abc", "json": None, "hex": "61 62 63", "truncated": False},
    }
    assert records[1]["headers"][1] == {"key": "empty", "value": None}
    assert records[2]["key"] is None
    assert records[2]["value"]["utf8"] is None
    assert records[2]["value"]["hex"] == "00 9f 92 96"
    assert records[3]["value"] is None
    assert result["next_offsets"] == {"0": 5}


def test_browse_from_offset_end_and_timestamp(http: Http, browsed: str) -> None:
    path = f"/api/topics/{browsed}/messages"
    from_offset = http.get(f"{path}?partition=0&from=offset&offset=3").json["records"]
    assert [r["offset"] for r in from_offset] == [3, 4]
    at_end = http.get(f"{path}?partition=0&from=end&limit=2").json["records"]
    assert [r["offset"] for r in at_end] == [3, 4]
    by_time = http.get(f"{path}?partition=0&from=timestamp&timestamp=2500").json["records"]
    assert [r["offset"] for r in by_time] == [2, 3, 4]
    iso = urlencode({"timestamp": "1970-01-01T00:00:02.500+00:00"})
    by_iso = http.get(f"{path}?partition=0&from=timestamp&{iso}").json["records"]
    assert [r["offset"] for r in by_iso] == [2, 3, 4]
    everything = http.get(f"{path}?partition=all").json
    assert [(r["partition"], r["offset"]) for r in everything["records"]][:3] == [
        (0, 0),
        (1, 0),
        (1, 1),
    ]
    assert len(everything["records"]) == 8
    assert everything["next_offsets"] == {"0": 5, "1": 3}
    assert everything["end_offsets"] == {"0": 5, "1": 3}
    first_two = http.get(f"{path}?partition=all&limit=2").json
    assert first_two["next_offsets"] == {"0": 1, "1": 1}
    assert first_two["end_offsets"] == {"0": 5, "1": 3}


def test_search_scans_a_bounded_range_and_says_so(http: Http, browsed: str) -> None:
    result = http.get(f"/api/topics/{browsed}/messages?q=needle").json
    assert [(r["partition"], r["offset"]) for r in result["records"]] == [(0, 1), (0, 3)]
    assert result["search"] == {
        "query": "needle",
        "scanned": 8,
        "scan_limit": 10_000,
        "limited": False,
        "matches": 2,
    }
    page = http.get(f"/topics/{browsed}/messages?q=needle")
    assert 'data-testid="search-summary"' in page.text
    assert "at most 10,000 per search" in page.text
    assert page.text.count('data-testid="message-row"') == 2


def test_live_tail_returns_only_records_after_the_positions(kafka: KafkaBroker, http: Http) -> None:
    name = unique("tailed")
    create(http, name)
    produce(kafka, name, [{"value": b"before"}])
    path = f"/api/topics/{name}/messages"
    first = http.get(f"{path}?from=end").json
    positions = ",".join(f"{p}:{o}" for p, o in first["next_offsets"].items())
    assert http.get(f"{path}?after={positions}").json["records"] == []
    produce(kafka, name, [{"value": b"after-1"}, {"value": b"after-2"}])
    tail = http.get(f"{path}?after={positions}").json
    assert [r["value"]["utf8"] for r in tail["records"]] == ["after-1", "after-2"]
    assert tail["next_offsets"] == {"0": 3}


def test_messages_page_renders_rows_with_test_ids(http: Http, browsed: str) -> None:
    page = http.get(f"/topics/{browsed}/messages?partition=1")
    assert page.status == 200
    assert page.text.count('data-testid="message-row"') == 3
    assert 'data-partition="1" data-offset="2"' in page.text
    assert 'id="produce-form"' in page.text
    assert 'id="tail-toggle"' in page.text
    assert 'data-positions="1:3"' in page.text  # the tail starts at the end


def test_produce_through_the_api_is_read_by_a_kafka_consumer(
    kafka: KafkaBroker, http: Http
) -> None:
    name = unique("produced")
    create(http, name, partitions=2)
    answer = http.post(
        f"/api/topics/{name}/messages",
        {
            "partition": 1,
            "key": "order-7",
            "value": '{"total": 12}',
            "headers": {"source": "console"},
        },
    )
    assert answer.status == 201
    assert answer.json == {"topic": name, "partition": 1, "offset": 0}
    client = consumer(kafka, unique("reader"))
    client.assign([TopicPartition(name, 1, 0)])
    [message] = consume(client, 1)
    client.close()
    assert message.key() == b"order-7"
    assert message.value() == b'{"total": 12}'
    assert message.headers() == [("source", b"console")]


def test_produce_form_shows_the_new_message(http: Http) -> None:
    name = unique("form-produced")
    create(http, name)
    answer = http.post(
        f"/topics/{name}/messages",
        form={"partition": "0", "key": "", "value": "hello from the form", "headers": ""},
    )
    page = http.follow(answer)
    assert "Produced to partition 0 at offset 0." in page.text
    assert "hello from the form" in page.text
    [record] = http.get(f"/api/topics/{name}/messages").json["records"]
    assert record["key"] is None
    assert record["value"]["utf8"] == "hello from the form"


# ---- groups -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def lagging(kafka: KafkaBroker, http: Http) -> tuple[str, str]:
    """A classic group that read and committed 4 of the 10 records of a topic, then stopped."""
    topic, group = unique("lagged"), unique("lagging")
    create(http, topic)
    produce(kafka, topic, [{"value": f"m{i}".encode()} for i in range(10)])
    client = consumer(kafka, group)
    client.subscribe([topic])
    consume(client, 4)
    client.commit(offsets=[TopicPartition(topic, 0, 4)], asynchronous=False)
    client.close()
    return topic, group


def test_lag_of_a_group_that_stopped_consuming(http: Http, lagging: tuple[str, str]) -> None:
    topic, group = lagging
    view = http.get(f"/api/groups/{group}").json
    assert view["type"] == "classic"
    assert view["state"] == "Empty"
    assert view["offsets"] == [
        {
            "topic": topic,
            "partition": 0,
            "committed_offset": 4,
            "log_end_offset": 10,
            "lag": 6,
            "metadata": "",
            "member_id": None,
        }
    ]
    assert view["lag"] == 6
    listed = {g["group_id"]: g for g in http.get("/api/groups").json["groups"]}
    assert listed[group]["lag"] == 6
    history = wait_for(lambda: http.get(f"/api/groups/{group}").json["lag_history"], "a lag sample")
    assert history[-1]["lag"] == 6
    page = http.get(f"/groups/{group}")
    assert re.search(r'data-testid="lag-value" class=lag>6<', page.text)


def test_reset_offsets_refused_while_the_group_has_members_then_applied(
    kafka: KafkaBroker, http: Http
) -> None:
    topic, group = unique("reset"), unique("resetting")
    create(http, topic)
    produce(kafka, topic, [{"value": f"m{i}".encode()} for i in range(10)])
    client = consumer(kafka, group)
    client.subscribe([topic])
    consume(client, 10)
    client.commit(asynchronous=False)
    state = wait_for(
        lambda: http.get(f"/api/groups/{group}").json["state"] == "Stable", "a stable group"
    )
    assert state
    refused = http.post(f"/api/groups/{group}/reset", {"target": "earliest"})
    assert refused.status == 409
    assert refused.error == (
        f"NON_EMPTY_GROUP: Assignments can only be reset if the group '{group}' is inactive, "
        "but the current state is Stable."
    )
    page = http.post(f"/groups/{group}/reset", form={"target": "earliest", "value": ""})
    assert page.status == 409
    assert "current state is Stable" in page.text
    assert http.call("DELETE", f"/api/groups/{group}").status == 409
    client.close()
    wait_for(lambda: http.get(f"/api/groups/{group}").json["state"] == "Empty", "an empty group")
    assert http.post(f"/api/groups/{group}/reset", {"target": "offset", "value": 7}).json == {
        "offsets": {f"{topic}-0": 7}
    }
    assert http.post(f"/api/groups/{group}/reset", {"target": "latest"}).json == {
        "offsets": {f"{topic}-0": 10}
    }
    reset = http.follow(http.post(f"/groups/{group}/reset", form={"target": "earliest"}))
    assert f"Offsets reset ({topic}-0: 0)." in reset.text
    assert http.get(f"/api/groups/{group}").json["lag"] == 10
    again = consumer(kafka, group)
    again.subscribe([topic])
    assert [m.value() for m in consume(again, 10)] == [f"m{i}".encode() for i in range(10)]
    again.close()


def test_reset_to_a_timestamp_and_delete_the_group(kafka: KafkaBroker, http: Http) -> None:
    topic, group = unique("timed"), unique("timed-group")
    create(http, topic, **{"retention.ms": "-1"})
    produce(kafka, topic, [{"value": b"x", "timestamp": 1000 * (i + 1)} for i in range(5)])
    reset = http.post(f"/api/groups/{group}/reset", {"target": "earliest", "topic": topic})
    assert reset.status == 404  # no such group yet: it must exist to be reset
    client = consumer(kafka, group)
    client.subscribe([topic])
    consume(client, 5)
    client.commit(asynchronous=False)
    client.close()
    answer = http.post(
        f"/api/groups/{group}/reset", {"target": "timestamp", "value": "3000", "topic": topic}
    )
    assert answer.json == {"offsets": {f"{topic}-0": 2}}
    deleted = http.follow(http.post(f"/groups/{group}/delete", form={}))
    assert f"Group {group} deleted." in deleted.text
    assert http.get(f"/api/groups/{group}").status == 404


def test_consumer_protocol_group_members_and_assignment(kafka: KafkaBroker, http: Http) -> None:
    topic, group = unique("kip848"), unique("modern")
    create(http, topic, partitions=2)
    produce(kafka, topic, [{"value": b"a", "partition": 0}, {"value": b"b", "partition": 1}])
    client = Consumer(
        {
            "bootstrap.servers": kafka.bootstrap_servers,
            "group.id": group,
            "group.protocol": "consumer",
            "auto.offset.reset": "earliest",
        }
    )
    client.subscribe([topic])
    try:
        consume(client, 2)
        view = wait_for(
            lambda: (
                (v := http.get(f"/api/groups/{group}").json)["members"]
                and v["members"][0]["assignment"]
                and v
            ),
            "an assigned member",
        )
        assert view["type"] == "consumer"
        assert view["state"] == "Stable"
        assert view["members"][0]["assignment"] == {topic: [0, 1]}
        client.commit(asynchronous=False)
    finally:
        client.close()
    wait_for(lambda: http.get(f"/api/groups/{group}").json["state"] == "Empty", "an empty group")
    reset = http.post(f"/api/groups/{group}/reset", {"target": "earliest"})
    assert reset.json == {"offsets": {f"{topic}-0": 0, f"{topic}-1": 0}}
    assert http.get(f"/api/groups/{group}").json["lag"] == 2


# ---- transactions -----------------------------------------------------------------------------


def test_open_transaction_and_last_stable_offset(kafka: KafkaBroker, http: Http) -> None:
    topic, txn_id = unique("txn"), unique("txn-id")
    create(http, topic)
    producer = Producer({"bootstrap.servers": kafka.bootstrap_servers, "transactional.id": txn_id})
    producer.init_transactions(WAIT_S)
    producer.begin_transaction()
    producer.produce(topic, b"uncommitted")
    assert producer.flush(WAIT_S) == 0
    view = http.get("/api/transactions").json
    [open_txn] = [t for t in view["transactions"] if t["transactional_id"] == txn_id]
    assert open_txn["state"] == "Ongoing"
    assert open_txn["partitions"] == [f"{topic}-0"]
    [partition] = [p for p in view["partitions"] if p["topic"] == topic]
    assert partition["high_watermark"] == 1
    assert partition["last_stable_offset"] == 0
    assert partition["producers"][0]["producer_id"] == open_txn["producer_id"]
    assert partition["producers"][0]["current_txn_start_offset"] == 0
    page = http.get("/transactions")
    assert f'data-transactional-id="{txn_id}"' in page.text
    producer.commit_transaction(WAIT_S)

    def committed() -> Any:
        view = http.get("/api/transactions").json
        if txn_id in [t["transactional_id"] for t in view["transactions"]]:
            return None
        return next(p for p in view["partitions"] if p["topic"] == topic)

    partition = wait_for(committed, "the transaction's end")
    assert partition["last_stable_offset"] == partition["high_watermark"] == 2


def test_throughput_is_sampled_every_second(kafka: KafkaBroker, http: Http) -> None:
    name = unique("rate")
    create(http, name)

    def produced() -> bool:
        produce(kafka, name, [{"value": b"x" * 100} for _ in range(20)])
        points = http.get("/api/throughput").json["throughput"]
        return any(p["produce_records_per_s"] > 0 and p["produce_bytes_per_s"] > 0 for p in points)

    assert wait_for(produced, "a produce rate")
    rates = {t["name"]: t["messages_per_s"] for t in http.get("/api/topics").json["topics"]}
    assert name in rates


# ---- bad input --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def compacted(http: Http) -> str:
    name = unique("compacted")
    create(http, name, **{"cleanup.policy": "compact", "max.message.bytes": "2000"})
    return name


BAD_API_CALLS: list[tuple[str, str, Any, int, str]] = [
    ("POST", "/api/topics", {"name": "bad name!"}, 400, "INVALID_TOPIC_EXCEPTION"),
    ("POST", "/api/topics", {"name": ""}, 400, "INVALID_TOPIC_EXCEPTION"),
    ("POST", "/api/topics", {"name": "x", "partitions": 0}, 400, "INVALID_PARTITIONS"),
    ("POST", "/api/topics", {"name": "x", "partitions": "many"}, 400, "partitions must be"),
    ("POST", "/api/topics", {"name": "x", "partitions": True}, 400, "partitions must be"),
    (
        "POST",
        "/api/topics",
        {"name": "x", "replication_factor": 3},
        400,
        "INVALID_REPLICATION_FACTOR",
    ),
    (
        "POST",
        "/api/topics",
        {"name": "x", "replication_factor": 0},
        400,
        "INVALID_REPLICATION_FACTOR",
    ),
    (
        "POST",
        "/api/topics",
        {"name": "x", "configs": {"no.such.config": "1"}},
        400,
        "INVALID_CONFIG",
    ),
    (
        "POST",
        "/api/topics",
        {"name": "x", "configs": {"retention.ms": "soon"}},
        400,
        "INVALID_CONFIG",
    ),
    ("POST", "/api/topics", {"name": "x", "configs": ["retention.ms"]}, 400, "configs must be"),
    ("POST", "/api/topics", {"name": 7}, 400, "name must be a string"),
    ("POST", "/api/topics", ["x"], 400, "must be a JSON object"),
    ("POST", "/api/topics", {"name": "__cluster_metadata"}, 400, "INVALID_REQUEST"),
    ("POST", "/api/topics", {"name": "x", "partitions": 20_000}, 400, "POLICY_VIOLATION"),
    ("GET", "/api/topics/missing", None, 404, "UNKNOWN_TOPIC_OR_PARTITION"),
    ("DELETE", "/api/topics/missing", None, 404, "UNKNOWN_TOPIC_OR_PARTITION"),
    ("DELETE", "/api/topics/__consumer_offsets", None, 400, "INVALID_TOPIC_EXCEPTION"),
    ("POST", "/api/topics/missing/partitions", {"count": 3}, 404, "UNKNOWN_TOPIC"),
    ("POST", "/api/topics/{browsed}/partitions", {"count": 1}, 400, "INVALID_PARTITIONS"),
    ("POST", "/api/topics/{browsed}/partitions", {"count": 2}, 400, "INVALID_PARTITIONS"),
    ("POST", "/api/topics/{browsed}/partitions", {}, 400, "count is required"),
    ("POST", "/api/topics/{browsed}/partitions", {"count": 99_999}, 400, "POLICY_VIOLATION"),
    (
        "POST",
        "/api/topics/{browsed}/configs",
        {"set": {"retention.ms": "soon"}},
        400,
        "INVALID_CONFIG",
    ),
    ("POST", "/api/topics/{browsed}/configs", {}, 400, "no config to set or delete"),
    ("POST", "/api/topics/{browsed}/configs", {"set": {"a": 1}}, 400, "set must be"),
    ("POST", "/api/topics/{browsed}/configs", {"delete": "x"}, 400, "delete must be"),
    ("POST", "/api/topics/missing/configs", {"set": {"retention.ms": "1"}}, 404, "UNKNOWN_TOPIC"),
    (
        "POST",
        "/api/topics/{browsed}/delete-records",
        {"partition": 0, "offset": 99},
        400,
        "OFFSET_OUT_OF_RANGE",
    ),
    (
        "POST",
        "/api/topics/{browsed}/delete-records",
        {"partition": 0, "offset": -7},
        400,
        "OFFSET_OUT_OF_RANGE",
    ),
    (
        "POST",
        "/api/topics/{browsed}/delete-records",
        {"partition": 9, "offset": 0},
        404,
        "UNKNOWN_TOPIC_OR_PARTITION",
    ),
    (
        "POST",
        "/api/topics/{compacted}/delete-records",
        {"partition": 0, "offset": 0},
        400,
        "POLICY_VIOLATION",
    ),
    (
        "POST",
        "/api/topics/__consumer_offsets/delete-records",
        {"partition": 0},
        400,
        "INVALID_TOPIC_EXCEPTION",
    ),
    ("GET", "/api/topics/missing/messages", None, 404, "UNKNOWN_TOPIC_OR_PARTITION"),
    ("GET", "/api/topics/{browsed}/messages?partition=7", None, 404, "has no partition 7"),
    ("GET", "/api/topics/{browsed}/messages?partition=one", None, 400, "partition must be"),
    (
        "GET",
        "/api/topics/{browsed}/messages?partition=0&offset=99",
        None,
        400,
        "OFFSET_OUT_OF_RANGE",
    ),
    (
        "GET",
        "/api/topics/{browsed}/messages?partition=0&offset=-1",
        None,
        400,
        "OFFSET_OUT_OF_RANGE",
    ),
    ("GET", "/api/topics/{browsed}/messages?offset=-1", None, 400, "OFFSET_OUT_OF_RANGE"),
    ("GET", "/api/topics/{browsed}/messages?limit=0", None, 400, "limit must be"),
    ("GET", "/api/topics/{browsed}/messages?limit=501", None, 400, "limit must be"),
    ("GET", "/api/topics/{browsed}/messages?from=middle", None, 400, "from must be"),
    ("GET", "/api/topics/{browsed}/messages?from=timestamp", None, 400, "needs a timestamp"),
    (
        "GET",
        "/api/topics/{browsed}/messages?from=timestamp&timestamp=yesterday",
        None,
        400,
        "ISO 8601",
    ),
    (
        "GET",
        "/api/topics/{browsed}/messages?from=timestamp&timestamp=-5",
        None,
        400,
        "must not be negative",
    ),
    ("GET", "/api/topics/{browsed}/messages?after=0-5", None, 400, "partition:offset"),
    (
        "POST",
        "/api/topics/{browsed}/messages",
        {"value": "x", "headers": "{not json"},
        400,
        "headers are not valid JSON",
    ),
    (
        "POST",
        "/api/topics/{browsed}/messages",
        {"value": "x", "headers": "[1, 2]"},
        400,
        "headers must be a JSON object",
    ),
    (
        "POST",
        "/api/topics/{browsed}/messages",
        {"value": "x", "headers": {"h": 5}},
        400,
        "must have a string or null value",
    ),
    ("POST", "/api/topics/{browsed}/messages", {"value": 12}, 400, "value must be a string"),
    (
        "POST",
        "/api/topics/{browsed}/messages",
        {"value": "x", "partition": 5},
        404,
        "UNKNOWN_TOPIC_OR_PARTITION",
    ),
    (
        "POST",
        "/api/topics/{browsed}/messages",
        {"value": "x", "partition": -1},
        404,
        "UNKNOWN_TOPIC_OR_PARTITION",
    ),
    ("POST", "/api/topics/missing/messages", {"value": "x"}, 404, "UNKNOWN_TOPIC"),
    ("POST", "/api/topics/{compacted}/messages", {"value": "no key"}, 400, "INVALID_RECORD"),
    (
        "POST",
        "/api/topics/{compacted}/messages",
        {"key": "k", "value": "v" * 5000},
        413,
        "MESSAGE_TOO_LARGE",
    ),
    ("GET", "/api/groups/missing", None, 404, "GROUP_ID_NOT_FOUND"),
    ("DELETE", "/api/groups/missing", None, 404, "GROUP_ID_NOT_FOUND"),
    ("POST", "/api/groups/missing/reset", {"target": "earliest"}, 404, "GROUP_ID_NOT_FOUND"),
    ("POST", "/api/groups/{group}/reset", {"target": "yesterday"}, 400, "reset to one of"),
    (
        "POST",
        "/api/groups/{group}/reset",
        {"target": "offset", "value": "ten"},
        400,
        "offset must be an integer",
    ),
    (
        "POST",
        "/api/groups/{group}/reset",
        {"target": "timestamp", "value": "soon"},
        400,
        "ISO 8601",
    ),
    (
        "POST",
        "/api/groups/{group}/reset",
        {"target": "earliest", "topic": "missing"},
        404,
        "UNKNOWN_TOPIC",
    ),
    (
        "POST",
        "/api/groups/{group}/reset",
        {"target": "earliest", "topic": "{browsed}", "partition": 9},
        404,
        "UNKNOWN_TOPIC_OR_PARTITION",
    ),
    ("GET", "/api/no-such-page", None, 404, "Not Found"),
    ("PUT", "/api/topics", {}, 405, "Method Not Allowed"),
]


def named(text: str, names: dict[str, str]) -> str:
    for placeholder, name in names.items():
        text = text.replace(placeholder, name)
    return text


@pytest.mark.parametrize(("method", "path", "body", "status", "message"), BAD_API_CALLS)
def test_bad_api_input_is_a_4xx_with_a_message(
    http: Http,
    browsed: str,
    compacted: str,
    lagging: tuple[str, str],
    method: str,
    path: str,
    body: Any,
    status: int,
    message: str,
) -> None:
    names = {"{browsed}": browsed, "{compacted}": compacted, "{group}": lagging[1]}
    path = named(path, names)
    if isinstance(body, dict):
        body = {k: named(v, names) if isinstance(v, str) else v for k, v in body.items()}
    answer = http.call(method, path, body=body)
    assert answer.status == status, answer.body
    assert answer.headers["Content-Type"].startswith("application/json")
    assert message in answer.error


@pytest.mark.parametrize(
    ("raw", "content_type", "message"),
    [
        (b"{not json", "application/json", "not valid JSON"),
        (b"\xff\xfe", "application/json", "not valid JSON"),
        (b"x" * (9 << 20), "application/json", "Request Entity Too Large"),
    ],
)
def test_malformed_bodies_are_refused(
    http: Http, raw: bytes, content_type: str, message: str
) -> None:
    answer = http.call("POST", "/api/topics", raw=raw, content_type=content_type)
    assert 400 <= answer.status < 500
    assert message in answer.error


BAD_FORMS: list[tuple[str, dict[str, str], int, str]] = [
    ("/topics", {"name": "bad name!"}, 400, "INVALID_TOPIC_EXCEPTION"),
    ("/topics", {"name": "x", "configs": "retention.ms"}, 400, "key=value lines"),
    ("/topics", {"name": "x", "partitions": "two"}, 400, "partitions must be"),
    ("/topics/{browsed}/partitions", {"count": "1"}, 400, "INVALID_PARTITIONS"),
    (
        "/topics/{browsed}/configs",
        {"set": "retention.ms=soon", "delete": ""},
        400,
        "INVALID_CONFIG",
    ),
    (
        "/topics/{browsed}/delete-records",
        {"partition": "0", "offset": "99"},
        400,
        "OFFSET_OUT_OF_RANGE",
    ),
    (
        "/topics/{browsed}/messages",
        {"partition": "0", "value": "v", "headers": "{oops"},
        400,
        "headers are not valid JSON",
    ),
    (
        "/topics/{compacted}/messages",
        {"partition": "0", "key": "k", "value": "v" * 5000},
        413,
        "MESSAGE_TOO_LARGE",
    ),
    ("/topics/missing/messages", {"value": "v"}, 404, "UNKNOWN_TOPIC"),
    (
        "/groups/{group}/reset",
        {"target": "offset", "value": "ten"},
        400,
        "offset must be an integer",
    ),
    ("/groups/missing/delete", {}, 404, "GROUP_ID_NOT_FOUND"),
]


@pytest.mark.parametrize(("path", "form", "status", "message"), BAD_FORMS)
def test_bad_form_input_shows_the_message_on_the_page(
    http: Http,
    browsed: str,
    compacted: str,
    lagging: tuple[str, str],
    path: str,
    form: dict[str, str],
    status: int,
    message: str,
) -> None:
    path = path.format(browsed=browsed, compacted=compacted, group=lagging[1])
    answer = http.post(path, form=form)
    assert answer.status == status, answer.body[:300]
    assert answer.headers["Content-Type"].startswith("text/html")
    found = re.search(
        r'<div id="flash" data-testid="flash" data-kind="error"[^>]*>([^<]*)<', answer.text
    )
    assert found, answer.text[:500]
    assert message in found.group(1)


def test_a_refused_produce_form_keeps_what_was_typed(http: Http, browsed: str) -> None:
    answer = http.post(
        f"/topics/{browsed}/messages",
        form={"partition": "1", "key": "my-key", "value": "typed value", "headers": "{oops"},
    )
    assert answer.status == 400
    assert 'value="my-key"' in answer.text
    assert ">typed value</textarea>" in answer.text


def test_bad_browse_parameters_on_the_page_keep_the_page(http: Http, browsed: str) -> None:
    page = http.get(f"/topics/{browsed}/messages?partition=0&offset=99")
    assert page.status == 400
    assert "OFFSET_OUT_OF_RANGE" in page.text
    assert 'id="browse-form"' in page.text
    assert http.get("/topics/missing/messages").status == 404
    assert http.get("/groups/missing").status == 404


def test_writes_from_another_site_are_refused(kafka: KafkaBroker, http: Http) -> None:
    name = unique("csrf")
    create(http, name)
    for headers in ({"Origin": "http://evil.example"}, {"Sec-Fetch-Site": "cross-site"}):
        form = urlencode({}).encode()
        request = Request(
            f"{kafka.console_url}/topics/{name}/delete", data=form, method="POST", headers=headers
        )
        try:
            with build_opener(_NoRedirect).open(request, timeout=WAIT_S) as response:
                status = response.status
        except HTTPError as exc:
            status = exc.code
            assert b"cross-site request refused" in exc.read()
        assert status == 403
    assert name in kafka.topics()
    same_site = Request(
        f"{kafka.console_url}/topics/{name}/delete",
        data=b"",
        method="POST",
        headers={"Origin": kafka.console_url, "Content-Type": "application/x-www-form-urlencoded"},
    )
    try:
        build_opener(_NoRedirect).open(same_site, timeout=WAIT_S)
    except HTTPError as exc:
        assert exc.code == 303
    assert name not in kafka.topics()


SECURITY_HEADERS = ("Content-Security-Policy", "X-Frame-Options", "X-Content-Type-Options")


def test_every_answer_forbids_framing_sniffing_and_foreign_content(http: Http) -> None:
    for path in ("/", "/topics", "/api/topics", "/static/console.js", "/no/such/page"):
        answer = http.get(path)
        assert answer.headers["X-Frame-Options"] == "DENY"
        assert answer.headers["X-Content-Type-Options"] == "nosniff"
        policy = answer.headers["Content-Security-Policy"]
        assert "script-src 'self'" in policy
        assert "frame-ancestors 'none'" in policy
        assert "default-src 'none'" in policy
    redirect = http.post("/topics", form={"name": unique("headers")})
    assert redirect.status == 303
    assert all(name in redirect.headers for name in SECURITY_HEADERS)


def _with_host(kafka: KafkaBroker, host: str, path: str = "/api/overview") -> int:
    request = Request(kafka.console_url + path, headers={"Host": host})
    try:
        with build_opener(_NoRedirect).open(request, timeout=WAIT_S) as response:
            return int(response.status)
    except HTTPError as exc:
        assert all(name in exc.headers for name in SECURITY_HEADERS)
        return exc.code


def test_host_names_other_than_the_consoles_are_refused(kafka: KafkaBroker) -> None:
    port = urlsplit(kafka.console_url).port
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}", "10.1.2.3"):
        assert _with_host(kafka, host) == 200, host
    for host in (f"evil.example:{port}", "rebound.attacker.test", f"localhost.evil:{port}"):
        assert _with_host(kafka, host) == 403, host
        assert _with_host(kafka, host, "/") == 403, host


def test_allowed_host_names_are_configured() -> None:
    config = {"minibroker.console.allowed.hosts": "broker.internal, Console.Example"}
    with KafkaBroker(console=True, storage="memory", config=config) as broker:
        for host in ("broker.internal", "console.example:8080", "localhost"):
            assert _with_host(broker, host) == 200, host
        assert _with_host(broker, "other.internal") == 403


def test_api_writes_need_a_json_body(http: Http) -> None:
    name = unique("typed")
    body = json.dumps({"name": name}).encode()
    for content_type in ("text/plain", "application/x-www-form-urlencoded"):
        answer = http.call("POST", "/api/topics", raw=body, content_type=content_type)
        assert answer.status == 415
        assert "must be JSON" in answer.error
    assert http.call("POST", "/api/topics", raw=body).status == 201


def test_forms_need_a_form_body(http: Http) -> None:
    answer = http.call("POST", "/topics", body={"name": "x"})
    assert answer.status == 400
    assert "expected a form" in answer.text


def test_the_broker_still_serves_after_the_bad_input(kafka: KafkaBroker, http: Http) -> None:
    name = unique("after")
    create(http, name)
    produce(kafka, name, [{"value": b"still fine"}])
    client = consumer(kafka, unique("after"))
    client.subscribe([name])
    assert consume(client, 1)[0].value() == b"still fine"
    client.close()
    assert http.get("/").status == 200


# ---- read-only, authentication, authorization -------------------------------------------------


def test_read_only_console_refuses_every_write_and_hides_the_forms() -> None:
    with KafkaBroker(console=True, console_read_only=True, storage="memory") as broker:
        broker.create_topic("kept")
        console = Http(broker.console_url)
        for path in ("/topics", "/topics/kept", "/topics/kept/messages", "/"):
            page = console.get(path)
            assert page.status == 200
            assert 'data-testid="read-only-banner"' in page.text
            assert '<form method="post"' not in page.text
        writes = [
            ("POST", "/api/topics", {"name": "new"}),
            ("DELETE", "/api/topics/kept", None),
            ("POST", "/api/topics/kept/partitions", {"count": 2}),
            ("POST", "/api/topics/kept/configs", {"set": {"retention.ms": "1"}}),
            ("POST", "/api/topics/kept/delete-records", {"partition": 0}),
            ("POST", "/api/topics/kept/messages", {"value": "x"}),
            ("POST", "/api/groups/g/reset", {"target": "earliest"}),
            ("DELETE", "/api/groups/g", None),
        ]
        for method, path, body in writes:
            answer = console.call(method, path, body=body)
            assert answer.status == 403
            assert answer.error == "the console is read-only"
        form = console.post("/topics/kept/delete", form={})
        assert form.status == 403
        assert "the console is read-only" in form.text
        assert broker.topics() == ["kept"]
        assert broker.records("kept") == []


def _sasl_config() -> dict[str, str]:
    """A SASL_PLAINTEXT listener with SCRAM (user admin) and PLAIN (user bob), no authorizer."""
    return {
        "listeners": "SASL_PLAINTEXT://127.0.0.1:0",
        "sasl.enabled.mechanisms": "SCRAM-SHA-256,PLAIN",
        "minibroker.scram.credentials": "SCRAM-SHA-256=[name=admin,password=admin-secret]",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": (
            "org.apache.kafka.common.security.plain.PlainLoginModule required "
            'user_bob="bob-secret";'
        ),
    }


def test_with_sasl_the_console_requires_the_brokers_credentials() -> None:
    with KafkaBroker(console=True, storage="memory", config=_sasl_config()) as broker:
        broker.add_user("carol", "carol-secret")
        anonymous = Http(broker.console_url).get("/api/topics")
        assert anonymous.status == 401
        assert anonymous.headers["WWW-Authenticate"].startswith('Basic realm="minibroker"')
        assert "authentication required" in anonymous.error
        page = Http(broker.console_url).get("/topics")
        assert page.status == 401
        assert "authentication required" in page.text
        for user, password in (("bob", "wrong"), ("carol", "bob-secret"), ("nobody", "x")):
            assert Http(broker.console_url, (user, password)).get("/api/topics").status == 401
        for user, password in (
            ("bob", "bob-secret"),
            ("carol", "carol-secret"),
            ("admin", "admin-secret"),
        ):
            console = Http(broker.console_url, (user, password))
            assert console.get("/api/topics").status == 200
            assert console.get("/api/topics").status == 200  # the SCRAM check cached
        malformed = Http(broker.console_url)
        for header in ("Basic !!!", "Bearer abc", "Basic " + base64.b64encode(b"nocolon").decode()):
            request = Request(broker.console_url + "/api/topics", headers={"Authorization": header})
            try:
                with build_opener().open(request, timeout=WAIT_S) as response:
                    status = response.status
            except HTTPError as exc:
                status = exc.code
            assert status == 401
        assert malformed.get("/").status == 401


def test_with_an_authorizer_only_cluster_administrators_use_the_console() -> None:
    with KafkaBroker(console=True, storage="memory", config=secured_config()) as broker:
        broker.add_user("eve", "eve-secret")
        admin = Http(broker.console_url, ("admin", "admin-secret"))
        assert admin.post("/api/topics", {"name": "made-by-admin"}).status == 201
        eve = Http(broker.console_url, ("eve", "eve-secret"))
        refused = eve.get("/api/topics")
        assert refused.status == 403
        assert refused.error == "User:eve may not use the console (needs ALTER on the cluster)"
        broker.add_acl("User:eve", "ALTER", cluster=True)
        assert eve.get("/api/topics").status == 200


# ---- the testing API ---------------------------------------------------------------------------


async def test_async_broker_serves_the_console_on_its_loop_and_stops_it() -> None:
    from minibroker.testing.cluster import AsyncKafkaBroker

    broker = AsyncKafkaBroker(console=True, storage="memory")
    async with broker:
        broker.create_topic("async-topic")
        url = broker.console_url
        assert url.startswith("http://127.0.0.1:")
        await broker.restart()
        assert broker.console_url == url  # the same port after a restart
    with pytest.raises(RuntimeError, match="console=True"):
        _ = broker.console_url


def test_console_url_needs_console_true() -> None:
    with KafkaBroker(storage="memory") as broker, pytest.raises(RuntimeError, match="console"):
        _ = broker.console_url


@pytest.mark.minibroker(console=True, storage="memory")
def test_the_kafka_broker_fixture_takes_the_console_option(kafka_broker: KafkaBroker) -> None:
    kafka_broker.create_topic("from-fixture")
    topics = Http(kafka_broker.console_url).get("/api/topics").json["topics"]
    assert [topic["name"] for topic in topics] == ["from-fixture"]


# ---- share groups -------------------------------------------------------------------------------


def _share_from_earliest(kafka: KafkaBroker, group: str) -> None:
    with WireClient(kafka.bootstrap_servers) as wire:
        answer = wire.call(
            ApiKey.IncrementalAlterConfigs,
            1,
            resources=[
                {
                    "resource_type": 32,  # GROUP
                    "resource_name": group,
                    "configs": [
                        {
                            "name": "share.auto.offset.reset",
                            "config_operation": 0,
                            "value": "earliest",
                        }
                    ],
                }
            ],
            validate_only=False,
        )
    assert answer.responses[0].error_code == ErrorCode.NO_ERROR


def _share_consume(kafka: KafkaBroker, topic: str, group: str, count: int) -> ShareConsumer:
    client = ShareConsumer({"bootstrap.servers": kafka.bootstrap_servers, "group.id": group})
    client.subscribe([topic])
    received = 0
    deadline = time.monotonic() + WAIT_S
    while received < count and time.monotonic() < deadline:
        received += sum(1 for message in client.poll(0.5) if message.error() is None)
    assert received == count
    client.poll(0.1)  # implicit acknowledgement: the previous poll's records are accepted
    return client


def test_share_group_lag_and_reset(kafka: KafkaBroker, http: Http) -> None:
    topic, group = unique("queue"), unique("workers")
    create(http, topic)
    _share_from_earliest(kafka, group)
    produce(kafka, topic, [{"value": f"job-{i}".encode()} for i in range(6)])
    client = _share_consume(kafka, topic, group, 6)
    view = wait_for(
        lambda: (
            (v := http.get(f"/api/groups/{group}").json)["offsets"]
            and v["offsets"][0]["lag"] == 0
            and v
        ),
        "the share partition acknowledged",
    )
    assert view["type"] == "share"
    assert view["state"] == "Stable"
    assert len(view["members"]) == 1
    assert view["members"][0]["assignment"] == {topic: [0]}
    refused = http.post(f"/api/groups/{group}/reset", {"target": "earliest"})
    assert refused.status == 409
    assert "current state is Stable" in refused.error
    client.close()
    wait_for(lambda: http.get(f"/api/groups/{group}").json["state"] == "Empty", "an empty group")
    reset = http.post(f"/api/groups/{group}/reset", {"target": "offset", "value": 2})
    assert reset.json == {"offsets": {f"{topic}-0": 2}}
    after = http.get(f"/api/groups/{group}").json
    assert after["offsets"][0]["committed_offset"] == 2
    assert after["lag"] == 4
    again = _share_consume(kafka, topic, group, 4)
    again.close()
    assert http.call("DELETE", f"/api/groups/{group}").json == {"deleted": group}
