"""Valid request frames from the schemas, with a map of where their lengths and counts are.

A seeded `random.Random` walks an API's request spec (`zkafka.protocol.schemas`) and writes
the bytes itself, field by field, in the classic or the flexible encoding. It does not go
through the codec's encoder on purpose: it records the position of every length prefix, array
count and tagged-field size it writes (`Slot`) and of every record batch (`batches`), which is
what the structure-aware mutations (`mutate.py`) corrupt. That the bytes are right is checked
the other way round: every unmutated frame decodes with `zkafka.protocol.decode_request`
(tests/server/test_server_fuzz.py).

Values are random but aimed: field names steer them towards what the broker has (the fuzz
topics, partition 0-3, broker 1, a handful of group ids), the extremes of each type, and small
numbers; timeouts are mostly short so a request that parks (Fetch max_wait, JoinGroup) does not
hold the fuzzer up; controller-to-broker requests mostly carry a stale controller epoch (see
`docs/reliability.md` for why).
"""

from __future__ import annotations

import random
import struct
import uuid
from dataclasses import dataclass, field
from typing import Final

from zkafka.protocol import headers as hdr
from zkafka.protocol.api_keys import ApiKey
from zkafka.protocol.groups.consumer_protocol import (
    Assignment,
    Subscription,
    encode_assignment,
    encode_subscription,
)
from zkafka.protocol.schema import ArrayOf, Field, Struct
from zkafka.protocol.schemas import SPECS
from zkafka.records import GZIP, LZ4, NONE, SNAPPY, ZSTD, Record, build_batch
from zkafka.records.legacy import encode_message_set

INT_RANGES: Final = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint16": (0, 2**16 - 1),
    "uint32": (0, 2**32 - 1),
}
_PACK: Final = {
    "int8": struct.Struct(">b"),
    "int16": struct.Struct(">h"),
    "int32": struct.Struct(">i"),
    "int64": struct.Struct(">q"),
    "uint16": struct.Struct(">H"),
    "uint32": struct.Struct(">I"),
    "float64": struct.Struct(">d"),
}
INT16: Final = _PACK["int16"]
INT32: Final = _PACK["int32"]

# Topics the fuzzer creates before it starts (so Produce, Fetch and the rest reach real logs).
FUZZ_TOPICS: Final = ("fuzz-a", "fuzz-b", "fuzz-c")
FUZZ_GROUPS: Final = ("fuzz-group-1", "fuzz-group-2", "console-consumer-1")
# A bounded pool of new names: what CreateTopics or auto-creation adds stays a bounded set.
NEW_TOPIC_NAMES: Final = 48
BAD_NAMES: Final = (
    "",
    ".",
    "..",
    "a/b",
    "../../brokers",
    "with space",
    "é",
    "\x00",
    "a" * 250,
    "__consumer_offsets",
    "zk:/chroot",
)
MAX_FRAME_BYTES: Final = 1 << 20  # generated frames stay under 1 MiB (the broker allows 100 MiB)


@dataclass(frozen=True, slots=True)
class Slot:
    """A length prefix, array count or tagged-field size at `offset` of the payload."""

    offset: int
    width: int  # 2 or 4 for classic ints; the byte length of the varint for compact ones
    kind: str  # "count" (array), "length" (string/bytes/records), "tag_size"
    compact: bool


@dataclass(slots=True)
class Built:
    """One request frame's payload (header + body, no size prefix) and its anatomy."""

    api_key: int
    version: int
    correlation_id: int
    payload: bytearray
    slots: list[Slot] = field(default_factory=list)
    batches: list[tuple[int, int]] = field(default_factory=list)  # (offset, size) of v2 batches
    expects_response: bool = True


def write_uvarint(out: bytearray, n: int) -> None:
    n &= 0xFFFFFFFF
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)


