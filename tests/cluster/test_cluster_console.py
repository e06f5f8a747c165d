"""The web console (`zkafka ui`) as an operator uses it: a real `zkafka ui` process in front of a
real 3-broker cluster, looked at in a real headless Chromium (Debian's `chromium` driven through
`chromedriver` by selenium) and with plain HTTP for the error cases. Pages show the true topics,
records (a `<script>` value as text), groups and lag; a SIGKILLed broker shows as dead and its
partitions as under-replicated within 10 s; bad URLs and form values answer an error page with the
right status, never a traceback. Screenshots go to the test's tmp dir (nothing asserts on pixels)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest
from cluster_helpers import Cluster, create_topic, running, topic_name, wait_for, zkafka_cli
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By

from zkafka.local.zookeeper import ZooKeeperServer, free_port

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
T = TypeVar("T")
SCRIPT_VALUE = "<script>window.__injected = 1</script>"

pytestmark = pytest.mark.skipif(
    not (CHROMIUM.exists() and CHROMEDRIVER.exists()),
    reason="Debian's chromium and chromium-driver are not installed (make setup installs them)",
)


@pytest.fixture(scope="module")
def cluster(zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with running(zookeeper_server, tmp_path_factory.mktemp("console"), brokers=3) as c:
        yield c


@pytest.fixture(scope="module")
def data(cluster: Cluster) -> dict[str, str]:
    """A replicated topic with records (one holding a script), a single-replica topic on broker 3,
    a topic wanting all 3 replicas in sync (min.insync.replicas=3),
    a broker group that committed offset 2 of partition 0's 5 records, and a ZooKeeper consumer
    group that committed offset 1 of it."""
    from confluent_kafka import Consumer, Producer, TopicPartition

    topic, single, group = topic_name("shown"), topic_name("single"), topic_name("group")
    create_topic(cluster, topic, {0: [1, 2, 3], 1: [2, 3, 1]})
    create_topic(cluster, single, {0: [3]})
    strict = topic_name("strict")
    create_topic(cluster, strict, {0: [1, 2, 3]}, config={"min.insync.replicas": "3"})
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
    for i, value in enumerate([SCRIPT_VALUE, '{"n": 1}', "plain", "four", "five"]):
        producer.produce(topic, value=value.encode(), key=f"k{i}".encode(), partition=0)
    producer.flush(30)
    consumer = Consumer(
        {"bootstrap.servers": cluster.bootstrap, "group.id": group, "enable.auto.commit": False}
    )
    consumer.commit(offsets=[TopicPartition(topic, 0, 2)], asynchronous=False)
    consumer.close()
    zk_group = topic_name("zkgroup")
    asyncio.run(_zookeeper_consumer_commits(cluster, zk_group, topic))
    return {"topic": topic, "single": single, "strict": strict, "group": group, "zk_group": zk_group}


async def _zookeeper_consumer_commits(cluster: Cluster, group: str, topic: str) -> None:
    """The seeds' ZooKeeper consumer commits offset 1 of partition 0 to /consumers, and leaves."""
    from zkafka.client.types import TopicPartition
    from zkafka.client.zk_consumer import ZookeeperConsumer

    consumer = ZookeeperConsumer(
        group, zookeeper=cluster.local.zookeeper_connect, topics={topic: 1}, auto_commit_enable=False
    )
    await consumer.start()
    try:
        await consumer.commit({TopicPartition(topic, 0): 1})
    finally:
        await consumer.close()


@pytest.fixture(scope="module")
def console(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    port = free_port()
    log = tmp_path_factory.mktemp("console-log") / "ui.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [
                sys.executable, "-m", "zkafka.cli.main", "ui",
                "--bootstrap-server", cluster.bootstrap,
                "--zookeeper", cluster.local.zookeeper_connect,
                "--port", str(port), "--refresh", "2",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
        )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: _answers(url) or proc.poll() is not None, 30, "the console to answer")
        assert proc.poll() is None, log.read_text()
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
    assert "Traceback" not in log.read_text(), log.read_text()


