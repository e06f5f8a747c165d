"""zkafka: a Kafka-compatible replicated commit log whose metadata lives in ZooKeeper in Kafka's layout."""

__version__ = "0.1.0"
