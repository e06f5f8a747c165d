"""The consumer-group protocol's own data, shared by the broker's coordinator, zkafka's clients and
the tools (pure, no I/O):

* `consumer_protocol`: the ConsumerProtocol subscription and assignment blobs members exchange through
  JoinGroup and SyncGroup;
* `formats`: the `__consumer_offsets` record keys and values, in Kafka's formats;
* `partitioning`: which `__consumer_offsets` partition coordinates a group (Java's String.hashCode).
"""
