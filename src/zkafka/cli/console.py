"""`zkafka console-producer` and `zkafka console-consumer`, with the flags of Kafka's console tools.

    printf 'k1:v1\\nk2:v2\\n' | zkafka console-producer --bootstrap-server 127.0.0.1:9092 \\
        --topic t --property parse.key=true --property key.separator=:
    zkafka console-consumer --bootstrap-server 127.0.0.1:9092 --topic t --from-beginning \\
        --max-messages 2 --property print.key=true

The producer finds the brokers through --bootstrap-server or, with --zookeeper, in ZooKeeper's
`/brokers/ids` (kept current by a watch; `zookeeper.listener.name` in --producer-property picks the
listener). It sends one record per stdin line (the line without its end), flushes at EOF and exits
1 with a one-line error if any record failed. The consumer prints one record per line; without
--partition it reads every partition of the topic; with --group it is a member of that consumer
group (broker-coordinated, committing what it printed); with --zookeeper it is a member of a
ZooKeeper-consumer group (--topic, --whitelist or --blacklist). It stops after --max-messages
records, when no record arrived for --timeout-ms, or on SIGINT (Ctrl-C) or SIGTERM alike, closing
its consumer (a group member commits and leaves), and reports "Processed a total of N messages" on
stderr, as Kafka's tool does.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import random
import re
import signal
import sys
import threading
import time
from collections.abc import Callable, Coroutine
from typing import IO, Any

from zkafka.cli.errors import CliError
from zkafka.cli.target import add_target_args, split_security
from zkafka.cli.topics import client_errors
from zkafka.client.config import consumer_kwargs, parse_key_values, producer_kwargs
from zkafka.client.consumer import Consumer
from zkafka.client.errors import ClientError
from zkafka.client.group_consumer import GroupConsumer
from zkafka.client.producer import Producer
from zkafka.client.security import ClientSecurity
from zkafka.client.types import ConsumedRecord, RecordMetadata, TopicPartition
from zkafka.client.zk_consumer import ZookeeperConsumer
from zkafka.config.properties import load_properties

log = logging.getLogger(__name__)

_CHUNK = 1 << 16


def unescape(text: str) -> str:
    """Property values as Kafka's console tools take them: \\t, \\n, \\r and \\\\ are escapes."""
    out, i = [], 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            out.append({"t": "\t", "n": "\n", "r": "\r", "\\": "\\"}.get(nxt, "\\" + nxt))
            i += 2
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def _properties(items: list[str] | None, config_file: str | None, what: str) -> dict[str, str]:
    props: dict[str, str] = {}
    if config_file:
        try:
            props.update(load_properties(config_file))
        except (OSError, ValueError) as e:
            raise CliError(f"cannot read {config_file}: {e}") from None
    try:
        props.update(parse_key_values(items, what=what))
    except ClientError as e:
        raise CliError(str(e)) from None
    return props


def _flag(props: dict[str, str], key: str, default: bool = False) -> bool:
    value = props.get(key)
    if value is None:
        return default
    if value.strip().lower() not in ("true", "false"):
        raise CliError(f"--property {key} must be true or false, got {value!r}")
    return value.strip().lower() == "true"


def register(sub: argparse._SubParsersAction) -> None:
    _register_producer(sub)
    _register_consumer(sub)


# -- console producer ----------------------------------------------------------------------------


