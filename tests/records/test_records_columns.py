"""`decode_columns` (records of many batches as numpy columns) equals `iter_records`, or declines.

The columnar decoder is a fast path for the Spark source: wherever it answers, its answer must
be exactly the per-record decoder's; where it declines (None), the caller uses `iter_records`.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from records_strategies import CODECS, record_lists

from zkafka.records import (
    LOG_APPEND_TIME,
    CorruptRecordError,
    InvalidRecordError,
    Record,
    build_batch,
    iter_headers,
    iter_records,
)
from zkafka.records.columns import RecordColumns, decode_columns

np = pytest.importorskip("numpy")


def as_records(columns: RecordColumns) -> list[tuple]:
    data = columns.data.tobytes()

    def span(start: int, length: int) -> bytes | None:
        return None if length < 0 else data[start : start + length]

    return [
        (int(o), int(t), int(tt), span(int(ks), int(kl)), span(int(vs), int(vl)))
        for o, t, tt, ks, kl, vs, vl in zip(
            columns.offsets,
            columns.timestamps,
            columns.timestamp_types,
            columns.key_starts,
            columns.key_lengths,
            columns.value_starts,
            columns.value_lengths,
            strict=True,
        )
    ]


def expected(buf: bytes, batches: list) -> list[tuple]:
    return [
        (r.offset, r.timestamp, h.timestamp_type, r.key, r.value)
        for h, first in batches
        for r in iter_records(buf, h)
        if r.offset >= first
    ]


def no_headers(records: list[Record], spread: int) -> list[Record]:
    """The same records without headers and with timestamps within `spread` ms of each other."""
    return [Record(r.offset, 1_700_000_000_000 + r.timestamp % spread, r.key, r.value) for r in records]


@st.composite
def fetched(draw: st.DrawFn, *, headers: bool) -> tuple[bytes, list]:
    """Several batches back to back, as a fetch returns them, each with a first offset to keep."""
    chunks, batches, position, offset = [], [], 0, draw(st.integers(0, 1 << 40))
    for _ in range(draw(st.integers(1, 4))):
        records = draw(record_lists(max_size=30))
        shift = offset - records[0].offset
        records = [Record(r.offset + shift, r.timestamp, r.key, r.value, r.headers) for r in records]
        if not headers:
            records = no_headers(records, draw(st.sampled_from([1, 1000, 1 << 27])))
        batch = build_batch(
            records,
            compression=draw(st.sampled_from(CODECS)),
            timestamp_type=draw(st.sampled_from([0, 0, LOG_APPEND_TIME])),
        )
        chunks.append(batch)
        offset = records[-1].offset + draw(st.integers(1, 5))
    buf = b"".join(chunks)
    headers_ = list(iter_headers(buf))
    for h in headers_:
        first = draw(st.sampled_from([h.base_offset, h.base_offset + 1, h.last_offset, h.last_offset + 1]))
        batches.append((h, max(first, position)))
        position = h.next_offset
    return buf, batches


@settings(max_examples=100, deadline=None)
@given(fetch=fetched(headers=False))
def test_records_without_headers_decode_by_columns_exactly(fetch: tuple[bytes, list]) -> None:
    buf, batches = fetch
    columns = decode_columns(buf, batches)
    assert columns is not None
    assert as_records(columns) == expected(buf, batches)


@settings(max_examples=100, deadline=None)
@given(fetch=fetched(headers=True))
def test_with_headers_columns_decline_or_agree(fetch: tuple[bytes, list]) -> None:
    buf, batches = fetch
    columns = decode_columns(buf, batches)
    has_headers = any(r.headers for h, _ in batches for r in iter_records(buf, h))
    if has_headers:
        assert columns is None
    if columns is not None:
        assert as_records(columns) == expected(buf, batches)


@settings(max_examples=100, deadline=None)
@given(fetch=fetched(headers=False), data=st.data())
def test_corrupt_records_decline_or_agree(fetch: tuple[bytes, list], data: st.DataObject) -> None:
    """Bytes flipped inside the records (headers left intact, as CRCs are checked before): the
    columnar decoder never returns something `iter_records` would not."""
    buf, batches = fetch
    raw = bytearray(buf)
    for _ in range(data.draw(st.integers(1, 4))):
        h, _ = data.draw(st.sampled_from(batches))
        if h.compression or h.size <= 61:
            continue
        at = data.draw(st.integers(h.position + 61, h.position + h.size - 1))
        raw[at] = data.draw(st.integers(0, 255))
    buf = bytes(raw)
    columns = decode_columns(buf, batches)
    try:
        want = expected(buf, batches)
    except (CorruptRecordError, InvalidRecordError):
        assert columns is None
    else:
        if columns is not None:
            assert as_records(columns) == want


def test_record_count_beyond_the_bytes_is_declined_before_walking() -> None:
    buf = build_batch([Record(0, 5, None, b"v")])
    (h,) = iter_headers(buf)
    assert decode_columns(buf, [(h._replace(records_count=1 << 30), 0)]) is None


def test_empty_fetch() -> None:
    columns = decode_columns(b"", [])
    assert columns is not None and len(columns) == 0
