"""The CLI tools' parsing and formatting, without a broker."""

from __future__ import annotations

import argparse

import pytest

from zkafka.cli.console import LineReader, RecordFormatter, consumer_start, unescape
from zkafka.cli.errors import CliError
from zkafka.cli.perf_clients import ProduceStats, Throttle, make_payload, percentile, summary_line
from zkafka.cli.topics import parse_replica_assignment
from zkafka.client.types import ConsumedRecord


def test_unescape() -> None:
    assert unescape(r"\t") == "\t" and unescape(r"a\nb") == "a\nb" and unescape("::") == "::"
    assert unescape("\\\\t") == "\\t" and unescape(r"\x") == r"\x" and unescape("end\\") == "end\\"


def test_line_reader_values_keys_headers_and_null_marker() -> None:
    assert LineReader({}).parse(b"hello\tworld") == (None, b"hello\tworld", [])
    keyed = LineReader({"parse.key": "true", "key.separator": ":"})
    assert keyed.parse(b"k1:v:1") == (b"k1", b"v:1", [])
    with pytest.raises(CliError, match="No key separator found on line number 3: 'novalue'"):
        keyed.parse(b"ok:1")
        keyed.parse(b"novalue")
    lenient = LineReader({"parse.key": "true", "ignore.error": "true"})
    assert lenient.parse(b"novalue") == (None, b"novalue", [])
    with_headers = LineReader({"parse.headers": "true", "parse.key": "true", "null.marker": "NULL"})
    assert with_headers.parse(b"h1:a,h2:NULL\tkey\tNULL") == (b"key", None, [("h1", b"a"), ("h2", None)])
    with pytest.raises(CliError, match="true or false"):
        LineReader({"parse.key": "yes"})
    with pytest.raises(CliError, match="must not be empty"):
        LineReader({"key.separator": ""})


def test_record_formatter_follows_kafkas_field_order() -> None:
    record = ConsumedRecord("t", 2, 17, 1234, 0, b"key", b"value", (("h", b"1"), ("n", None)))
    assert RecordFormatter({}).format(record) == b"value\n"
    everything = RecordFormatter(
        {
            "print.timestamp": "true",
            "print.partition": "true",
            "print.offset": "true",
            "print.headers": "true",
            "print.key": "true",
            "key.separator": " | ",
        }
    )
    assert (
        everything.format(record) == b"CreateTime:1234 | Partition:2 | Offset:17 | h:1,n:null | key | value\n"
    )
    tombstone = ConsumedRecord("t", 0, 0, 5, 1, None, None, ())
    fmt = RecordFormatter({"print.key": "true", "print.timestamp": "true", "print.headers": "true"})
    assert fmt.format(tombstone) == b"LogAppendTime:5\tNO_HEADERS\tnull\tnull\n"


def _consumer_args(**kw: object) -> argparse.Namespace:
    base = {"offset": None, "partition": None, "from_beginning": False}
    base.update(kw)
    return argparse.Namespace(**base)


def test_console_consumer_start_rules() -> None:
    assert consumer_start(_consumer_args()) == "latest"
    assert consumer_start(_consumer_args(from_beginning=True)) == "earliest"
    assert consumer_start(_consumer_args(partition=0, offset="12")) == 12
    assert consumer_start(_consumer_args(partition=0, offset="earliest")) == "earliest"
    with pytest.raises(CliError, match="partition is required"):
        consumer_start(_consumer_args(offset="3"))
    with pytest.raises(CliError, match="cannot be specified together"):
        consumer_start(_consumer_args(partition=0, offset="3", from_beginning=True))
    with pytest.raises(CliError, match="offset"):
        consumer_start(_consumer_args(partition=0, offset="-3"))


def test_replica_assignment_format() -> None:
    assert parse_replica_assignment("1:2,2:3,3:1") == {0: [1, 2], 1: [2, 3], 2: [3, 1]}
    assert parse_replica_assignment("1") == {0: [1]}
    for bad, message in (("1:a", "integers"), ("1:1", "twice"), ("1:2,3", "same number")):
        with pytest.raises(CliError, match=message):
            parse_replica_assignment(bad)


def test_perf_statistics() -> None:
    values = sorted(float(i) for i in range(1, 1001))
    assert percentile(values, 0.5) == 501 and percentile(values, 0.999) == 1000 and percentile([], 0.5) == 0
    stats = ProduceStats(record_size=100, started=0.0, window_start=0.0)
    for latency in (1.0, 2.0, 3.0, 10.0):
        stats.record(latency)
    assert stats.window_line(1.0) is None  # the window is not 5 s old yet
    line = stats.window_line(10.0)
    assert line is not None and line.startswith("4 records sent, 0.4 records/sec") and "10.0 ms max" in line
    summary = stats.summary(2.0)
    assert summary["records"] == 4 and summary["records_per_sec"] == 2.0
    assert summary["avg_latency_ms"] == 4.0 and summary["max_latency_ms"] == 10.0 and summary["p50_ms"] == 3.0
    assert summary_line(summary).startswith("4 records sent, 2.0 records/sec")
    payload = make_payload(100)
    assert len(payload) == 100 and set(payload) <= set(range(65, 91))
    assert Throttle(-1).delay(10**9) == 0.0
    assert Throttle(10).delay(100) > 9
