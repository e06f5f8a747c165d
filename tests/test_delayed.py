import asyncio
import time

from zkafka.server.delayed import MAX_STEP_S, MIN_STEP_S, DelayedOperations, Waiter, bucket_step


def test_wait_completes_on_notify_and_times_out() -> None:
    async def main() -> None:
        ops = DelayedOperations()
        state = {"hw": 0}
        fut = ops.wait([("t", 0)], lambda: state["hw"] >= 5, timeout_s=5)
        assert not fut.done() and len(ops) == 1
        state["hw"] = 3
        ops.notify(("t", 0))
        assert not fut.done()
        state["hw"] = 5
        ops.notify(("t", 1))
        assert not fut.done()
        ops.notify(("t", 0))
        assert await fut is True
        assert len(ops) == 0
        slow = ops.wait([("t", 0)], lambda: False, timeout_s=0.05)
        assert await slow is False
        assert len(ops) == 0
        ready = ops.wait([("t", 0)], lambda: True, timeout_s=1)
        assert ready.done() and ready.result() is True
        pending = ops.wait([("a", 0), ("b", 0)], lambda: False, timeout_s=10)
        ops.cancel_all()
        assert await pending is False and len(ops) == 0

    asyncio.run(main())


def test_park_calls_back_once_from_notify_or_timer() -> None:
    async def main() -> None:
        ops = DelayedOperations()
        state = {"hw": 0}
        outcomes: list[tuple[str, bool]] = []
        ops.park([("t", 0)], lambda: state["hw"] >= 1, 5, lambda ok: outcomes.append(("a", ok)))
        ops.park([("t", 0)], lambda: state["hw"] >= 2, 5, lambda ok: outcomes.append(("b", ok)))
        assert len(ops) == 2 and outcomes == []
        state["hw"] = 2
        ops.notify(("t", 0))  # both complete inside notify, oldest first, each once
        assert outcomes == [("a", True), ("b", True)] and len(ops) == 0
        ops.notify(("t", 0))
        assert len(outcomes) == 2
        # already true: called back before park returns, nothing parked
        assert ops.park([("t", 0)], lambda: True, 5, lambda ok: outcomes.append(("c", ok))) is None
        assert outcomes[-1] == ("c", True) and len(ops) == 0
        # the timer: False, once
        ops.park([("t", 1)], lambda: False, 0.02, lambda ok: outcomes.append(("d", ok)))
        await asyncio.sleep(0.1)
        assert outcomes[-1] == ("d", False) and len(ops) == 0
        # a cancelled waiter is never called back
        w = ops.park([("t", 1)], lambda: state["hw"] >= 3, 5, lambda ok: outcomes.append(("e", ok)))
        assert w is not None
        ops.cancel(w)
        state["hw"] = 3
        ops.notify(("t", 1))
        assert outcomes[-1] == ("d", False) and len(ops) == 0

    asyncio.run(main())


def test_a_failing_callback_does_not_stop_the_others() -> None:
    async def main() -> None:
        ops = DelayedOperations()
        ready = {"go": False}
        done: list[bool] = []

        def boom(_ok: bool) -> None:
            raise RuntimeError("bug in a completion")

        ops.park(["k"], lambda: ready["go"], 5, boom)
        ops.park(["k"], lambda: ready["go"], 5, done.append)
        ready["go"] = True
        ops.notify("k")  # the first callback's error is logged; the second still completes
        assert done == [True] and len(ops) == 0

    asyncio.run(main())


def test_a_failing_check_neither_escapes_notify_nor_strands_the_others() -> None:
    """A check that raises (a long-poll fetch's re-read hitting a StorageError) runs inside
    whoever notifies -- the follower fetch that moved the high watermark, an append -- and must
    not fail that request or leave the key's later waiters (acks=all produce requests) parked
    until their timeout. The raising waiter completes with True: its callback re-reads and answers
    the error."""

    async def main() -> None:
        ops = DelayedOperations()
        state = {"hw": 0}
        done: list[tuple[str, bool]] = []

        def failing_check() -> bool:
            if state["hw"] == 0:
                return False
            raise OSError("cannot open segment")

        ops.park(["k"], failing_check, 5, lambda ok: done.append(("fetch", ok)))
        ops.park(["k"], lambda: state["hw"] >= 1, 5, lambda ok: done.append(("produce", ok)))
        state["hw"] = 1
        ops.notify("k")
        assert sorted(done) == [("fetch", True), ("produce", True)]
        assert len(ops) == 0

    asyncio.run(main())


def test_bucket_steps_are_a_thirty_second_of_the_timeout_in_powers_of_two() -> None:
    assert bucket_step(0.0) == MIN_STEP_S
    assert bucket_step(0.5) == 0.008  # a long-poll fetch: at most 8 ms late
    assert bucket_step(30.0) == 0.512  # an acks=all produce's request.timeout.ms
    assert bucket_step(3600.0) == MAX_STEP_S
    for timeout in (0.001, 0.05, 0.5, 1.0, 30.0, 120.0):
        step = bucket_step(timeout)
        assert step <= max(timeout / 32, MIN_STEP_S) and step <= MAX_STEP_S


