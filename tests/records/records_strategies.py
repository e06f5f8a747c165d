"""Hypothesis strategies shared by the record tests (a plain module: tests/ has no packages)."""

from __future__ import annotations

from hypothesis import strategies as st

from zkafka.records import Record

CODECS = [0, 1, 2, 3, 4]

nullable_bytes = st.none() | st.binary(max_size=64)
header_names = st.text(max_size=8)
headers = st.lists(st.tuples(header_names, nullable_bytes), max_size=3).map(tuple)
timestamps = st.integers(min_value=-1, max_value=1 << 44)


@st.composite
def record_lists(draw: st.DrawFn, min_size: int = 1, max_size: int = 12) -> list[Record]:
    """Records with increasing, possibly gapped offsets (as compaction leaves them)."""
    offset = draw(st.integers(min_value=0, max_value=1 << 40))
    records = []
    for _ in range(draw(st.integers(min_value=min_size, max_value=max_size))):
        records.append(
            Record(offset, draw(timestamps), draw(nullable_bytes), draw(nullable_bytes), draw(headers))
        )
        offset += draw(st.sampled_from([1, 1, 1, 2, 7, 300, 70_000]))
    return records
