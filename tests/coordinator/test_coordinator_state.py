"""The group state machine over a real log: join/sync/heartbeat/leave, fencing errors, timers,
offsets, deletion, expiry and reloading from `__consumer_offsets`."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from coordinator_harness import Harness, decode_record, join, run

from zkafka.coordinator.coordinator import CommitRequest
from zkafka.coordinator.group import GroupState
from zkafka.protocol import ErrorCode as E
from zkafka.storage.naming import TopicPartition

TP0 = TopicPartition("t", 0)
TP1 = TopicPartition("t", 1)


@pytest.fixture
def h(tmp_path: Path) -> Harness:
    harness = Harness(tmp_path)
    yield harness
    harness.close()


async def _stable_single(h: Harness, group: str = "g") -> str:
    c = await h.start()
    r = await join(c, group)
    assert r.error == E.NONE and r.generation == 1 and r.leader_id == r.member_id
    assert [m[0] for m in r.members] == [r.member_id]
    s = await c.sync_group(group, 1, r.member_id, None, {r.member_id: b"assign-1"})
    assert (s.error, s.assignment) == (E.NONE, b"assign-1")
    return r.member_id


def test_single_member_join_sync_heartbeat_describe(h: Harness) -> None:
    async def main() -> None:
        member = await _stable_single(h)
        c = h.coordinator
        assert c.heartbeat("g", 1, member, None) == E.NONE
        summary = c.describe_group("g")
        assert (summary.state, summary.protocol_type, summary.protocol) == ("Stable", "consumer", "range")
        [m] = summary.members
        assert (m.member_id, m.client_host, m.metadata, m.assignment) == (
            member,
            "/127.0.0.1",
            b"sub",
            b"assign-1",
        )
        assert c.list_groups() == (E.NONE, [("g", "consumer", "Stable")])
        assert c.list_groups(["STABLE", "empty"]) == (E.NONE, [("g", "consumer", "Stable")])  # KIP-518
        assert c.list_groups(["Empty"]) == (E.NONE, [])
        # OffsetDelete: a live group whose subscriptions cannot be read keeps its offsets
        assert await c.delete_offsets("g", [TP0]) == (E.NON_EMPTY_GROUP, {})
        assert await c.delete_offsets("nobody", [TP0]) == (E.GROUP_ID_NOT_FOUND, {})
        assert member.startswith("client-")

    run(main())


def test_member_id_required_then_join(h: Harness) -> None:
    async def main() -> None:
        c = await h.start()
        first = await join(c, "g", require_known_member_id=True)
        assert first.error == E.MEMBER_ID_REQUIRED and first.member_id and first.generation == -1
        again = await join(c, "g", first.member_id, require_known_member_id=True)
        assert again.error == E.NONE and again.member_id == first.member_id and again.generation == 1
        # a made-up member id for a known group is unknown
        bad = await join(c, "g", "nobody", require_known_member_id=True)
        assert bad.error == E.UNKNOWN_MEMBER_ID
        # and a member id for an unknown group too
        assert (await join(c, "other", "nobody")).error == E.UNKNOWN_MEMBER_ID

    run(main())


def test_second_member_triggers_rebalance_and_both_get_assignments(h: Harness) -> None:
    async def main() -> None:
        a = await _stable_single(h)
        c = h.coordinator
        b_join = asyncio.create_task(join(c, "g", client_id="b"))
        await asyncio.sleep(0.05)
        assert c.groups["g"].state is GroupState.PREPARING_REBALANCE
        assert c.heartbeat("g", 1, a, None) == E.REBALANCE_IN_PROGRESS
        # a commit during PreparingRebalance is still accepted from a current member
        assert await c.commit_offsets("g", a, None, 1, {TP0: CommitRequest(5)}) == {TP0: E.NONE}
        ra = await join(c, "g", a)
        rb = await b_join
        assert ra.generation == rb.generation == 2
        assert ra.leader_id == rb.leader_id == a
        assert {m[0] for m in ra.members} == {a, rb.member_id} and rb.members == []
        # the follower waits for the leader's assignment
        follower = asyncio.create_task(c.sync_group("g", 2, rb.member_id, None, {}))
        await asyncio.sleep(0.05)
        assert not follower.done()
        assert c.heartbeat("g", 2, rb.member_id, None) == E.NONE  # CompletingRebalance: fine
        commit = await c.commit_offsets("g", a, None, 2, {TP0: CommitRequest(6)})
        assert commit == {TP0: E.REBALANCE_IN_PROGRESS}
        leader = await c.sync_group("g", 2, a, None, {a: b"A", rb.member_id: b"B"})
        assert (leader.error, leader.assignment) == (E.NONE, b"A")
        assert (await follower).assignment == b"B"
        assert c.groups["g"].state is GroupState.STABLE
        # a stale generation is fenced everywhere
        assert c.heartbeat("g", 1, a, None) == E.ILLEGAL_GENERATION
        assert (await c.sync_group("g", 1, a, None, {})).error == E.ILLEGAL_GENERATION
        assert await c.commit_offsets("g", a, None, 1, {TP0: CommitRequest(7)}) == {TP0: E.ILLEGAL_GENERATION}
        assert c.heartbeat("g", 2, "stranger", None) == E.UNKNOWN_MEMBER_ID
        assert await c.commit_offsets("g", "", None, -1, {TP0: CommitRequest(7)}) == {
            TP0: E.UNKNOWN_MEMBER_ID
        }
        # in Stable a follower rejoining with the same metadata gets the current generation
        again = await join(c, "g", rb.member_id)
        assert again.generation == 2 and again.members == []

    run(main())


def test_validation_errors(h: Harness) -> None:
    async def main() -> None:
        c = await h.start()
        assert (await join(c, "g", session_ms=5)).error == E.INVALID_SESSION_TIMEOUT
        assert (await join(c, "g", session_ms=60_001)).error == E.INVALID_SESSION_TIMEOUT
        assert (await join(c, "")).error == E.INVALID_GROUP_ID
        assert (await join(c, "g", protocol_type="")).error == E.INCONSISTENT_GROUP_PROTOCOL
        await join(c, "g", protocols=(("range", b""),))
        clash = await join(c, "g", protocols=(("roundrobin", b""),))
        assert clash.error == E.INCONSISTENT_GROUP_PROTOCOL
        other_type = await join(c, "g", protocols=(("range", b""),), protocol_type="connect")
        assert other_type.error == E.INCONSISTENT_GROUP_PROTOCOL
        assert c.heartbeat("unknown-group", 1, "m", None) == E.UNKNOWN_MEMBER_ID
        assert (await c.sync_group("unknown-group", 1, "m", None, {})).error == E.UNKNOWN_MEMBER_ID
        # a group whose partition this broker does not lead
        c.runtime.partition_lost(c.partition_for("g"))
        assert (await join(c, "g")).error == E.NOT_COORDINATOR
        assert c.heartbeat("g", 1, "m", None) == E.NOT_COORDINATOR
        assert c.fetch_offsets("g", [TP0])[0] == E.NOT_COORDINATOR

    run(main())


def test_protocol_is_chosen_by_vote(h: Harness) -> None:
    async def main() -> None:
        c = await h.start()
        one = asyncio.create_task(join(c, "v", protocols=(("range", b"1"), ("roundrobin", b"1"))))
        two = asyncio.create_task(join(c, "v", protocols=(("roundrobin", b"2"), ("range", b"2"))))
        three = asyncio.create_task(join(c, "v", protocols=(("roundrobin", b"3"), ("range", b"3"))))
        results = await asyncio.gather(one, two, three)
        # the first join completes generation 1 alone (no initial delay); rejoin everyone
        gen = max(r.generation for r in results)
        assert all(r.error == E.NONE for r in results)
        members = [r.member_id for r in results]
        rejoin = [
            asyncio.create_task(join(c, "v", m, protocols=p))
            for m, p in zip(
                members,
                [
                    (("range", b"1"), ("roundrobin", b"1")),
                    (("roundrobin", b"2"), ("range", b"2")),
                    (("roundrobin", b"3"), ("range", b"3")),
                ],
                strict=True,
            )
        ]
        final = await asyncio.gather(*rejoin)
        assert {r.protocol_name for r in final} == {"roundrobin"}
        assert final[0].generation >= gen

    run(main())


def test_initial_rebalance_delay_collects_members(tmp_path: Path) -> None:
    h = Harness(tmp_path, initial_rebalance_delay_ms=300)

    async def main() -> None:
        c = await h.start()
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        first = asyncio.create_task(join(c, "d", rebalance_ms=5000))
        await asyncio.sleep(0.15)
        second = asyncio.create_task(join(c, "d", rebalance_ms=5000))
        a, b = await asyncio.gather(first, second)
        elapsed = loop.time() - t0
        assert a.generation == b.generation == 1
        assert {m[0] for m in (a if a.members else b).members} == {a.member_id, b.member_id}
        # one delay, extended once by the member that came during it; never finished early
        assert 0.4 <= elapsed < 2.0, elapsed

    try:
        run(main())
    finally:
        h.close()


def test_session_expiry_removes_member_and_rebalances(h: Harness) -> None:
    async def main() -> None:
        c = await h.start()
        a = await join(c, "s", session_ms=200, rebalance_ms=400)
        await c.sync_group("s", 1, a.member_id, None, {})
        b_task = asyncio.create_task(join(c, "s", session_ms=5000, rebalance_ms=400))
        # `a` never rejoins: the join phase ends after the rebalance timeout without it
        b = await b_task
        assert b.generation == 2 and b.leader_id == b.member_id
        assert [m[0] for m in b.members] == [b.member_id]
        assert c.heartbeat("s", 2, a.member_id, None) == E.UNKNOWN_MEMBER_ID
        # now `b` stops heartbeating after its sync: the group ends Empty
        await c.sync_group("s", 2, b.member_id, None, {})
        c.groups["s"].members[b.member_id].session_timeout_ms = 100
        c.heartbeat("s", 2, b.member_id, None)
        await asyncio.sleep(0.6)
        group = c.groups["s"]
        assert group.state is GroupState.EMPTY and not group.members and group.generation == 3

    run(main())


def test_member_that_never_syncs_is_removed(h: Harness) -> None:
    async def main() -> None:
        c = await h.start()
        a = await join(c, "n", session_ms=10_000, rebalance_ms=200)
        assert a.generation == 1
        await asyncio.sleep(0.5)  # no SyncGroup within the rebalance timeout (KAFKA-12890)
        assert c.groups["n"].state is GroupState.EMPTY

    run(main())


def test_leave_and_delete(h: Harness) -> None:
    async def main() -> None:
        member = await _stable_single(h, "l")
        c = h.coordinator
        assert await c.commit_offsets("l", member, None, 1, {TP0: CommitRequest(10, 3, "meta")}) == {
            TP0: E.NONE
        }
        assert (await c.delete_groups(["l"]))["l"] == E.NON_EMPTY_GROUP
        assert c.leave_group("l", [(member, None), ("ghost", None)]) == (
            E.NONE,
            [E.NONE, E.UNKNOWN_MEMBER_ID],
        )
        assert c.groups["l"].state is GroupState.EMPTY
        error, found = c.fetch_offsets("l", [TP0, TP1])
        assert (
            error == E.NONE
            and found[TP0].offset == 10
            and found[TP0].metadata == "meta"
            and found[TP1] is None
        )
        assert (await c.delete_groups(["l", "missing"])) == {"l": E.NONE, "missing": E.GROUP_ID_NOT_FOUND}
        assert c.fetch_offsets("l", None) == (E.NONE, {})
        assert c.describe_group("l").state == "Dead"
        decoded = [decode_record(k, v) for k, v in h.records(c.partition_for("l")) if k is not None]
        assert {"key_version": 1, "group": "l", "topic": "t", "partition": 0, "tombstone": True} in decoded
        assert {"key_version": 2, "group": "l", "tombstone": True} in decoded

    run(main())


def test_simple_commits_without_members(h: Harness) -> None:
    async def main() -> None:
        c = await h.start()
        assert await c.commit_offsets("simple", "", None, 5, {TP0: CommitRequest(1)}) == {
            TP0: E.ILLEGAL_GENERATION
        }
        assert await c.commit_offsets("simple", "", None, -1, {TP0: CommitRequest(42)}) == {TP0: E.NONE}
        assert c.fetch_offsets("simple", None)[1][TP0].offset == 42
        assert c.groups["simple"].state is GroupState.EMPTY
        big = CommitRequest(1, metadata="x" * 5000)
        assert await c.commit_offsets("simple", "", None, -1, {TP1: big}) == {
            TP1: E.OFFSET_METADATA_TOO_LARGE
        }
        c._topic_exists = lambda tp: tp.topic != "gone"
        gone = TopicPartition("gone", 0)
        assert await c.commit_offsets("simple", "", None, -1, {gone: CommitRequest(1)}) == {
            gone: E.UNKNOWN_TOPIC_OR_PARTITION
        }
        assert c.list_groups() == (E.NONE, [("simple", "", "Empty")])
        # OffsetDelete on an empty group: the offset goes, with a tombstone in __consumer_offsets
        assert await c.delete_offsets("simple", [TP0, TP1]) == (E.NONE, {TP0: E.NONE, TP1: E.NONE})
        assert c.fetch_offsets("simple", [TP0]) == (E.NONE, {TP0: None})
        decoded = [decode_record(k, v) for k, v in h.records(c.partition_for("simple")) if k is not None]
        tombstone = {"key_version": 1, "group": "simple", "topic": "t", "partition": 0, "tombstone": True}
        assert tombstone in decoded

    run(main())


def test_records_are_kafka_formats(h: Harness) -> None:
    async def main() -> None:
        member = await _stable_single(h, "fmt")
        c = h.coordinator
        await c.commit_offsets("fmt", member, None, 1, {TP0: CommitRequest(77, 4, "m")})
        await c.commit_offsets("fmt", member, None, 1, {TP1: CommitRequest(9)}, retention_ms=60_000)
        decoded = [decode_record(k, v) for k, v in h.records(c.partition_for("fmt")) if k is not None]
        [group] = [d for d in decoded if d["key_version"] == 2]
        assert group["value_version"] == 1  # Burrow 1.2.1 reads group metadata v0/v1 only
        assert (group["protocol_type"], group["generation"], group["protocol"]) == ("consumer", 1, "range")
        assert group["leader"] == member
        [m] = group["members"]
        assert (m["member_id"], m["client_id"], m["client_host"]) == (member, "client", "/127.0.0.1")
        assert (m["session_timeout"], m["rebalance_timeout"], m["subscription"], m["assignment"]) == (
            10_000,
            2_000,
            b"sub",
            b"assign-1",
        )
        offsets = [d for d in decoded if d["key_version"] == 1]
        assert offsets[0]["value_version"] == 3
        assert (offsets[0]["offset"], offsets[0]["leader_epoch"], offsets[0]["metadata"]) == (77, 4, "m")
        # an explicit retention needs the absolute expiry only value v1 has
        assert offsets[1]["value_version"] == 1
        assert offsets[1]["expire_timestamp"] - offsets[1]["commit_timestamp"] == 60_000

    run(main())


def test_a_retention_of_long_max_keeps_the_offset_for_ever(h: Harness) -> None:
    """OffsetCommit v2-v4's retention_time_ms may be Long.MAX (found by the wire fuzzer, seed 51177):
    the expiry is capped at what the record's int64 holds instead of failing the commit (which
    closed the client's connection) or wrapping negative (expired at once, as Kafka's would)."""

    async def main() -> None:
        c = await h.start()
        long_max = (1 << 63) - 1
        assert await c.commit_offsets(
            "keep", "", None, -1, {TP0: CommitRequest(7)}, retention_ms=long_max
        ) == {TP0: E.NONE}
        assert c.fetch_offsets("keep", [TP0])[1][TP0].offset == 7
        [value] = [
            d
            for d in (decode_record(k, v) for k, v in h.records(c.partition_for("keep")))
            if d["key_version"] == 1
        ]
        assert value["expire_timestamp"] == long_max
        assert await c.expire_offsets() == 0

    run(main())


def test_static_member_rejoin_and_v3_record(h: Harness) -> None:
    async def main() -> None:
        c = await h.start()
        r = await join(c, "st", instance_id="inst-1")
        await c.sync_group("st", 1, r.member_id, "inst-1", {r.member_id: b"x"})
        # the same instance restarts: new member id, no rebalance, old id fenced
        again = await join(c, "st", instance_id="inst-1")
        assert again.error == E.NONE and again.generation == 1 and again.member_id != r.member_id
        assert again.leader_id == r.member_id  # the old leader id: a restarted leader does not reassign
        assert c.heartbeat("st", 1, r.member_id, "inst-1") == E.FENCED_INSTANCE_ID
        assert c.heartbeat("st", 1, again.member_id, "inst-1") == E.NONE
        await asyncio.sleep(0.05)
        [group] = [
            decode_record(k, v)
            for k, v in h.records(c.partition_for("st"))
            if k is not None and k[:2] == b"\0\2"
        ][-1:]
        assert group["value_version"] == 3 and group["members"][0]["group_instance_id"] == "inst-1"
        # the admin path: remove the static member by instance id
        assert c.leave_group("st", [("", "inst-1")]) == (E.NONE, [E.NONE])
        assert c.groups["st"].state is GroupState.PREPARING_REBALANCE or not c.groups["st"].members

    run(main())


def test_groups_and_offsets_survive_reload(h: Harness) -> None:
    async def main() -> None:
        member = await _stable_single(h, "r")
        c = h.coordinator
        await c.commit_offsets("r", member, None, 1, {TP0: CommitRequest(100), TP1: CommitRequest(200)})
        await c.commit_offsets("r", member, None, 1, {TP0: CommitRequest(101)})
        await c.commit_offsets("only-offsets", "", None, -1, {TP0: CommitRequest(5)})
        await c.stop()
        fresh = h.new_coordinator()
        fresh.start()
        for p in range(h.config.num_partitions):
            fresh.runtime.partition_led(p)
        assert fresh.check_status("r") == E.COORDINATOR_LOAD_IN_PROGRESS
        assert fresh.heartbeat("r", 1, member, None) == E.NONE  # blind while loading
        assert (await fresh.sync_group("r", 1, member, None, {})).error == E.REBALANCE_IN_PROGRESS
        while fresh.runtime.loading:
            await asyncio.sleep(0.005)
        group = fresh.groups["r"]
        assert group.state is GroupState.STABLE and group.generation == 1 and list(group.members) == [member]
        assert {tp: o.offset for tp, o in fresh.fetch_offsets("r", None)[1].items()} == {TP0: 101, TP1: 200}
        assert fresh.heartbeat("r", 1, member, None) == E.NONE
        only = fresh.groups["only-offsets"]
        assert only.state is GroupState.EMPTY and only.generation == 0
        await fresh.stop()

    run(main())


def test_unload_answers_parked_requests_not_coordinator(h: Harness) -> None:
    async def main() -> None:
        a = await _stable_single(h, "u")
        c = h.coordinator
        parked = asyncio.create_task(join(c, "u", client_id="b"))
        await asyncio.sleep(0.05)
        c.runtime.partition_lost(c.partition_for("u"))
        assert (await parked).error == E.NOT_COORDINATOR
        assert c.heartbeat("u", 1, a, None) == E.NOT_COORDINATOR

    run(main())


def test_offset_expiry(tmp_path: Path) -> None:
    h = Harness(tmp_path, offsets_retention_ms=100)

    async def main() -> None:
        c = await h.start()
        await c.commit_offsets("old", "", None, -1, {TP0: CommitRequest(1)})
        member = (await join(c, "busy")).member_id
        await c.sync_group("busy", 1, member, None, {})
        await c.commit_offsets("busy", member, None, 1, {TP0: CommitRequest(1)})
        await asyncio.sleep(0.15)
        written = await c.expire_offsets()
        assert "old" not in c.groups  # offsets-only group: expired by commit time, then removed
        # a stable consumer group keeps offsets of topics it subscribes to ("sub" is not a
        # consumer subscription here, so nothing is known to be unsubscribed: kept)
        assert TP0 in c.groups["busy"].offsets
        assert written == 1
        decoded = [decode_record(k, v) for k, v in h.records(c.partition_for("old")) if k is not None]
        assert decoded[-1] == {
            "key_version": 1,
            "group": "old",
            "topic": "t",
            "partition": 0,
            "tombstone": True,
        }

    try:
        run(main())
    finally:
        h.close()