def _answers(url: str) -> bool:
    try:
        return httpx.get(url + "/static/console.css", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1400,1000",
    ):
        options.add_argument(arg)
    driver = webdriver.Chrome(options=options, service=Service(str(CHROMEDRIVER)))
    driver.set_page_load_timeout(60)
    # A click that submits a form returns before the next page has loaded: finding an element waits
    # for it (up to 15 s) instead of failing on the page being left (seen under a busy suite).
    driver.implicitly_wait(15)
    try:
        yield driver
    finally:
        driver.quit()


def _fresh(find: Callable[[], T]) -> T:
    """`find()` again when the page's own refresh replaced the element between finding and using it."""
    for _ in range(10):
        try:
            return find()
        except StaleElementReferenceException:
            continue
    raise AssertionError("the element kept being replaced")


def _text(driver: object, css: str) -> str:
    return _fresh(lambda: driver.find_element(By.CSS_SELECTOR, css).text)  # type: ignore[attr-defined,no-any-return]


def _shot(driver: object, tmp_path: Path, name: str) -> None:
    driver.save_screenshot(str(tmp_path / f"{name}.png"))  # type: ignore[attr-defined]


def test_pages_show_the_cluster(browser: object, console: str, data: dict[str, str], tmp_path: Path) -> None:

    d = browser
    topic, group = data["topic"], data["group"]
    d.get(console + "/")  # type: ignore[attr-defined]
    _shot(d, tmp_path, "overview")
    for bid in (1, 2, 3):
        assert "alive" in _text(d, f"#broker-{bid}"), _text(d, "#brokers")
    assert _text(d, "#dead-count") == "0 dead"

    d.get(console + "/topics")  # type: ignore[attr-defined]
    _shot(d, tmp_path, "topics")
    assert _text(d, f"#topic-{topic}").split()[:3] == [topic, "2", "3"]

    d.get(f"{console}/topics/{topic}")  # type: ignore[attr-defined]
    _shot(d, tmp_path, "topic")
    row = _text(d, "#partition-0").split()
    assert row[:2] == ["0", "ok"] and row[-3:-1] == ["0", "5"], row  # log start 0, log end 5
    assert "retention.ms" in _text(d, "#configs")

    d.get(f"{console}/topics/{topic}/records?partition=0&offset=0")  # type: ignore[attr-defined]
    _shot(d, tmp_path, "records")
    assert _text(d, "#record-0 .value") == SCRIPT_VALUE  # shown as text...
    assert d.execute_script("return window.__injected === undefined")  # type: ignore[attr-defined]  # ...never run
    d.get(f"{console}/topics/{topic}/records?partition=0&offset=1&format=json")  # type: ignore[attr-defined]
    assert _text(d, "#record-1 .value") == '{\n  "n": 1\n}'
    d.get(f"{console}/topics/{topic}/records?partition=0&offset=2&format=hex&limit=1")  # type: ignore[attr-defined]
    assert _text(d, "#record-2 .value") == b"plain".hex(" ")
    assert len(d.find_elements(By.CSS_SELECTOR, "#records tr")) == 2  # type: ignore[attr-defined]

    d.get(f"{console}/topics/{topic}/records?partition=0&offset=3&timestamp=0")  # type: ignore[attr-defined]
    assert _text(d, "#record-0 .value") == SCRIPT_VALUE  # the first record at or after time 0
    d.get(f"{console}/topics/{topic}/records?partition=0&timestamp=99999999999999")  # type: ignore[attr-defined]
    assert "no record at or after timestamp" in _text(d, ".note")

    d.get(console + "/groups")  # type: ignore[attr-defined]
    _shot(d, tmp_path, "groups")
    assert group in _text(d, "#groups")
    d.get(f"{console}/groups/{group}")  # type: ignore[attr-defined]
    _shot(d, tmp_path, "group")
    lag = _text(d, f"#lag-broker-{topic}-0").split()
    assert lag[1:5] == ["0", "2", "5", "3"], lag  # partition, committed, log end, lag

    d.get(console + "/groups")  # type: ignore[attr-defined]
    assert "zookeeper" in _text(d, f"#group-zookeeper-{data['zk_group']}")
    d.get(f"{console}/groups/{data['zk_group']}")  # type: ignore[attr-defined]
    _shot(d, tmp_path, "zookeeper-group")
    lag = _text(d, f"#lag-zookeeper-{topic}-0").split()
    assert lag[1:5] == ["0", "1", "5", "4"], lag

    d.get(console + "/zookeeper?path=/brokers/ids")  # type: ignore[attr-defined]
    _shot(d, tmp_path, "zookeeper")
    assert _text(d, "#znode-children").split() == ["1", "2", "3"]


