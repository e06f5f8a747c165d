"""The demo's security step (issue 14): SCRAM users, ACLs and two clients on the SASL_SSL listener.

The demo cluster runs with `cluster up --security` (a SASL_SSL listener beside PLAINTEXT on every
broker, the ACL authorizer). This step does what an operator would: SCRAM-SHA-512 users `alice` and
`bob` with `zkafka configs --zookeeper`, a topic, ACLs for alice only with `zkafka acls --producer
--consumer`; then it shows the znodes those wrote (the SCRAM entry abbreviated, never a password)
and runs zkafka's client library as each user over SASL_SSL, checking the broker's certificate
against the cluster's CA: alice produces and reads her records back in a consumer group, bob is
refused with TOPIC_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

import asyncio
import json
import re
import secrets
from collections.abc import Callable
from typing import TYPE_CHECKING

from rich.table import Table

from zkafka.cli.errors import CliError
from zkafka.cli.output import heading, print_table

if TYPE_CHECKING:
    from rich.console import Console

    from zkafka.client.security import ClientSecurity
    from zkafka.local.launcher import LocalCluster

TOPIC = "secured-events"
GROUP = "secured-group"
RECORDS = 10
LISTENER = "SASL_SSL"
MECHANISM = "SCRAM-SHA-512"
ZNODE_ACLS = f"/kafka-acl/Topic/{TOPIC}"

Zkafka = Callable[..., str]
"""Runs one `zkafka` command and returns its stdout (the demo's `_zkafka`)."""


def demo_step(console: Console, cluster: LocalCluster, zkafka: Zkafka, *, step: str) -> None:
    secured = cluster.listener_bootstrap(LISTENER)
    if not secured or not cluster.ca_path:
        raise CliError("the demo cluster has no SASL_SSL listener (`cluster up --security`)")
    zk = cluster.zookeeper_connect
    heading(console, f"{step}. security: SCRAM users, ACLs and two clients on the {LISTENER} listener")
    console.print(f"{LISTENER} listeners: {secured}; the brokers' certificate is signed by {cluster.ca_path}")

    # Fresh passwords each run: they exist only in this process and, salted and hashed, in ZooKeeper.
    passwords = {user: secrets.token_urlsafe(12) for user in ("alice", "bob")}
    for user, password in passwords.items():
        config = f"{MECHANISM}=[iterations=8192,password={password}]"
        args = ("configs", "--zookeeper", zk, "--entity-type", "users", "--entity-name", user)
        console.out(
            f"$ zkafka {' '.join(args)} --alter --add-config '{MECHANISM}=[iterations=8192,password=…]'"
        )
        console.out(zkafka(*args, "--alter", "--add-config", config).rstrip())
    rf = str(min(3, len(cluster.brokers)))
    create = ("topics", "--bootstrap-server", cluster.bootstrap_servers, "--create", "--topic", TOPIC)
    console.out(zkafka(*create, "--partitions", "3", "--replication-factor", rf).rstrip())
    acl = ("acls", "--authorizer-properties", f"zookeeper.connect={zk}", "--add", "--allow-principal")
    acl_args = (*acl, "User:alice", "--producer", "--consumer", "--topic", TOPIC, "--group", GROUP)
    console.out(f"$ zkafka {' '.join(acl_args)}")
    zkafka(*acl_args)

    console.print("the znodes they wrote (Kafka's layout; SCRAM salt and keys abbreviated):")
    for path in ("/config/users/alice", ZNODE_ACLS):
        data = json.loads(zkafka("zk", "get", path, "--zookeeper", zk))
        console.out(f"  {path}  {_abbreviate_scram(json.dumps(data, separators=(',', ':')))}")

    results = asyncio.run(_clients(secured, cluster.ca_path, passwords))
    table = Table(title=f"clients on the {LISTENER} listener ({MECHANISM}, TLS checked against the CA)")
    for column in ("client", "principal", "listener", "action", "result"):
        table.add_column(column)
    for row in results:
        table.add_row(*row)
    print_table(console, table)
    allowed = all(row[-1].startswith("allowed") for row in results if row[1] == "User:alice")
    refused = all("TOPIC_AUTHORIZATION_FAILED" in row[-1] for row in results if row[1] == "User:bob")
    if not (allowed and refused):
        raise CliError("the secured listener did not decide as its ACLs say")
    console.print("[bold]alice is allowed by her ACLs, bob is refused[/bold] (no ACL names him)")


def _abbreviate_scram(text: str) -> str:
    """`salt=`, `stored_key=` and `server_key=` values cut to 8 characters: enough to see what is
    stored, short enough to read."""
    return re.sub(r"\b(salt|stored_key|server_key)=([^,\"]{8})[^,\"]*", r"\1=\2…", text)


def _security(user: str, password: str, ca_path: str) -> ClientSecurity:
    from zkafka.client.security import ClientSecurity

    return ClientSecurity.from_config(
        {
            "security.protocol": LISTENER,
            "sasl.mechanism": MECHANISM,
            "sasl.username": user,
            "sasl.password": password,
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": ca_path,
        }
    )


async def _clients(bootstrap: str, ca_path: str, passwords: dict[str, str]) -> list[tuple[str, ...]]:
    from zkafka.client.group_consumer import GroupConsumer
    from zkafka.client.producer import Producer
    from zkafka.protocol import KafkaError

    rows: list[tuple[str, ...]] = []
    alice = _security("alice", passwords["alice"], ca_path)
    async with Producer(bootstrap, security=alice, acks=-1, linger_ms=5) as producer:
        futures = [
            await producer.send(TOPIC, f'{{"order":{i}}}'.encode(), key=f"order-{i}".encode())
            for i in range(RECORDS)
        ]
        await producer.flush()
        acked = [await f for f in futures]
    rows.append(
        ("producer", "User:alice", LISTENER, f"produce to {TOPIC}", f"allowed: {len(acked)} acknowledged")
    )

    got: list = []
    async with GroupConsumer(
        bootstrap, group_id=GROUP, topics=[TOPIC], auto_offset_reset="earliest", security=alice
    ) as consumer:
        deadline = asyncio.get_running_loop().time() + 30
        while len(got) < RECORDS and asyncio.get_running_loop().time() < deadline:
            got += await consumer.poll(500)
        await consumer.commit()
    rows.append(
        (
            "consumer",
            "User:alice",
            LISTENER,
            f"consume {TOPIC} in group {GROUP}",
            f"allowed: {len(got)} records back",
        )
    )

    bob = _security("bob", passwords["bob"], ca_path)
    try:
        async with Producer(bootstrap, security=bob, acks=-1, linger_ms=5) as producer:
            future = await producer.send(TOPIC, b'{"order":-1}')
            await producer.flush()
            await future
        outcome = "ALLOWED (unexpected)"
    except KafkaError as e:
        outcome = f"refused: {e.code.name}"
    rows.append(("producer", "User:bob", LISTENER, f"produce to {TOPIC}", outcome))
    return rows
