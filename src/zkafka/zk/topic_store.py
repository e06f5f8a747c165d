"""Topics and the legacy admin znodes in ZooKeeper (part of `KafkaZkClient`): topic
assignments in `/brokers/topics/<t>`, deletion markers in `/admin/delete_topics`, and
`/admin/reassign_partitions` and `/admin/preferred_replica_election`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from kazoo.exceptions import (
    BadVersionError,
    NodeExistsError,
)

from zkafka.zk.errors import (
    AdminOperationInProgressError,
    TopicAlreadyMarkedForDeletionError,
    TopicExistsError,
    UnknownTopicError,
)
from zkafka.zk.model import (
    ANY_VERSION,
    ConfigType,
    TopicAssignment,
    TopicPartition,
    random_uuid_base64,
    validate_replica_assignment,
)
from zkafka.zk.ops import DeleteOp, SetDataOp
from zkafka.zk.store import TOPIC_SKIPPED, ZkStore
from zkafka.zk.topic_names import check_topic_creatable
from zkafka.zk.znodes import (
    ConfigEntityZNode,
    DeleteTopicsTopicZNode,
    DeleteTopicsZNode,
    PreferredReplicaElectionZNode,
    ReassignPartitionsZNode,
    TopicsZNode,
    TopicZNode,
)


@dataclass(frozen=True, slots=True)
class NewTopicZNodes:
    """What `create_topic_assignments` writes for one topic: its replica assignment, its config
    overrides (`/config/topics/<t>`, written even when empty, as Kafka does) and its topic id
    (None: a new one)."""

    name: str
    assignment: Mapping[int, Sequence[int]]
    config: Mapping[str, str]
    topic_id: str | None = None


class TopicStoreMixin(ZkStore):
    # -- topics ----------------------------------------------------------------------------------------
    def get_all_topics(self) -> list[str]:
        return sorted(self.get_children(TopicsZNode.path()) or [])

    def topic_exists(self, topic: str) -> bool:
        return self.exists(TopicZNode.path(topic)) is not None

    def validate_topic_create(
        self, topic: str, assignment: Mapping[int, Sequence[int]], *, allow_internal: bool = False
    ) -> None:
        """Kafka's checks before a topic is created: name, existence, pending deletion, '.'/'_' collisions,
        assignment shape."""
        check_topic_creatable(
            topic,
            self.get_all_topics(),
            marked_for_deletion=self.get_topic_deletions(),
            allow_internal=allow_internal,
        )
        validate_replica_assignment(assignment)

    def create_topic_assignment(
        self,
        topic: str,
        assignment: Mapping[int, Sequence[int]],
        *,
        topic_id: str | None = None,
        config: Mapping[str, str] | None = None,
        validate: bool = True,
        allow_internal: bool = False,
    ) -> TopicAssignment:
        """Create a topic the ZooKeeper way: config znode first, then `/brokers/topics/<topic>` (the
        controller reacts to the latter). A topic id is generated unless given. TopicExistsError if the
        topic znode exists."""
        if validate:
            self.validate_topic_create(topic, assignment, allow_internal=allow_internal)
        new = NewTopicZNodes(topic, assignment, config or {}, topic_id)
        created = self.create_topic_assignments([new])[topic]
        if isinstance(created, Exception):
            raise created
        return created

    def create_topic_assignments(
        self, topics: Sequence[NewTopicZNodes]
    ) -> dict[str, TopicAssignment | Exception]:
        """Create many topics' znodes, each as `create_topic_assignment(validate=False)` does, in
        three pipelined rounds for all of them (CreateTopics names many topics, and one topic at a
        time cost six round trips each): the topics' existence, their config znodes (a fourth
        round sets those that existed), then their `/brokers/topics/<t>`. A topic's config is
        written only while its topic znode is absent (another creator's config is not
        overwritten), and its topic znode only once its config is written (the controller
        creates the logs with it). Returns topic -> its assignment (zkVersion 0), or its error:
        TopicExistsError, or the ZooKeeper error of its write. A name given twice is written
        once, as its first occurrence says."""
        out: dict[str, TopicAssignment | Exception] = {}
        first: dict[str, NewTopicZNodes] = {}
        for t in topics:
            first.setdefault(t.name, t)
        topics = list(first.values())
        present = self.stat_many([TopicZNode.path(t.name) for t in topics])
        fresh = []
        for t in topics:
            if present[TopicZNode.path(t.name)] is not None:
                out[t.name] = TopicExistsError(f"Topic '{t.name}' already exists.")
            else:
                fresh.append(t)
        config_paths = {t.name: ConfigEntityZNode.path(ConfigType.TOPIC, t.name) for t in fresh}
        config_data = {config_paths[t.name]: ConfigEntityZNode.encode(t.config) for t in fresh}
        # created first: a new topic has no config znode, so that is one round, not a failed
        # setData and a create; a leftover one (a topic deleted meanwhile) is overwritten
        configs: dict[str, str | int | Exception] = dict(self.create_many(list(config_data.items())))
        leftover = [p for p, result in configs.items() if isinstance(result, NodeExistsError)]
        configs.update(self.set_or_create_many([(p, config_data[p]) for p in leftover]))
        new: dict[str, TopicAssignment] = {}
        for t in fresh:
            written = configs[config_paths[t.name]]
            if isinstance(written, Exception):
                out[t.name] = written
                continue
            new[t.name] = TopicAssignment(
                topic=t.name,
                partitions={p: tuple(r) for p, r in sorted(t.assignment.items())},
                topic_id=t.topic_id or random_uuid_base64(),
            )
        created = self.create_many([(TopicZNode.path(t), TopicZNode.encode(a)) for t, a in new.items()])
        for t, assignment in new.items():
            result = created[TopicZNode.path(t)]
            if isinstance(result, NodeExistsError):
                out[t] = TopicExistsError(f"Topic '{t}' already exists.")
            elif isinstance(result, Exception):
                out[t] = result
            else:
                out[t] = replace(assignment, zk_version=0)
        return out

    def get_topic_assignment(self, topic: str) -> TopicAssignment | None:
        """Raises ZNodeDataError when the topic znode does not decode (callers that write it back must
        not mistake that for an absent topic)."""
        path = TopicZNode.path(topic)
        found = self.get_data(path)
        return None if found is None else TopicZNode.decode(found[0], path, found[1])

    def get_topic_assignments(self, topics: Iterable[str]) -> dict[str, TopicAssignment]:
        """Pipelined reads; topics that vanished, or whose znode does not decode, are left out."""
        paths = {TopicZNode.path(t): t for t in topics}
        out = {}
        for path, found in self.get_data_many(list(paths)).items():
            assignment = self._decoded(TopicZNode.decode, path, found, TOPIC_SKIPPED)
            if assignment is not None:
                out[paths[path]] = assignment
        return out

    def set_topic_assignment(
        self,
        topic: str,
        partitions: Mapping[int, Sequence[int]],
        *,
        adding: Mapping[int, Sequence[int]] | None = None,
        removing: Mapping[int, Sequence[int]] | None = None,
        topic_id: str | None = None,
        expected_version: int = ANY_VERSION,
        epoch_zk_version: int | None = None,
    ) -> TopicAssignment:
        """Rewrite `/brokers/topics/<topic>` keeping its topic id and unknown keys (KAFKA-12835).

        `topic_id` sets an id only where none exists (controller back-fill); changing an existing id is
        refused. With `expected_version` the write is conditional (BadVersionError); otherwise a
        concurrent rewrite is re-read and merged again. `epoch_zk_version` fences a controller write.
        """
        path = TopicZNode.path(topic)
        while True:
            current = self.get_topic_assignment(topic)
            if current is None:
                raise UnknownTopicError(f"Topic '{topic}' does not exist.")
            if topic_id is not None and current.topic_id not in (None, topic_id):
                raise ValueError(f"topic {topic!r} already has id {current.topic_id}; refusing to change it")
            new = current.with_partitions(partitions, adding, removing)
            if topic_id is not None:
                new = replace(new, topic_id=topic_id)
            version = current.zk_version if expected_version == ANY_VERSION else expected_version
            data = TopicZNode.encode(new)
            try:
                if epoch_zk_version is None:
                    new_version = self.set_data(path, data, version).version
                else:
                    new_version = self.fenced_multi(epoch_zk_version, [SetDataOp(path, data, version)])[
                        0
                    ].version
            except BadVersionError:
                if expected_version != ANY_VERSION:
                    raise
                continue
            return replace(new, version=TopicZNode.CURRENT_VERSION, zk_version=int(new_version))

    def mark_topic_for_deletion(self, topic: str) -> None:
        """Create `/admin/delete_topics/<topic>`: UnknownTopicError / TopicAlreadyMarkedForDeletionError."""
        if not self.topic_exists(topic):
            raise UnknownTopicError(f"Topic '{topic}' does not exist.")
        try:
            self.create(DeleteTopicsTopicZNode.path(topic), DeleteTopicsTopicZNode.encode(), makepath=True)
        except NodeExistsError:
            raise TopicAlreadyMarkedForDeletionError(
                f"Topic '{topic}' is already marked for deletion."
            ) from None

    def is_topic_marked_for_deletion(self, topic: str) -> bool:
        return self.exists(DeleteTopicsTopicZNode.path(topic)) is not None

    def get_topic_deletions(self) -> list[str]:
        return sorted(self.get_children(DeleteTopicsZNode.path()) or [])

    def delete_topic_deletions(self, topics: Iterable[str], epoch_zk_version: int) -> None:
        batches = [(t, [DeleteOp(DeleteTopicsTopicZNode.path(t))]) for t in topics]
        self._pipelined_fenced(epoch_zk_version, batches)  # NoNode: already gone, fine

    def delete_topic(self, topic: str, epoch_zk_version: int) -> None:
        """Controller's final step of a topic deletion: topic tree, topic config, deletion marker (fenced)."""
        self.fenced_delete_recursive(TopicZNode.path(topic), epoch_zk_version)
        self._fenced_delete_if_exists(ConfigEntityZNode.path(ConfigType.TOPIC, topic), epoch_zk_version)
        self._fenced_delete_if_exists(DeleteTopicsTopicZNode.path(topic), epoch_zk_version)

    # -- legacy admin znodes ---------------------------------------------------------------------------
    def create_partition_reassignment(self, reassignment: Mapping[TopicPartition, Sequence[int]]) -> None:
        """The legacy tool's write; AdminOperationInProgressError if a reassignment is pending."""
        try:
            self.create(
                ReassignPartitionsZNode.path(), ReassignPartitionsZNode.encode(reassignment), makepath=True
            )
        except NodeExistsError:
            raise AdminOperationInProgressError("a partition reassignment is already in progress") from None

    def get_partition_reassignment(self) -> dict[TopicPartition, tuple[int, ...]] | None:
        found = self.get_data(ReassignPartitionsZNode.path())
        return None if found is None else ReassignPartitionsZNode.decode(found[0])

    def set_or_create_partition_reassignment(
        self, reassignment: Mapping[TopicPartition, Sequence[int]], epoch_zk_version: int | None = None
    ) -> None:
        data = ReassignPartitionsZNode.encode(reassignment)
        self._set_or_create(ReassignPartitionsZNode.path(), data, epoch_zk_version)

    def delete_partition_reassignment(self, epoch_zk_version: int | None = None) -> bool:
        return self._fenced_delete_if_exists(ReassignPartitionsZNode.path(), epoch_zk_version)

    def create_preferred_replica_election(self, partitions: Iterable[TopicPartition]) -> None:
        try:
            self.create(
                PreferredReplicaElectionZNode.path(),
                PreferredReplicaElectionZNode.encode(partitions),
                makepath=True,
            )
        except NodeExistsError:
            raise AdminOperationInProgressError(
                "a preferred replica election is already in progress"
            ) from None

    def get_preferred_replica_election(self) -> frozenset[TopicPartition] | None:
        found = self.get_data(PreferredReplicaElectionZNode.path())
        return None if found is None else PreferredReplicaElectionZNode.decode(found[0])

    def delete_preferred_replica_election(self, epoch_zk_version: int | None = None) -> bool:
        return self._fenced_delete_if_exists(PreferredReplicaElectionZNode.path(), epoch_zk_version)