class _Writer:
    def __init__(self, gen: RequestGenerator, version: int, flexible: bool, big: bool) -> None:
        self.gen = gen
        self.rng = gen.rng
        self.version = version
        self.flexible = flexible
        self.big = big
        self.out = bytearray()
        self.slots: list[Slot] = []
        self.batches: list[tuple[int, int]] = []
        self.acks: int | None = None

    # -- lengths ------------------------------------------------------------------------------
    def _length(self, n: int | None, kind: str, classic: struct.Struct) -> None:
        """n=None writes null. Compact: n+1 as a uvarint (0 = null); classic: -1 = null."""
        start = len(self.out)
        if self.flexible:
            write_uvarint(self.out, 0 if n is None else n + 1)
            self.slots.append(Slot(start, len(self.out) - start, kind, True))
        else:
            self.out += classic.pack(-1 if n is None else n)
            self.slots.append(Slot(start, classic.size, kind, False))

    # -- structure ------------------------------------------------------------------------------
    def struct(self, fields: tuple[Field, ...], depth: int) -> None:
        tagged: list[Field] = []
        for f in fields:
            if not f.present_in(self.version):
                continue
            if self.flexible and f.tagged_in(self.version):
                tagged.append(f)
                continue
            self.field(f, depth)
        if self.flexible:
            self.tags(tagged, depth)

    def tags(self, tagged: list[Field], depth: int) -> None:
        chosen: list[tuple[int, Field | None]] = [
            (f.tag, f) for f in tagged if f.tag is not None and self.rng.random() < 0.3
        ]
        if self.rng.random() < 0.05:  # an unknown tag: the broker must skip it
            known = {f.tag for f in tagged}
            tag = self.rng.choice([t for t in (7, 99, 1000) if t not in known])
            chosen.append((tag, None))
        chosen.sort(key=lambda t: t[0])
        write_uvarint(self.out, len(chosen))
        for tag, f in chosen:
            sub = _Writer(self.gen, self.version, self.flexible, False)
            if f is None:
                sub.out += self.rng.randbytes(self.rng.randrange(0, 9))
            else:
                sub.field(f, depth + 1)
            write_uvarint(self.out, tag)
            start = len(self.out)
            write_uvarint(self.out, len(sub.out))
            self.slots.append(Slot(start, len(self.out) - start, "tag_size", True))
            base = len(self.out)
            self.out += sub.out
            self.slots += [Slot(s.offset + base, s.width, s.kind, s.compact) for s in sub.slots]
            self.batches += [(o + base, n) for o, n in sub.batches]

    def field(self, f: Field, depth: int) -> None:
        nullable = f.nullable_in(self.version)
        if nullable and self.rng.random() < 0.08:
            classic = INT16 if not f.is_array and f.primitive == "string" else INT32
            self._length(None, "count" if f.is_array else "length", classic)
            return
        t = f.type
        if isinstance(t, Struct):
            self.struct(t.fields, depth + 1)
        elif isinstance(t, ArrayOf):
            n = self.gen.count(f.name, depth, self.big)
            self._length(n, "count", INT32)
            for _ in range(n):
                if len(self.out) > MAX_FRAME_BYTES:
                    break  # the count stays: a count larger than the elements is a fine lie too
                if isinstance(t.element, Struct):
                    self.struct(t.element.fields, depth + 1)
                else:
                    self.scalar(f.name, t.element)
        else:
            self.scalar(f.name, t)

    def scalar(self, name: str, primitive: str) -> None:
        rng = self.rng
        if primitive in INT_RANGES:
            value = self.gen.integer(name, primitive)
            if name == "acks":
                self.acks = value
            self.out += _PACK[primitive].pack(value)
        elif primitive == "float64":
            self.out += _PACK["float64"].pack(rng.choice([0.0, 1.0, -1.5, 1e308, float("inf"), rng.random()]))
        elif primitive == "bool":
            self.out.append(rng.choice((0, 1, 1, 0, 2)) if rng.random() < 0.05 else rng.randrange(2))
        elif primitive == "uuid":
            self.out += uuid.UUID(int=0).bytes if rng.random() < 0.5 else rng.randbytes(16)
        elif primitive == "string":
            data = self.gen.string(name).encode("utf-8", "surrogatepass")[:32767]
            self._length(len(data), "length", INT16)
            self.out += data
        elif primitive == "bytes":
            data = self.gen.blob(name)
            self._length(len(data), "length", INT32)
            self.out += data
        elif primitive == "records":
            data, offsets = self.gen.records()
            self._length(len(data), "length", INT32)
            base = len(self.out)
            self.batches += [(base + o, n) for o, n in offsets]
            self.out += data
        else:  # pragma: no cover - the spec language has no other primitive
            raise AssertionError(primitive)


