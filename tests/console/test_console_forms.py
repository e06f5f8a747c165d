"""The console's form parsing, error statuses and lag history, without a cluster: each action's
values are checked (a bad one is a 400 naming the field) before anything is sent to a broker, a
--read-only console refuses every action, what a form echoes back is escaped, and the lag chart's
samples are bounded."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from starlette.testclient import TestClient

from zkafka.client.types import TopicPartition
from zkafka.console.app import build_app
from zkafka.console.errors import ConsoleError, status_and_message
from zkafka.console.lag_history import LagHistory, chart
from zkafka.console.reassign_data import parse_partitions, parse_plan
from zkafka.console.settings import ConsoleSettings
from zkafka.console.topic_actions import config_change_fields
from zkafka.local.zookeeper import free_port
from zkafka.protocol import ErrorCode, KafkaError


def _client(**settings: object) -> Iterator[TestClient]:
    # nothing listens on this port: what reaches the brokers is a 503, what does not is checked first
    config = ConsoleSettings(f"127.0.0.1:{free_port()}", request_timeout_ms=1000, **settings)  # type: ignore[arg-type]
    with TestClient(build_app(config), raise_server_exceptions=False) as client:
        yield client


@pytest.fixture(scope="module")
def client() -> Iterator[TestClient]:
    yield from _client()


@pytest.fixture(scope="module")
def read_only() -> Iterator[TestClient]:
    yield from _client(read_only=True)


def _error(response: object, status: int, text: str) -> None:
    assert response.status_code == status, response.text  # type: ignore[attr-defined]
    body = response.text  # type: ignore[attr-defined]
    assert 'id="error-message"' in body and text in body, body
    assert "Traceback" not in body


ACTIONS = [
    ("/topics/t/partitions", {"total": "3", "confirm": "yes"}),
    ("/topics/t/config", {"name": "retention.ms", "value": "1", "confirm": "yes"}),
    ("/reassignments/start", {"plan": '{"partitions":[]}', "confirm": "yes"}),
    ("/reassignments/cancel", {"partitions": "t-0", "confirm": "yes"}),
    ("/elections", {"topic": "t", "confirm": "yes"}),
]


@pytest.mark.parametrize(("path", "fields"), ACTIONS)
def test_read_only_refuses_every_action(read_only: TestClient, path: str, fields: dict[str, str]) -> None:
    _error(read_only.post(path, data=fields), 403, "read-only")


@pytest.mark.parametrize(("path", "fields"), ACTIONS)
def test_actions_refuse_forms_from_other_sites(client: TestClient, path: str, fields: dict[str, str]) -> None:
    _error(client.post(path, data=fields, headers={"origin": "http://evil.example"}), 403, "may not act")


def test_read_only_pages_show_no_action_forms(read_only: TestClient) -> None:
    # the reassignments page needs the controller; without brokers it is the 503 page, formless
    r = read_only.get("/reassignments")
    assert r.status_code == 503 and "reassign-form" not in r.text


@pytest.mark.parametrize(
    ("path", "fields", "text"),
    [
        ("/topics/t/partitions", {"total": "many"}, "total partitions must be a whole number"),
        ("/topics/t/partitions", {"total": "0"}, "total partitions must be between 1"),
        ("/topics/t/partitions", {"total": ""}, "give the topic&#39;s new partition count"),
        ("/topics/t/config", {"name": "", "value": "1"}, "config name: give the config"),
        ("/topics/t/config", {"name": "a b", "value": "1"}, "one printable word"),
        ("/topics/t/config", {"name": "x", "op": "append"}, "operation must be one of set, delete"),
        ("/reassignments/start", {"plan": "not json"}, "the reassignment plan"),
        ("/reassignments/start", {"plan": '{"version":1,"partitions":[]}'}, "cannot be empty"),
        (
            "/reassignments/start",
            {"plan": '{"partitions":[{"topic":"t","partition":0,"replicas":[1,1]}]}'},
            "duplicate entries",
        ),
        ("/reassignments/cancel", {"partitions": "nodash"}, "topic-partition"),
        ("/reassignments/cancel", {"partitions": ""}, "no partition named"),
    ],
)
def test_action_values_are_checked_before_anything_is_sent(
    client: TestClient, path: str, fields: dict[str, str], text: str
) -> None:
    _error(client.post(path, data=fields), 400, text)


def test_valid_actions_reach_for_the_brokers(client: TestClient) -> None:
    # well-formed: the console asks the (absent) brokers, and says they did not answer
    _error(client.post("/topics/t/partitions", data={"total": "3"}), 503, "the cluster did not answer")
    _error(client.post("/elections", data={"topic": ""}), 503, "the cluster did not answer")
    for page in ("/acls", "/quotas"):
        _error(client.get(page), 503, "the cluster did not answer")


def test_static_script_is_served_by_the_console(client: TestClient) -> None:
    r = client.get("/static/console.js")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/javascript")
    assert "data-live" in r.text and "http" not in r.text.replace("window.location.href", "")


def test_form_parsing() -> None:
    assert parse_partitions("a-0, b-c-12\nd-3 a-0") == [
        TopicPartition("a", 0),
        TopicPartition("b-c", 12),
        TopicPartition("d", 3),
    ]
    with pytest.raises(ConsoleError, match="topic-partition"):
        parse_partitions("t-x")
    plan = parse_plan('{"version":1,"partitions":[{"topic":"t","partition":1,"replicas":[3,1]}]}')
    assert plan == {TopicPartition("t", 1): (3, 1)}
    with pytest.raises(ConsoleError, match="log dirs"):
        parse_plan('{"partitions":[{"topic":"t","partition":1,"replicas":[3],"log_dirs":["/d"]}]}')
    change = config_change_fields("t", {"name": " retention.ms ", "op": "delete", "value": "ignored"})
    assert (change.name, change.value) == ("retention.ms", None)
    assert config_change_fields("t", {"name": "cleanup.policy", "value": "compact"}).value == "compact"


def test_kafka_errors_get_the_status_they_deserve() -> None:
    assert status_and_message(KafkaError(ErrorCode.INVALID_PARTITIONS, "no"))[0] == 400
    assert status_and_message(KafkaError(ErrorCode.INVALID_CONFIG, "bad"))[0] == 400
    assert status_and_message(KafkaError(ErrorCode.CLUSTER_AUTHORIZATION_FAILED))[0] == 403
    assert status_and_message(KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))[0] == 404
    status, message = status_and_message(KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, "dup"))
    assert status == 400 and "INVALID_REPLICA_ASSIGNMENT" in message and "dup" in message


def test_lag_history_is_bounded_and_charted() -> None:
    history = LagHistory(max_samples=3, max_groups=2)
    history.record(("broker", "g"), 0.0, 5)
    assert chart(history.samples(("broker", "g"))) is None  # one sample is no line
    history.record(("broker", "g"), 0.5, 7)  # within a second: replaces the last sample
    assert history.samples(("broker", "g")) == [(0.0, 7)]
    for t, lag in ((2.0, 10), (4.0, 0), (6.0, 4)):
        history.record(("broker", "g"), t, lag)
    assert history.samples(("broker", "g")) == [(2.0, 10), (4.0, 0), (6.0, 4)]
    drawn = chart(history.samples(("broker", "g")), width=100, height=50)
    assert drawn is not None and drawn.points == "0.0,0.0 50.0,50.0 100.0,30.0"
    assert (drawn.max_lag, drawn.last_lag, drawn.span_s) == (10, 4, 4.0)
    history.record(("zookeeper", "g"), 0.0, 1)
    history.record(("broker", "h"), 0.0, 1)  # a third group: the one looked at longest ago goes
    assert history.samples(("broker", "g")) == [] and history.samples(("zookeeper", "g")) == [(0.0, 1)]
    flat = chart([(0.0, 0), (1.0, 0)], width=10, height=10)
    assert flat is not None and flat.points == "0.0,10.0 10.0,10.0"  # no lag: the bottom line


def test_login_mode_without_brokers() -> None:
    """`--login`: pages send the browser to sign in, posts without a session are a 401, a sign-in the
    brokers cannot check is refused (401) without echoing the password, and /login elsewhere is a 404."""
    from zkafka.client.security import ClientSecurity
    from zkafka.console.routes_login import _local

    listener = ClientSecurity("SASL_PLAINTEXT", mechanism="PLAIN")
    for client in _client(security=listener, login=True):
        r = client.get("/topics?internal=1", follow_redirects=False)
        assert r.status_code == 303 and r.headers["location"].endswith("/login?next=%2Ftopics%3Finternal%3D1")
        _error(client.post("/topics/new", data={"name": "t"}), 401, "sign in first")
        login = client.get("/login")
        assert login.status_code == 200 and 'id="login-form"' in login.text
        r = client.post("/login", data={"username": "u", "password": "s3cret-value"})
        assert r.status_code == 401 and "sign-in refused" in r.text and "s3cret-value" not in r.text
        _error(client.post("/login", data={"username": "", "password": ""}), 400, "user name")
        _error(
            client.post(
                "/login", data={"username": "u", "password": "p"}, headers={"origin": "http://x.example"}
            ),
            403,
            "may not act",
        )
    for client in _client():
        _error(client.get("/login"), 404, "without --login")
    assert [
        _local(t) for t in ("/groups/g", "//evil.example/x", "https://evil.example", "/\\evil", None)
    ] == [
        "/groups/g",
        "/",
        "/",
        "/",
        "/",
    ]
