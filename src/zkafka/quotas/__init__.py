"""Client quotas the way ZooKeeper-mode Kafka enforces them: bounds from `/config/clients` and
`/config/users` (and their `<default>` entities) resolved by Kafka's precedence, measured over
Kafka's sample windows, answered with KIP-219 throttle times. Depends on config and zk.

Modules: `types` (the quota keys and valid values), `entities` (precedence: who is bound by what),
`cache` (`QuotaConfigCache`: the bounds from ZooKeeper and `/config/changes`), `rate` (Kafka's
sampled Rate), `manager` (`QuotaManager`, `RequestQuotaManager`: record -> throttle ms; no I/O),
`admin` (altering and describing quota znodes as Kafka's AdminZkClient does: `zkafka configs
--zookeeper` and the brokers' AlterClientQuotas/DescribeClientQuotas), `replication` (KIP-73's
`ReplicationQuota` and the throttled-replica lists).

Wired into the broker by `zkafka.server.client_quotas` (`ClientQuotas`: the cache loaded at start and
refreshed on `/config/changes`, one manager per quota type, reached by handlers as
`BrokerServices.quotas`; Produce and client Fetch record bytes, the dispatcher records handler time;
responses carry `throttle_time_ms` and `KafkaConnection.throttle` mutes the connection) and by
`zkafka.server.replication_throttles` (the leader side in the Fetch handler, the follower side in
the replica fetchers). The metrics side reads `ClientQuotas.throttle_totals()`.
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
