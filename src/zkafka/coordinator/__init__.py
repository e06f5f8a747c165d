"""The broker-side consumer group coordinator, with offsets and group metadata stored in
`__consumer_offsets` in Kafka's record formats.

Modules, from the wire inward:
* `service` -- wiring into a broker: FindCoordinator, creating `__consumer_offsets`, loading and
  unloading groups as LeaderAndIsr moves its partitions;
* `coordinator` -- offsets, list/describe/delete, partition ownership (+ `membership`: join,
  sync, heartbeat, leave, rebalance timers);
* `group` -- one group's state; `expiry` -- offset retention;
* `store` -- appends through the partition leader (acks=all) and replay on load;
* `formats`, `consumer_protocol`, `partitioning` -- Kafka's byte formats and group hashing
  (pure, shared with clients and tools).
"""
