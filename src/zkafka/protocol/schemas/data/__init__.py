"""Data schemas that are not APIs (Kafka's ``"type": "data"`` specs), one module per family.

`DATA_SPECS` maps schema name to `DataSpec`; `MODULE_NAMES` the module each lives in (its
generated classes are in `zkafka.protocol.messages.data.<module>`).
"""

from __future__ import annotations

from zkafka.protocol.schema import DataSpec
from zkafka.protocol.schemas.data import consumer_protocol, coordinator_records, transaction_records

_MODULES = (coordinator_records, consumer_protocol, transaction_records)

DATA_SPECS: dict[str, DataSpec] = {spec.name: spec for m in _MODULES for spec in m.SPECS}

MODULE_NAMES: dict[str, str] = {spec.name: m.__name__.rsplit(".", 1)[1] for m in _MODULES for spec in m.SPECS}
