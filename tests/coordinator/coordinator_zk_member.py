"""A ZooKeeper-consumer group member in its own process (so a test can SIGKILL it). Prints, one
line each and flushed: "id <consumer id>", "own <partition> <monotonic time>" after claiming,
"drop <partition> <monotonic time>" after it stopped fetching (before releasing), and
"rec <partition> <offset> <value>" for every record. Runs until stdin closes.

    python coordinator_zk_member.py ZOOKEEPER GROUP TOPIC [STREAMS]
"""

from __future__ import annotations

import asyncio
import sys
import time

from zkafka.client.zk_consumer import ZookeeperConsumer


def say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


async def main() -> None:
    zookeeper, group, topic = sys.argv[1:4]
    streams = int(sys.argv[4]) if len(sys.argv) > 4 else 1
    consumer = ZookeeperConsumer(
        group,
        topics={topic: streams},
        zookeeper=zookeeper,
        auto_offset_reset="smallest",
        auto_commit_interval_ms=100,
        rebalance_backoff_ms=200,
        rebalance_max_retries=20,
        zookeeper_session_timeout_ms=3000,
        on_assign=lambda owned: [say(f"own {tp.partition} {time.monotonic()}") for tp in sorted(owned)],
        on_revoke=lambda owned: [say(f"drop {tp.partition} {time.monotonic()}") for tp in sorted(owned)],
        max_poll_records=50,
    )
    say(f"id {consumer.consumer_id}")
    loop = asyncio.get_running_loop()
    stdin_closed = loop.run_in_executor(None, sys.stdin.read)
    await consumer.start()
    try:
        while not stdin_closed.done():
            for r in await consumer.poll(100):
                # processed synchronously between polls: the commit timer cannot pass it
                sys.stdout.write(f"rec {r.partition} {r.offset} {r.value.decode()}\n")
            sys.stdout.flush()
    finally:
        await consumer.close()
        say("closed")


if __name__ == "__main__":
    asyncio.run(main())
