"""The connector as one zip for Spark's `--py-files` (`spark.submit.pyFiles`), for executors whose
Python does not have zkafka installed:

    python -m zkafka.spark.package zkafka.zip

The zip holds the `zkafka` package's Python sources (no caches). zkafka is pure Python, so
zipimport loads it; its third-party dependencies (kazoo, crc32c, cramjam, uvloop, ...; several are
compiled) are not in it and must be importable on the workers, or shipped with a packed
environment (`spark.archives`, docs/spark.md). What works where was measured on the standalone
cluster (tests/spark/test_spark_shipping.py): executors of batch and streaming reads and writes
import zkafka from the zip; the driver's streaming source process does not get `--py-files`, so
the driver's Python needs zkafka too (installed, or the zip on its PYTHONPATH).
"""

from __future__ import annotations

import argparse
import sys
import zipfile
from pathlib import Path

import zkafka


def build_pyfiles_zip(destination: Path) -> Path:
    """Write the zip of the `zkafka` package this interpreter imports to `destination`."""
    package = Path(zkafka.__file__).resolve().parent
    destination = Path(destination)
    destination.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(destination, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(package.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
                archive.write(path, path.relative_to(package.parent).as_posix())
    return destination


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m zkafka.spark.package", description=__doc__.splitlines()[0]
    )
    parser.add_argument("destination", type=Path, nargs="?", default=Path("zkafka.zip"))
    args = parser.parse_args(argv)
    path = build_pyfiles_zip(args.destination)
    print(f"{path} ({path.stat().st_size:,} bytes): spark-submit --py-files {path} ...")
    return 0


if __name__ == "__main__":
    sys.exit(main())
