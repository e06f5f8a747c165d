"""What `os.sendfile` would save on the fetch path, measured against what the broker does.

    .venv/bin/python benchmarks/fetch_copy.py [--mib 512] [--chunk-kib 1024] [--rounds 3]

The broker answers Fetch with stored batches read by `os.pread` into the response and written
through the uvloop transport: uvloop has no `loop.sendfile` (it is asyncio's abstract stub), so
zero-copy would mean writing around the transport. This measures the difference on loopback:
a segment-sized file (in the page cache) is sent to a reader thread that discards it,
(a) with os.sendfile, (b) with os.pread + socket.sendall, in chunks the size of a fetch
response. Prints GiB/s and the sender's CPU seconds per GiB for each; nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import resource
import socket
import tempfile
import threading
import time
from collections.abc import Callable

from rich.console import Console
from rich.table import Table


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_THREAD)
    return usage.ru_utime + usage.ru_stime


def _drain(sock: socket.socket, total: int) -> None:
    buffer = bytearray(1 << 20)
    view = memoryview(buffer)
    got = 0
    while got < total:
        n = sock.recv_into(view)
        if n == 0:
            break
        got += n


def _run(
    fd: int, size: int, chunk: int, send: Callable[[socket.socket, int, int, int], None]
) -> tuple[float, float]:
    """Send the file once through `send`; wall seconds and the sending thread's CPU seconds."""
    server = socket.create_server(("127.0.0.1", 0))
    out = socket.create_connection(server.getsockname())
    into, _ = server.accept()
    server.close()
    reader = threading.Thread(target=_drain, args=(into, size))
    reader.start()
    cpu, wall = _cpu(), time.perf_counter()
    for offset in range(0, size, chunk):
        send(out, fd, offset, min(chunk, size - offset))
    wall, cpu = time.perf_counter() - wall, _cpu() - cpu
    reader.join()
    out.close()
    into.close()
    return wall, cpu


def _sendfile(sock: socket.socket, fd: int, offset: int, count: int) -> None:
    while count:
        sent = os.sendfile(sock.fileno(), fd, offset, count)
        offset += sent
        count -= sent


def _pread(sock: socket.socket, fd: int, offset: int, count: int) -> None:
    sock.sendall(os.pread(fd, count, offset))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mib", type=int, default=512)
    ap.add_argument("--chunk-kib", type=int, default=1024)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    size, chunk = args.mib << 20, args.chunk_kib << 10
    gib = size / (1 << 30)
    with tempfile.NamedTemporaryFile(prefix="fetch-copy-") as f:
        block = os.urandom(1 << 20)
        for _ in range(args.mib):
            f.write(block)
        f.flush()
        fd = f.fileno()
        _run(fd, size, chunk, _pread)  # warm the page cache
        results: dict[str, list[tuple[float, float]]] = {"os.sendfile": [], "os.pread + sendall": []}
        for _ in range(args.rounds):  # interleaved, so load on the machine hits both alike
            results["os.sendfile"].append(_run(fd, size, chunk, _sendfile))
            results["os.pread + sendall"].append(_run(fd, size, chunk, _pread))
    table = Table(title=f"{args.mib} MiB over loopback in {args.chunk_kib} KiB chunks, best of {args.rounds}")
    for column in ("how", "GiB/s", "sender CPU s/GiB"):
        table.add_column(column, justify="right" if column != "how" else "left")
    best = {how: (min(w for w, _ in runs), min(c for _, c in runs)) for how, runs in results.items()}
    for how, (wall, cpu) in best.items():
        table.add_row(how, f"{gib / wall:.2f}", f"{cpu / gib:.3f}")
    console = Console()
    console.print(table)
    ratio = best["os.pread + sendall"][1] / max(best["os.sendfile"][1], 1e-9)
    console.print(f"pread costs {ratio:.2f}x the sender CPU of sendfile")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
