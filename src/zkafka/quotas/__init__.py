"""Client quotas the way ZooKeeper-mode Kafka enforces them: bounds from `/config/clients` and
`/config/users` (and their `<default>` entities) resolved by Kafka's precedence, measured over
Kafka's sample windows, answered with KIP-219 throttle times. Depends on config and zk.

Modules: `types` (the quota keys and valid values), `entities` (precedence: who is bound by what),
`cache` (`QuotaConfigCache`: the bounds from ZooKeeper and `/config/changes`), `rate` (Kafka's
sampled Rate), `manager` (`QuotaManager`, `RequestQuotaManager`: record -> throttle ms; no I/O).
Not wired into the request path yet (docs/operations.md, "Quotas: wiring still to do").
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