def _register_producer(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "console-producer",
        help="send stdin lines as records (like kafka-console-producer)",
        description="Send each line of stdin as one record.",
    )
    add_target_args(
        p,
        broker_list=True,
        zookeeper="find the brokers in ZooKeeper's /brokers/ids, and those that join later",
    )
    p.add_argument("--topic", required=True)
    p.add_argument(
        "--property",
        action="append",
        metavar="KEY=VALUE",
        help="reader settings: parse.key, key.separator (default TAB), ignore.error, null.marker, "
        "parse.headers, headers.delimiter, headers.separator, headers.key.separator",
    )
    p.add_argument(
        "--producer-property", action="append", metavar="KEY=VALUE", help="producer config (acks=all...)"
    )
    p.add_argument(
        "--producer.config",
        dest="producer_config",
        metavar="FILE",
        help="producer properties file (security.protocol, sasl.*, ssl.* too)",
    )
    p.add_argument(
        "--compression-codec",
        nargs="?",
        const="gzip",
        metavar="CODEC",
        help="none, gzip (default when given without a value), snappy, lz4 or zstd",
    )
    p.add_argument("--batch-size", type=int, metavar="BYTES", help="batch.size")
    p.add_argument(
        "--request-required-acks", default=None, metavar="ACKS", help="acks: -1/all (default), 0 or 1"
    )
    p.add_argument("--request-timeout-ms", type=int, metavar="MS", help="request.timeout.ms")
    p.add_argument("--message-send-max-retries", type=int, metavar="N", help="retries")
    p.add_argument("--retry-backoff-ms", type=int, metavar="MS", help="retry.backoff.ms")
    p.add_argument("--max-block-ms", type=int, metavar="MS", help="max.block.ms (default 60000)")
    p.add_argument("--timeout", type=int, metavar="MS", help="linger.ms (default 1000, as Kafka's tool)")
    p.add_argument("--sync", action="store_true", help="wait for each record's acknowledgement")
    p.set_defaults(func=run_producer)


class LineReader:
    """Turns stdin lines into (key, value, headers) following Kafka's LineMessageReader options."""

    def __init__(self, props: dict[str, str]) -> None:
        self.parse_key = _flag(props, "parse.key")
        self.parse_headers = _flag(props, "parse.headers")
        self.ignore_error = _flag(props, "ignore.error")
        self.key_separator = unescape(props.get("key.separator", "\t")).encode()
        self.headers_delimiter = unescape(props.get("headers.delimiter", "\t")).encode()
        self.headers_separator = unescape(props.get("headers.separator", ",")).encode()
        self.headers_key_separator = unescape(props.get("headers.key.separator", ":")).encode()
        marker = props.get("null.marker")
        self.null_marker = unescape(marker).encode() if marker is not None else None
        for name, sep in (
            ("key.separator", self.key_separator),
            ("headers.delimiter", self.headers_delimiter),
        ):
            if not sep:
                raise CliError(f"--property {name} must not be empty")
        self.line_number = 0

    def parse(self, line: bytes) -> tuple[bytes | None, bytes | None, list[tuple[str, bytes | None]]]:
        self.line_number += 1
        headers: list[tuple[str, bytes | None]] = []
        rest = line
        if self.parse_headers:
            head, sep, tail = rest.partition(self.headers_delimiter)
            if sep:
                rest = tail
                headers = [self._header(h) for h in head.split(self.headers_separator) if h]
            elif not self.ignore_error:
                raise CliError(
                    f"No headers delimiter found on line number {self.line_number}: '{_show(line)}'"
                )
        key: bytes | None = None
        if self.parse_key:
            k, sep, value = rest.partition(self.key_separator)
            if sep:
                key, rest = k, value
            elif not self.ignore_error:
                raise CliError(f"No key separator found on line number {self.line_number}: '{_show(line)}'")
        return self._null(key), self._null(rest), headers

    def _header(self, text: bytes) -> tuple[str, bytes | None]:
        name, sep, value = text.partition(self.headers_key_separator)
        if not sep:
            raise CliError(
                f"No header key separator found in '{_show(text)}' on line number {self.line_number}"
            )
        return name.decode("utf-8", "replace"), self._null(value)

    def _null(self, value: bytes | None) -> bytes | None:
        if value is not None and self.null_marker is not None and value == self.null_marker:
            return None
        return value


def _show(line: bytes) -> str:
    return line.decode("utf-8", "replace")