def test_bad_urls_and_values_get_an_error_page(console: str, data: dict[str, str]) -> None:
    topic = data["topic"]
    cases = {
        "/no/such/page": 404,
        "/topics/no-such-topic": 404,
        "/topics/no-such-topic/records": 404,
        f"/topics/{topic}/records?offset=abc": 400,
        f"/topics/{topic}/records?partition=-1": 400,
        f"/topics/{topic}/records?partition=7": 404,
        f"/topics/{topic}/records?format=xml": 400,
        f"/topics/{topic}/records?timestamp=yesterday": 400,
        f"/topics/{topic}/records?limit=100000": 400,
        "/groups/no-such-group": 404,
        "/zookeeper?path=relative": 400,
        "/zookeeper?path=/a//b": 400,
        "/zookeeper?path=/no/such/znode": 404,
    }
    for path, status in cases.items():
        r = httpx.get(console + path, timeout=30)
        assert r.status_code == status, (path, r.status_code, r.text[-300:])
        assert 'id="error-message"' in r.text and "Traceback" not in r.text, path
    r = httpx.post(console + "/topics/new", content=b"name=x", headers={"content-type": "text/plain"})
    assert r.status_code == 415
    r = httpx.post(console + "/topics/new", data={"name": "t", "partitions": "many"})
    assert r.status_code == 400 and "partitions must be a whole number" in r.text

    def plan(partition: int, replicas: list[int]) -> str:
        return json.dumps({"partitions": [{"topic": topic, "partition": partition, "replicas": replicas}]})

    # values the brokers refuse: Kafka's error name and text on the error page
    refused = {
        ("/reassignments/start", "plan", plan(0, [1, 99])): (400, "INVALID_REPLICA_ASSIGNMENT"),
        ("/reassignments/start", "plan", plan(9, [1])): (400, f"{topic}-9, which does not exist"),
        ("/reassignments/cancel", "partitions", f"{topic}-0"): (400, "NO_REASSIGNMENT_IN_PROGRESS"),
        ("/topics/no-such-topic/partitions", "total", "3"): (404, "UNKNOWN_TOPIC_OR_PARTITION"),
        (f"/topics/{topic}/config", "name", "no.such.config"): (400, "INVALID_CONFIG"),
        ("/elections", "topic", "no-such-topic"): (404, "UNKNOWN_TOPIC_OR_PARTITION"),
    }
    for (path, field, value), (status, text) in refused.items():
        r = httpx.post(console + path, data={field: value, "value": "1", "confirm": "yes"}, timeout=30)
        assert r.status_code == status and text in r.text, (path, r.status_code, r.text[-400:])
        assert 'id="error-message"' in r.text or 'id="results"' in r.text
        assert "Traceback" not in r.text


def test_create_topic_with_confirmation(browser: object, console: str, tmp_path: Path) -> None:

    d = browser
    d.get(console + "/topics/new")  # type: ignore[attr-defined]
    d.find_element(By.ID, "name").send_keys("bad name!")  # type: ignore[attr-defined]
    d.find_element(By.ID, "submit").click()  # type: ignore[attr-defined]
    assert "bad name!" in _text(d, "#confirm-text")
    d.find_element(By.ID, "confirm").click()  # type: ignore[attr-defined]
    _shot(d, tmp_path, "create-bad-name")
    error = _text(d, "#error-message")
    assert "INVALID_TOPIC_EXCEPTION" in error and "bad name!" in error, error  # Kafka's own text

    name = topic_name("created")
    d.find_element(By.ID, "name").clear()  # type: ignore[attr-defined]
    d.find_element(By.ID, "name").send_keys(name)  # type: ignore[attr-defined]
    d.find_element(By.ID, "partitions").clear()  # type: ignore[attr-defined]
    d.find_element(By.ID, "partitions").send_keys("2")  # type: ignore[attr-defined]
    d.find_element(By.ID, "submit").click()  # type: ignore[attr-defined]
    d.find_element(By.ID, "confirm").click()  # type: ignore[attr-defined]
    wait_for(lambda: name in d.current_url, 30, "the new topic's page")  # type: ignore[attr-defined]
    assert len(d.find_elements(By.CSS_SELECTOR, "#partitions tr")) == 3  # type: ignore[attr-defined]


