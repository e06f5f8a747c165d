"""Blocking wrappers of the async clients, for code without an event loop (the CLI, Spark tasks).

Each wrapper owns a private event loop running in a daemon thread; a blocking call submits the
async method's coroutine to that loop and waits for the result. The async client is created on
that loop's thread, so its futures and tasks all belong to it.
"""

from __future__ import annotations

import asyncio
import functools
import threading
from collections.abc import Callable, Coroutine
from typing import Any, ParamSpec, Self, TypeVar

from zkafka.client.admin import AdminClient
from zkafka.client.batch_consumer import BatchConsumer
from zkafka.client.consumer import Consumer
from zkafka.client.producer import Producer
from zkafka.client.types import RecordMetadata

P = ParamSpec("P")
T = TypeVar("T")


class LoopThread:
    """An event loop running forever in a daemon thread."""

    def __init__(self, name: str = "zkafka-client") -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name=name, daemon=True)
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        if threading.current_thread() is self._thread:
            coro.close()
            raise RuntimeError("a blocking client call from inside its own event loop would deadlock")
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def call(self, fn: Callable[[], T]) -> T:
        """Run a plain function on the loop's thread (e.g. to construct a client there)."""

        async def wrapper() -> T:
            return fn()

        return self.run(wrapper())

    def stop(self) -> None:
        if self.loop.is_closed():
            return
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)
        if not self._thread.is_alive():
            self.loop.close()


def _blocking(method: Callable[..., Coroutine[Any, Any, T]]) -> Callable[..., T]:
    """A blocking twin of an async client method (same name, arguments and docstring)."""

    @functools.wraps(method)
    def call(self: _SyncClient, *args: Any, **kwargs: Any) -> T:
        return self._runner.run(method(self._client, *args, **kwargs))

    return call


class _SyncClient:
    _client: Any

    def __init__(self, factory: Callable[[], Any]) -> None:
        self._runner = LoopThread()
        try:
            self._client = self._runner.call(factory)
        except BaseException:
            self._runner.stop()
            raise

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        try:
            if not self._runner.loop.is_closed():
                self._runner.run(self._client.close())
        finally:
            self._runner.stop()


class SyncAdminClient(_SyncClient):
    """`AdminClient` with blocking methods; takes the same arguments."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(lambda: AdminClient(*args, **kwargs))

    describe_cluster = _blocking(AdminClient.describe_cluster)
    describe_log_dirs = _blocking(AdminClient.describe_log_dirs)
    list_topics = _blocking(AdminClient.list_topics)
    describe_topics = _blocking(AdminClient.describe_topics)
    create_topics = _blocking(AdminClient.create_topics)
    create_topic = _blocking(AdminClient.create_topic)
    delete_topics = _blocking(AdminClient.delete_topics)
    delete_topic = _blocking(AdminClient.delete_topic)
    create_partitions = _blocking(AdminClient.create_partitions)
    create_partition = _blocking(AdminClient.create_partition)
    describe_configs = _blocking(AdminClient.describe_configs)
    describe_topic_configs = _blocking(AdminClient.describe_topic_configs)
    alter_configs = _blocking(AdminClient.alter_configs)
    replace_configs = _blocking(AdminClient.replace_configs)
    list_offsets = _blocking(AdminClient.list_offsets)
    topic_offsets = _blocking(AdminClient.topic_offsets)
    elect_leaders = _blocking(AdminClient.elect_leaders)
    alter_partition_reassignments = _blocking(AdminClient.alter_partition_reassignments)
    list_partition_reassignments = _blocking(AdminClient.list_partition_reassignments)
    describe_acls = _blocking(AdminClient.describe_acls)
    describe_client_quotas = _blocking(AdminClient.describe_client_quotas)
    alter_client_quotas = _blocking(AdminClient.alter_client_quotas)
    describe_user_scram_credentials = _blocking(AdminClient.describe_user_scram_credentials)
    alter_user_scram_credentials = _blocking(AdminClient.alter_user_scram_credentials)


class SyncProducer(_SyncClient):
    """`Producer` with blocking methods. `send` returns a concurrent.futures.Future (resolved on
    the producer's thread); `send_and_wait` blocks for the RecordMetadata."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(lambda: Producer(*args, **kwargs))

    def send(self, topic: str, value: Any = None, key: Any = None, **kwargs: Any) -> Any:
        async def enqueue() -> asyncio.Future[RecordMetadata]:
            return await self._client.send(topic, value, key, **kwargs)

        inner = self._runner.run(enqueue())
        return asyncio.run_coroutine_threadsafe(_await(inner), self._runner.loop)

    send_and_wait = _blocking(Producer.send_and_wait)
    flush = _blocking(Producer.flush)
    partitions_for = _blocking(Producer.partitions_for)
    init_transactions = _blocking(Producer.init_transactions)
    begin_transaction = _blocking(Producer.begin_transaction)
    send_offsets_to_transaction = _blocking(Producer.send_offsets_to_transaction)
    commit_transaction = _blocking(Producer.commit_transaction)
    abort_transaction = _blocking(Producer.abort_transaction)


async def _await(future: asyncio.Future[T]) -> T:
    return await future


class SyncConsumer(_SyncClient):
    """`Consumer` with blocking methods; assignment calls are forwarded on the loop's thread."""

    _factory: Callable[..., Consumer] = Consumer

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        factory = type(self)._factory
        super().__init__(lambda: factory(*args, **kwargs))

    def assign(self, partitions: Any) -> None:
        self._runner.call(lambda: self._client.assign(list(partitions)))

    def assignment(self) -> Any:
        return self._runner.call(self._client.assignment)

    def seek(self, tp: Any, offset: int) -> None:
        self._runner.call(lambda: self._client.seek(tp, offset))

    def seek_to_beginning(self, *tps: Any) -> None:
        self._runner.call(lambda: self._client.seek_to_beginning(*tps))

    def seek_to_end(self, *tps: Any) -> None:
        self._runner.call(lambda: self._client.seek_to_end(*tps))

    def highwater(self, tp: Any) -> int | None:
        return self._runner.call(lambda: self._client.highwater(tp))

    assign_topic = _blocking(Consumer.assign_topic)
    poll = _blocking(Consumer.poll)
    position = _blocking(Consumer.position)
    offsets_for_times = _blocking(Consumer.offsets_for_times)
    beginning_offsets = _blocking(Consumer.beginning_offsets)
    end_offsets = _blocking(Consumer.end_offsets)


class SyncBatchConsumer(SyncConsumer):
    """`BatchConsumer` with blocking methods: `poll_batches` instead of `poll`."""

    _factory = BatchConsumer

    poll_batches = _blocking(BatchConsumer.poll_batches)
