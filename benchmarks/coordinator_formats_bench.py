"""What the `__consumer_offsets` and ConsumerProtocol codecs cost: encode+decode round trips.

    .venv/bin/python benchmarks/coordinator_formats_bench.py [--rounds 5] [--calls 20000]

Times, per round trip (encode then decode): an offset commit value (v3), a group metadata value
(v1) with 10 members (each with a subscription and an assignment blob), and a ConsumerProtocol
subscription and assignment. Prints ops/s (best of `--rounds`); nothing is asserted.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from zkafka.protocol.groups.consumer_protocol import (
    Assignment,
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from zkafka.protocol.groups.formats import (
    GroupValue,
    MemberValue,
    OffsetKey,
    OffsetValue,
    decode_group_value,
    decode_key,
    decode_offset_value,
    encode_group_value,
    encode_offset_key,
    encode_offset_value,
)


def ops_per_s(body: Callable[[], object], calls: int, rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(calls):
            body()
        best = min(best, time.perf_counter() - start)
    return calls / best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=20000)
    args = parser.parse_args()

    key = OffsetKey("my-group", "orders", 7)
    offset = OffsetValue(123456789, "some metadata", 1_700_000_000_000, 5)
    sub = encode_subscription(Subscription(("orders", "payments", "refunds")))
    assignment = encode_assignment(Assignment({"orders": (0, 1, 2), "payments": (3,)}))
    group = GroupValue(
        "consumer",
        42,
        "range",
        "member-0",
        tuple(
            MemberValue(f"member-{i}-0d4c3b2a", f"client-{i}", f"/10.0.0.{i}", 300000, 45000, sub, assignment)
            for i in range(10)
        ),
    )
    subscription = Subscription(("orders", "payments"), b"ud", {"orders": (0, 1)}, 3, version=1)
    assign = Assignment({"orders": (0, 1, 2), "payments": (3, 4)}, b"")
    cases: dict[str, Callable[[], object]] = {
        "offset key": lambda: decode_key(encode_offset_key(key)),
        "offset value v3": lambda: decode_offset_value(encode_offset_value(offset)),
        "group value v1, 10 members": lambda: decode_group_value(encode_group_value(group)),
        "subscription v1": lambda: decode_subscription(encode_subscription(subscription)),
        "assignment v0": lambda: decode_assignment(encode_assignment(assign)),
    }
    for name, body in cases.items():
        calls = args.calls // 10 if "members" in name else args.calls
        print(f"{name:28s} {ops_per_s(body, calls, args.rounds):12,.0f} encode+decode/s")


if __name__ == "__main__":
    main()