def test_offset_reset_in_the_browser_is_seen_by_consumer_groups(
    browser: object, console: str, cluster: Cluster, data: dict[str, str], tmp_path: Path
) -> None:
    from confluent_kafka import Consumer, TopicPartition
    from selenium.webdriver.support.ui import Select

    topic, group = data["topic"], topic_name("reset")
    consumer = Consumer(
        {"bootstrap.servers": cluster.bootstrap, "group.id": group, "enable.auto.commit": False}
    )
    consumer.commit(offsets=[TopicPartition(topic, 0, 1)], asynchronous=False)
    consumer.close()

    d = browser
    d.get(f"{console}/groups/{group}")  # type: ignore[attr-defined]
    Select(d.find_element(By.ID, "reset-to")).select_by_visible_text("shift")  # type: ignore[attr-defined]
    d.find_element(By.ID, "reset-value").send_keys("2")  # type: ignore[attr-defined]
    d.find_element(By.ID, "reset-preview").click()  # type: ignore[attr-defined]
    # partition 1 has no committed offset to shift: refused, as kafka-consumer-groups does
    assert "cannot shift the offset of" in _text(d, "#error-message")

    d.get(f"{console}/groups/{group}")  # type: ignore[attr-defined]
    Select(d.find_element(By.ID, "reset-to")).select_by_visible_text("latest")  # type: ignore[attr-defined]
    d.find_element(By.ID, "reset-preview").click()  # type: ignore[attr-defined]
    _shot(d, tmp_path, "reset-preview")
    assert _text(d, "#plan-0").split()[-2:] == ["1", "5"]  # committed now 1, new offset 5 (dry run)
    assert _text(d, "#plan-1").split()[-2:] == ["—", "0"]
    d.find_element(By.ID, "reset-confirm").click()  # type: ignore[attr-defined]
    wait_for(lambda: d.find_elements(By.ID, f"lag-broker-{topic}-0"), 30, "the group page")  # type: ignore[attr-defined]
    assert _text(d, f"#lag-broker-{topic}-0").split()[1:5] == ["0", "5", "5", "0"]

    described = zkafka_cli(
        "consumer-groups", "--bootstrap-server", cluster.bootstrap, "--describe", "--group", group
    )
    rows = [line.split() for line in described.stdout.splitlines() if line.startswith(group)]
    assert [r[1:6] for r in rows] == [[topic, "0", "5", "5", "0"], [topic, "1", "0", "0", "0"]], (
        described.stdout
    )


def test_offset_reset_is_refused_while_the_group_has_live_members(
    console: str, cluster: Cluster, data: dict[str, str]
) -> None:
    from confluent_kafka import Consumer

    group = topic_name("live")
    consumer = Consumer(
        {"bootstrap.servers": cluster.bootstrap, "group.id": group, "enable.auto.commit": False}
    )
    try:
        consumer.subscribe([data["topic"]])
        wait_for(lambda: consumer.poll(0.5) is not None or consumer.assignment(), 30, "an assignment")
        r = httpx.post(
            f"{console}/groups/{group}/reset", data={"topic": data["topic"], "to": "latest"}, timeout=30
        )
        assert r.status_code == 409 and "live member(s)" in r.text, r.text[-500:]
        page = httpx.get(f"{console}/groups/{group}", timeout=30).text
        assert "Stable" in page and "rdkafka" in page  # the member, by its client id
    finally:
        consumer.close()


def _fill(driver: object, element_id: str, text: str) -> None:

    field = driver.find_element(By.ID, element_id)  # type: ignore[attr-defined]
    field.clear()
    field.send_keys(text)


def _click(driver: object, element_id: str) -> None:

    driver.find_element(By.ID, element_id).click()  # type: ignore[attr-defined]


def _admin(cluster: Cluster) -> Any:
    from zkafka.client.sync import SyncAdminClient

    return SyncAdminClient(cluster.bootstrap)


