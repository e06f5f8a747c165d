"""The transaction coordinator: Kafka's transaction protocol state, stored in `__transaction_state`.

Built like the group coordinator (`zkafka.coordinator`), beside it, on the same coordinator
runtime (`zkafka.coordinator.runtime`: its partitions' loading, ownership and fencing): it sees the
broker only through `zkafka.coordinator.store`'s narrow `PartitionLeaders` (the leader logs and the
one acks=all append path), and the server wires it in (`zkafka.server.txn_coordinator_service`).

Modules, from the inside out:
* `state` -- Kafka's transaction states, their bytes, the legal transitions;
* `metadata` -- one transactional id's metadata and the coordinator's decisions on it (pure:
  epoch bumps, fencing, the two-step prepare/complete of every change);
* `log_records` -- the `__transaction_state` key/value byte formats and the partition of an id;
* `loading` -- replaying a partition's batches when this broker becomes its leader;
* `coordinator` -- the ids of the partitions owned, the APIs' operations, markers and timeouts.

What exists and what remains of the transaction protocol: `docs/transactions.md`.
"""
