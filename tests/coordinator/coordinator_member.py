"""A group member in its own process (so a test can SIGKILL it): a kafka-python consumer that
prints "<partition> <offset> <value>" for every record it gets and commits after printing
(at-least-once), and "assigned <partitions>" whenever its assignment changes. Runs until killed
or until stdin closes.

    python coordinator_member.py BOOTSTRAP GROUP TOPIC
"""

from __future__ import annotations

import sys
import threading

from kafka import KafkaConsumer


def main() -> None:
    bootstrap, group, topic = sys.argv[1:4]
    stop = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=group,
        client_id=f"member-{group}",
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        session_timeout_ms=6000,
        heartbeat_interval_ms=500,
        max_poll_records=20,
    )
    print("started", flush=True)
    assigned: set[int] | None = None
    try:
        while not stop.is_set():
            batch = consumer.poll(200)
            now = {tp.partition for tp in consumer.assignment()}
            if now != assigned:
                assigned = now
                print("assigned " + " ".join(map(str, sorted(now))), flush=True)
            lines = [f"{r.partition} {r.offset} {r.value.decode()}" for rs in batch.values() for r in rs]
            if lines:
                print("\n".join(lines), flush=True)
                consumer.commit()
    finally:
        consumer.close()


if __name__ == "__main__":
    main()
