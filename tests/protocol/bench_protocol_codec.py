"""Hot-path timings of the protocol codec (not a test; run it directly).

    .venv/bin/python tests/protocol/bench_protocol_codec.py

Measures decode_request of a Produce request and encode_response / encode_response_parts of a
Fetch response, with one and with 100 partitions of 16 KiB records each, and decode_request of a
Fetch request for 100 partitions (many small elements: where per-element length checks would
show).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from zkafka.protocol import (
    RequestHeader,
    decode_request,
    encode_request,
    encode_response,
    encode_response_parts,
)
from zkafka.protocol.messages import FetchRequest, FetchResponse, ProduceRequest

RECORDS = bytes(16 * 1024)


def produce_frame(partitions: int, version: int) -> memoryview:
    request = ProduceRequest(
        acks=-1,
        timeout_ms=30000,
        topic_data=[
            ProduceRequest.TopicProduceData(
                name="bench-topic",
                partition_data=[
                    ProduceRequest.PartitionProduceData(index=i, records=RECORDS) for i in range(partitions)
                ],
            )
        ],
    )
    frame = encode_request(RequestHeader(0, version, 1, "bench-client"), request)
    return memoryview(frame)[4:]


def fetch_frame(partitions: int, version: int) -> memoryview:
    request = FetchRequest(
        replica_id=-1,
        max_wait_ms=500,
        min_bytes=1,
        max_bytes=1 << 20,
        topics=[
            FetchRequest.FetchTopic(
                topic="bench-topic",
                partitions=[
                    FetchRequest.FetchPartition(partition=i, fetch_offset=1000, partition_max_bytes=1 << 20)
                    for i in range(partitions)
                ],
            )
        ],
    )
    frame = encode_request(RequestHeader(1, version, 1, "bench-client"), request)
    return memoryview(frame)[4:]


def fetch_response(partitions: int) -> FetchResponse:
    return FetchResponse(
        responses=[
            FetchResponse.FetchableTopicResponse(
                topic="bench-topic",
                partitions=[
                    FetchResponse.PartitionData(
                        partition_index=i,
                        high_watermark=1000,
                        last_stable_offset=1000,
                        log_start_offset=0,
                        records=memoryview(RECORDS),
                    )
                    for i in range(partitions)
                ],
            )
        ]
    )


def per_call_us(fn: Callable[[], object], seconds: float = 0.5) -> float:
    fn()
    n = 0
    start = time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds:
        for _ in range(50):
            fn()
        n += 50
    return elapsed / n * 1e6


def main() -> None:
    for version in (11, 12):
        frame = fetch_frame(100, version)
        us = per_call_us(lambda f=frame: decode_request(f))
        print(f"decode_request Fetch v{version}, 100 partitions: {us:8.1f} us")
    for partitions in (1, 100):
        for version in (7, 8, 9):
            frame = produce_frame(partitions, version)
            us = per_call_us(lambda f=frame: decode_request(f))
            print(f"decode_request Produce v{version}, {partitions:3d} x 16 KiB: {us:8.1f} us")
        response = fetch_response(partitions)
        for version in (4, 11, 12):
            us = per_call_us(lambda r=response, v=version: encode_response(1, v, 1, r))
            print(f"encode_response Fetch v{version}, {partitions:3d} x 16 KiB (copying): {us:8.1f} us")
            us = per_call_us(lambda r=response, v=version: encode_response_parts(1, v, 1, r))
            label = f"encode_response_parts Fetch v{version}, {partitions:3d} x 16 KiB (zero-copy)"
            print(f"{label}: {us:8.1f} us")


if __name__ == "__main__":
    main()
