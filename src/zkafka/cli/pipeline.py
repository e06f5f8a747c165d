"""`zkafka pipeline run`: the clickstream pipeline on Spark (pipelines/clickstream) against a cluster.

    zkafka pipeline run --bootstrap-server 127.0.0.1:9092 [--events 6000] [--master spark://HOST:7077]
    python -m zkafka.cli.pipeline run --zookeeper 127.0.0.1:2181/kafka

The pipeline lives in the source checkout's pipelines/ directory, written as a Spark user's job;
it runs in a child process so that Spark's JVM and Python workers never share the caller's
process, and its result tables go straight to the terminal. Spark's own start-up chatter (on
stderr) is kept in a file and shown only when the pipeline fails.
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from zkafka.cli.errors import CliError
from zkafka.cli.output import heading
from zkafka.cli.target import add_target_args, fill_from_local_cluster

if TYPE_CHECKING:
    from rich.console import Console

PIPELINE = Path(__file__).resolve().parents[3] / "pipelines" / "clickstream" / "run.py"
"""src/zkafka/cli/pipeline.py -> the checkout's pipelines/clickstream/run.py"""


def register(sub: argparse._SubParsersAction) -> None:
    _add_commands(sub.add_parser("pipeline", help="data pipelines on Spark over zkafka"))


def _add_commands(parser: argparse.ArgumentParser) -> None:
    commands = parser.add_subparsers(dest="pipeline_command", metavar="COMMAND", required=True)
    run = commands.add_parser(
        "run",
        help="run the clickstream pipeline (streaming, batch, enriched event-time sessions) and check "
        "its results",
    )
    add_target_args(run, zookeeper="ZooKeeper connect string of the cluster")
    run.add_argument("--events", type=int, default=6000)
    run.add_argument("--master", default="local[2]", help="Spark master: local[N] or spark://host:port")
    run.set_defaults(func=_run_command)


def _run_command(args: argparse.Namespace) -> int:
    where = (
        ["--bootstrap-server", args.bootstrap_server]
        if args.bootstrap_server
        else ["--zookeeper", args.zookeeper]
    )
    return run_pipeline([*where, "--events", str(args.events), "--master", args.master])


def spark_available() -> bool:
    return all(importlib.util.find_spec(name) is not None for name in ("pyspark", "pyarrow"))


def run_pipeline(arguments: list[str]) -> int:
    """Run pipelines/clickstream/run.py with `arguments`; its exit status."""
    if not PIPELINE.is_file():
        raise CliError(f"{PIPELINE} not found: the pipeline runs from zkafka's source checkout")
    if not spark_available():
        raise CliError("the pipeline needs pyspark and pyarrow: install zkafka's spark extra (make setup)")
    with tempfile.TemporaryFile() as chatter:
        proc = subprocess.run([sys.executable, str(PIPELINE), *arguments], stderr=chatter, check=False)
        if proc.returncode != 0:
            chatter.seek(0)
            tail = chatter.read().decode(errors="replace").strip().splitlines()[-40:]
            print("\n".join(tail), file=sys.stderr)
        return proc.returncode


def demo_step(console: Console, bootstrap: str, step: str) -> None:
    """The demo's last step: the pipeline on the demo's cluster (skipped without the spark extra)."""
    heading(console, f"{step}. the clickstream pipeline on Spark (pipelines/clickstream)")
    if not spark_available():
        console.print("[yellow]skipped: pyspark/pyarrow are not installed (zkafka's spark extra)[/yellow]")
        return
    console.print(
        'Spark local[2] reads and writes the cluster through format("zkafka"): a streaming job counts '
        "events per page per minute (watermark) into Parquet and a topic, a batch job reads an offset range, "
        "and a sessions job groups clicks into event-time sessions, enriches them from a compacted users "
        "topic read as a table, and counts the clicks that came too late."
    )
    if run_pipeline(["--bootstrap-server", bootstrap]) != 0:
        raise CliError("the clickstream pipeline failed")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="zkafka pipeline", description=__doc__.splitlines()[0])
    _add_commands(parser)
    args = parser.parse_args(argv)
    try:
        fill_from_local_cluster(args)
        return int(args.func(args) or 0)
    except CliError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
