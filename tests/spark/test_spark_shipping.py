"""Shipping the connector to executors that do not have it: a standalone cluster whose workers run
another interpreter (a venv that sees zkafka's dependencies but not zkafka), and the connector
shipped as `spark.submit.pyFiles` (--py-files) zip built by `zkafka.spark.package`.

The driver's Python workers get the zip on PYTHONPATH, as docs/spark.md says they must: the
driver's streaming source process is not given --py-files (measured: "[PYTHON_DATA_SOURCE_ERROR]
Failed to plan Python data source initialize source: ... No module named 'zkafka'")."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import venv
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from spark_helpers import (
    create_topic,
    driver_result,
    produce,
    read_topic,
    start_driver,
    topic_name,
    workers_of,
)

from zkafka.local.launcher import LocalCluster
from zkafka.spark.package import build_pyfiles_zip
from zkafka.testing.spark_cluster import StandaloneCluster, standalone_cluster


def interpreter_without_zkafka(directory: Path) -> Path:
    """A venv whose site-packages lists this venv's as a plain path: the dependencies import, but
    the .pth files there (zkafka's editable install) are not processed, so zkafka does not."""
    venv.create(directory, with_pip=False)
    python = directory / "bin" / "python3"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    Path(purelib, "zkafka-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    probe = subprocess.run([str(python), "-c", "import pyarrow, kazoo; import zkafka"], env=env, check=False)
    if probe.returncode == 0:
        pytest.skip("zkafka is installed in site-packages (not editable): no interpreter without it here")
    return python


@pytest.fixture(scope="module")
def bare_workers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneCluster]:
    root = tmp_path_factory.mktemp("spark-bare-workers")
    python = interpreter_without_zkafka(root / "venv")
    # `python3` on the workers' PATH is the venv's; no checkout on their PYTHONPATH
    worker_env: dict[str, str | None] = {
        "PATH": f"{python.parent}{os.pathsep}{os.environ['PATH']}",
        "PYTHONPATH": None,
        "PYSPARK_PYTHON": None,
    }
    with standalone_cluster(root / "cluster", workers=2, worker_env=worker_env, quick_jit=True) as sc:
        yield sc


@pytest.mark.timeout(240)
def test_pyfiles_zip_serves_batch_and_streaming_on_workers_without_zkafka(
    bare_workers: StandaloneCluster, three_brokers: LocalCluster, tmp_path: Path
) -> None:
    bootstrap = three_brokers.bootstrap_servers
    topic, write_topic = topic_name("ship-read"), topic_name("ship-write")
    create_topic(bootstrap, topic, 4)
    create_topic(bootstrap, write_topic, 2)
    produce(bootstrap, topic, [(i % 4, None, b"%d" % i, None) for i in range(1000)])
    package = build_pyfiles_zip(tmp_path / "zkafka.zip")
    args = {
        "master": bare_workers.master_url,
        "conf": {**bare_workers.app_conf(), "spark.submit.pyFiles": str(package)},
        "bootstrap": bootstrap,
        "topic": topic,
        "write_topic": write_topic,
        "write_records": 300,
        "write_tasks": 2,
        "workdir": str(tmp_path),
    }
    # PYSPARK_PYTHON names `python3`, each machine's own: the driver's is this venv's (its PATH
    # starts with it), the workers' the bare venv
    environment = {
        "PYSPARK_PYTHON": "python3",
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "PYTHONPATH": str(package),
    }
    log = tmp_path / "driver.log"
    result = driver_result(start_driver("ship", args, log, environment), log, 200)

    bare_prefix = str(Path(str(bare_workers.worker_env["PATH"]).split(os.pathsep)[0]).parent)
    assert result["executors"] == [[bare_prefix, "./zkafka.zip/zkafka/__init__.py"]]
    expected = sorted((i % 4, i // 4) for i in range(1000))
    for job in ("batch", "stream"):
        assert sorted((r["partition"], r["offset"]) for r in result[job]) == expected, job
        assert workers_of(bare_workers, result[job]) == {0, 1}, job
    written = read_topic(bootstrap, write_topic, 2, 300)
    assert sorted(int(v) for _, v in written) == list(range(300))


def test_package_zip_holds_the_sources_only(tmp_path: Path) -> None:
    with zipfile.ZipFile(build_pyfiles_zip(tmp_path / "z.zip")) as archive:
        names = archive.namelist()
    assert {"zkafka/__init__.py", "zkafka/spark/source.py", "zkafka/spark/reader.py"} <= set(names)
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