def test_acls_quotas_and_reassignments_pages(
    browser: object, console: str, cluster: Cluster, tmp_path: Path
) -> None:
    d = browser
    with _admin(cluster) as admin:
        admin.alter_client_quotas(("console-user", None), {"producer_byte_rate": 1024.0})
    try:
        d.get(console + "/")  # type: ignore[attr-defined]
        d.find_element(By.LINK_TEXT, "ACLs").click()  # type: ignore[attr-defined]  # linked from the nav
        _shot(d, tmp_path, "acls")
        # the test cluster runs without an authorizer: the page says so, in the broker's words
        assert "No Authorizer is configured on the broker" in _text(d, "#no-authorizer")
        d.find_element(By.LINK_TEXT, "Quotas").click()  # type: ignore[attr-defined]
        _shot(d, tmp_path, "quotas")
        row = _text(d, "#quotas")
        assert "console-user" in row and "producer_byte_rate=1024" in row, row
        d.find_element(By.LINK_TEXT, "Reassignments").click()  # type: ignore[attr-defined]
        _shot(d, tmp_path, "reassignments")
        assert d.find_elements(By.ID, "reassign-form") and d.find_elements(By.ID, "elect-form")  # type: ignore[attr-defined]
    finally:
        with _admin(cluster) as admin:
            admin.alter_client_quotas(("console-user", None), {"producer_byte_rate": None})


def test_add_partitions_with_a_dry_run(
    browser: object, console: str, cluster: Cluster, tmp_path: Path
) -> None:
    d = browser
    topic = topic_name("grow")
    create_topic(cluster, topic, {0: [1, 2]})
    d.get(f"{console}/topics/{topic}")  # type: ignore[attr-defined]
    _fill(d, "partitions-total", "1")
    _click(d, "partitions-preview")
    # the controller's own refusal of the dry run, as Kafka words it
    error = _text(d, "#error-message")
    assert "INVALID_PARTITIONS" in error, error

    d.get(f"{console}/topics/{topic}")  # type: ignore[attr-defined]
    _fill(d, "partitions-total", "3")
    _click(d, "partitions-preview")
    _shot(d, tmp_path, "partitions-preview")
    assert f"Grow topic {topic} from 1 to 3 partition(s)" in _text(d, "#confirm-text")
    with _admin(cluster) as admin:  # a dry run changes nothing
        assert admin.describe_topics([topic])[topic].partition_count == 1
    _click(d, "confirm")
    wait_for(lambda: len(d.find_elements(By.CSS_SELECTOR, "#partitions tr")) == 4, 30, "3 partitions shown")  # type: ignore[attr-defined]
    assert sorted(cluster.topic(topic)["partitions"]) == ["0", "1", "2"]


def test_alter_topic_config_with_a_dry_run(
    browser: object, console: str, cluster: Cluster, tmp_path: Path
) -> None:
    d = browser
    topic = topic_name("config")
    create_topic(cluster, topic, {0: [1, 2]})
    d.get(f"{console}/topics/{topic}")  # type: ignore[attr-defined]
    _fill(d, "config-name", "retention.ms")
    _fill(d, "config-value", "soon")
    _click(d, "config-preview")
    error = _text(d, "#error-message")
    assert "INVALID_CONFIG" in error and "retention.ms" in error, error

    d.get(f"{console}/topics/{topic}")  # type: ignore[attr-defined]
    _fill(d, "config-name", "retention.ms")
    _fill(d, "config-value", "123456")
    _click(d, "config-preview")
    _shot(d, tmp_path, "config-preview")
    # name, current value, its source, the new value
    assert _text(d, "#preview-config").split() == ["retention.ms", "604800000", "DEFAULT_CONFIG", "123456"]
    _click(d, "confirm")
    wait_for(lambda: topic in d.current_url and d.find_elements(By.ID, "configs"), 30, "the topic page")  # type: ignore[attr-defined]
    assert "retention.ms 123456 DYNAMIC_TOPIC_CONFIG" in _text(d, "#configs")
    assert cluster.get_json(f"/config/topics/{topic}")["config"]["retention.ms"] == "123456"


