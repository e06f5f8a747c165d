"""Down-conversion cost: what a Fetch v0-v3 client costs the broker over a Fetch v4+ client.

    .venv/bin/python benchmarks/downconvert_bench.py [--records 200000] [--record-size 100]

Builds the record batches a producer would store (1,000 records per batch, each codec), then times,
in this process, what the broker does per fetched byte: for a v4+ fetch nothing but the copy of the
stored bytes; for a v0-v3 fetch the broker's lazy path, `zkafka.records.legacy.down_convert_within`
taking the stored batches one at a time (KIP-283), to magic 1 (and magic 0).
Prints records/s and the ratio. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import time

from rich.console import Console
from rich.table import Table

from zkafka.records import Record, build_batch
from zkafka.records.compression import GZIP, LZ4, NONE, ZSTD, codec_name
from zkafka.records.legacy import down_convert_within


def batches(records: int, size: int, codec: int) -> list[bytes]:
    per_batch = 1000
    value = b"x" * size
    return [
        build_batch(
            [Record(base + i, 1_700_000_000_000 + i, b"k%d" % i, value) for i in range(per_batch)],
            compression=codec,
        )
        for base in range(0, records, per_batch)
    ]


def convert(stored: list[bytes], magic: int) -> int:
    """What the fetch handler does for one v0-v3 partition fetch with no byte limit in the way."""
    return down_convert_within(iter(stored), magic, 1 << 62).records


def timed(fn, repeat: int = 3) -> float:  # type: ignore[no-untyped-def]
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - started)
    return best


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--record-size", type=int, default=100)
    args = ap.parse_args()
    table = Table(title=f"{args.records:,} records of {args.record_size} B, 1,000 per batch")
    for column in (
        "codec",
        "v4+ fetch records/s (copy)",
        "down-converted to magic 1",
        "magic 0",
        "ratio v4+ : magic 1",
    ):
        table.add_column(column, justify="right")
    for codec in (NONE, GZIP, LZ4, ZSTD):
        stored = batches(args.records, args.record_size, codec)
        data = b"".join(stored)
        copy_s = timed(lambda data=data: bytes(bytearray(data)))
        magic1_s = timed(lambda stored=stored: convert(stored, 1), repeat=1)
        magic0_s = timed(lambda stored=stored: convert(stored, 0), repeat=1)
        n = args.records
        table.add_row(
            codec_name(codec),
            f"{n / copy_s:,.0f}",
            f"{n / magic1_s:,.0f}",
            f"{n / magic0_s:,.0f}",
            f"{magic1_s / copy_s:,.0f}x",
        )
    Console(width=160).print(table)


if __name__ == "__main__":
    main()
