"""Checkpoint files, meta.properties: Kafka's text formats, byte for byte, and tolerant reads."""

from __future__ import annotations

from pathlib import Path

import pytest

from zkafka.storage.checkpoint import (
    LeaderEpochCheckpointFile,
    OffsetCheckpointFile,
    check_meta_properties,
    read_meta_properties,
    write_meta_properties,
)
from zkafka.storage.errors import CheckpointError, InconsistentMetadataError
from zkafka.storage.naming import TopicPartition as TP


def test_offset_checkpoint_is_byte_exact(tmp_path: Path) -> None:
    cp = OffsetCheckpointFile(tmp_path / "recovery-point-offset-checkpoint")
    cp.write({TP("foo", 0): 5, TP("bar", 1): 7})
    assert cp.path.read_bytes() == b"0\n2\nfoo 0 5\nbar 1 7\n"
    assert cp.read() == {TP("foo", 0): 5, TP("bar", 1): 7}
    assert not (tmp_path / "recovery-point-offset-checkpoint.tmp").exists()
    cp.write({})
    assert cp.path.read_bytes() == b"0\n0\n"
    assert cp.read() == {}


def test_offset_checkpoint_tolerant_reads(tmp_path: Path) -> None:
    cp = OffsetCheckpointFile(tmp_path / "cp")
    assert cp.read() == {}  # missing
    cp.path.write_bytes(b"")
    assert cp.read() == {}  # 0-byte file, as Kafka creates
    cp.path.write_bytes(b"0\n1\nfoo  0\t9\n")  # fields split on any whitespace
    assert cp.read() == {TP("foo", 0): 9}
    cp.path.write_bytes(b"0\n1\nfoo 0 9")  # no trailing newline
    assert cp.read() == {TP("foo", 0): 9}


@pytest.mark.parametrize(
    "content",
    [
        b"1\n0\n",  # unknown version
        b"0\n",  # truncated header
        b"0\nx\n",  # bad count
        b"0\n2\nfoo 0 1\n",  # count mismatch
        b"0\n1\nfoo 0\n",  # missing field
        b"0\n1\nfoo x 1\n",  # not a number
        b"0\n1\nfoo 0 1 2\n",  # extra field
        b"\xff\xfe",  # not text
    ],
)
def test_offset_checkpoint_malformed(tmp_path: Path, content: bytes) -> None:
    cp = OffsetCheckpointFile(tmp_path / "cp")
    cp.path.write_bytes(content)
    with pytest.raises(CheckpointError):
        cp.read()


def test_leader_epoch_checkpoint_format(tmp_path: Path) -> None:
    f = LeaderEpochCheckpointFile(tmp_path / "leader-epoch-checkpoint")
    f.write([(0, 0), (3, 120)])
    assert f.path.read_bytes() == b"0\n2\n0 0\n3 120\n"
    assert f.read() == [(0, 0), (3, 120)]
    f.path.write_bytes(b"0\n1\n1 2 3\n")
    with pytest.raises(CheckpointError):
        f.read()


def test_meta_properties_round_trip(tmp_path: Path) -> None:
    assert read_meta_properties(tmp_path) is None
    write_meta_properties(tmp_path, 3, "abc_DEF-123")
    text = (tmp_path / "meta.properties").read_text()
    lines = text.splitlines()
    assert lines[0] == "#" and lines[1].startswith("#")
    assert set(lines[2:]) == {"version=0", "broker.id=3", "cluster.id=abc_DEF-123"}
    props = read_meta_properties(tmp_path)
    assert props == {"version": "0", "broker.id": "3", "cluster.id": "abc_DEF-123"}
    assert check_meta_properties(props, tmp_path, 3, None) == "abc_DEF-123"
    assert check_meta_properties(props, tmp_path, 3, "abc_DEF-123") == "abc_DEF-123"
    with pytest.raises(InconsistentMetadataError, match="broker 3"):
        check_meta_properties(props, tmp_path, 4, None)
    with pytest.raises(InconsistentMetadataError, match="cluster"):
        check_meta_properties(props, tmp_path, 3, "other")


def test_meta_properties_v0_without_cluster_and_stale_tmp(tmp_path: Path) -> None:
    (tmp_path / "meta.properties.tmp").write_text("garbage")
    write_meta_properties(tmp_path, 1, None)
    (tmp_path / "meta.properties.tmp").write_text("garbage")
    props = read_meta_properties(tmp_path)
    assert props == {"version": "0", "broker.id": "1"}
    assert not (tmp_path / "meta.properties.tmp").exists()
    assert check_meta_properties(props, tmp_path, 1, "any") is None
    (tmp_path / "meta.properties").write_text("version=1\nnode.id=1\ncluster.id=c\n")
    assert check_meta_properties(read_meta_properties(tmp_path) or {}, tmp_path, 1, "c") == "c"
    (tmp_path / "meta.properties").write_text("version=7\n")
    with pytest.raises(InconsistentMetadataError, match="version"):
        check_meta_properties(read_meta_properties(tmp_path) or {}, tmp_path, 1, None)
