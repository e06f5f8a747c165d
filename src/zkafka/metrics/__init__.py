"""Prometheus metrics for a broker: a registry whose counting costs a dict bump on the hot path and
whose exposition is built when Prometheus scrapes. Depends on no other zkafka package but `zkafka.logs`.

Modules: `catalogue` (every metric as data: name, kind, labels, help, suggested alert), `registry`
(counters, histograms, scrape-time callbacks, rendering), `exposition` (text format 0.0.4), `broker`
(`TopicMetrics`, `RequestMetrics`: the per-request/per-batch calls), `process` (process_*), `lag`
(consumer lag, pure), `http` (`MetricsServer`: GET /metrics), `address` (`metrics.listener`), `docs`
(docs/operations.md's metrics list), `scrape` (reading a /metrics page back, for the demo).

Wired into the broker by `zkafka.server.broker_metrics` (and `server.lag_reporter`); where each
piece is called from:
* broker startup (`server/broker.py`), only when `metrics.listener` is set: one `Registry`;
  `BrokerMetrics` (`TopicMetrics`, `RequestMetrics`, conversions, ISR counters) reaches handlers as
  `server.services.BrokerServices.metrics`; `register_process_metrics`; `MetricsServer(registry.render,
  host, port, refresh=lag.refresh)` on `metrics.listener`, the bound port logged, stopped at shutdown;
  `zkafka cluster up` picks each broker's port and `cluster status` shows it;
* dispatcher/network: a `RequestTiming` per request, whose `sent` calls `RequestMetrics.completed`
  once the network layer has written the response (queue = behind earlier pipelined responses, local
  = handling, remote = parked, throttle = the response's `throttle_time_ms`, total);
* produce: `TopicMetrics.produced(topic, records from the batch headers, bytes)` per partition after
  `append_to_leader`; per partition error `failed` and `RequestMetrics.error_seen`; fetch: `fetched`
  for the response actually sent (`follower=` from `replica_id`), down-converted records from the
  batch headers; replica fetcher: `replicated` per appended partition;
* ISR (`server/isr.py`): `..._isrshrinks_total` / `..._isrexpands_total` where an ISR change is
  written; replica manager and logs: scrape-time group callbacks;
* controller: `activecontrollercount` and the global counts (`Controller.metrics_counts`), its
  state and queue size as gauges; each event's queue time and processing time by state (Kafka's
  ControllerStats timers) and the unclean elections through `Controller.set_observers`;
* ZooKeeper session: the latency histogram around each call on the session's thread
  (`ZkExecutor.observe_ms`), session state / expiry / disconnect from the session listener,
  `bad_znodes.decode_failures` as a callback;
* lag: `server.lag_reporter.LagReporter` registers a group callback returning
  `lag.consumer_group_samples(...)` for the groups this broker coordinates and, on the active
  controller, the seeds' ZooKeeper groups;
* quotas: each client quota's throttle totals (`ClientQuotas.throttle_totals`) as callbacks.
"""

from zkafka.metrics.catalogue import BY_NAME, CATALOGUE, Kind, MetricDef
from zkafka.metrics.registry import Counter, Histogram, Registry

__all__ = ["BY_NAME", "CATALOGUE", "Counter", "Histogram", "Kind", "MetricDef", "Registry"]
