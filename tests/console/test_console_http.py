"""The console's answers that need no cluster, through starlette's TestClient: unknown pages,
bad query and form values, read-only mode, a console without ZooKeeper, and brokers that do not
answer -- each an error page with the right status and a message, never a traceback. (The pages
of a live cluster are tested in tests/cluster/test_cluster_console.py, in a real browser.)"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

import zkafka
from zkafka.console.app import build_app
from zkafka.console.record_data import show
from zkafka.console.settings import ConsoleSettings
from zkafka.local.zookeeper import free_port


def _client(**settings: object) -> Iterator[TestClient]:
    # nothing listens on this port: any page that asks the brokers gets "connection refused"
    config = ConsoleSettings(f"127.0.0.1:{free_port()}", request_timeout_ms=1000, **settings)  # type: ignore[arg-type]
    with TestClient(build_app(config), raise_server_exceptions=False) as client:
        yield client


@pytest.fixture
def client() -> Iterator[TestClient]:
    yield from _client()


@pytest.fixture
def read_only() -> Iterator[TestClient]:
    yield from _client(read_only=True)


def _error(response: object, status: int, text: str) -> None:
    assert response.status_code == status, response.text  # type: ignore[attr-defined]
    body = response.text  # type: ignore[attr-defined]
    assert 'id="error-message"' in body and text in body, body
    assert "Traceback" not in body


@pytest.mark.parametrize(
    ("path", "status", "text"),
    [
        ("/no/such/page", 404, "no such page: /no/such/page"),
        ("/topics/t/records?offset=abc", 400, "offset must be a whole number"),
        ("/topics/t/records?partition=-1", 400, "partition must be between 0"),
        ("/topics/t/records?limit=0", 400, "limit must be between 1 and 100"),
        (
            "/topics/t/records?format=%3Cb%3E",
            400,
            "format must be one of text, json, hex, got &#39;&lt;b&gt;&#39;",
        ),
        ("/zookeeper?path=/brokers", 404, "started without --zookeeper"),
        ("/groups/", 404, "no group named"),
    ],
)
def test_bad_requests(client: TestClient, path: str, status: int, text: str) -> None:
    _error(client.get(path), status, text)


def test_brokers_that_do_not_answer_are_a_503(client: TestClient) -> None:
    _error(client.get("/topics"), 503, "the cluster did not answer")


def test_forms_are_checked_before_anything_is_sent(client: TestClient) -> None:
    _error(
        client.post("/topics/new", content=b"name=x", headers={"content-type": "text/plain"}),
        415,
        "expected a form",
    )
    _error(
        client.post("/topics/new", data={"name": "t", "partitions": "0"}), 400, "partitions must be &gt;= 1"
    )
    _error(client.post("/topics/new", data={"name": "", "partitions": "1"}), 400, "non-empty")
    _error(
        client.post(
            "/topics/new", content=b"x" * 20000, headers={"content-type": "application/x-www-form-urlencoded"}
        ),
        413,
        "at most",
    )
    confirm = client.post(
        "/topics/new", data={"name": "<i>t</i>", "partitions": "3", "replication_factor": "1"}
    )
    assert (
        confirm.status_code == 200
        and "&lt;i&gt;t&lt;/i&gt;" in confirm.text
        and "<i>t</i>" not in confirm.text
    )


def test_forms_from_other_sites_are_refused(client: TestClient) -> None:
    _error(
        client.post(
            "/topics/new", data={"name": "t", "confirm": "yes"}, headers={"origin": "http://evil.example"}
        ),
        403,
        "may not act",
    )
    same = client.post("/topics/new", data={"name": "t"}, headers={"origin": "http://testserver"})
    assert same.status_code == 200 and 'id="confirm"' in same.text


def test_reset_values_are_checked_first(client: TestClient) -> None:
    _error(
        client.post("/groups/g/reset", data={"topic": "t", "to": "sideways"}), 400, "reset to must be one of"
    )
    _error(
        client.post("/groups/g/reset", data={"topic": "t", "to": "offset", "value": "x"}), 400, "whole number"
    )
    _error(
        client.get("/groups/g/reset"), 503, "the cluster did not answer"
    )  # GET is the group page of "g/reset"


def test_read_only_refuses_actions(read_only: TestClient) -> None:
    _error(
        read_only.post("/groups/g/reset", data={"topic": "t", "to": "latest", "confirm": "yes"}),
        403,
        "read-only",
    )
    _error(read_only.get("/topics/new"), 403, "read-only")
    _error(read_only.post("/topics/new", data={"name": "t", "confirm": "yes"}), 403, "read-only")


def test_stylesheet_is_served_by_the_console(client: TestClient) -> None:
    r = client.get("/static/console.css")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/css")


def test_record_formats() -> None:
    assert show(None, "text") == "(null)"
    assert show(b"<script>", "text") == "<script>"  # escaping is the template's job
    assert show(b'{"a":[1]}', "json") == '{\n  "a": [\n    1\n  ]\n}'
    assert show(b"nope", "json") == "(not JSON) nope"
    assert show(b"\xff\x00", "text") == "(not UTF-8) ff 00"
    assert show(b"ab", "hex") == "61 62"
    assert show(b"x" * 5000, "text").endswith("… (5000 bytes)")


def test_zkafka_ui_without_a_cluster_says_what_to_pass(tmp_path: Path) -> None:
    # run from an empty directory (no local cluster), with this very source tree
    env = {**os.environ, "PYTHONPATH": str(Path(zkafka.__file__).parents[1])}

    def ui(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "zkafka.cli.main", "ui", *args],
            capture_output=True, text=True, timeout=60, check=False, cwd=tmp_path, env=env,
        )  # fmt: skip

    done = ui("--cluster-dir", str(tmp_path / "none"))
    assert done.returncode == 1 and "no --bootstrap-server given" in done.stderr, done.stderr
    done = ui("--bootstrap-server", "127.0.0.1:1", "--port", "70000")
    assert done.returncode == 1 and "--port must be 0..65535" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    done = ui("--bootstrap-server", "127.0.0.1:1", "--login")
    assert (
        done.returncode == 1 and "--login needs --command-config with security.protocol SASL" in done.stderr
    )
    plain = tmp_path / "plain.properties"
    plain.write_text("security.protocol=PLAINTEXT\n")
    done = ui("--bootstrap-server", "127.0.0.1:1", "--login", "--command-config", str(plain))
    assert done.returncode == 1 and "--login needs" in done.stderr, done.stderr
    done = ui("--bootstrap-server", "127.0.0.1:1", "--ssl-keyfile", str(plain))
    assert done.returncode == 1 and "--ssl-keyfile goes with --ssl-certfile" in done.stderr, done.stderr
    done = ui("--bootstrap-server", "127.0.0.1:1", "--ssl-certfile", str(tmp_path / "none.pem"))
    assert done.returncode == 1 and "no such certificate or key file" in done.stderr, done.stderr


def test_zkafka_ui_serves_https_with_a_certificate(tmp_path: Path) -> None:
    """`--ssl-certfile`/`--ssl-keyfile`: the console over HTTPS (what a `--login` console taking
    passwords should be off loopback), its certificate checked against the test's own CA."""
    import ssl

    import httpx
    import trustme

    from zkafka.testing.polling import wait_for

    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1")
    chain, key, ca_pem = tmp_path / "ui.crt", tmp_path / "ui.key", tmp_path / "ca.pem"
    cert.cert_chain_pems[0].write_to_path(str(chain))
    cert.private_key_pem.write_to_path(str(key))
    ca.cert_pem.write_to_path(str(ca_pem))
    trusted = ssl.create_default_context(cafile=str(ca_pem))
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(Path(zkafka.__file__).parents[1])}
    proc = subprocess.Popen(
        [sys.executable, "-m", "zkafka.cli.main", "ui", "--bootstrap-server", "127.0.0.1:1",
         "--port", str(port), "--ssl-certfile", str(chain), "--ssl-keyfile", str(key)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=tmp_path, env=env,
    )  # fmt: skip
    try:

        def answers() -> bool:
            try:
                r = httpx.get(f"https://127.0.0.1:{port}/static/console.css", verify=trusted, timeout=2)
            except httpx.HTTPError:
                assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
                return False
            return r.status_code == 200

        wait_for(answers, 30, "the console over HTTPS")
    finally:
        proc.terminate()
        proc.wait(10)
    assert proc.stderr is not None and f"https://127.0.0.1:{port}/" in proc.stderr.read()
