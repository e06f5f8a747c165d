"""`zkafka transactions`: kafka-transactions' commands, to see transactions and to find and abort
hanging ones (KIP-664).

    zkafka transactions --bootstrap-server 127.0.0.1:9092 list [--duration-filter MS]
    zkafka transactions --bootstrap-server 127.0.0.1:9092 describe --transactional-id app-1
    zkafka transactions --bootstrap-server 127.0.0.1:9092 describe-producers --topic t --partition 0
    zkafka transactions --bootstrap-server 127.0.0.1:9092 find-hanging --broker-id 1
    zkafka transactions --bootstrap-server 127.0.0.1:9092 abort --topic t --partition 0 --start-offset 42
    zkafka transactions --bootstrap-server 127.0.0.1:9092 forceTerminateTransaction --transactionalId app-1

The flags, column names, "None" for an absent value and the table layout (each column padded to
its widest cell and followed by a tab, never wrapped) are Kafka's, so scripts written for
kafka-transactions read this output. `--bootstrap-server` and `--command-config` are accepted
before or after the command; without them the `zkafka cluster up` cluster is used.

A *hanging* transaction is one a partition leader holds open while its coordinator does not know it
(it will never send the marker): it holds the partition's LSO back and read_committed consumers
stop there. `find-hanging` lists the open transactions of the partitions searched whose last write
is older than `--max-transaction-timeout` minutes (default 15, Kafka's
transaction.max.timeout.ms) and whose producer id no coordinator lists, or whose coordinator does
not have that partition in the transaction. `abort` writes an ABORT marker to the leader
(WriteTxnMarkers), with the producer epoch and coordinator epoch the leader reports; after it the
LSO moves on.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from zkafka.cli.errors import CliError
from zkafka.cli.target import add_command_config_arg, add_target_args, client_security

if TYPE_CHECKING:
    from zkafka.client.txn_admin import AbortSpec, TransactionAdmin
    from zkafka.client.types import TopicPartition

T = TypeVar("T")

LIST_HEADERS = ("TransactionalId", "Coordinator", "ProducerId", "TransactionState")
DESCRIBE_HEADERS = (
    "CoordinatorId",
    "TransactionalId",
    "ProducerId",
    "ProducerEpoch",
    "TransactionState",
    "TransactionTimeoutMs",
    "CurrentTransactionStartTimeMs",
    "TransactionDurationMs",
    "TopicPartitions",
)
PRODUCERS_HEADERS = (
    "ProducerId",
    "ProducerEpoch",
    "LatestCoordinatorEpoch",
    "LastSequence",
    "LastTimestamp",
    "CurrentTransactionStartOffset",
)
HANGING_HEADERS = (
    "Topic",
    "Partition",
    "ProducerId",
    "ProducerEpoch",
    "CoordinatorEpoch",
    "StartOffset",
    "LastTimestamp",
    "Duration(min)",
)
DEFAULT_MAX_TRANSACTION_TIMEOUT_MIN = 15
"""find-hanging's default: Kafka's transaction.max.timeout.ms (15 minutes), in minutes."""
BATCH = 500
"""Partitions per DescribeProducers request in find-hanging (Kafka's batch size)."""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "transactions",
        help="list and describe transactions, find and abort hanging ones (like kafka-transactions)",
        description="Analyze the transactional state of producers in the cluster; detect and recover "
        "from hanging transactions (kafka-transactions' commands and flags).",
    )
    add_target_args(p, bootstrap="hostname and port of a broker, `host:port` (comma-separated for several)")
    add_command_config_arg(p)
    commands = p.add_subparsers(dest="transactions_command", metavar="COMMAND", required=True)

    c = _command(commands, "list", "list transactions")
    c.add_argument(
        "--duration-filter",
        type=int,
        metavar="MS",
        help="only transactions open longer than this many milliseconds",
    )

    c = _command(commands, "describe", "describe the state of an active transactional-id")
    c.add_argument("--transactional-id", required=True, help="transactional id")

    c = _command(
        commands, "describe-producers", "describe the states of active producers for a topic partition"
    )
    c.add_argument(
        "--broker-id",
        type=int,
        help="optional broker id to describe the producer state on a specific replica",
    )
    c.add_argument("--topic", required=True, help="topic name")
    c.add_argument("--partition", type=int, required=True, help="partition number")

    c = _command(commands, "abort", "abort a hanging transaction (requires administrative privileges)")
    c.add_argument("--topic", required=True, help="topic name")
    c.add_argument("--partition", type=int, required=True, help="partition number")
    new = c.add_argument_group(
        "Brokers on versions 3.0 and above",
        "For newer brokers, only the start offset of the transaction to be aborted is required",
    )
    new.add_argument("--start-offset", type=int, help="start offset of the transaction to abort")
    old = c.add_argument_group(
        "Brokers on versions older than 3.0", "For older brokers, you must provide all of these arguments"
    )
    old.add_argument("--producer-id", type=int, help="producer id")
    old.add_argument("--producer-epoch", type=int, help="producer epoch")
    old.add_argument("--coordinator-epoch", type=int, help="coordinator epoch")

    c = _command(commands, "find-hanging", "find hanging transactions")
    c.add_argument("--broker-id", type=int, help="broker id to search for hanging transactions")
    c.add_argument(
        "--max-transaction-timeout",
        type=int,
        default=DEFAULT_MAX_TRANSACTION_TIMEOUT_MIN,
        metavar="MINUTES",
        help="maximum transaction timeout in minutes to limit the scope of the search "
        f"(default {DEFAULT_MAX_TRANSACTION_TIMEOUT_MIN})",
    )
    c.add_argument("--topic", help="topic name to limit search to")
    c.add_argument("--partition", type=int, help="partition number")

    c = _command(
        commands,
        "forceTerminateTransaction",
        "force abort a transaction by fencing its producer (Kafka 4.1, KIP-939)",
    )
    c.add_argument("--transactionalId", dest="transactional_id", required=True, help="transactional id")
    p.set_defaults(func=run_command)


