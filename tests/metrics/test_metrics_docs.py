"""docs/operations.md lists exactly the catalogue (regenerate: `python -m zkafka.metrics.docs`)."""

from __future__ import annotations

import re
from pathlib import Path

from zkafka.metrics.catalogue import CATALOGUE
from zkafka.metrics.docs import BEGIN, END, markdown, replace_in

OPERATIONS = Path(__file__).resolve().parents[2] / "docs" / "operations.md"


def test_operations_md_lists_the_catalogue() -> None:
    text = OPERATIONS.read_text()
    assert replace_in(text) == text, "docs/operations.md is stale: run `python -m zkafka.metrics.docs`"


def test_every_metric_has_a_row_and_the_critical_ones_an_alert() -> None:
    listed = re.findall(r"^\| `([a-z_]+)` \|", markdown(), flags=re.MULTILINE)
    assert listed == [d.name for d in CATALOGUE]
    alerted = {d.name for d in CATALOGUE if d.alert}
    for critical in (
        "kafka_server_replicamanager_underreplicatedpartitions",
        "kafka_server_replicamanager_underminisrpartitioncount",
        "kafka_controller_kafkacontroller_activecontrollercount",
        "kafka_controller_kafkacontroller_offlinepartitionscount",
        "kafka_consumergroup_lag",
        "process_open_fds",
    ):
        assert critical in alerted


def test_markers_are_required() -> None:
    try:
        replace_in("no markers here")
    except ValueError:
        pass
    else:
        raise AssertionError("expected ValueError")
    assert markdown().startswith(BEGIN) and markdown().endswith(END)
