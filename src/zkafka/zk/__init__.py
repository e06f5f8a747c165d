"""ZooKeeper access in Apache Kafka's znode layout.

Modules (import what you need; this package imports nothing eagerly):

* `znodes`      every znode's path and data codec (the only place paths are built);
* `model`, `acls` the typed values stored in znodes;
* `json_codec`  strict JSON decoding (`ZNodeDataError`) and Jackson-style compact encoding;
* `connect`     `host:port,.../chroot` connect strings;
* `topic_names` Kafka's topic-name rules; `sanitizer` user/client entity-name encoding;
* `session`     one kazoo session with chroot creation, retries and generic primitives (bulk
                reads as `multi_read` requests where the server takes them; kazoo selecting
                through `poll_handler`);
* `client`      `KafkaZkClient`: broker registration, controller election and fenced writes,
                partition state, topics, admin znodes, notifications, config, producer ids
                (+ `acl_store`, `old_consumer_store` mixed into it);
* `ops`         `multi` operations as plain values;
* `notifications` the change-notification listener algorithm;
* `watch_bridge` kazoo watches and session events delivered into an asyncio loop; `ZkExecutor`;
* `errors`      the exceptions.

The embedded ZooKeeper server process is run by `zkafka.local.zookeeper`.
"""