def producer_options(args: argparse.Namespace) -> dict:
    props = _properties(args.producer_property, args.producer_config, "--producer-property")
    security, props = split_security(props, "--producer.config/--producer-property")
    kwargs, unknown = producer_kwargs(props)
    if security is not None:
        kwargs["security"] = security
    for key in unknown:
        print(f"WARNING: the configuration '{key}' was supplied but isn't a known config.", file=sys.stderr)
    kwargs.setdefault("acks", -1)
    kwargs.setdefault("linger_ms", 1000)
    kwargs.setdefault("client_id", "console-producer")
    for flag, name in (
        ("compression_codec", "compression"),
        ("batch_size", "batch_size"),
        ("request_required_acks", "acks"),
        ("request_timeout_ms", "request_timeout_ms"),
        ("message_send_max_retries", "retries"),
        ("retry_backoff_ms", "retry_backoff_ms"),
        ("max_block_ms", "max_block_ms"),
        ("timeout", "linger_ms"),
    ):
        value = getattr(args, flag)
        if value is not None:
            kwargs[name] = value
    if "delivery_timeout_ms" not in kwargs:
        request_timeout = kwargs.get("request_timeout_ms", 30_000)
        kwargs["delivery_timeout_ms"] = max(120_000, request_timeout + int(kwargs["linger_ms"]))
    return kwargs


def run_producer(args: argparse.Namespace) -> int:
    reader = LineReader(_properties(args.property, None, "--property"))
    options = producer_options(args)
    with client_errors():
        try:
            if args.zookeeper:
                options["zookeeper_connect"] = args.zookeeper
            producer = Producer(args.bootstrap_server, **options)
        except ClientError as e:
            raise CliError(str(e)) from None
        return asyncio.run(_produce_stdin(producer, args.topic, reader, args.sync, sys.stdin.buffer))


async def _produce_stdin(
    producer: Producer, topic: str, reader: LineReader, sync: bool, stdin: IO[bytes]
) -> int:
    failures: list[BaseException] = []

    def delivered(future: asyncio.Future[RecordMetadata]) -> None:
        if not future.cancelled() and future.exception() is not None and not failures:
            failures.append(future.exception())  # type: ignore[arg-type]

    chunks = _read_in_thread(stdin)
    pending = b""
    try:
        await producer.start()
        while not failures:
            chunk = await chunks.get()
            if isinstance(chunk, BaseException):
                raise CliError(f"cannot read stdin: {chunk}")
            if not chunk:
                break
            lines = (pending + chunk).split(b"\n")
            pending = lines.pop()
            for line in lines:
                await _send_line(producer, topic, reader, line, sync, delivered)
        if pending and not failures:
            await _send_line(producer, topic, reader, pending, sync, delivered)
        await producer.flush()
    finally:
        await producer.close()
    if failures:
        error = failures[0]
        raise error
    return 0


