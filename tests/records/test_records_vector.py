"""Known byte vectors, written out by hand from the v2 layout (wire-protocol.md §2.3). The CRCs
were computed with kafka-python's pure-Python CRC-32C, an implementation independent of ours."""

from __future__ import annotations

from zkafka.records import Record, build_batch, iter_records, validate_batches

T = 1_700_000_000_000  # 0x0000018bcfe56800

ONE_RECORD = bytes.fromhex(
    "0000000000000000"  # baseOffset 0
    "00000039"  # batchLength 57 = 49 header bytes after this field + 8 record bytes
    "ffffffff"  # partitionLeaderEpoch -1
    "02"  # magic
    "965a94b1"  # crc
    "0000"  # attributes: no compression, CreateTime
    "00000000"  # lastOffsetDelta
    "0000018bcfe56800"  # baseTimestamp
    "0000018bcfe56800"  # maxTimestamp
    "ffffffffffffffff"  # producerId -1
    "ffff"  # producerEpoch -1
    "ffffffff"  # baseSequence -1
    "00000001"  # recordsCount
    "0e"  # record length 7
    "00"  # attributes
    "00"  # timestampDelta 0
    "00"  # offsetDelta 0
    "01"  # keyLength -1: null
    "02"  # valueLength 1
    "61"  # "a"
    "00"  # no headers
)

TWO_RECORDS = bytes.fromhex(
    "000000000000002a"  # baseOffset 42
    "00000046"  # batchLength 70
    "00000005"  # partitionLeaderEpoch 5
    "02"
    "8c3b1af3"  # crc
    "0000"
    "00000002"  # lastOffsetDelta 2
    "0000018bcfe56800"  # baseTimestamp T
    "0000018bcfe5692c"  # maxTimestamp T + 300
    "00000000000003e8"  # producerId 1000
    "0001"  # producerEpoch 1
    "00000000"  # baseSequence 0
    "00000002"
    # offset 42, key "k", null value, header ("h", null)
    "14 00 00 00 02 6b 01 02 02 68 01"
    # offset 44 (a gap), timestamp T + 300 (zigzag 600 = d8 04), null key, value "xy"
    "12 00 d804 04 01 04 7879 00"
)


def test_one_record_vector() -> None:
    assert build_batch([Record(0, T, None, b"a")]) == ONE_RECORD
    (header,) = validate_batches(ONE_RECORD)
    assert header.crc == 0x965A94B1
    assert list(iter_records(ONE_RECORD)) == [Record(0, T, None, b"a")]


def test_two_record_vector() -> None:
    records = [Record(42, T, b"k", None, (("h", None),)), Record(44, T + 300, None, b"xy")]
    built = build_batch(
        records,
        last_offset_delta=2,
        producer_id=1000,
        producer_epoch=1,
        base_sequence=0,
        partition_leader_epoch=5,
    )
    assert built == TWO_RECORDS
    (header,) = validate_batches(TWO_RECORDS)
    assert (header.base_offset, header.last_offset, header.max_timestamp) == (42, 44, T + 300)
    assert list(iter_records(TWO_RECORDS)) == records
