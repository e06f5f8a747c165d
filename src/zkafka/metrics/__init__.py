"""Prometheus metrics for a broker: a registry whose counting costs a dict bump on the hot path and
whose exposition is built when Prometheus scrapes. Depends on no other zkafka package.

Modules: `catalogue` (every metric as data: name, kind, labels, help, suggested alert),
`registry` (counters, histograms, scrape-time callbacks, rendering), `exposition` (text format 0.0.4),
`broker` (`TopicMetrics`, `RequestMetrics`: the per-request/per-batch calls), `process` (process_*),
`lag` (consumer lag, pure), `http` (`MetricsServer`: GET /metrics), `address` (`metrics.listener`).

Not wired into the broker yet; where each piece is called from is listed in docs/operations.md
("Metrics: wiring still to do").
"""

from zkafka.metrics.catalogue import BY_NAME, CATALOGUE, Kind, MetricDef
from zkafka.metrics.registry import Counter, Histogram, Registry

__all__ = ["BY_NAME", "CATALOGUE", "Counter", "Histogram", "Kind", "MetricDef", "Registry"]
