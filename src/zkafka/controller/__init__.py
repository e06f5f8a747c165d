"""Kafka's ZooKeeper-mode controller.

Modules (nothing is imported eagerly; `from zkafka.controller import Controller` still works):

* `controller`   `Controller`: election, fencing, failover, the single event task (start here);
* `events`       the events and the queue; `core` what handlers share (ZooKeeper calls, watches,
                 request batch, timings);
* `context`      `ControllerContext`, the in-memory cluster picture, and `ReplicaAssignment`;
* `states`, `partition_state_machine`, `replica_state_machine`  the two state machines;
* `election`     pure leader election rules (replica placement is `zkafka.admin.placement`);
* `channel`, `request_batch`  requests to brokers (LeaderAndIsr v3, UpdateMetadata v7, StopReplica v1);
* `broker_events`, `topic_events`, `topic_deletion`, `reassignment`, `leader_balance`  what the
  controller does for each kind of event.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "Controller": "zkafka.controller.controller",
    "ControllerTimings": "zkafka.controller.core",
    "ReplicaAssignment": "zkafka.controller.context",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'zkafka.controller' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
