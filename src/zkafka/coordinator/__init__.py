"""The broker-side consumer group coordinator, with offsets and group metadata stored in
`__consumer_offsets` in Kafka's record formats.

It sees the broker only through `store.PartitionLeaders`; the wiring into a broker
(FindCoordinator, creating `__consumer_offsets`, handing LeaderAndIsr's leadership changes to the
runtime) is `zkafka.server.coordinator_service`.

Modules, from the wire inward:
* `coordinator` -- offsets, list/describe/delete, a partition's groups in and out (+ `membership`:
  join, sync, heartbeat, leave, rebalance timers);
* `runtime` -- the coordinator runtime, shared with the transaction coordinator: per partition of
  the internal topic, loading on leadership, ownership, unloading and fencing, fenced appends, the
  partition of a key;
* `group` -- one group's state; `expiry` -- offset retention;
* `txn_offsets` -- offsets committed inside a transaction, pending until its marker;
* `store` -- appends through the partition leader (acks=all; also the transaction coordinator's)
  and the replay of a `__consumer_offsets` batch on load;
* `config` -- the coordinator's broker settings.
Kafka's byte formats and group hashing (pure, shared with clients and tools) are
`zkafka.protocol.groups`.
"""