def test_timeouts_in_shared_buckets_never_fire_early_and_woken_waiters_leave_them() -> None:
    """Waiters of like timeouts share a bucket (one loop timer); each times out at or after its own
    deadline, in time order; waiters woken or cancelled before leave nothing behind."""

    async def main() -> None:
        ops = DelayedOperations()
        fired: dict[str, float] = {}
        deadlines: dict[str, float] = {}

        def park(name: str, timeout: float, key: str = "k") -> Waiter | None:
            deadlines[name] = time.monotonic() + timeout
            return ops.park(
                [key], lambda: False, timeout, lambda ok: fired.setdefault(name, time.monotonic())
            )

        for i in range(5):
            park(f"a{i}", 0.03)
        park("b", 0.06)
        woke = {"go": False, "late": False}
        woken = ops.park(["w"], lambda: woke["go"], 0.03, lambda ok: fired.setdefault("woken", ok))
        cancelled = park("cancelled", 0.03)
        assert woken is not None and cancelled is not None
        ops.cancel(cancelled)
        woke["go"] = True
        ops.notify("w")
        assert fired == {"woken": True}
        # a bucket emptied by wake-ups keeps its timer: a waiter filed there later still fires
        emptied = ops.park(["e"], lambda: woke["late"], 0.03, lambda ok: fired.setdefault("emptied", ok))
        assert emptied is not None
        ops.cancel(emptied)
        park("refilled", 0.03)
        while len(fired) < 8:
            await asyncio.sleep(0.01)
        assert "cancelled" not in fired and "emptied" not in fired
        for name, at in fired.items():
            if name != "woken":
                assert at >= deadlines[name], name  # never early
        assert fired["b"] >= max(fired[f"a{i}"] for i in range(5))
        assert len(ops) == 0 and not ops._buckets

    asyncio.run(main())


def test_notify_up_to_checks_only_waiters_marked_at_or_below_the_position() -> None:
    async def main() -> None:
        ops = DelayedOperations()
        key = ("replication", 0)
        state = {"hw": 0}
        checked: list[int] = []
        outcomes: list[int] = []

        def park(offset: int, marked: bool = True) -> None:
            def check() -> bool:
                checked.append(offset)
                return state["hw"] >= offset

            marks = {key: offset} if marked else None
            ops.park([key], check, 5, lambda ok: outcomes.append(offset), marks)

        for offset in (3, 5, 9):
            park(offset)
        park(4)  # below a mark already filed (offsets of a new leader epoch): sorted into place
        checked.clear()
        state["hw"] = 4
        ops.notify_up_to(key, 4)
        assert outcomes == [3, 4]  # in mark order, each once
        assert checked == [3, 4]  # 5 and 9 were not checked: their mark is above the position
        checked.clear()
        park(6, marked=False)  # unmarked: checked by every notify_up_to, whatever the position
        assert checked == [6] and outcomes == [3, 4]  # tried once at park
        checked.clear()
        ops.notify_up_to(key, 4)
        assert checked == [6] and outcomes == [3, 4]
        # a plain notify still checks everything (a leadership change)
        checked.clear()
        ops.notify(key)
        assert checked == [6, 5, 9] and outcomes == [3, 4]
        state["hw"] = 9
        ops.notify_up_to(key, 9)
        assert outcomes == [3, 4, 6, 5, 9] and len(ops) == 0

    asyncio.run(main())


def test_notify_up_to_leaves_a_waiter_whose_other_key_is_not_reached() -> None:
    async def main() -> None:
        ops = DelayedOperations()
        a, b = ("replication", "a"), ("replication", "b")
        hw = {a: 0, b: 0}
        outcomes: list[str] = []

        def waiter(name: str, need: dict[tuple[str, str], int]) -> None:
            def check() -> bool:
                return all(hw[k] >= o for k, o in need.items())

            ops.park(list(need), check, 5, lambda ok: outcomes.append(name), need)

        waiter("both", {a: 2, b: 2})
        waiter("a only", {a: 3})
        hw[a] = 3
        ops.notify_up_to(a, 3)  # "both" is due on a but waits for b: the scan goes on past it
        assert outcomes == ["a only"]
        hw[b] = 2
        ops.notify_up_to(b, 2)
        assert outcomes == ["a only", "both"] and len(ops) == 0
        # the timer and cancel leave no ordered key behind
        waiter("late", {a: 10})
        w = ops.park([a], lambda: False, 0.02, lambda ok: outcomes.append("timed out"), {a: 7})
        assert w is not None
        await asyncio.sleep(0.1)
        assert outcomes[-1] == "timed out" and len(ops) == 1
        ops.cancel_all()
        assert len(ops) == 0 and not ops._tops

    asyncio.run(main())
