"""pyspark's own `spark-pipelines` CLI (pyspark.pipelines.cli.main), with one fix, for pipelines
whose flows run Python data sources such as zkafka's.

Why: the Python workers that plan and run a Python data source send Spark their (empty) profiler
accumulators; the Connect server hands them back to the client as observed metrics named
`__python_accumulator__` on the pipeline run's response stream. pyspark 4.3's
`SparkConnectClient.execute_command_as_iterator` passes on only dict responses and raises
`[UNKNOWN_RESPONSE] Unknown response: Plan observed(__python_accumulator__=...)` on anything else,
so `spark-pipelines run` exits 1 right after "Run is COMPLETED" (the outputs are all written).
Here the pipeline command's stream skips observed metrics, which are not pipeline events; every
other command is untouched.

Run it the way bin/spark-pipelines runs pyspark's CLI:

    $SPARK_HOME/bin/spark-class org.apache.spark.deploy.SparkPipelines \\
        pipelines/clickstream_sdp/spark_pipelines_cli.py run \\
        --spec pipelines/clickstream_sdp/spark-pipeline.yml
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pyspark.pipelines.cli import main
from pyspark.sql.connect.client.core import PlanObservedMetrics, SparkConnectClient

_execute_command_as_iterator = SparkConnectClient.execute_command_as_iterator


def _events_only(
    self: SparkConnectClient, command: Any, observations: Any = None
) -> Iterator[dict[str, Any]]:
    fetch = self._execute_and_fetch_as_iterator

    def without_observed_metrics(*args: Any, **kwargs: Any) -> Iterator[Any]:
        return (r for r in fetch(*args, **kwargs) if not isinstance(r, PlanObservedMetrics))

    self._execute_and_fetch_as_iterator = without_observed_metrics  # type: ignore[method-assign]
    try:
        yield from _execute_command_as_iterator(self, command, observations)
    finally:
        del self._execute_and_fetch_as_iterator


SparkConnectClient.execute_command_as_iterator = _events_only  # type: ignore[method-assign]

if __name__ == "__main__":
    main()
