"""Java .properties reading and writing (zkafka.config.properties)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zkafka.config import ConfigError, PropertiesSyntaxError, format_properties, parse_properties
from zkafka.config.properties import load_properties

SAMPLE = r"""# A broker configuration laid out like the sample shipped with Kafka.
! Both comment markers work.

############################# Server Basics #############################
broker.id=0

############################# Socket Server Settings #############################
listeners = PLAINTEXT://:9092, \
            SSL://:9093
advertised.listeners:PLAINTEXT://broker1.example.com:9092,SSL://broker1.example.com:9093
num.network.threads 3
num.io.threads=8
socket.send.buffer.bytes=102400

############################# Log Basics #############################
log.dirs=/var/lib/kafka/data-1,\
    /var/lib/kafka/data-2
num.partitions=1
	log.retention.hours=168<3 trailing spaces>
# log.retention.bytes=1073741824
log.segment.bytes=1073741824
zookeeper.connect=zk1:2181,zk2:2181/kafka
""".replace("<3 trailing spaces>", "   ")


def test_realistic_server_properties() -> None:
    props = parse_properties(SAMPLE)
    assert props == {
        "broker.id": "0",
        "listeners": "PLAINTEXT://:9092, SSL://:9093",
        "advertised.listeners": "PLAINTEXT://broker1.example.com:9092,SSL://broker1.example.com:9093",
        "num.network.threads": "3",
        "num.io.threads": "8",
        "socket.send.buffer.bytes": "102400",
        "log.dirs": "/var/lib/kafka/data-1,/var/lib/kafka/data-2",
        "num.partitions": "1",
        "log.retention.hours": "168",
        "log.segment.bytes": "1073741824",
        "zookeeper.connect": "zk1:2181,zk2:2181/kafka",
    }
    assert next(iter(props)) == "broker.id"  # file order is kept


@pytest.mark.parametrize(
    ("line", "key", "value"),
    [
        ("a=b", "a", "b"),
        ("a:b", "a", "b"),
        ("a b", "a", "b"),
        ("a\tb", "a", "b"),
        ("  a  =  b  ", "a", "b"),
        ("a = = b", "a", "= b"),  # only the first separator is consumed
        ("a=b:c=d", "a", "b:c=d"),
        ("a :b", "a", "b"),
        ("a", "a", ""),
        ("a=", "a", ""),
        (r"a\=b=c", "a=b", "c"),
        (r"a\:b:c", "a:b", "c"),
        (r"a\ b c", "a b", "c"),
        (r"a=x\ty", "a", "x\ty"),
        (r"a=x\ny", "a", "x\ny"),
        (r"a=x\\y", "a", "x\\y"),
        (r"a=\u00e9t\u00E9", "a", "été"),
        (r"a=\ud83d\ude00", "a", "\U0001f600"),  # a surrogate pair from Java's writer
        (r"a=\q", "a", "q"),  # unknown escapes drop the backslash
        (r"a=b\ ", "a", "b "),  # an escaped trailing space survives trimming
        (r"a=\ \ b", "a", "  b"),
        ("a=#not a comment", "a", "#not a comment"),
        ("a=caf\u00e9", "a", "café"),
    ],
)
def test_single_entries(line: str, key: str, value: str) -> None:
    assert parse_properties(line) == {key: value}


def test_comments_and_blank_lines() -> None:
    text = "# c1\n   # indented comment\n! bang\n\n   \n\t\na=1\n"
    assert parse_properties(text) == {"a": "1"}


def test_comment_backslash_does_not_continue() -> None:
    assert parse_properties("# comment \\\na=1") == {"a": "1"}


def test_continuation_keeps_hash_lines_and_drops_leading_whitespace() -> None:
    text = "a=one\\\n   #two\\\n\tthree\nb=2"
    assert parse_properties(text) == {"a": "one#twothree", "b": "2"}


def test_even_backslashes_do_not_continue() -> None:
    assert parse_properties("a=x\\\\\nb=y") == {"a": "x\\", "b": "y"}


def test_continuation_at_end_of_input() -> None:
    assert parse_properties("a=x\\") == {"a": "x"}


def test_continued_key() -> None:
    assert parse_properties("log.\\\n  dirs=/d") == {"log.dirs": "/d"}


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
def test_line_terminators(newline: str) -> None:
    assert parse_properties(newline.join(["a=1", "b=2\\", " 3", "# x", "c=4"])) == {
        "a": "1",
        "b": "23",
        "c": "4",
    }


def test_last_duplicate_wins() -> None:
    assert parse_properties("a=1\na=2\n") == {"a": "2"}


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        ("a=1\n\nb=\\u12g4\n", 3, "malformed \\uXXXX"),
        ("a=1\nb=\\u12", 2, "malformed \\uXXXX"),
        ("# x\n=value\n", 2, "missing key"),
        ("a=1\nb=x\\\n  \\u00zz", 2, "malformed"),  # reported at the entry's first line
        ("a=\\ud83d", 1, "surrogate"),
    ],
)
def test_syntax_errors_name_the_line(text: str, line: int, fragment: str) -> None:
    with pytest.raises(PropertiesSyntaxError) as info:
        parse_properties(text, source="server.properties")
    assert info.value.line == line
    assert str(info.value).startswith(f"server.properties:{line}: ")
    assert fragment in str(info.value)
    assert isinstance(info.value, ConfigError)


def test_format_output_shape() -> None:
    text = format_properties(
        {"broker.id": "1", "listeners": "PLAINTEXT://:9092", "flag": True, "key with space": " v ", "u": "é"},
        header="generated\nby a test",
    )
    assert text.splitlines() == [
        "# generated",
        "# by a test",
        "broker.id=1",
        "listeners=PLAINTEXT://:9092",
        "flag=true",
        "key\\ with\\ space=\\ v\\ ",
        "u=\\u00e9",
    ]
    assert text.isascii() and text.endswith("\n")


def test_format_rejects_empty_key() -> None:
    with pytest.raises(ConfigError):
        format_properties({"": "x"})


_texts = st.text(st.characters(blacklist_categories=("Cs",)), max_size=30)


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(_texts.filter(bool), _texts, max_size=8))
def test_format_then_parse_round_trips(props: dict[str, str]) -> None:
    assert parse_properties(format_properties(props)) == props


def test_load_properties(tmp_path: Path) -> None:
    path = tmp_path / "server.properties"
    path.write_text("a=1\nb = \\u00e9\n", encoding="utf-8")
    assert load_properties(path) == {"a": "1", "b": "é"}


def test_load_properties_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        load_properties(tmp_path / "missing.properties")
    bad = tmp_path / "bad.properties"
    bad.write_bytes(b"a=\xff\n")
    with pytest.raises(ConfigError, match="not UTF-8"):
        load_properties(bad)
    broken = tmp_path / "broken.properties"
    broken.write_text("a=1\nb=\\uXYZW\n")
    with pytest.raises(PropertiesSyntaxError, match=r"broken\.properties:2: "):
        load_properties(broken)
