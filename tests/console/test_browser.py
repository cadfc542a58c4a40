"""The web console in a real browser (Debian's headless Chromium through Selenium).

Against real brokers started with the console (`KafkaBroker(console=True)`) and real clients
(confluent-kafka in this process): every page opens and its JavaScript runs; a message
produced through the form shows in the messages view and reaches a consumer; the live tail
shows what a producer sends; a lagging group's lag falls on the page, chart included, as a
real consumer catches up; an empty group's offsets are reset from its page; read-only mode
hides and refuses writes; with SASL the console asks for the broker's credentials; bad input
gets a clear message on the page (and a 4xx from the API) and the broker keeps serving.
Screenshots of every test's last page go to the artefacts directory (tests/console/browser.py).
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from base64 import b64encode
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException, WebDriverException
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support.select import Select

from minibroker.testing import KafkaBroker
from minibroker.testing.security import secured_config
from tests.console.browser import (
    basic_auth,
    element,
    javascript_errors,
    text_of,
    wait_for_exact_text,
    wait_for_text,
    wait_until,
)

pytestmark = pytest.mark.timeout(120)

CLIENT_TIMEOUT_S = 30.0
SEEDED_TOPIC = "orders"
SEEDED_GROUP = "billing"
SEEDED_RECORDS = 12
ADMIN, ADMIN_PASSWORD = "admin", "admin-secret"
SMALL_MAX_MESSAGE_BYTES = 1000
BROKER_CONFIG = {"group.initial.rebalance.delay.ms": 0}


# ---- brokers and clients ------------------------------------------------------------------


@pytest.fixture(scope="module")
def broker() -> Iterator[KafkaBroker]:
    """One broker with the console for the module; `orders` (3 partitions) holds records and
    the group `billing` has committed part of them."""
    with KafkaBroker(console=True, config=BROKER_CONFIG) as running:
        running.create_topic(SEEDED_TOPIC, 3)
        values = [f"order-{i}".encode() for i in range(SEEDED_RECORDS)]
        produce(running, SEEDED_TOPIC, values, partitions=3)
        commit(running, SEEDED_GROUP, SEEDED_TOPIC, {0: 1, 1: 0, 2: 0})
        yield running


@pytest.fixture(scope="module")
def read_only_broker() -> Iterator[KafkaBroker]:
    with KafkaBroker(console=True, console_read_only=True, config=BROKER_CONFIG) as running:
        running.create_topic(SEEDED_TOPIC, 1)
        produce(running, SEEDED_TOPIC, [b"kept"])
        commit(running, SEEDED_GROUP, SEEDED_TOPIC, {0: 0})
        yield running


@pytest.fixture(scope="module")
def sasl_broker() -> Iterator[KafkaBroker]:
    """SASL/SCRAM on the listener, ACLs on; `admin` is a super user, `alice` is not."""
    config = secured_config(ADMIN, ADMIN_PASSWORD)
    with KafkaBroker(console=True, config={**config, **BROKER_CONFIG}) as running:
        running.add_user("alice", "alice-secret")
        running.create_topic(SEEDED_TOPIC, 1)
        yield running


def client_config(broker: KafkaBroker, **extra: Any) -> dict[str, Any]:
    return {"bootstrap.servers": broker.bootstrap_servers, "log_level": 3, **extra}


def sasl_client_config(broker: KafkaBroker) -> dict[str, Any]:
    return client_config(
        broker,
        **{
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "SCRAM-SHA-256",
            "sasl.username": ADMIN,
            "sasl.password": ADMIN_PASSWORD,
        },
    )


def produce(
    broker: KafkaBroker, topic: str, values: list[bytes], partitions: int | None = None
) -> None:
    """`values` round-robin over `partitions` (or all to partition 0), acknowledged."""
    producer = Producer(client_config(broker, **{"linger.ms": 0}))
    for index, value in enumerate(values):
        partition = index % partitions if partitions else 0
        producer.produce(topic, value, key=b"key-%d" % index, partition=partition)
    assert producer.flush(CLIENT_TIMEOUT_S) == 0


def commit(broker: KafkaBroker, group: str, topic: str, offsets: dict[int, int]) -> None:
    """Commit offsets for `group` as a consumer that then leaves (the group is Empty)."""
    consumer = Consumer(client_config(broker, **{"group.id": group}))
    try:
        consumer.commit(
            offsets=[TopicPartition(topic, p, o) for p, o in offsets.items()], asynchronous=False
        )
    finally:
        consumer.close()


def committed(broker: KafkaBroker, group: str, topic: str, partition: int) -> int:
    consumer = Consumer(client_config(broker, **{"group.id": group}))
    try:
        [position] = consumer.committed([TopicPartition(topic, partition)], CLIENT_TIMEOUT_S)
        return int(position.offset)
    finally:
        consumer.close()


def consume(consumer: Consumer, count: int) -> list[bytes]:
    values: list[bytes] = []
    deadline = time.monotonic() + CLIENT_TIMEOUT_S
    while len(values) < count and time.monotonic() < deadline:
        for message in consumer.consume(count - len(values), timeout=0.5):
            assert message.error() is None, message.error()
            values.append(message.value() or b"")
    assert len(values) == count, f"consumed {len(values)} of {count}"
    return values


def read_partition(config: dict[str, Any], topic: str, partition: int) -> list[Any]:
    """Every record of one partition, through a real consumer (no group)."""
    watermarks = Consumer({**config, "group.id": "console-test-reader"})
    try:
        low, high = watermarks.get_watermark_offsets(
            TopicPartition(topic, partition), CLIENT_TIMEOUT_S
        )
        watermarks.assign([TopicPartition(topic, partition, low)])
        records: list[Any] = []
        deadline = time.monotonic() + CLIENT_TIMEOUT_S
        while len(records) < high - low and time.monotonic() < deadline:
            message = watermarks.poll(0.5)
            if message is not None:
                assert message.error() is None, message.error()
                records.append(message)
        return records
    finally:
        watermarks.close()


def assert_broker_serves(broker: KafkaBroker) -> None:
    """A real client can still produce, and the console still answers."""
    produce(broker, SEEDED_TOPIC, [b"still-serving"])
    status, overview = api(broker, "/api/overview")
    assert status == 200, overview


# ---- HTTP without the browser ------------------------------------------------------------


def api(
    broker: KafkaBroker,
    path: str,
    body: object = None,
    method: str | None = None,
    auth: tuple[str, str] | None = None,
) -> tuple[int, Any]:
    """(status, parsed JSON) of a console API call."""
    request = urllib.request.Request(broker.console_url + path, method=method)
    data = None if body is None else json.dumps(body).encode()
    if data is not None:
        request.add_header("Content-Type", "application/json")
    if auth is not None:
        token = b64encode(f"{auth[0]}:{auth[1]}".encode()).decode()
        request.add_header("Authorization", f"Basic {token}")
    try:
        with urllib.request.urlopen(request, data, timeout=CLIENT_TIMEOUT_S) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as error:
        with error:
            return error.code, {**json.loads(error.read()), "headers": dict(error.headers)}


# ---- the page -----------------------------------------------------------------------------


def open_page(driver: webdriver.Chrome, broker: KafkaBroker, path: str) -> None:
    driver.get(broker.console_url + path)
    element(driver, "body[data-page]")


def by_testid(testid: str) -> str:
    return f'[data-testid="{testid}"]'


def flash(driver: webdriver.Chrome, kind: str, text: str) -> str:
    """Wait for the flash message of `kind` (ok, error) containing `text`."""
    return wait_for_text(driver, f'#flash[data-kind="{kind}"]', text)


def fill(driver: webdriver.Chrome, testid: str, text: str) -> None:
    field = element(driver, by_testid(testid))
    field.clear()
    field.send_keys(text)


def choose(driver: webdriver.Chrome, testid: str, value: str) -> None:
    Select(element(driver, by_testid(testid))).select_by_value(value)


def submit(driver: webdriver.Chrome, form: str) -> None:
    """Click the submit button of the form `form` (its testid) and wait for the next page."""
    button = element(driver, f"{by_testid(form)} button[type=submit]")
    button.click()
    wait_until(driver, left_the_page(button), f"the page after {form}")
    element(driver, "body[data-page]")


def left_the_page(button: WebElement) -> Callable[[webdriver.Chrome], bool]:
    """Whether `button`'s page was replaced. Asked mid-navigation, chromedriver may answer
    "Node with given id does not belong to the document" rather than a stale element."""

    def replaced(_driver: webdriver.Chrome) -> bool:
        try:
            button.is_enabled()
        except StaleElementReferenceException:
            return True
        except WebDriverException as exc:
            if "does not belong to the document" in str(exc):
                return True
            raise
        return False

    return replaced


def chart_heights(driver: webdriver.Chrome) -> list[float]:
    """The lag chart's points, oldest first, as heights in the chart (larger: more lag)."""
    lines = driver.find_elements(By.CSS_SELECTOR, "#lag-chart polyline")
    if not lines:
        return []
    points = (lines[0].get_attribute("points") or "").split()
    return [-float(point.split(",")[1]) for point in points]  # SVG's y grows downwards