def _read_in_thread(stdin: IO[bytes]) -> asyncio.Queue[bytes | BaseException]:
    """Chunks of stdin (b"" at EOF) read by a daemon thread: a blocking read of an interactive
    terminal must neither stall the producer's event loop nor keep the process alive after an
    error (as a thread of the loop's default executor would, until the next line is typed)."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[bytes | BaseException] = asyncio.Queue(maxsize=16)
    try:
        fd = stdin.fileno()
    except (AttributeError, OSError, ValueError):
        read: Callable[[int], bytes] = getattr(stdin, "read1", stdin.read)
    else:
        # os.read, not the buffered reader: at interpreter exit a daemon thread blocked inside
        # BufferedReader.read holds its lock, and Python aborts ("could not acquire lock")
        def read(size: int) -> bytes:
            return os.read(fd, size)

    def put(item: bytes | BaseException) -> None:
        # blocks the reader thread when the producer falls behind (bounded memory)
        asyncio.run_coroutine_threadsafe(queue.put(item), loop).result()

    def run() -> None:
        try:
            while True:
                chunk = read(_CHUNK)
                put(chunk)
                if not chunk:
                    return
        except RuntimeError:  # the loop is gone: the command has finished
            return
        except BaseException as e:
            with contextlib.suppress(RuntimeError):
                put(e)

    threading.Thread(target=run, name="stdin-reader", daemon=True).start()
    return queue


async def _send_line(
    producer: Producer,
    topic: str,
    reader: LineReader,
    line: bytes,
    sync: bool,
    delivered: Callable[[asyncio.Future[RecordMetadata]], None],
) -> None:
    key, value, headers = reader.parse(line.removesuffix(b"\r"))
    future = await producer.send(topic, value, key=key, headers=headers)
    if sync:
        await asyncio.wait([future])
    future.add_done_callback(delivered)


# -- console consumer ----------------------------------------------------------------------------


def _register_consumer(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "console-consumer",
        help="print records of a topic (like kafka-console-consumer)",
        description="Print the records of a topic, one per line.",
    )
    add_target_args(p, zookeeper="consume as a ZooKeeper-consumer group member")
    p.add_argument("--topic")
    p.add_argument("--whitelist", metavar="REGEX", help="with --zookeeper: topics matching REGEX")
    p.add_argument("--include", metavar="REGEX", help="topics matching REGEX (Kafka 2.8's --whitelist)")
    p.add_argument("--blacklist", metavar="REGEX", help="with --zookeeper: topics not matching REGEX")
    p.add_argument("--from-beginning", action="store_true", help="start at the earliest offset, not the end")
    p.add_argument("--partition", type=int, metavar="P", help="consume only this partition")
    p.add_argument(
        "--offset", metavar="OFFSET", help="with --partition: an offset, 'earliest' or 'latest' (default)"
    )
    p.add_argument("--max-messages", type=int, metavar="N", help="exit after N records")
    p.add_argument("--timeout-ms", type=int, metavar="MS", help="exit when no record arrived for MS")
    p.add_argument(
        "--property",
        action="append",
        metavar="KEY=VALUE",
        help="print.key, print.value, print.timestamp, print.partition, print.offset, print.headers, "
        "key.separator, line.separator, headers.separator, headers.key.separator, null.literal",
    )
    p.add_argument("--consumer-property", action="append", metavar="KEY=VALUE", help="consumer config")
    p.add_argument(
        "--consumer.config",
        dest="consumer_config",
        metavar="FILE",
        help="consumer properties file (security.protocol, sasl.*, ssl.* too)",
    )
    p.add_argument(
        "--isolation-level",
        choices=("read_uncommitted", "read_committed"),
        default=None,
        help="isolation level",
    )
    p.add_argument(
        "--group",
        help="consume as a member of this group (with --zookeeper: a ZooKeeper-consumer group, by "
        "default console-consumer-<random>)",
    )
    p.set_defaults(func=run_consumer)


class RecordFormatter:
    """Kafka's DefaultMessageFormatter: [timestamp] [partition] [offset] [headers] [key] value."""

    def __init__(self, props: dict[str, str]) -> None:
        self.print_timestamp = _flag(props, "print.timestamp")
        self.print_partition = _flag(props, "print.partition")
        self.print_offset = _flag(props, "print.offset")
        self.print_headers = _flag(props, "print.headers")
        self.print_key = _flag(props, "print.key")
        self.print_value = _flag(props, "print.value", True)
        self.key_separator = unescape(props.get("key.separator", "\t")).encode()
        self.line_separator = unescape(props.get("line.separator", "\n")).encode()
        self.headers_separator = unescape(props.get("headers.separator", ",")).encode()
        self.headers_key_separator = unescape(props.get("headers.key.separator", ":")).encode()
        self.null_literal = unescape(props.get("null.literal", "null")).encode()

    def format(self, r: ConsumedRecord) -> bytes:
        parts: list[bytes] = []
        if self.print_timestamp:
            kind = "LogAppendTime" if r.timestamp_type == 1 else "CreateTime"
            parts.append(f"{kind}:{r.timestamp}".encode() if r.timestamp >= 0 else b"NO_TIMESTAMP")
        if self.print_partition:
            parts.append(f"Partition:{r.partition}".encode())
        if self.print_offset:
            parts.append(f"Offset:{r.offset}".encode())
        if self.print_headers:
            if r.headers:
                parts.append(
                    self.headers_separator.join(
                        name.encode("utf-8", "surrogateescape")
                        + self.headers_key_separator
                        + self._bytes(value)
                        for name, value in r.headers
                    )
                )
            else:
                parts.append(b"NO_HEADERS")
        if self.print_key:
            parts.append(self._bytes(r.key))
        if self.print_value:
            parts.append(self._bytes(r.value))
        return self.key_separator.join(parts) + self.line_separator

    def _bytes(self, value: bytes | None) -> bytes:
        return self.null_literal if value is None else value


