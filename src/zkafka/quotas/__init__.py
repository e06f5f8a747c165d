"""Client quotas the way ZooKeeper-mode Kafka enforces them: bounds from `/config/clients` and
`/config/users` (and their `<default>` entities) resolved by Kafka's precedence, measured over
Kafka's sample windows, answered with KIP-219 throttle times. Depends on config and zk.

Modules: `types` (the quota keys and valid values), `entities` (precedence: who is bound by what),
`cache` (`QuotaConfigCache`: the bounds from ZooKeeper and `/config/changes`), `rate` (Kafka's
sampled Rate), `manager` (`QuotaManager`, `RequestQuotaManager`: record -> throttle ms; no I/O).
Not wired into the request path yet. Where each piece is meant to be called from:
* broker startup: `QuotaConfigCache(zk).load()` on the ZooKeeper executor; the broker's one
  `/config/changes` handler (after the request-context split: `TopicConfigChanges.on_notification`
  in server/topic_configs.py) passes `clients/...` and `users/...` entity paths to
  `cache.on_config_change`, run as a ZooKeeper job (it reads ZooKeeper);
* the managers reach handlers as fields of `server.services.BrokerServices`;
* one `QuotaManager` each for PRODUCE and FETCH and a `RequestQuotaManager`, with
  `QuotaWindows.from_config(config)` and `cache.limit` as the limit source;
* produce handler: `record(ClientEntity(principal name, client id), request bytes, now_ms)`;
  fetch handler: size the response to `max_value_in_window`, then `record(..., response bytes, ...)`;
  every request (not inter-broker ones, as Kafka exempts them): `record_request_time` with the
  handler time; the response's `throttle_time_ms` is the largest of the throttles, and the network
  layer stops reading from that connection for that long (KIP-219) after sending it;
* metrics: the managers' `throttle_time_ms` / `throttled` dicts as registry callbacks;
* a periodic task: `expire_idle(now_ms)`.
`controller_mutation_rate` is parsed and resolved, but Kafka measures it with a token bucket
(KIP-599) rather than this Rate; its manager belongs with CreateTopics/CreatePartitions/DeleteTopics.
"""

from zkafka.quotas.entities import DEFAULT, ClientEntity, QuotaLimit
from zkafka.quotas.manager import QuotaManager, QuotaWindows, RequestQuotaManager
from zkafka.quotas.types import QuotaType

__all__ = [
    "DEFAULT",
    "ClientEntity",
    "QuotaLimit",
    "QuotaManager",
    "QuotaType",
    "QuotaWindows",
    "RequestQuotaManager",
]
