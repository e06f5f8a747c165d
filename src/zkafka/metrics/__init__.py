"""Prometheus metrics for a broker: a registry whose counting costs a dict bump on the hot path and
whose exposition is built when Prometheus scrapes. Depends on no other zkafka package.

Modules: `catalogue` (every metric as data: name, kind, labels, help, suggested alert), `registry`
(counters, histograms, scrape-time callbacks, rendering), `exposition` (text format 0.0.4), `broker`
(`TopicMetrics`, `RequestMetrics`: the per-request/per-batch calls), `process` (process_*), `lag`
(consumer lag, pure), `http` (`MetricsServer`: GET /metrics), `address` (`metrics.listener`), `docs`
(docs/operations.md's metrics list).

Not wired into the broker yet. Where each piece is meant to be called from:
* broker startup: one `Registry` (handlers reach `TopicMetrics`/`RequestMetrics` as fields of
  `server.services.BrokerServices`); `register_process_metrics`; `MetricsServer(registry.render,
  *parse_metrics_listener(config.metrics_listener))` started when the key is set (log the bound port,
  `cluster up` records it), stopped at shutdown;
* dispatcher/network: `RequestMetrics.completed` once per response, with Kafka's time split (arrival
  when the frame is complete in `KafkaConnection`, handler start, handler end / remote completion,
  throttle, response written), `error_seen` for further error codes of a response;
* produce: `TopicMetrics.produced(topic, records from the batch headers, bytes)` per partition after
  `append_to_leader`, `failed(topic, produce=True)` per partition error; fetch: `fetched(...)` with
  `follower=` from `replica_id`; replica fetcher: `replicated` per appended partition;
* ISR (`server/isr.py`): `registry.counter("kafka_server_replicamanager_isrshrinks_total").inc()` /
  `..._isrexpands_total` where an ISR change is written; replica manager: `register` callbacks for
  under-replicated / under-min-ISR / partition / leader counts and the three `kafka_log_log_*`
  gauges from the log manager;
* controller: `activecontrollercount` and the global counts as callbacks, the elections histogram
  and unclean counter where elections are made;
* ZooKeeper session: the latency histogram around each request, session state / expiry /
  disconnect from the session listener, `zk.bad_znodes.decode_failures` as a callback;
* quotas: the managers' `throttle_time_ms` / `throttled` dicts as callbacks;
* lag: the coordinator (for the groups it coordinates) and the controller (for the seeds'
  ZooKeeper groups) `register_group` a callback returning `lag.consumer_group_samples(...)`.
"""

from zkafka.metrics.catalogue import BY_NAME, CATALOGUE, Kind, MetricDef
from zkafka.metrics.registry import Counter, Histogram, Registry

__all__ = ["BY_NAME", "CATALOGUE", "Counter", "Histogram", "Kind", "MetricDef", "Registry"]