def _command(commands: argparse._SubParsersAction, name: str, help_text: str) -> argparse.ArgumentParser:
    """A subcommand that also takes the connection flags after its name (a value given there
    wins; absent, the one given before the command stays)."""
    c = commands.add_parser(name, help=help_text, description=help_text[0].upper() + help_text[1:] + ".")
    for flag, metavar, kind in (
        ("--bootstrap-server", "HOST:PORT[,...]", str),
        ("--command-config", "FILE", str),
        ("--cluster-dir", "DIR", Path),
    ):
        c.add_argument(
            flag,
            metavar=metavar,
            type=kind,
            default=argparse.SUPPRESS,
            help="= the same flag before the command",
        )
    return c


# -- output ----------------------------------------------------------------------------------------


def format_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """Kafka's layout: every cell padded to its column's widest cell and followed by a tab."""
    cells = [list(map(str, headers)), *([str(v) for v in row] for row in rows)]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    return "".join(
        "".join(cell.ljust(w) + "\t" for cell, w in zip(r, widths, strict=True)) + "\n" for r in cells
    )


def _none(value: int | None) -> object:
    return "None" if value is None else value


# -- commands --------------------------------------------------------------------------------------


def run_command(args: argparse.Namespace) -> int:
    from zkafka.client.txn_admin import TransactionAdmin

    security = client_security(args.command_config)
    handler = _HANDLERS[args.transactions_command]

    async def run() -> str:
        async with TransactionAdmin(args.bootstrap_server, security=security) as admin:
            return await handler(admin, args)

    print(_run(run()), end="")
    return 0


def _run(coro: Awaitable[T]) -> T:
    """Run `coro`; a client-side failure (no broker answered, a bad address) is a one-line error."""
    from zkafka.client.errors import ClientError
    from zkafka.protocol import KafkaError

    async def main() -> T:
        return await coro

    try:
        return asyncio.run(main())
    except KafkaError as e:
        raise CliError(str(e)) from None
    except (ClientError, OSError) as e:
        raise CliError(f"{type(e).__name__}: {e}") from None