def consumer_start(args: argparse.Namespace) -> str | int:
    """Where to start: "earliest", "latest" or an offset (checking Kafka's flag rules)."""
    if args.offset is not None and args.partition is None:
        raise CliError("The partition is required when offset is specified.")
    if args.offset is not None and args.from_beginning:
        raise CliError("Options from-beginning and offset cannot be specified together.")
    if args.offset is None:
        return "earliest" if args.from_beginning else "latest"
    if args.offset in ("earliest", "latest"):
        return args.offset
    try:
        offset = int(args.offset)
    except ValueError:
        raise CliError(
            f"--offset must be 'earliest', 'latest' or an offset >= 0, got {args.offset!r}"
        ) from None
    if offset < 0:
        raise CliError(f"--offset must be >= 0, got {offset}")
    return offset


def run_consumer(args: argparse.Namespace) -> int:
    if args.include is not None:
        if args.whitelist is not None:
            raise CliError("give --include or --whitelist, not both")
        args.whitelist = args.include
    if args.zookeeper:
        return _run_zookeeper_consumer(args)
    if args.blacklist or (args.whitelist and args.topic) or not (args.topic or args.whitelist):
        raise CliError("--bootstrap-server needs --topic or --include (--blacklist needs --zookeeper)")
    if args.whitelist and args.partition is not None:
        raise CliError("--partition needs --topic")
    props = _properties(args.consumer_property, args.consumer_config, "--consumer-property")
    security, props = split_security(props, "--consumer.config/--consumer-property")
    topics = [args.topic] if args.topic else _matching_topics(args.bootstrap_server, args.whitelist, security)
    if args.group and args.partition is not None:
        raise CliError("Options group and partition cannot be specified together.")
    if args.max_messages is not None and args.max_messages < 0:
        raise CliError("--max-messages must be >= 0")
    if args.partition is not None and args.partition < 0:
        raise CliError("--partition must be >= 0")
    start = consumer_start(args)
    formatter = RecordFormatter(_properties(args.property, None, "--property"))
    kwargs, unknown = consumer_kwargs(props)
    if security is not None:
        kwargs["security"] = security
    for key in unknown:
        print(f"WARNING: the configuration '{key}' was supplied but isn't a known config.", file=sys.stderr)
    kwargs.setdefault("client_id", "console-consumer")
    kwargs["auto_offset_reset"] = (
        "earliest" if start == "earliest" else kwargs.get("auto_offset_reset", "latest")
    )
    if args.isolation_level:
        kwargs["isolation_level"] = args.isolation_level
    progress = _Progress()
    with client_errors():
        try:
            client: Consumer | GroupConsumer = (
                GroupConsumer(args.bootstrap_server, group_id=args.group, topics=topics, **kwargs)
                if args.group
                else Consumer(args.bootstrap_server, **kwargs)
            )
        except ClientError as e:
            raise CliError(str(e)) from None
        out = sys.stdout.buffer
        return _print_until_stopped(
            _consume_member(client, args, formatter, out, progress)
            if isinstance(client, GroupConsumer)
            else _consume(client, args, topics, start, formatter, out, progress),
            progress,
        )


