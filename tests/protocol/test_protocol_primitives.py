"""The primitive wire types on their own: exact bytes, limits, and bad input."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from zkafka.protocol import primitives as prim


def view(hex_or_bytes: str | bytes) -> tuple[memoryview, int]:
    raw = bytes.fromhex(hex_or_bytes) if isinstance(hex_or_bytes, str) else hex_or_bytes
    return memoryview(raw), len(raw)


@pytest.mark.parametrize(
    ("value", "encoded"),
    [(0, "00"), (1, "01"), (127, "7f"), (128, "8001"), (300, "ac02"), (16383, "ff7f"), (16384, "808001"),
     (2**32 - 1, "ffffffff0f")],
)  # fmt: skip
def test_uvarint_bytes(value: int, encoded: str) -> None:
    out = bytearray()
    prim.write_uvarint(out, value)
    assert out.hex() == encoded
    buf, end = view(encoded)
    assert prim.read_uvarint(buf, 0, end) == (value, end)


@given(st.integers(0, 2**32 - 1))
def test_uvarint_round_trip(value: int) -> None:
    out = bytearray()
    prim.write_uvarint(out, value)
    assert prim.read_uvarint(memoryview(bytes(out)), 0, len(out)) == (value, len(out))


@pytest.mark.parametrize("bad", ["", "80", "ffffffff", "ffffffff10", "ffffffffff01"])
def test_uvarint_rejects_truncated_and_oversized(bad: str) -> None:
    buf, end = view(bad)
    with pytest.raises(prim.WireFormatError):
        prim.read_uvarint(buf, 0, end)


@pytest.mark.parametrize("value", [-1, 2**32])
def test_uvarint_refuses_to_encode_out_of_range(value: int) -> None:
    with pytest.raises(Exception, match="out of range"):
        prim.write_uvarint(bytearray(), value)


def test_strings_classic_and_compact() -> None:
    out = bytearray()
    prim.write_string(out, "hé")
    prim.write_nullable_string(out, None)
    prim.write_compact_string(out, "")
    prim.write_compact_nullable_string(out, None)
    prim.write_compact_string(out, "ab")
    assert out.hex() == "000368c3a9ffff0100036162"
    buf, end = memoryview(bytes(out)), len(out)
    s1, p = prim.read_string(buf, 0, end)
    s2, p = prim.read_nullable_string(buf, p, end)
    s3, p = prim.read_compact_string(buf, p, end)
    s4, p = prim.read_compact_nullable_string(buf, p, end)
    s5, p = prim.read_compact_string(buf, p, end)
    assert (s1, s2, s3, s4, s5, p) == ("hé", None, "", None, "ab", end)


@pytest.mark.parametrize(
    ("reader", "raw"),
    [
        (prim.read_string, "ffff"),  # null where not nullable
        (prim.read_string, "0005 6162"),  # shorter than its length
        (prim.read_string, "00"),  # no room for the length
        (prim.read_compact_string, "00"),  # compact null where not nullable
        (prim.read_bytes, "fffffffe"),
        (prim.read_compact_bytes, "0a 00"),
        (prim.read_records, "00000010 00"),
        (prim.read_uuid, "00" * 15),
    ],
)
def test_readers_reject_bad_lengths(reader: object, raw: str) -> None:
    buf, end = view(raw)
    with pytest.raises(prim.WireFormatError):
        reader(buf, 0, end)  # type: ignore[operator]


def test_readers_never_look_past_end() -> None:
    buf = memoryview(bytes.fromhex("0003616263ffffff"))
    with pytest.raises(prim.WireFormatError):
        prim.read_string(buf, 0, 4)  # the string would end at 5, the frame at 4


def test_records_null_and_empty_are_distinct() -> None:
    for compact in (False, True):
        out = bytearray()
        out = prim.write_records(out, None, None, compact)
        out = prim.write_records(out, None, b"", compact)
        buf, end = memoryview(bytes(out)), len(out)
        read = prim.read_compact_records if compact else prim.read_records
        first, p = read(buf, 0, end)
        second, p = read(buf, p, end)
        assert first is None and second is not None and bytes(second) == b"" and p == end


def test_array_length_is_bounded_by_remaining_bytes() -> None:
    buf, end = view("00000003" + "00" * 11)
    assert prim.read_array_len(buf, 0, end, False, False, 3) == (3, 4)  # 3 x 3 bytes fit in 11
    with pytest.raises(prim.WireFormatError):
        prim.read_array_len(buf, 0, end, False, False, 4)  # 3 x 4 bytes > 11 left
    buf, end = view("ffffffff")
    assert prim.read_array_len(buf, 0, end, False, True, 4) == (-1, 4)
    with pytest.raises(prim.WireFormatError):
        prim.read_array_len(buf, 0, end, False, False, 4)


def test_skip_tagged_field() -> None:
    buf, end = view("05 03 aabbcc ff")
    assert prim.skip_tagged_field(buf, 0, end) == (5, 2, 5)
    buf, end = view("05 09 aabbcc")
    with pytest.raises(prim.WireFormatError):
        prim.skip_tagged_field(buf, 0, end)
