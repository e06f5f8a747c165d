"""Spark Connect: a Connect server started from the pyspark installation
(`sbin/start-connect-server.sh`, loopback, a free port) and a Connect client (`SparkSession.builder
.remote("sc://...")`, in a process of its own: spark_connect_driver.py) that registers the zkafka
data source over Connect and runs a batch read, a batch write and an AvailableNow streaming read
-> write against a real 3-broker cluster. The data source runs in the server's Python workers."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("grpc", reason="Spark Connect's client needs pyspark's connect extra (grpcio)")
pytest.importorskip("pandas", reason="Spark Connect's client needs pyspark's connect extra (pandas)")

from spark_connect_helpers import ConnectServer, connect_server, spark_environment
from spark_helpers import committed_batches, create_topic, driver_result, produce, read_topic, topic_name

from zkafka.local.launcher import LocalCluster

CONNECT_DRIVER = Path(__file__).with_name("spark_connect_driver.py")
RECORDS = 600
WRITES = 500


@pytest.fixture(scope="module")
def connect(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConnectServer]:
    with connect_server(tmp_path_factory.mktemp("spark-connect")) as server:
        yield server


@pytest.mark.timeout(420)
def test_connect_client_reads_and_writes_batch_and_streaming(
    connect: ConnectServer, three_brokers: LocalCluster, tmp_path: Path
) -> None:
    bootstrap = three_brokers.bootstrap_servers
    source, batch_sink, stream_sink = (
        topic_name("connect-in"),
        topic_name("connect-batch"),
        topic_name("connect-stream"),
    )
    for topic in (source, batch_sink, stream_sink):
        create_topic(bootstrap, topic, partitions=3)
    sent = produce(bootstrap, source, [(i % 3, b"k%d" % i, b"v%d" % i, None) for i in range(RECORDS)])

    args = {
        "url": connect.url,
        "bootstrap": bootstrap,
        "source": source,
        "batch_sink": batch_sink,
        "stream_sink": stream_sink,
        "write_count": str(WRITES),
        "max_offsets_per_trigger": "250",
        "checkpoint": str(tmp_path / "checkpoint"),
    }
    log = tmp_path / "driver.log"
    driver = subprocess.Popen(
        [sys.executable, str(CONNECT_DRIVER), json.dumps(args)],
        stdout=subprocess.PIPE,
        stderr=log.open("wb"),
        env=spark_environment(tmp_path),
        start_new_session=True,
    )
    try:
        result = driver_result(driver, log, timeout=360)
    except AssertionError:
        raise AssertionError(f"the Connect client failed; server log:\n{connect.log_tail()}") from None

    # batch read: every record, at the partition and offset the producer was told
    expected = sorted([m.partition, m.offset, f"k{i}", f"v{i}"] for i, m in enumerate(sent))
    assert result["read"] == expected

    # batch write: each row once
    written = read_topic(bootstrap, batch_sink, 3, WRITES)
    assert sorted(written) == sorted((str(i).encode(), b"w%d" % i) for i in range(WRITES))

    # streaming read -> write: all of the source, in micro-batches of at most 250 (the server's
    # progress history is gone once the query ended: its checkpoint counts them), each record once
    assert result["finished"], "the AvailableNow query did not finish"
    assert len(committed_batches(tmp_path / "checkpoint")) >= RECORDS // 250
    streamed = read_topic(bootstrap, stream_sink, 3, RECORDS)
    assert sorted(streamed) == sorted((b"k%d" % i, b"V%d" % i) for i in range(RECORDS))
