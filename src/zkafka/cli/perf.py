"""`zkafka perf storage`: the produce path's storage cost against raw `os.write`.

One realistic batch (~100-byte records, `--batch-bytes` in total) is appended over and over
through `Log.append` exactly as the broker does it -- copy the request bytes into a bytearray,
parse and CRC-check the headers (`validate_batches`), assign offsets and the leader epoch in
place, write -- and the same bytes are written with plain `os.write` to a file in the same dir.
The two are interleaved in rounds so page-cache writeback hits both alike, and each path's rate
is taken from its median round (the machine is shared: single slow rounds are noise). A final row
reads the log back through `Log.read` + `FetchSlice.read_bytes` (the fetch path without the
socket).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

MIB = 1024 * 1024
ROUNDS = 16


@dataclass(frozen=True)
class StorageBenchResult:
    batch_bytes: int
    records_per_batch: int
    batches: int
    raw_seconds: float
    log_seconds: float
    read_seconds: float

    @property
    def total_bytes(self) -> int:
        return self.batch_bytes * self.batches

    def mb_per_s(self, seconds: float) -> float:
        return self.total_bytes / seconds / 1e6 if seconds > 0 else float("inf")

    def batches_per_s(self, seconds: float) -> float:
        return self.batches / seconds if seconds > 0 else float("inf")

    @property
    def ratio(self) -> float:
        return self.raw_seconds / self.log_seconds if self.log_seconds > 0 else float("inf")


def build_bench_batch(batch_bytes: int, record_size: int = 100) -> tuple[bytes, int]:
    """A v2 batch of ~`record_size`-byte values, as large as fits in `batch_bytes`."""
    from zkafka.records.record import simple_batch

    now = int(time.time() * 1000)
    payload = bytes((i * 7 + 13) % 251 for i in range(record_size))
    n = max(1, batch_bytes // (record_size + 12))
    while True:
        pairs = [(f"key-{i:06d}".encode(), payload) for i in range(n)]
        batch = simple_batch(pairs, timestamp=now)
        if len(batch) <= batch_bytes or n == 1:
            return batch, n
        n -= max(1, (len(batch) - batch_bytes) // (record_size + 12))


def run_storage_bench(
    batch_bytes: int = 16384, total_mb: int = 512, directory: Path | None = None
) -> StorageBenchResult:
    from zkafka.records.batch import validate_batches
    from zkafka.storage.config import LogConfig
    from zkafka.storage.log import Log

    batch, records = build_bench_batch(batch_bytes)
    count = max(ROUNDS, total_mb * MIB // len(batch))
    per_round = count // ROUNDS
    count = per_round * ROUNDS
    root = Path(tempfile.mkdtemp(prefix="zkafka-perf-", dir=directory))
    try:
        log = Log(root / "perf-0", LogConfig())
        raw_fd = os.open(root / "raw.bin", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        raw_rounds: list[float] = []
        log_rounds: list[float] = []
        append = log.append
        write = os.write
        try:
            for _ in range(ROUNDS):
                t0 = time.perf_counter()
                for _ in range(per_round):
                    write(raw_fd, batch)
                t1 = time.perf_counter()
                for _ in range(per_round):
                    buf = bytearray(batch)  # the request buffer the broker would hold
                    append(buf, validate_batches(buf), leader_epoch=0)
                t2 = time.perf_counter()
                raw_rounds.append(t1 - t0)
                log_rounds.append(t2 - t1)
            raw_s = statistics.median(raw_rounds) * ROUNDS
            log_s = statistics.median(log_rounds) * ROUNDS
            t0 = time.perf_counter()
            offset, end = 0, log.log_end_offset
            while offset < end:
                chunk = log.read(offset, MIB)
                chunk.read_bytes()
                offset = chunk.first_batch_offset + records * (chunk.size // len(batch))
            read_s = time.perf_counter() - t0
        finally:
            os.close(raw_fd)
            log.close()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return StorageBenchResult(len(batch), records, count, raw_s, log_s, read_s)


def print_storage_result(result: StorageBenchResult) -> None:
    from rich.table import Table

    from zkafka.cli.output import console

    table = Table(
        title=f"storage: {result.batches} batches of {result.batch_bytes} B "
        f"({result.records_per_batch} records), {result.total_bytes / MIB:.0f} MiB each"
    )
    table.add_column("path")
    table.add_column("MB/s", justify="right")
    table.add_column("batches/s", justify="right")
    table.add_column("µs/batch", justify="right")
    table.add_column("vs raw write", justify="right")
    rows = [
        ("raw os.write", result.raw_seconds),
        ("Log.append (copy + validate + offsets + write)", result.log_seconds),
        ("Log.read + read_bytes", result.read_seconds),
    ]
    for name, seconds in rows:
        table.add_row(
            name,
            f"{result.mb_per_s(seconds):,.0f}",
            f"{result.batches_per_s(seconds):,.0f}",
            f"{seconds / result.batches * 1e6:.1f}",
            f"{result.raw_seconds / seconds:.0%}" if seconds > 0 else "-",
        )
    console().print(table)


def register(sub: argparse._SubParsersAction) -> None:
    perf = sub.add_parser("perf", help="performance tests")
    perf_sub = perf.add_subparsers(dest="perf_command", metavar="TEST")
    from zkafka.cli.perf_clients import add_client_perf_commands

    add_client_perf_commands(perf_sub)
    storage = perf_sub.add_parser("storage", help="Log.append throughput against raw os.write")
    storage.add_argument("--batch-bytes", type=int, default=16384, help="batch size in bytes (default 16384)")
    storage.add_argument("--total-mb", type=int, default=512, help="MiB written by each path (default 512)")
    storage.add_argument(
        "--dir", type=Path, default=None, help="directory for the files (default: the temp dir)"
    )
    storage.set_defaults(func=_run_storage)
    perf.set_defaults(func=lambda _args: perf.print_help() or 2)


def _run_storage(args: argparse.Namespace) -> int:
    if args.batch_bytes < 128 or args.total_mb < 1:
        from zkafka.cli.main import CliError

        raise CliError("--batch-bytes must be >= 128 and --total-mb >= 1")
    if args.dir is not None and not args.dir.is_dir():
        from zkafka.cli.main import CliError

        raise CliError(f"--dir {args.dir} is not a directory")
    print_storage_result(run_storage_bench(args.batch_bytes, args.total_mb, args.dir))
    return 0
