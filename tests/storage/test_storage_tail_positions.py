"""Tail positions: where the active segment's last batches start, noted at append time
(`zkafka.storage.tail_positions`). Reads near the end start at the batch itself instead of
scanning from the offset index; they must return exactly what a scan from the file's start
finds, after appends as leader and follower, truncation, rolls and a crash (SIGKILL) alike."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from storage_helpers import BASE_TS, append, append_follower, batch, small_config, with_offset

from zkafka.storage.config import LogConfig
from zkafka.storage.log import Log
from zkafka.storage.tail_positions import LIMIT, TailPositions

SRC = str(Path(__file__).resolve().parents[2] / "src")


def expected(log: Log, offset: int, end: int) -> bytes:
    """What `log.read(offset, big, max_offset=end)` must return, found by walking every segment's
    headers from byte 0 (no index, no tail): the batches of the first segment holding `offset`
    or later, from the one holding it, that end before `end`."""
    for seg in log.segments():
        found = [(p, h) for p, h in seg.iter_headers() if h.last_offset >= offset]
        if not found:
            continue
        kept = [(p, h) for p, h in found if h.last_offset < end]
        if not kept or kept[0][1] is not found[0][1]:
            return b""
        start, last = kept[0][0], kept[-1]
        return seg.read_bytes(start, last[0] + last[1].size - start)
    return b""


def check_every_offset(log: Log) -> None:
    """Each fetch offset of the log, with each bound at or after it, reads what the scan finds."""
    start, leo = log.log_start_offset, log.log_end_offset
    for offset in range(start, leo + 1):
        for end in sorted({offset, min(offset + 1, leo), min(offset + 3, leo), leo}):
            if end < offset:
                continue
            got = log.read(offset, 1 << 20, max_offset=end).read_bytes()
            assert got == expected(log, offset, end), (offset, end)


def test_tail_positions_lookups_and_bounds() -> None:
    tail = TailPositions()
    assert tail.start_of(5) == -1 and tail.position_of(5) == -1
    for i in range(10):
        tail.add(10 + 3 * i, 100 * i)  # batches of three offsets
    assert tail.start_of(9) == -1  # before the first noted batch: the index's business
    assert tail.start_of(10) == 0 and tail.start_of(12) == 0 and tail.start_of(13) == 100
    assert tail.start_of(1000) == 900  # past the last: scan from the last noted batch
    assert tail.position_of(13) == 100 and tail.position_of(14) == -1
    tail.truncate(450)  # the file cut at byte 450: batches at 500 and later are gone
    assert len(tail) == 5 and tail.start_of(1000) == 400
    tail.truncate(0)
    assert len(tail) == 0 and tail.start_of(10) == -1
    for i in range(3 * LIMIT):
        tail.add(i, 10 * i)
        assert len(tail) <= LIMIT
    assert tail.position_of(3 * LIMIT - 1) == 10 * (3 * LIMIT - 1)
    assert tail.start_of(0) == -1  # the oldest were dropped


def test_leader_appends_read_at_every_offset(tmp_path: Path) -> None:
    # a sparse index (no entry in the first 64 KiB): every lookup would scan from byte 0
    log = Log(tmp_path / "t-0", LogConfig(index_interval_bytes=64 * 1024))
    for i in range(2 * LIMIT + 7):
        append(log, batch(1 + i % 3, ts=BASE_TS + i, value_size=5 + i % 7))
    tail = log.active_segment._tail
    assert tail is not None and 0 < len(tail) <= LIMIT
    check_every_offset(log)
    log.close()


def test_follower_appends_with_gaps_and_several_batches_per_append(tmp_path: Path) -> None:
    log = Log(tmp_path / "t-0", LogConfig(index_interval_bytes=64 * 1024))
    offset = 0
    for i in range(40):
        data = b""
        for _ in range(1 + i % 3):  # several batches in one append, as a fetch brings them
            data += with_offset(batch(2, ts=BASE_TS + i), offset, epoch=1)
            offset += 2 + (i % 4 == 0) * 5  # a compacted leader's gaps
        append_follower(log, data)
    check_every_offset(log)
    log.close()


def test_truncation_drops_the_positions_after_the_cut(tmp_path: Path) -> None:
    log = Log(tmp_path / "t-0", LogConfig(index_interval_bytes=64 * 1024))
    for i in range(30):
        append(log, batch(2, ts=BASE_TS + i, value_size=10))
    log.truncate_to(37)  # inside the batch 36-37: it goes whole
    assert log.log_end_offset == 37
    tail = log.active_segment._tail
    assert tail is not None and max(tail.bases) < 36
    # different sizes now sit where the cut batches were: stale positions would misread
    for i in range(10):
        append(log, batch(1 + i % 4, ts=BASE_TS + 100 + i, value_size=50 + i))
    check_every_offset(log)
    log.truncate_to(3)
    check_every_offset(log)
    append(log, batch(5, value_size=3))
    check_every_offset(log)
    log.close()


def test_roll_leaves_older_segments_to_the_index(tmp_path: Path) -> None:
    log = Log(tmp_path / "t-0", small_config(segment_bytes=2048, index_interval_bytes=512))
    for i in range(80):
        append(log, batch(1 + i % 3, ts=BASE_TS + i, value_size=20))
    segments = log.segments()
    assert len(segments) > 3
    assert all(seg._tail is None for seg in segments[:-1])
    assert segments[-1]._tail is not None
    check_every_offset(log)
    log.close()


def test_reopened_log_reads_old_and_new_batches(tmp_path: Path) -> None:
    config = LogConfig(index_interval_bytes=1024)
    log = Log(tmp_path / "t-0", config)
    for i in range(50):
        append(log, batch(1 + i % 2, ts=BASE_TS + i))
    log.close()
    log = Log(tmp_path / "t-0", config, had_clean_shutdown=True)
    assert log.active_segment._tail is None  # nothing noted until the next append
    for i in range(20):
        append(log, batch(3, ts=BASE_TS + 100 + i))
    check_every_offset(log)
    log.close()


def test_recovery_after_sigkill(tmp_path: Path) -> None:
    """A process appending is killed with SIGKILL after a torn write; the reopened log cuts the
    torn batch, and reads at every offset, before and after new appends, match a full scan."""
    log_dir = tmp_path / "t-0"
    child = textwrap.dedent(
        f"""
        import os, signal, sys
        sys.path[:0] = [{SRC!r}, {str(Path(__file__).parent)!r}]
        from storage_helpers import BASE_TS, append, batch
        from zkafka.storage.config import LogConfig
        from zkafka.storage.log import Log
        log = Log({str(log_dir)!r}, LogConfig(index_interval_bytes=1024))
        for i in range(60):
            append(log, batch(1 + i % 3, ts=BASE_TS + i, value_size=7))
        torn = batch(4, value_size=30)
        with open(log.active_segment.log_path, "ab") as f:
            f.write(torn[: len(torn) // 2])
        print(log.log_end_offset, flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
        """
    )
    proc = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, timeout=60)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    leo = int(proc.stdout.split()[0])
    log = Log(log_dir, LogConfig(index_interval_bytes=1024), had_clean_shutdown=False)
    assert log.log_end_offset == leo
    check_every_offset(log)
    for i in range(2 * LIMIT):
        append(log, batch(1 + i % 2, ts=BASE_TS + 500 + i))
    check_every_offset(log)
    size = os.path.getsize(log.active_segment.log_path)
    assert size == log.active_segment.size
    log.close()