def test_reassignment_then_preferred_leader_election(
    browser: object, console: str, cluster: Cluster, tmp_path: Path
) -> None:
    d = browser
    topic = topic_name("swap")
    create_topic(cluster, topic, {0: [1, 2]})
    plan = json.dumps({"version": 1, "partitions": [{"topic": topic, "partition": 0, "replicas": [2, 1]}]})
    d.get(f"{console}/topics/{topic}")  # type: ignore[attr-defined]
    _click(d, "topic-reassign")  # the form, filled in with the topic's assignment to edit
    filled = json.loads(d.find_element(By.ID, "plan").get_attribute("value"))  # type: ignore[attr-defined]
    assert filled["partitions"] == [
        {"topic": topic, "partition": 0, "replicas": [1, 2], "log_dirs": ["any", "any"]}
    ]
    _fill(d, "plan", plan)
    _click(d, "reassign-preview")
    _shot(d, tmp_path, "reassignment-preview")
    assert _text(d, f"#preview-{topic}-0").split() == [f"{topic}-0", "1,2", "2,1"]
    rollback = json.loads(_text(d, "#confirm-extra"))  # the current assignment, in Kafka's JSON
    assert rollback["partitions"][0]["replicas"] == [1, 2]
    _click(d, "confirm")
    wait_for(lambda: cluster.topic(topic)["partitions"]["0"] == [2, 1], 30, "the reassignment to complete")
    assert cluster.leader(topic) == 1  # the leader stays while it is among the new replicas

    d.get(f"{console}/topics/{topic}")  # type: ignore[attr-defined]
    _click(d, "topic-elect")
    _shot(d, tmp_path, "election-preview")
    assert _text(d, f"#preview-{topic}-0").split() == [f"{topic}-0", "1", "2"]  # leader now, preferred
    _click(d, "confirm")
    assert _text(d, f"#result-{topic}-0").split()[-1] == "done"
    wait_for(lambda: cluster.leader(topic) == 2, 30, "the preferred replica to lead")


def test_reassignment_in_flight_is_shown_and_cancelled(
    browser: object, console: str, cluster: Cluster, tmp_path: Path
) -> None:
    from confluent_kafka import Producer

    from zkafka.client.admin import ConfigResource

    d = browser
    topic = topic_name("slow")
    create_topic(cluster, topic, {0: [1, 2]})
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "linger.ms": 20})
    for _ in range(400):
        producer.produce(topic, value=b"x" * 1000, partition=0)
    producer.flush(30)
    # KIP-73 throttles keep the new replica catching up for minutes: the move stays in flight
    rates = {"leader.replication.throttled.rate": "1000", "follower.replication.throttled.rate": "1000"}
    replicas = {"leader.replication.throttled.replicas": "*", "follower.replication.throttled.replicas": "*"}
    with _admin(cluster) as admin:
        for bid in (1, 2, 3):
            admin.alter_configs(ConfigResource.broker(bid), rates)
        admin.alter_configs(ConfigResource.topic(topic), replicas)
    try:
        plan = json.dumps(
            {"version": 1, "partitions": [{"topic": topic, "partition": 0, "replicas": [1, 2, 3]}]}
        )
        r = httpx.post(console + "/reassignments/start", data={"plan": plan, "confirm": "yes"}, timeout=30)
        assert r.status_code == 303, r.text[-500:]

        def shown_moving() -> bool:
            d.get(console + "/reassignments")  # type: ignore[attr-defined]
            return bool(d.find_elements(By.ID, f"moving-{topic}-0"))  # type: ignore[attr-defined]

        wait_for(shown_moving, 30, "the reassignment shown in progress")
        _shot(d, tmp_path, "reassignment-in-flight")
        assert _text(d, f"#moving-{topic}-0 td:nth-child(3)") == "3"  # adding
        assert _text(d, f"#moving-{topic}-0 td:nth-child(5)") == "1, 2, 3"  # target: nothing removed
        assert "controller + zookeeper" in _text(d, f"#moving-{topic}-0")
        _fresh(lambda: d.find_element(By.CSS_SELECTOR, f"#moving-{topic}-0 .cancel-one").click())  # type: ignore[attr-defined]
        _shot(d, tmp_path, "cancel-preview")
        # replicas now, adding, removing, back to
        assert _text(d, f"#preview-{topic}-0").split() == [f"{topic}-0", "1,2,3", "3", "—", "1,2"]
        _click(d, "confirm")
        wait_for(lambda: d.find_elements(By.ID, "no-reassignments"), 30, "no reassignment left")  # type: ignore[attr-defined]
        assert cluster.topic(topic)["partitions"]["0"] == [1, 2]
        assert not cluster.topic(topic).get("adding_replicas", {}).get("0")
    finally:
        with _admin(cluster) as admin:
            for bid in (1, 2, 3):
                admin.alter_configs(ConfigResource.broker(bid), dict.fromkeys(rates))


