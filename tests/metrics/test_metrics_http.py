"""`MetricsServer` over real sockets: scrapes parse, a scrape can ask for some metrics by name,
everything else is refused without harm."""

from __future__ import annotations

import asyncio
import logging
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Callable

import pytest
from prometheus_client.parser import text_string_to_metric_families

from zkafka.config.broker import BrokerConfig
from zkafka.config.errors import ConfigError
from zkafka.metrics import Registry
from zkafka.metrics import http as metrics_http
from zkafka.metrics.address import parse_metrics_listener
from zkafka.metrics.broker import TopicMetrics
from zkafka.metrics.http import MetricsServer


async def exchange(port: int, data: bytes, *, shut: bool = False) -> bytes:
    """What the server answers to `data`; b"" when it closes without answering (or resets)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(data)
        if shut:
            writer.write_eof()
        await writer.drain()
        return await asyncio.wait_for(reader.read(), 5)
    except ConnectionResetError:
        return b""
    finally:
        writer.close()


def status(answer: bytes) -> int:
    return int(answer.split(b" ", 2)[1]) if answer else 0


async def serving(render: Callable[[frozenset[str] | None], str]) -> tuple[MetricsServer, int]:
    server = MetricsServer(render, "127.0.0.1", 0)
    return server, await server.start()


@pytest.fixture
async def registry_server() -> AsyncIterator[tuple[Registry, int]]:
    registry = Registry()
    server, port = await serving(registry.render)
    yield registry, port
    await server.stop()


def run(coro: object) -> None:
    asyncio.run(coro)  # type: ignore[arg-type]


def test_scrape_with_an_independent_client_and_parser() -> None:
    async def main() -> None:
        registry = Registry()
        TopicMetrics(registry).produced("t", 3, 300)
        server, port = await serving(registry.render)
        try:

            def get() -> tuple[str, str]:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics?x=1", timeout=5) as response:
                    return response.headers["Content-Type"], response.read().decode()

            content_type, body = await asyncio.to_thread(get)
            assert content_type.startswith("text/plain; version=0.0.4")
            values = {s.name: s.value for f in text_string_to_metric_families(body) for s in f.samples}
            assert values["kafka_server_brokertopicmetrics_bytesin_total"] == 300

            def get_other() -> int:
                try:
                    urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5)
                except urllib.error.HTTPError as e:
                    return e.code
                return 200

            assert await asyncio.to_thread(get_other) == 404
        finally:
            await server.stop()

    run(main())


def test_hostile_requests_are_answered_or_dropped_and_the_server_keeps_serving(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(metrics_http, "READ_TIMEOUT_S", 0.3)

    async def main() -> None:
        server, port = await serving(lambda _names: "")
        try:
            assert status(await exchange(port, b"POST /metrics HTTP/1.1\r\n\r\n")) == 405
            assert status(await exchange(port, b"GET /metrics\r\n\r\n")) == 400
            tls_hello = b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n"
            assert status(await exchange(port, tls_hello)) == 400
            assert status(await exchange(port, b"GET /metrics HTTP/1.1\r\nX: " + b"a" * 20000)) == 431
            assert status(await exchange(port, b"GET /metr")) == 408  # never finishes its head
            assert await exchange(port, b"GET /metr", shut=True) == b""  # went away: nothing to answer
            assert status(await exchange(port, b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")) == 200
        finally:
            await server.stop()

    run(main())


def test_connections_beyond_the_limit_are_closed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(metrics_http, "MAX_CONNECTIONS", 2)

    async def main() -> None:
        server, port = await serving(lambda _names: "")
        try:
            idle = [await asyncio.open_connection("127.0.0.1", port) for _ in range(2)]
            await asyncio.sleep(0.05)
            assert await exchange(port, b"GET /metrics HTTP/1.1\r\n\r\n") == b""
            for _, writer in idle:
                writer.close()
            await asyncio.sleep(0.05)
            assert status(await exchange(port, b"GET /metrics HTTP/1.1\r\n\r\n")) == 200
        finally:
            await server.stop()

    run(main())


def test_a_failing_render_is_a_500_not_a_crash() -> None:
    async def main() -> None:
        server, port = await serving(lambda _names: str(1 / 0))
        try:
            assert status(await exchange(port, b"GET /metrics HTTP/1.1\r\n\r\n")) == 500
        finally:
            await server.stop()

    run(main())


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("http://127.0.0.1:9404", ("127.0.0.1", 9404)),
        ("http://:0", ("", 0)),
        ("http://[::1]:9404/", ("::1", 9404)),
    ],
)
def test_listener_addresses(text: str, expected: tuple[str, int]) -> None:
    assert parse_metrics_listener(text) == expected


@pytest.mark.parametrize(
    "text", ["127.0.0.1:9404", "https://h:1", "http://h", "http://h:99999", "http://h:1/x"]
)
def test_bad_listener_addresses(text: str) -> None:
    with pytest.raises(ValueError):
        parse_metrics_listener(text)


def test_stop_ends_connections_in_progress_quietly(caplog: pytest.LogCaptureFixture) -> None:
    async def main() -> None:
        server, port = await serving(lambda _names: "")
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET /met")  # half a request: its handler is waiting
        await writer.drain()
        await asyncio.sleep(0.05)
        await asyncio.wait_for(server.stop(), 5)
        assert await asyncio.wait_for(reader.read(), 5) == b""
        writer.close()

    with caplog.at_level(logging.ERROR):
        run(main())
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


def test_the_broker_config_key() -> None:
    config = BrokerConfig.from_properties(
        {"zookeeper.connect": "zk:2181", "metrics.listener": "http://:9404"}
    )
    assert config.metrics_listener == "http://:9404"
    assert BrokerConfig.from_properties({"zookeeper.connect": "zk:2181"}).metrics_listener is None
    with pytest.raises(ConfigError, match=r"metrics\.listener"):
        BrokerConfig.from_properties({"zookeeper.connect": "zk:2181", "metrics.listener": "9404"})


def test_a_refresh_runs_before_each_scrape_and_a_failing_or_slow_one_does_not_fail_it() -> None:
    async def main() -> None:
        registry = Registry()
        counter = registry.counter("kafka_server_replicamanager_isrshrinks_total")
        behaviour = ["bump"]

        async def refresh() -> None:
            if behaviour[0] == "fail":
                raise ConnectionError("ZooKeeper away")
            if behaviour[0] == "hang":
                await asyncio.sleep(60)
            counter.inc()

        server = MetricsServer(registry.render, "127.0.0.1", 0, refresh=refresh, refresh_timeout_s=0.5)
        port = await server.start()
        try:
            request = b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"
            answer = await exchange(port, request)
            assert status(answer) == 200 and b"isrshrinks_total 1" in answer
            for what in ("fail", "hang"):
                behaviour[0] = what
                answer = await exchange(port, request)
                assert status(answer) == 200 and b"isrshrinks_total 1" in answer
        finally:
            await server.stop()

    run(main())


def test_a_scrape_can_name_the_metrics_it_wants() -> None:
    """`name[]=` as Prometheus' client libraries take it: only those metrics, and the callbacks of the
    others are not called; a refresh only for the metrics it refreshes."""

    async def main() -> None:
        registry = Registry()
        TopicMetrics(registry).produced("t", 3, 300)
        registry.counter("kafka_server_replicamanager_isrshrinks_total").inc()
        called: list[str] = []
        registry.register_group(
            ["kafka_server_replicamanager_partitioncount"],
            lambda: called.append("partitions") or {"kafka_server_replicamanager_partitioncount": [((), 7)]},
        )
        refreshes: list[int] = []

        async def refresh() -> None:
            refreshes.append(1)

        lag = "kafka_server_replicamanager_partitioncount"  # stands for a refreshed metric
        server = MetricsServer(registry.render, "127.0.0.1", 0, refresh=refresh, refreshed=frozenset([lag]))
        port = await server.start()

        async def get(query: str) -> tuple[int, dict[str, float]]:
            answer = await exchange(port, f"GET /metrics{query} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
            families = text_string_to_metric_families(answer.split(b"\r\n\r\n", 1)[1].decode())
            return status(answer), {s.name: s.value for f in families for s in f.samples}

        try:
            code, got = await get("?name[]=kafka_server_replicamanager_isrshrinks_total")
            assert (code, got) == (200, {"kafka_server_replicamanager_isrshrinks_total": 1})
            assert called == [] and refreshes == []
            # brackets percent-encoded, two names, one of them unknown
            code, got = await get(f"?name%5B%5D={lag}&name%5B%5D=no_such_metric&other=1")
            assert (code, got) == (200, {lag: 7})
            assert called == ["partitions"] and refreshes == [1]
            code, got = await get("?name[]=no_such_metric")
            assert (code, got) == (200, {})
            code, got = await get("?other=1")  # no names asked: everything
            assert code == 200 and got["kafka_server_brokertopicmetrics_bytesin_total"] == 300
            assert len(got) > 2 and refreshes == [1, 1]
            too_many = "&".join(f"name[]=m{i}" for i in range(metrics_http.MAX_NAMES + 1))
            assert status(await exchange(port, f"GET /metrics?{too_many} HTTP/1.1\r\n\r\n".encode())) == 400
            assert status(await exchange(port, b"GET /metrics?name[]=%ff%fe HTTP/1.1\r\n\r\n")) == 400
            assert status(await exchange(port, b"GET /metrics?name[]=\xff HTTP/1.1\r\n\r\n")) == 400
            code, _ = await get("?name[]=kafka_server_replicamanager_isrshrinks_total")
            assert code == 200  # still serving
        finally:
            await server.stop()

    run(main())