# ---- the pages ----------------------------------------------------------------------------

PAGES = [
    ("/", "overview", "#overview-version"),
    ("/topics", "topics", f'[data-testid="topic-row"][data-topic="{SEEDED_TOPIC}"]'),
    (f"/topics/{SEEDED_TOPIC}", "topics", '[data-testid="partition-row"][data-partition="2"]'),
    (f"/topics/{SEEDED_TOPIC}/messages?from=beginning", "topics", by_testid("message-row")),
    ("/groups", "groups", f'[data-testid="group-row"][data-group="{SEEDED_GROUP}"]'),
    (f"/groups/{SEEDED_GROUP}", "groups", '[data-testid="offset-row"][data-partition="0"]'),
    ("/transactions", "transactions", by_testid("producer-partition-row")),
]


PAGE_IDS = ["overview", "topics", "topic", "messages", "groups", "group", "transactions"]


@pytest.mark.parametrize(("path", "page", "marker"), PAGES, ids=PAGE_IDS)
def test_page_opens(
    browser: webdriver.Chrome, broker: KafkaBroker, path: str, page: str, marker: str
) -> None:
    open_page(browser, broker, path)
    assert element(browser, "body").get_attribute("data-page") == page
    assert element(browser, marker).is_displayed()
    assert javascript_errors(browser) == []


