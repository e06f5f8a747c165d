import asyncio

from zkafka.server.delayed import DelayedOperations


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
