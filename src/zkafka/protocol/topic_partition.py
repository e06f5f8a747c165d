"""`TopicPartition`: the one (topic, partition) value of the whole code base (broker, storage,
ZooKeeper model, clients, tools), like Kafka's common `TopicPartition`."""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["TopicPartition"]


class TopicPartition(NamedTuple):
    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"