def _print_until_stopped(consuming: Coroutine[Any, Any, None], progress: _Progress) -> int:
    """Run `consuming` until it ends (--max-messages, --timeout-ms), the reader of stdout goes away
    (`| head`), or SIGINT (Ctrl-C) or SIGTERM ask it to stop; then say how many records were
    printed, on stderr, as Kafka's tool does. Both signals end it the same clean way (exit status
    0): the consuming coroutine is cancelled, so its `finally` closes the consumer (a group member
    commits what it printed and leaves its group). A second signal stops at once."""
    try:
        asyncio.run(_until_signalled(consuming))
    except KeyboardInterrupt:
        pass  # a second Ctrl-C while closing
    except BrokenPipeError:
        # keep Python's final flush of stdout from failing again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    finally:
        with contextlib.suppress(Exception):
            print(f"Processed a total of {progress.count} messages", file=sys.stderr)
    return 0


async def _until_signalled(consuming: Coroutine[Any, Any, None]) -> None:
    """Await `consuming`; SIGTERM, and SIGINT unless this process was started with it ignored
    (`nohup`, a background job of a script), cancel it and return once it has cleaned up."""
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    assert task is not None
    signals = [signal.SIGTERM]
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        signals.append(signal.SIGINT)
    stopping = False

    def stop(sig: signal.Signals) -> None:
        nonlocal stopping
        if stopping:  # again: the default action of the signal, now
            loop.remove_signal_handler(sig)
            signal.raise_signal(sig)
            return
        stopping = True
        task.cancel()

    for sig in signals:
        loop.add_signal_handler(sig, stop, sig)
    try:
        await consuming
    except asyncio.CancelledError:
        if not stopping:
            raise
        task.uncancel()
    finally:
        for sig in signals:
            loop.remove_signal_handler(sig)


class _Progress:
    """Records printed so far; read in `finally`, even after Ctrl-C."""

    count = 0


async def _consume(
    consumer: Consumer,
    args: argparse.Namespace,
    topics: list[str],
    start: str | int,
    formatter: RecordFormatter,
    out: IO[bytes],
    progress: _Progress,
) -> None:
    limit = args.max_messages
    try:
        if args.partition is not None:
            meta = await consumer.cluster.topic(args.topic)
            if args.partition not in meta.partitions:
                raise CliError(
                    f"partition {args.partition} does not exist: {args.topic} has {meta.partition_count}"
                )
            tp = TopicPartition(args.topic, args.partition)
            consumer.assign([tp])
            if isinstance(start, int):
                consumer.seek(tp, start)
            elif start == "earliest":
                consumer.seek_to_beginning(tp)
            else:
                consumer.seek_to_end(tp)
        else:
            if len(topics) == 1:
                await consumer.assign_topic(topics[0])
            else:
                tps = []
                for topic in topics:
                    meta = await consumer.cluster.topic(topic)
                    tps.extend(TopicPartition(topic, p) for p in sorted(meta.partitions))
                consumer.assign(tps)
            if start == "earliest":
                consumer.seek_to_beginning()
            else:
                consumer.seek_to_end()
        last_record = time.monotonic()
        while limit is None or progress.count < limit:
            records = await consumer.poll(500 if args.timeout_ms is None else min(500, args.timeout_ms))
            if records:
                last_record = time.monotonic()
                if limit is not None:
                    records = records[: limit - progress.count]
                out.write(b"".join(formatter.format(r) for r in records))
                out.flush()
                progress.count += len(records)
            elif args.timeout_ms is not None and (time.monotonic() - last_record) * 1000 >= args.timeout_ms:
                log.info("no record for %d ms: stopping", args.timeout_ms)
                break
    finally:
        await consumer.close()


