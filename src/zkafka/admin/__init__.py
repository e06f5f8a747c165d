"""Cluster administration logic shared by the broker's admin APIs, the command-line tools (and,
to come, the console and doctor): Kafka's replica placement (`placement`), creating topics and
partitions the ZooKeeper way with their validation and KIP-578 limits (`topics`), and
reassignment plans in Kafka's JSON with their progress (`reassignment`).

Depends on protocol, storage (topic config validation) and zk; never on the server, controller,
client or cli, which all use it.
"""