def test_overview_shows_the_broker_and_draws_sparklines(
    browser: webdriver.Chrome, broker: KafkaBroker
) -> None:
    open_page(browser, broker, "/")
    assert element(browser, "#overview-version").text.strip()
    assert int(element(browser, "#overview-topics").text) >= 1
    assert int(element(browser, "#overview-partitions").text) >= 3
    assert len(browser.find_elements(By.CSS_SELECTOR, by_testid("node-row"))) == 1
    # console.js draws each sparkline once /api/throughput has two samples.
    element(browser, "#sparkline-produce-records polyline")
    assert javascript_errors(browser) == []


def test_seeded_records_and_group_lag_are_shown(
    browser: webdriver.Chrome, broker: KafkaBroker
) -> None:
    end_offsets = broker.end_offsets(SEEDED_TOPIC)
    open_page(browser, broker, f"/topics/{SEEDED_TOPIC}/messages?from=beginning&partition=0")
    offsets = text_of(browser, by_testid("message-offset")).split()
    assert offsets == [str(i) for i in range(end_offsets[0])]
    assert "order-0" in text_of(browser, by_testid("message-value"))
    open_page(browser, broker, "/groups")
    row = f'[data-testid="group-row"][data-group="{SEEDED_GROUP}"] {by_testid("group-lag")}'
    assert element(browser, row).text == str(sum(end_offsets.values()) - 1)


# ---- writes -------------------------------------------------------------------------------


def test_a_message_produced_through_the_form_is_shown_and_consumed(
    browser: webdriver.Chrome, broker: KafkaBroker
) -> None:
    open_page(browser, broker, f"/topics/{SEEDED_TOPIC}/messages")
    choose(browser, "produce-partition", "1")
    fill(browser, "produce-key", "customer-7")
    fill(browser, "produce-value", '{"item": "lamp", "qty": 2}')
    fill(browser, "produce-headers", '{"trace-id": "abc-123"}')
    submit(browser, "produce-form")

    shown = flash(browser, "ok", "Produced to partition 1 at offset")
    offset = int(shown.rsplit(" ", 1)[-1].rstrip("."))
    row = element(
        browser, f'[data-testid="message-row"][data-partition="1"][data-offset="{offset}"]'
    )
    assert row.find_element(By.CSS_SELECTOR, by_testid("message-key")).text == "customer-7"
    assert '"item": "lamp"' in row.find_element(By.CSS_SELECTOR, by_testid("message-value")).text
    assert "abc-123" in row.find_element(By.CSS_SELECTOR, by_testid("message-headers")).text

    choose(browser, "value-format", "hex")
    hex_value = row.find_element(By.CSS_SELECTOR, by_testid("message-value-hex"))
    wait_until(browser, lambda _: hex_value.is_displayed(), "the hex rendering")
    assert hex_value.text.replace(" ", "").startswith(b'{"item"'.hex())

    records = read_partition(client_config(broker), SEEDED_TOPIC, 1)
    produced = next(r for r in records if r.offset() == offset)
    assert produced.key() == b"customer-7"
    assert json.loads(produced.value() or b"") == {"item": "lamp", "qty": 2}
    assert produced.headers() == [("trace-id", b"abc-123")]


