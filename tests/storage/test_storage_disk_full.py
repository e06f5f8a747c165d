"""A log dir that runs out of space (a tiny tmpfs, Linux and root only): the append that does not
fit fails with LogDirIOError (the broker answers KAFKA_STORAGE_ERROR, code 56) and leaves nothing
of itself behind; once there is room again the log appends on, and reopened it holds exactly what
was appended before and after."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from storage_helpers import append, batch, read_all

from zkafka.local import mounts
from zkafka.records.batch import validate_batches
from zkafka.storage.config import LogConfig
from zkafka.storage.errors import LogDirIOError
from zkafka.storage.log import Log

pytestmark = pytest.mark.skipif(mounts.available() is not None, reason=f"{mounts.available()}")


@pytest.fixture
def tiny_fs(tmp_path: Path) -> Iterator[Path]:
    with mounts.mounted_tmpfs(tmp_path / "fs", "1m") as path:
        yield path


@pytest.mark.timeout(60)
def test_an_append_that_does_not_fit_fails_cleanly_and_the_log_goes_on_after(tiny_fs: Path) -> None:
    log = Log(tiny_fs / "t-0", LogConfig())
    try:
        for _ in range(5):
            append(log, batch(10, value_size=500))
        end, size = log.log_end_offset, log.size
        mounts.fill(tiny_fs)
        with pytest.raises(LogDirIOError, match="No space left") as failed:
            append(log, batch(10, value_size=500))
        assert failed.value.path.startswith(str(tiny_fs / "t-0"))
        assert (log.log_end_offset, log.size) == (end, size)  # the failed write was cut off
        mounts.unfill(tiny_fs)
        append(log, batch(10, value_size=500))
        assert log.log_end_offset == end + 10
    finally:
        log.close()
    reopened = Log(tiny_fs / "t-0", LogConfig())
    try:
        headers = validate_batches(bytearray(read_all(reopened)))
        assert [h.base_offset for h in headers] == list(range(0, 60, 10))
        assert reopened.log_end_offset == 60
    finally:
        reopened.close()