async def _list(admin: TransactionAdmin, args: argparse.Namespace) -> str:
    duration = -1 if args.duration_filter is None else args.duration_filter
    found = await _failing(
        "Failed to list transactions", admin.list_transactions(duration_filter_ms=duration)
    )
    rows = [
        (t.transactional_id, broker, t.producer_id, t.state)
        for broker, listings in sorted(found.items())
        for t in sorted(listings, key=lambda t: t.transactional_id)
    ]
    return format_table(LIST_HEADERS, rows)


async def _describe(admin: TransactionAdmin, args: argparse.Namespace) -> str:
    txn_id = args.transactional_id
    d = await _failing(
        f"Failed to describe transaction state of transactional-id `{txn_id}`",
        admin.describe_transaction(txn_id),
    )
    start = d.transaction_start_time_ms
    row = (
        d.coordinator_id,
        txn_id,
        d.producer_id,
        d.producer_epoch,
        d.state,
        d.transaction_timeout_ms,
        _none(start),
        _none(None if start is None else int(time.time() * 1000) - start),
        ",".join(f"{tp.topic}-{tp.partition}" for tp in d.topic_partitions),
    )
    return format_table(DESCRIBE_HEADERS, [row])


async def _describe_producers(admin: TransactionAdmin, args: argparse.Namespace) -> str:
    from zkafka.client.types import TopicPartition

    tp = TopicPartition(args.topic, args.partition)
    where = "leader" if args.broker_id is None else f"broker {args.broker_id}"
    found = (await admin.describe_producers([tp], broker_id=args.broker_id))[tp]
    if isinstance(found, Exception):
        raise CliError(
            f"Failed to describe producers for partition {tp.topic}-{tp.partition} on {where}: {found}"
        )
    rows = [
        (
            s.producer_id,
            s.producer_epoch,
            -1 if s.coordinator_epoch is None else s.coordinator_epoch,
            s.last_sequence,
            s.last_timestamp,
            _none(s.current_transaction_start_offset),
        )
        for s in sorted(found, key=lambda s: s.producer_id)
    ]
    return format_table(PRODUCERS_HEADERS, rows)


async def _abort(admin: TransactionAdmin, args: argparse.Namespace) -> str:
    from zkafka.client.txn_admin import AbortSpec
    from zkafka.client.types import TopicPartition

    tp = TopicPartition(args.topic, args.partition)
    if args.start_offset is None and args.producer_id is None:
        raise CliError(
            "The transaction to abort must be identified either with --start-offset (for brokers on 3.0 "
            "or above) or with --producer-id, --producer-epoch, and --coordinator-epoch (for older brokers)"
        )
    if args.start_offset is None:
        if args.producer_epoch is None:
            raise CliError("Missing required argument --producer-epoch")
        if args.coordinator_epoch is None:
            raise CliError("Missing required argument --coordinator-epoch")
        # A transaction that hung before its producer id ever saw a marker has coordinator epoch
        # -1 in DescribeProducers; 0 is at or below any coordinator epoch a leader can hold.
        spec = AbortSpec(tp, args.producer_id, args.producer_epoch, max(args.coordinator_epoch, 0))
    else:
        spec = await _spec_from_start_offset(admin, tp, args.start_offset)
    await _failing(f"Failed to abort transaction {_spec_text(spec)}", admin.abort_transaction(spec))
    return ""


async def _spec_from_start_offset(
    admin: TransactionAdmin, tp: TopicPartition, start_offset: int
) -> AbortSpec:
    """The producer whose open transaction starts at `start_offset`, as the leader reports it."""
    from zkafka.client.txn_admin import AbortSpec

    found = (await admin.describe_producers([tp]))[tp]
    if isinstance(found, Exception):
        raise CliError(f"Failed to validate producer state for partition {tp.topic}-{tp.partition}: {found}")
    for s in found:
        if s.current_transaction_start_offset == start_offset:
            return AbortSpec(tp, s.producer_id, s.producer_epoch, s.coordinator_epoch or 0)
    raise CliError(
        f"Could not find any open transactions starting at offset {start_offset} "
        f"on partition {tp.topic}-{tp.partition}"
    )


