"""A page of one partition's records, read with zkafka's own consumer, and how a key or value is
shown: as text, as indented JSON, or as hex. The strings returned are plain text; the templates
escape them (a value holding `<script>` is shown, never run)."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

from zkafka.client.consumer import Consumer
from zkafka.client.offsets import list_offsets
from zkafka.client.types import ConsumedRecord, TopicPartition
from zkafka.console.cluster_data import OFFSETS_TIMEOUT_S, log_offsets
from zkafka.console.errors import ConsoleError
from zkafka.console.source import ClusterSource

FORMATS = ("text", "json", "hex")
SHOWN_BYTES = 4096
"""A key or value longer than this is shown cut, with its full size."""
READ_BUDGET_S = 5.0


@dataclass(frozen=True, slots=True)
class ShownRecord:
    offset: int
    timestamp: int
    key: str
    value: str
    headers: str
    size: int


@dataclass
class RecordsPage:
    topic: str
    partition: int
    partitions: int
    offset: int
    limit: int
    fmt: str
    start: int | None
    end: int | None
    records: list[ShownRecord]
    note: str | None = None

    @property
    def next_offset(self) -> int | None:
        return self.records[-1].offset + 1 if self.records else None

    @property
    def previous_offset(self) -> int | None:
        if self.start is None or self.offset <= self.start:
            return None
        return max(self.start, self.offset - self.limit)


def show(data: bytes | None, fmt: str) -> str:
    """`data` as the chosen format; falls back to hex for bytes that are not text."""
    if data is None:
        return "(null)"
    cut = data[:SHOWN_BYTES]
    suffix = f" … ({len(data)} bytes)" if len(data) > SHOWN_BYTES else ""
    if fmt == "hex":
        return cut.hex(" ") + suffix
    try:
        text = cut.decode("utf-8")
    except UnicodeDecodeError:
        return "(not UTF-8) " + cut.hex(" ") + suffix
    if fmt == "json" and not suffix:
        try:
            return json.dumps(json.loads(text), indent=2, ensure_ascii=False)
        except ValueError:
            return "(not JSON) " + text
    return text + suffix


async def read_records(
    source: ClusterSource,
    topic: str,
    partition: int,
    offset: int | None,
    limit: int,
    fmt: str,
    timestamp: int | None = None,
) -> RecordsPage:
    """Up to `limit` records from `offset`, or from the first record whose timestamp is at or
    after `timestamp` (ms), or from the log start."""
    meta = (await source.admin.describe_topics([topic]))[topic]
    if partition not in meta.partitions:
        raise ConsoleError(
            404, f"topic {topic!r} has no partition {partition} (it has {meta.partition_count})"
        )
    tp = TopicPartition(topic, partition)
    offsets, note = await log_offsets(source, [tp])
    start, end = offsets.get(tp, (None, None))
    if start is None or end is None:
        raise ConsoleError(503, f"partition {tp} has no leader to read from" + (f" ({note})" if note else ""))
    found_note = None
    if offset is None and timestamp is not None:
        found = await list_offsets(source.admin.cluster, {tp: timestamp}, timeout=OFFSETS_TIMEOUT_S)
        offset = end if found.get(tp) is None else found[tp].offset  # type: ignore[union-attr]
        found_note = f"the first record at or after timestamp {timestamp} is at offset {offset}"
    wanted = start if offset is None else offset
    page = RecordsPage(topic, partition, meta.partition_count, wanted, limit, fmt, start, end, [], found_note)
    if wanted < start:
        page.offset = start
        page.note = f"offset {wanted} is before the log start {start}; showing from {start}"
    elif wanted >= end:
        page.note = (
            f"no record at or after timestamp {timestamp}"
            if found_note
            else f"no records at or after offset {wanted} (the log ends at {end})"
        )
        return page
    page.records = [
        _shown(r, fmt) for r in await _fetch(source, tp, page.offset, min(end, page.offset + limit))
    ]
    return page


async def _fetch(source: ClusterSource, tp: TopicPartition, offset: int, stop: int) -> list[ConsumedRecord]:
    """Records from `offset` up to `stop` (exclusive), as many as arrive within the read budget."""
    consumer = Consumer(
        source.settings.bootstrap_servers,
        client_id="zkafka-ui",
        auto_offset_reset="none",
        fetch_max_wait_ms=100,
        max_poll_records=stop - offset,
        request_timeout_ms=source.settings.request_timeout_ms,
        security=source.settings.security,
    )
    out: list[ConsumedRecord] = []
    try:
        consumer.assign([tp])
        consumer.seek(tp, offset)
        deadline = time.monotonic() + READ_BUDGET_S
        while time.monotonic() < deadline:
            out += [r for r in await consumer.poll(200) if offset <= r.offset < stop]
            if out and out[-1].offset >= stop - 1:
                break
    finally:
        await consumer.close()
    return out[: stop - offset]


def _shown(r: ConsumedRecord, fmt: str) -> ShownRecord:
    headers = ", ".join(f"{k}={show(v, 'text')}" for k, v in r.headers)
    size = len(r.key or b"") + len(r.value or b"")
    return ShownRecord(r.offset, r.timestamp, show(r.key, fmt), show(r.value, fmt), headers, size)