def test_lag_chart_refreshes_in_place(
    browser: object, console: str, cluster: Cluster, tmp_path: Path
) -> None:
    from confluent_kafka import Consumer, Producer, TopicPartition

    d = browser
    topic, group = topic_name("lagging"), topic_name("charted")
    create_topic(cluster, topic, {0: [1, 2]})
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})

    def produce(n: int) -> None:
        for i in range(n):
            producer.produce(topic, value=f"r{i}".encode(), partition=0)
        producer.flush(30)

    produce(2)
    consumer = Consumer(
        {"bootstrap.servers": cluster.bootstrap, "group.id": group, "enable.auto.commit": False}
    )
    consumer.commit(offsets=[TopicPartition(topic, 0, 0)], asynchronous=False)
    consumer.close()

    d.get(f"{console}/groups/{group}")  # type: ignore[attr-defined]
    d.execute_script("window.__stayed = 1")  # type: ignore[attr-defined]  # gone if the page reloads
    _fill(d, "reset-value", "7")  # a form being filled in survives the refreshes
    assert _text(d, f"#lag-broker-{topic}-0 .lag-value") == "2"
    produce(3)
    wait_for(lambda: _text(d, f"#lag-broker-{topic}-0 .lag-value") == "5", 30, "the lag refreshed in place")
    wait_for(lambda: d.find_elements(By.CSS_SELECTOR, "#lag-chart-broker polyline"), 30, "the lag chart")  # type: ignore[attr-defined]
    _shot(d, tmp_path, "lag-chart")
    readme = os.environ.get("ZKAFKA_CONSOLE_SCREENSHOT")
    if readme:  # the README's picture (`make console-screenshot`): a few more steps of lag first
        for more in (4, 6, 2):
            produce(more)
            shown = int(_text(d, f"#lag-broker-{topic}-0 .lag-value")) + more
            wait_for(lambda n=shown: _text(d, f"#lag-broker-{topic}-0 .lag-value") == str(n), 30, "lag")  # type: ignore[misc]
            time.sleep(4)  # a flat stretch between the steps, for the picture only
        path = Path(readme)
        path.parent.mkdir(parents=True, exist_ok=True)
        d.save_screenshot(str(path))  # type: ignore[attr-defined]
    assert d.execute_script("return window.__stayed") == 1  # type: ignore[attr-defined]
    assert d.find_element(By.ID, "reset-value").get_attribute("value") == "7"  # type: ignore[attr-defined]
    assert int(d.find_element(By.TAG_NAME, "body").get_attribute("data-refreshed")) >= 1  # type: ignore[attr-defined]


def test_killed_broker_shows_dead_within_10s(
    browser: object, console: str, cluster: Cluster, data: dict[str, str], tmp_path: Path
) -> None:
    d = browser
    cluster.kill(3)
    try:
        deadline = time.monotonic() + 10  # the promise: a dead broker is seen within 10 s

        def shows_dead() -> bool:
            d.get(console + "/")  # type: ignore[attr-defined]
            return "dead" in _text(d, "#broker-3") and _text(d, "#urp-count") != "0 under-replicated"

        wait_for(
            shows_dead,
            max(deadline - time.monotonic(), 0.1),
            "broker 3 shown dead, partitions under-replicated",
        )
        _shot(d, tmp_path, "overview-broker-dead")
        d.get(f"{console}/topics/{data['topic']}")  # type: ignore[attr-defined]
        assert "under-replicated" in _text(d, "#partition-0")
        d.get(f"{console}/topics/{data['single']}")  # type: ignore[attr-defined]
        assert "offline" in _text(d, "#partition-0")
        _shot(d, tmp_path, "topic-offline")
        d.get(f"{console}/topics/{data['strict']}")  # type: ignore[attr-defined]
        assert "under-min-isr" in _text(d, "#partition-0")  # ISR 2 < min.insync.replicas 3
    finally:
        cluster.start(3)