def _matching_topics(bootstrap: str, pattern: str, security: ClientSecurity | None = None) -> list[str]:
    """Topics whose whole name matches `pattern` (Kafka's --include); internal ones are never listed."""
    from zkafka.client.sync import SyncAdminClient

    try:
        regex = re.compile(pattern)
    except re.error as e:
        raise CliError(f"--include {pattern!r} is not a regular expression: {e}") from None
    with client_errors(), SyncAdminClient(bootstrap, security=security) as admin:
        names = sorted(t for t in admin.list_topics() if regex.fullmatch(t))
    if not names:
        raise CliError(f"no topic matches --include {pattern!r}")
    return names


# -- the ZooKeeper consumer (--zookeeper) ------------------------------------------------------------


def _run_zookeeper_consumer(args: argparse.Namespace) -> int:
    """Kafka's old console consumer: a ZooKeeper-consumer group member (a random
    console-consumer-NNNNN group, removed again at exit, unless --group is given)."""
    if sum(x is not None for x in (args.topic, args.whitelist, args.blacklist)) != 1:
        raise CliError("give exactly one of --topic, --whitelist or --blacklist")
    if args.partition is not None or args.offset is not None:
        raise CliError("--partition and --offset need --bootstrap-server")
    if args.max_messages is not None and args.max_messages < 0:
        raise CliError("--max-messages must be >= 0")
    formatter = RecordFormatter(_properties(args.property, None, "--property"))
    group = args.group or f"console-consumer-{random.randrange(100_000)}"
    progress = _Progress()
    with client_errors():
        try:
            consumer = ZookeeperConsumer(
                group,
                zookeeper=args.zookeeper,
                topics={args.topic: 1} if args.topic else None,
                whitelist=args.whitelist,
                blacklist=args.blacklist,
                auto_offset_reset="smallest" if args.from_beginning else "largest",
                auto_commit_interval_ms=1000,
                rebalance_backoff_ms=500,
                client_id="console-consumer",
            )
        except ClientError as e:
            raise CliError(str(e)) from None
        try:
            return _print_until_stopped(
                _consume_member(consumer, args, formatter, sys.stdout.buffer, progress), progress
            )
        finally:
            if not args.group:
                _delete_group_quietly(args.zookeeper, group)


async def _consume_member(
    consumer: ZookeeperConsumer | GroupConsumer,
    args: argparse.Namespace,
    formatter: RecordFormatter,
    out: IO[bytes],
    progress: _Progress,
) -> None:
    """Print what a group member (either kind) receives; the final commit stops at the last
    printed record."""
    limit = args.max_messages
    try:
        await consumer.start()
        last_record = time.monotonic()
        while limit is None or progress.count < limit:
            records = await consumer.poll(500 if args.timeout_ms is None else min(500, args.timeout_ms))
            if records:
                last_record = time.monotonic()
                if limit is not None and len(records) > limit - progress.count:
                    # hand back what will not be printed, so the final commit stops at the last
                    # printed record of each partition
                    rest = records[limit - progress.count :]
                    records = records[: limit - progress.count]
                    for r in reversed(rest):
                        consumer.seek(TopicPartition(r.topic, r.partition), r.offset)
                out.write(b"".join(formatter.format(r) for r in records))
                out.flush()
                progress.count += len(records)
            elif args.timeout_ms is not None and (time.monotonic() - last_record) * 1000 >= args.timeout_ms:
                break
    finally:
        await consumer.close()


def _delete_group_quietly(zookeeper: str, group: str) -> None:
    from zkafka.zk.client import KafkaZkClient
    from zkafka.zk.znodes import ConsumerGroupZNodes

    with contextlib.suppress(Exception):
        zk = KafkaZkClient(zookeeper, create_chroot=False, connection_timeout_ms=5000)
        try:
            zk.delete(ConsumerGroupZNodes.group_path(group), recursive=True)
        finally:
            zk.close()