def _spec_text(spec: AbortSpec) -> str:
    tp = spec.topic_partition
    return (
        f"AbortTransactionSpec(topicPartition={tp.topic}-{tp.partition}, producerId={spec.producer_id}, "
        f"producerEpoch={spec.producer_epoch}, coordinatorEpoch={spec.coordinator_epoch})"
    )


async def _find_hanging(admin: TransactionAdmin, args: argparse.Namespace) -> str:
    if args.topic is None and args.broker_id is None:
        raise CliError(
            "The `find-hanging` command requires either --topic or --broker-id "
            "to limit the scope of the search"
        )
    if args.partition is not None and args.topic is None:
        raise CliError("The --partition argument requires --topic to be provided")
    partitions = await _partitions_to_search(admin, args.topic, args.partition, args.broker_id)
    now = int(time.time() * 1000)
    hanging = await _failing(
        f"Failed to find hanging transactions in {len(partitions)} partitions",
        admin.find_hanging_transactions(partitions, args.max_transaction_timeout * 60_000, now_ms=now),
    )
    rows = [
        (
            h.topic_partition.topic,
            h.topic_partition.partition,
            h.producer.producer_id,
            h.producer.producer_epoch,
            -1 if h.producer.coordinator_epoch is None else h.producer.coordinator_epoch,
            h.producer.current_transaction_start_offset,
            h.producer.last_timestamp,
            (now - h.producer.last_timestamp) // 60_000,
        )
        for h in hanging
    ]
    return format_table(HANGING_HEADERS, rows)


async def _partitions_to_search(
    admin: TransactionAdmin, topic: str | None, partition: int | None, broker_id: int | None
) -> list[TopicPartition]:
    """The partitions find-hanging looks at: one, a topic's, or every topic's; with --broker-id only
    those with a replica on that broker. Each is asked of its leader: a zkafka broker describes the
    producers of the partitions it leads."""
    from zkafka.client.types import TopicPartition as TP
    from zkafka.protocol import ErrorCode

    if topic is not None and partition is not None:
        return [TP(topic, partition)]
    meta = await admin.cluster.refresh([topic] if topic is not None else (), all_topics=topic is None)
    if topic is not None and (topic not in meta.topics or meta.topics[topic].error != ErrorCode.NONE):
        error = meta.topics[topic].error if topic in meta.topics else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        raise CliError(f"Failed to describe 1 topics: {error.name}: topic {topic!r}: {error.message}.")
    if broker_id is not None and broker_id not in meta.brokers:
        raise CliError(
            f"broker {broker_id} is not a live broker of the cluster (live: {sorted(meta.brokers)})"
        )
    names = [topic] if topic is not None else sorted(n for n, t in meta.topics.items() if not t.is_internal)
    return [
        TP(name, p.partition)
        for name in names
        for p in meta.topics[name].partitions.values()
        if broker_id is None or broker_id in p.replicas
    ]


async def _force_terminate(admin: TransactionAdmin, args: argparse.Namespace) -> str:
    txn_id = args.transactional_id
    await _failing(
        f"Could not force terminate transaction `{txn_id}`", admin.force_terminate_transaction(txn_id)
    )
    return ""


async def _failing(what: str, call: Awaitable[T]) -> T:
    """`call`'s result; its broker error becomes Kafka's one-line '<what>: <error>.'"""
    from zkafka.protocol import KafkaError

    try:
        return await call
    except KafkaError as e:
        raise CliError(f"{what}: {e}.") from None


_HANDLERS: dict[str, Callable[..., Awaitable[str]]] = {
    "list": _list,
    "describe": _describe,
    "describe-producers": _describe_producers,
    "abort": _abort,
    "find-hanging": _find_hanging,
    "forceTerminateTransaction": _force_terminate,
}