def test_live_tail_shows_what_a_producer_sends(
    browser: webdriver.Chrome, broker: KafkaBroker
) -> None:
    open_page(browser, broker, f"/topics/{SEEDED_TOPIC}/messages?partition=2&from=end")
    element(browser, by_testid("tail-toggle")).click()
    wait_for_text(browser, by_testid("tail-status"), "tailing")
    producer = Producer(client_config(broker))
    producer.produce(SEEDED_TOPIC, b"tailed-value", key=b"tail", partition=2)
    assert producer.flush(CLIENT_TIMEOUT_S) == 0
    wait_for_text(browser, by_testid("message-value"), "tailed-value")
    element(browser, by_testid("tail-toggle")).click()
    assert javascript_errors(browser) == []


def test_lag_falls_on_the_page_as_a_real_consumer_catches_up(
    browser: webdriver.Chrome, broker: KafkaBroker
) -> None:
    topic, group, total = "lagging", "lagging-group", 300
    broker.create_topic(topic, 1)
    produce(broker, topic, [b"event-%d" % i for i in range(total)])
    commit(broker, group, topic, {0: 0})

    open_page(browser, broker, f"/groups/{group}")
    assert element(browser, "#group-lag").text == str(total)
    # The chart has a line once the console sampled the lag twice (every 3 seconds): flat.
    wait_until(browser, lambda d: len(chart_heights(d)) >= 2, "the lag chart's first line")
    assert len(set(chart_heights(browser))) == 1

    consumer = Consumer(
        client_config(
            broker,
            **{"group.id": group, "enable.auto.commit": False, "auto.offset.reset": "earliest"},
        )
    )
    try:
        consumer.subscribe([topic])
        assert consume(consumer, total // 2)[0] == b"event-0"
        consumer.commit(asynchronous=False)
        wait_for_exact_text(browser, "#group-lag", str(total // 2))
        wait_for_exact_text(browser, "#group-state", "Stable")
        assert element(browser, by_testid("lag-value")).text == str(total // 2)

        # A group with a member refuses a reset, with Kafka's reason.
        submit(browser, "reset-offsets-form")
        flash(browser, "error", "NON_EMPTY_GROUP")

        assert consume(consumer, total - total // 2)[-1] == b"event-%d" % (total - 1)
        consumer.commit(asynchronous=False)
        wait_for_exact_text(browser, "#group-lag", "0")
        wait_until(browser, chart_fell, "the lag chart to fall to its lowest point")
    finally:
        consumer.close()
    assert javascript_errors(browser) == []


def chart_fell(driver: webdriver.Chrome) -> bool:
    """The lag chart ends at its lowest point, below where it started."""
    heights = chart_heights(driver)
    return bool(heights) and heights[-1] == min(heights) < heights[0]


def test_reset_offsets_of_an_empty_group(browser: webdriver.Chrome, broker: KafkaBroker) -> None:
    topic, group = "resettable", "resettable-group"
    broker.create_topic(topic, 1)
    produce(broker, topic, [b"r-%d" % i for i in range(10)])
    commit(broker, group, topic, {0: 10})

    open_page(browser, broker, f"/groups/{group}")
    assert element(browser, "#group-state").text == "Empty"
    assert element(browser, by_testid("lag-value")).text == "0"
    choose(browser, "reset-target", "offset")
    fill(browser, "reset-value", "4")
    submit(browser, "reset-offsets-form")
    flash(browser, "ok", "Offsets reset")
    assert element(browser, by_testid("lag-value")).text == "6"
    assert committed(broker, group, topic, 0) == 4

    choose(browser, "reset-target", "earliest")
    submit(browser, "reset-offsets-form")
    flash(browser, "ok", "Offsets reset")
    assert element(browser, "#group-lag").text == "10"
    assert committed(broker, group, topic, 0) == 0


def test_an_open_transaction_and_the_lso_are_shown(
    browser: webdriver.Chrome, broker: KafkaBroker
) -> None:
    topic, transactional_id = "payments", "payments-tx"
    broker.create_topic(topic, 1)
    producer = Producer(client_config(broker, **{"transactional.id": transactional_id}))
    producer.init_transactions(CLIENT_TIMEOUT_S)
    producer.begin_transaction()
    producer.produce(topic, b"paid-1")
    producer.produce(topic, b"paid-2")
    producer.commit_transaction(CLIENT_TIMEOUT_S)  # offsets 0, 1 and the marker at 2
    producer.begin_transaction()
    producer.produce(topic, b"pending")  # offset 3, open
    assert producer.flush(CLIENT_TIMEOUT_S) == 0

    open_page(browser, broker, "/transactions")
    row = element(
        browser, f'[data-testid="transaction-row"][data-transactional-id="{transactional_id}"]'
    )
    assert f"{topic}-0" in row.text
    lso = f'[data-testid="producer-partition-row"][data-topic="{topic}"] {by_testid("lso-value")}'
    assert element(browser, lso).text == "3"

    producer.commit_transaction(CLIENT_TIMEOUT_S)
    open_page(browser, broker, "/transactions")
    assert element(browser, lso).text == "5"
    assert browser.find_elements(By.CSS_SELECTOR, by_testid("transaction-row")) == []


# ---- read-only mode and authentication ----------------------------------------------------


def test_read_only_console_hides_and_refuses_writes(
    browser: webdriver.Chrome, read_only_broker: KafkaBroker
) -> None:
    broker = read_only_broker
    for path, form in [
        ("/topics", "create-topic-form"),
        (f"/topics/{SEEDED_TOPIC}", "delete-topic-form"),
        (f"/topics/{SEEDED_TOPIC}/messages", "produce-form"),
        (f"/groups/{SEEDED_GROUP}", "reset-offsets-form"),
    ]:
        open_page(browser, broker, path)
        element(browser, by_testid("read-only-banner"))
        assert browser.find_elements(By.CSS_SELECTOR, by_testid(form)) == [], path

    status, answer = api(broker, f"/api/topics/{SEEDED_TOPIC}/messages", {"value": "x"})
    assert (status, answer["error"]) == (403, "the console is read-only")
    status, _ = api(broker, f"/api/topics/{SEEDED_TOPIC}", method="DELETE")
    assert status == 403
    status, _ = api(broker, f"/api/groups/{SEEDED_GROUP}/reset", {"target": "latest"})
    assert status == 403
    # A form posted anyway (a stale tab) gets the refusal as a page.
    browser.execute_script(
        "const f = document.createElement('form'); f.method = 'post';"
        "f.action = arguments[0]; document.body.appendChild(f); f.submit();",
        f"/topics/{SEEDED_TOPIC}/delete",
    )
    flash(browser, "error", "read-only")
    assert broker.end_offsets(SEEDED_TOPIC) == {0: 1}
    assert broker.committed_offsets(SEEDED_GROUP) == {(SEEDED_TOPIC, 0): 0}


def test_console_with_sasl_requires_the_brokers_credentials(
    browser: webdriver.Chrome, sasl_broker: KafkaBroker
) -> None:
    broker = sasl_broker
    status, answer = api(broker, "/api/overview")
    assert status == 401
    assert answer["headers"]["WWW-Authenticate"].startswith("Basic")
    assert api(broker, "/api/overview", auth=(ADMIN, "wrong"))[0] == 401
    assert api(broker, "/api/topics", {"name": "sneaky"}, auth=("nobody", "x"))[0] == 401
    assert api(broker, "/api/overview", auth=("alice", "alice-secret"))[0] == 403
    assert api(broker, "/api/overview", auth=(ADMIN, ADMIN_PASSWORD))[0] == 200

    # Without credentials Chromium gets the 401 challenge and, headless, shows nothing of it.
    browser.get(broker.console_url + "/topics")
    assert "data-page" not in browser.page_source
    assert SEEDED_TOPIC not in browser.page_source

    with basic_auth(browser, ADMIN, ADMIN_PASSWORD):
        open_page(browser, broker, f"/topics/{SEEDED_TOPIC}/messages")
        fill(browser, "produce-value", "signed-in")
        submit(browser, "produce-form")
        flash(browser, "ok", "Produced to partition 0 at offset 0")
        wait_for_text(browser, by_testid("message-value"), "signed-in")
        assert javascript_errors(browser) == []
    records = read_partition(sasl_client_config(broker), SEEDED_TOPIC, 0)
    assert [r.value() for r in records] == [b"signed-in"]
    assert "sneaky" not in broker.topics()


# ---- bad input ----------------------------------------------------------------------------


def test_unknown_topic_is_a_clear_404(browser: webdriver.Chrome, broker: KafkaBroker) -> None:
    open_page(browser, broker, "/topics/no-such-topic/messages")
    flash(browser, "error", "UNKNOWN_TOPIC_OR_PARTITION: no topic named 'no-such-topic'")
    status, answer = api(broker, "/api/topics/no-such-topic/messages", {"value": "x"})
    assert status == 404, answer
    assert "UNKNOWN_TOPIC_OR_PARTITION" in answer["error"]
    assert_broker_serves(broker)


def test_offset_out_of_range_is_a_clear_400(browser: webdriver.Chrome, broker: KafkaBroker) -> None:
    open_page(browser, broker, f"/topics/{SEEDED_TOPIC}/messages")
    choose(browser, "browse-partition", "0")
    choose(browser, "browse-from", "offset")
    fill(browser, "browse-offset", "999999")
    submit(browser, "browse-form")
    flash(browser, "error", "OFFSET_OUT_OF_RANGE: offset 999999 is outside partition orders-0")
    # The page still lists records (from the default position) under the message.
    element(browser, by_testid("message-row"))
    path = f"/api/topics/{SEEDED_TOPIC}/messages?partition=0&from=offset&offset=999999"
    status, answer = api(broker, path)
    assert status == 400 and "OFFSET_OUT_OF_RANGE" in answer["error"]
    assert_broker_serves(broker)


def test_malformed_json_headers_are_refused_and_the_form_kept(
    browser: webdriver.Chrome, broker: KafkaBroker
) -> None:
    before = broker.end_offsets(SEEDED_TOPIC)
    open_page(browser, broker, f"/topics/{SEEDED_TOPIC}/messages")
    fill(browser, "produce-value", "never-stored")
    fill(browser, "produce-headers", '{"trace-id": ')
    submit(browser, "produce-form")
    flash(browser, "error", "headers are not valid JSON")
    assert element(browser, by_testid("produce-value")).get_attribute("value") == "never-stored"
    assert element(browser, by_testid("produce-headers")).get_attribute("value") == '{"trace-id": '
    status, answer = api(
        broker, f"/api/topics/{SEEDED_TOPIC}/messages", {"value": "x", "headers": {"a": 1}}
    )
    assert status == 400 and "header 'a'" in answer["error"]
    assert broker.end_offsets(SEEDED_TOPIC) == before
    assert_broker_serves(broker)


def test_an_oversized_value_is_refused_with_kafkas_error(
    browser: webdriver.Chrome, broker: KafkaBroker
) -> None:
    topic = "small-records"
    broker.create_topic(topic, 1, {"max.message.bytes": SMALL_MAX_MESSAGE_BYTES})
    open_page(browser, broker, f"/topics/{topic}/messages")
    big = "v" * (2 * SMALL_MAX_MESSAGE_BYTES)
    # Typing 2,000 keys is slow; set the textarea's value as a paste would.
    browser.execute_script(
        "arguments[0].value = arguments[1];", element(browser, by_testid("produce-value")), big
    )
    submit(browser, "produce-form")
    flash(browser, "error", "MESSAGE_TOO_LARGE")
    element(browser, by_testid("messages-empty"))
    status, answer = api(broker, f"/api/topics/{topic}/messages", {"value": big})
    assert status == 413 and "MESSAGE_TOO_LARGE" in answer["error"]
    assert broker.end_offsets(topic) == {0: 0}

    producer = Producer(client_config(broker))
    producer.produce(topic, b"small enough")
    assert producer.flush(CLIENT_TIMEOUT_S) == 0
    assert broker.end_offsets(topic) == {0: 1}
    assert_broker_serves(broker)
