"""Security: principals, the ACL authorizer, SCRAM credentials, SASL server mechanisms and TLS contexts,
compatible with ZooKeeper-mode Kafka's znodes and config keys (docs/security.md).

Every decision here is pure (the authorizer decides from an immutable ACL snapshot, the SASL
mechanisms are bytes-in/bytes-out state machines); the ZooKeeper half (ACL cache, credential store)
reads and writes through `zkafka.zk`. The broker uses them in `zkafka.server.security` (listeners,
SASL) and `zkafka.server.authorization` (every API's check); the client in `zkafka.client.security`.
"""
