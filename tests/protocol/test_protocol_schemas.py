"""The specs, the generated message classes, the advertised table, and package rules."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import zkafka.protocol
from zkafka.protocol import generate
from zkafka.protocol.api_versions import BROKER_API_VERSIONS
from zkafka.protocol.codec import supported_versions
from zkafka.protocol.schema import F, SpecError, Versions, api
from zkafka.protocol.schemas import SPECS

PACKAGE_DIR = Path(zkafka.protocol.__file__).parent

# The versions the codec must speak (the brief; reference/wire-protocol.md §1).
REQUIRED = {
    0: (0, 9), 1: (0, 12), 2: (0, 6), 3: (0, 9), 4: (0, 5), 5: (0, 3), 6: (0, 7), 7: (1, 3), 8: (0, 8),
    9: (0, 6), 10: (0, 3), 11: (0, 6), 12: (0, 4), 13: (0, 4), 14: (0, 4), 15: (0, 5), 16: (0, 3),
    17: (0, 1), 18: (0, 3), 19: (0, 5), 20: (0, 4), 21: (0, 2), 22: (0, 2), 23: (0, 4), 32: (0, 4),
    33: (0, 2), 37: (0, 2), 42: (0, 2), 43: (0, 2), 44: (0, 1), 45: (0, 0), 46: (0, 0), 47: (0, 0),
}  # fmt: skip


def test_codec_covers_the_required_versions() -> None:
    have = supported_versions()
    for key, (lo, hi) in REQUIRED.items():
        assert have[key][0] <= lo and have[key][1] >= hi, SPECS[key].name


def test_generated_messages_are_current() -> None:
    assert generate.stale_files() == []


def test_regenerating_yields_identical_output(tmp_path: Path) -> None:
    generate.write(tmp_path)
    for name, text in generate.rendered_files().items():
        assert (tmp_path / name).read_text() == text
        assert (PACKAGE_DIR / "messages" / name).read_text() == text
    assert generate.write(tmp_path) == []  # a second run changes nothing
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(generate.rendered_files())


def test_generate_check_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert generate.main(["--check"]) == 0
    assert capsys.readouterr().out == ""


# The only flexible versions the broker advertises: controller-answered admin APIs, the admin
# APIs Kafka's clients use when offered (client quotas and SCRAM credentials among them), Fetch
# and Metadata with topic ids, UpdateMetadata v6-7 which zkafka's controller sends for its
# topic ids, and the transaction APIs of Kafka 3.x/4.x clients with OffsetFetch's
# require_stable (KIP-360/447/890) (api_versions.py).
FLEXIBLE_ADVERTISED = {
    1: [12, 13],
    3: [9, 10, 11, 12],
    6: [6, 7],
    9: [6, 7, 8],
    16: [3, 4],
    22: [2, 3, 4],
    24: [3, 4],
    25: [3],
    26: [3],
    27: [1],
    28: [3],
    35: [2, 3, 4],
    43: [2],
    44: [1],
    45: [0],
    46: [0],
    48: [1],
    49: [1],
    50: [0],
    51: [0],
    60: [0],
    61: [0],
    65: [0],
    66: [0, 1],
}


def test_broker_table_is_servable_and_non_flexible() -> None:
    codec = supported_versions()
    for key, (lo, hi) in BROKER_API_VERSIONS.items():
        spec = SPECS[key]
        assert codec[key][0] <= lo <= hi <= codec[key][1], spec.name
        flexible = [v for v in range(lo, hi + 1) if spec.is_flexible(v)]
        assert flexible == FLEXIBLE_ADVERTISED.get(key, []), (
            f"{spec.name} advertises flexible versions {flexible}"
        )


def test_broker_table_meets_client_feature_checks() -> None:
    """librdkafka 2.0.2 enables features only if exact versions are in range (§1.2)."""
    t = BROKER_API_VERSIONS

    def has(key: int, version: int) -> bool:
        return key in t and t[key][0] <= version <= t[key][1]

    assert has(0, 3) and has(1, 4)  # MsgVer2
    assert has(0, 7) and has(1, 10)  # ZSTD
    assert all(has(k, 0) for k in (10, 11, 12, 13, 14))  # balanced consumer
    assert has(8, 2) and has(9, 1)
    assert has(2, 1) and has(22, 0) and has(18, 0)  # OffsetTime, idempotence, ApiVersion
    assert has(1, 0) and has(1, 2) and has(2, 0) and has(3, 0) and has(3, 1) and has(3, 5)  # Burrow
    assert t[0][0] == 0  # librdkafka 2.0.2 compresses only if Produce v0 is in range (api_versions.py)
    assert t[18] == (0, 2) and t[3] == (0, 12) and t[1] == (0, 13)


def test_versions_notation() -> None:
    assert Versions.parse("3+") == Versions(3, 32767)
    two_to_four = Versions.parse("2-4")
    assert two_to_four == Versions(2, 4) and 4 in two_to_four and 5 not in two_to_four
    assert Versions.parse("7") == Versions(7, 7)
    assert Versions.parse("none").empty
    with pytest.raises(ValueError):
        Versions.parse("x")


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ([F("a", "int32"), F("a", "int32")], "duplicate field"),
        ([F("a", "int32", nullable="0+")], "cannot be null"),
        ([F("a", "int32", tag=0)], "outside flexible versions"),
        ([F("a", "string", default=None)], "never nullable"),
        ([F("BadName", "int32")], "snake_case"),
        ([F("a", "records", "2+", nullable="2+", tag=0)], "records cannot be a tagged field"),
        ([F("a", "int32", "2+", tag=0), F("b", "int32", "2+", tag=0)], "duplicate tag"),
    ],
)
def test_spec_validation(fields: list[object], message: str) -> None:
    with pytest.raises(SpecError, match=message):
        api(99, "Test", versions="0-3", flexible="2+", request=fields, response=[])  # type: ignore[arg-type]


def test_unknown_types_are_rejected() -> None:
    with pytest.raises(ValueError, match="unknown type"):
        F("a", "int128")


def test_package_is_pure() -> None:
    """Rule 1 of the package: no event loop, sockets or ZooKeeper client in the codec."""
    forbidden = {"asyncio", "socket", "kazoo", "selectors", "uvloop"}
    for path in PACKAGE_DIR.rglob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom):
                names = {(node.module or "").split(".")[0]}
            else:
                continue
            assert not names & forbidden, f"{path.name} imports {names & forbidden}"
