"""Security: principals, the ACL authorizer, SCRAM credentials, SASL server mechanisms and TLS contexts,
compatible with ZooKeeper-mode Kafka's znodes and config keys (docs/security.md).

Every decision here is pure (the authorizer decides from an immutable ACL snapshot, the SASL
mechanisms are bytes-in/bytes-out state machines); the ZooKeeper half (ACL cache, credential store)
reads and writes through `zkafka.zk`. Nothing here is wired into the broker's network layer yet.
"""