class RequestGenerator:
    """Random valid requests for one seeded `random.Random`."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    # -- values -----------------------------------------------------------------------------------
    def count(self, name: str, depth: int, big: bool) -> int:
        r = self.rng.random()
        if big and depth == 0 and r < 0.5:
            return self.rng.randrange(100, 3000)
        if r < 0.15:
            return 0
        return self.rng.randrange(1, 4 if depth == 0 else 3)

    def integer(self, name: str, primitive: str) -> int:
        rng = self.rng
        lo, hi = INT_RANGES[primitive]
        r = rng.random()
        if r < 0.04:
            return rng.randint(lo, hi)
        if r < 0.10:
            return rng.choice([lo, hi, lo + 1, hi - 1, 0, -1 if lo < 0 else 1])
        value = self._aimed(name, rng)
        return min(max(value, lo), hi)

    @staticmethod
    def _aimed(name: str, rng: random.Random) -> int:
        if name == "acks":
            return rng.choice((-1, 0, 1, 1, -1, 2))
        if name == "controller_epoch":
            # Stale (below the real controller's, which is >= 1) unless the dice say otherwise:
            # a fake controller whose epoch wins would fence the real one for the rest of the run.
            return rng.choice((-1, 0, 0, 0))
        if name == "broker_epoch":
            return rng.choice((-1, 0, 1, 2**40))
        if "timeout" in name or name in ("max_wait_ms", "max_wait_time_ms"):
            return rng.choice((0, 0, 1, 10, 50, 100, 200, -1))
        if name in ("partition_index", "partition", "partition_id") or name.endswith("partition_index"):
            return rng.choice((0, 0, 1, 2, 3, -1, 64))
        if name in ("num_partitions", "count"):
            return rng.choice((-1, 0, 1, 2, 3, 5, 100, 1_000_000))
        if name == "replication_factor":
            return rng.choice((-1, 0, 1, 1, 2, 3))
        if name in ("broker_id", "node_id", "leader", "leader_id", "replica_id") or name.endswith(
            "broker_id"
        ):
            return rng.choice((1, 1, 1, -1, 0, 2, 1000))
        if name in (
            "replicas",
            "isr",
            "adding_replicas",
            "removing_replicas",
            "broker_ids",
            "offline_replicas",
        ):
            return rng.choice((1, 1, 1, 2, -1))
        if "offset" in name or "timestamp" in name:
            return rng.choice((0, 0, 1, 5, 100, -1, -2, -3, 2**40))
        if "epoch" in name or "generation" in name:
            return rng.choice((-1, 0, 0, 1, 2, 7))
        if "max_bytes" in name or name in ("max_bytes", "partition_max_bytes"):
            return rng.choice((0, 1, 100, 1 << 20, 50 << 20, -1))
        if name == "isolation_level":
            return rng.choice((0, 1, 2))
        if name == "producer_id":
            return rng.choice((-1, 0, 1000, 1))
        return rng.choice((0, 0, 1, 2, 3, -1, 5, 10, 100, 1000))

    def string(self, name: str) -> str:
        rng = self.rng
        if rng.random() < 0.05:
            return self._random_text()
        if "topic" in name or name == "name" or name.endswith("_topics"):
            r = rng.random()
            if r < 0.55:
                return rng.choice(FUZZ_TOPICS)
            if r < 0.85:
                return f"fz-{rng.randrange(NEW_TOPIC_NAMES)}"
            return rng.choice(BAD_NAMES)
        if "group" in name:
            return rng.choice((*FUZZ_GROUPS, "", f"g-{rng.randrange(20)}"))
        if name == "member_id" or name == "group_instance_id":
            return rng.choice(("", "", "m-1", "unknown-member", f"zkafka-{rng.randrange(1000)}"))
        if name == "protocol_type":
            return rng.choice(("consumer", "consumer", "connect", ""))
        if name in ("protocol_name", "protocol", "name"):
            return rng.choice(("range", "roundrobin", "sticky", ""))
        if "config" in name or name in ("resource_name", "key", "value"):
            return rng.choice(
                ("retention.ms", "cleanup.policy", "segment.bytes", "1000", "compact", "x", "-1", "1", "")
            )
        if name == "host":
            return rng.choice(("127.0.0.1", "localhost", "", "no.such.host.invalid"))
        if name == "listener" or name == "security_protocol":
            return rng.choice(("PLAINTEXT", "", "SSL"))
        return rng.choice(("", "zkafka-fuzz", "a", self._random_text()))

    def _random_text(self) -> str:
        rng = self.rng
        n = rng.choice((0, 1, 5, 20, 300))
        alphabet = "abcXYZ09._-/ \x00é漢😀"
        return "".join(rng.choice(alphabet) for _ in range(n))

    def blob(self, name: str) -> bytes:
        rng = self.rng
        r = rng.random()
        if r < 0.35 and "metadata" in name:
            sub = Subscription(
                topics=tuple(rng.sample(FUZZ_TOPICS, rng.randrange(0, 3))),
                user_data=rng.choice((None, b"", b"x")),
                owned_partitions={FUZZ_TOPICS[0]: (0, 1)} if rng.random() < 0.3 else {},
                version=rng.choice((0, 1, 2)),
            )
            return encode_subscription(sub)
        if r < 0.35 and "assignment" in name:
            return encode_assignment(
                Assignment(partitions={rng.choice(FUZZ_TOPICS): (0,)}, version=rng.choice((0, 1)))
            )
        return rng.randbytes(rng.choice((0, 1, 4, 16, 100)))

    def records(self) -> tuple[bytes, list[tuple[int, int]]]:
        """Concatenated batches and the (offset, size) of each v2 batch among them."""
        rng = self.rng
        r = rng.random()
        if r < 0.05:
            return b"", []
        if r < 0.12:  # a legacy magic 0/1 message set
            recs = [Record(i, 1_700_000_000_000, None, b"v%d" % i) for i in range(rng.randrange(1, 4))]
            return encode_message_set(recs, rng.choice((0, 1)), codec=rng.choice((NONE, GZIP))), []
        if r < 0.16:
            return rng.randbytes(rng.randrange(1, 80)), []
        out = bytearray()
        offsets: list[tuple[int, int]] = []
        for _ in range(rng.choice((1, 1, 1, 2, 3))):
            n = rng.randrange(1, 6)
            records = [
                Record(
                    i,
                    1_700_000_000_000 + i,
                    rng.choice((None, b"k", rng.randbytes(8))),
                    rng.choice((None, b"", b"value", rng.randbytes(rng.randrange(1, 200)))),
                )
                for i in range(n)
            ]
            idempotent = rng.random() < 0.2
            batch = build_batch(
                records,
                compression=rng.choice((NONE, NONE, GZIP, SNAPPY, LZ4, ZSTD)),
                producer_id=rng.choice((1000, 0, 1)) if idempotent else -1,
                producer_epoch=0 if idempotent else -1,
                base_sequence=rng.choice((0, 5)) if idempotent else -1,
                is_transactional=idempotent and rng.random() < 0.2,
            )
            offsets.append((len(out), len(batch)))
            out += batch
        return bytes(out), offsets

    # -- frames ---------------------------------------------------------------------------------
    def request(self, api_key: int, version: int, correlation_id: int, *, big: bool = False) -> Built:
        spec = SPECS[api_key]
        flexible = spec.is_flexible(version)
        payload = bytearray(INT16.pack(api_key) + INT16.pack(version) + INT32.pack(correlation_id))
        header_version = hdr.request_header_version(api_key, version)
        slots: list[Slot] = []
        if header_version >= 1:
            client_id = self.rng.choice(("zkafka-fuzz", "zkafka-fuzz", "", None, "fuzz é"))
            if client_id is None:
                payload += INT16.pack(-1)
            else:
                data = client_id.encode()
                slots.append(Slot(len(payload), 2, "length", False))
                payload += INT16.pack(len(data)) + data
        if header_version >= 2:
            payload.append(0)
        w = _Writer(self, version, flexible, big)
        w.struct(spec.request, 0)
        base = len(payload)
        payload += w.out
        built = Built(api_key, version, correlation_id, payload)
        built.slots = slots + [Slot(s.offset + base, s.width, s.kind, s.compact) for s in w.slots]
        built.batches = [(o + base, n) for o, n in w.batches]
        built.expects_response = not (api_key == ApiKey.PRODUCE and w.acks == 0)
        return built
