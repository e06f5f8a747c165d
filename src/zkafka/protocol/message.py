"""The base of every generated message class, and the value types of a `records` field.

Convention for all message classes (generated into `zkafka.protocol.messages`):

* Construct by keyword only, e.g. ``ProduceResponse(responses=[...], throttle_time_ms=0)``.
  Every field has a default, so only what differs from Kafka's default needs saying.
* A message object carries no version: the same object encodes at any version, and fields the
  version does not have are simply not written (decoding fills them with their defaults).
* Defaults follow Kafka: numbers 0 unless the spec says otherwise, bool False, string "",
  nullable strings with a null default None, bytes b"", records None, uuid all-zero, arrays an
  empty list (``None`` means null where the array is nullable), structs a default instance.
* Nested struct classes are attributes of their message class, named as in Kafka's JSON:
  ``ProduceRequest.TopicProduceData``.

A `records` field holds concatenated record batches as opaque bytes:

* decoded, it is a zero-copy ``memoryview`` slice of the received frame: it keeps the frame
  alive while referenced, and the network layer must not reuse or resize that buffer meanwhile
  (copy with ``bytes(...)`` to keep records longer than the frame);
* to encode, it may be bytes, bytearray, memoryview, a list/tuple of such buffers (written
  back to back, e.g. batches gathered from several segments), or a `DeferredRecords` whose bytes
  the network layer writes itself (read from the segment file), see `zkafka.protocol.codec`.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from typing import Any, ClassVar, Final

ZERO_UUID: Final = uuid.UUID(int=0)


class _Default:
    """Marks "use this field's default" in generated ``__init__`` signatures.

    Needed because ``None`` is a real value (null) for nullable arrays, and mutable defaults
    (lists, struct instances) must be fresh per object.
    """

    __slots__ = ()

    def __repr__(self) -> str:
        return "DEFAULT"


DEFAULT: Final[Any] = _Default()


class DeferredRecords:
    """A records value whose bytes the network layer supplies when it writes the response.

    Subclass it in the layer that owns files (e.g. a slice of a segment file);
    the codec only needs `size` to write the length prefix. `encode_response_parts` returns the
    object itself in its list of parts, at the place where exactly `size` bytes must be written.
    """

    __slots__ = ()

    @property
    def size(self) -> int:
        raise NotImplementedError

    def materialize(self) -> bytes:
        """The bytes themselves, for callers that need one contiguous frame (tests, tools)."""
        raise NotImplementedError(f"{type(self).__name__} cannot be materialized; use encode_response_parts")


Buffer = bytes | bytearray | memoryview
RecordsValue = Buffer | Sequence[Buffer] | DeferredRecords | None


class Message:
    """Common behaviour of generated messages: equality, repr, conversion to plain data."""

    __slots__ = ()
    __hash__ = None  # type: ignore[assignment]  # mutable value objects

    # Field names in wire order (``__slots__`` is sorted); set on every class by the generator.
    _FIELDS: ClassVar[tuple[str, ...]] = ()
    # Set on top-level request/response classes by the generator.
    API_KEY: ClassVar[int] = -1
    API_NAME: ClassVar[str] = ""
    KIND: ClassVar[str] = "struct"

    def _items(self) -> Iterator[tuple[str, Any]]:
        for name in self._FIELDS:
            yield name, getattr(self, name)

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, n) == getattr(other, n) for n in self._FIELDS)

    def __repr__(self) -> str:
        inner = ", ".join(f"{n}={_short_repr(v)}" for n, v in self._items())
        return f"{type(self).__qualname__}({inner})"

    def to_dict(self) -> dict[str, Any]:
        """Plain dicts/lists/values (records and bytes as bytes), e.g. for logs and tests."""
        return {n: _plain(v) for n, v in self._items()}


def _plain(value: Any) -> Any:
    if isinstance(value, Message):
        return value.to_dict()
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, memoryview):
        return value.tobytes()
    return value


def _short_repr(value: Any) -> str:
    if isinstance(value, memoryview):
        return f"<memoryview {value.nbytes} bytes>"
    if isinstance(value, bytes | bytearray) and len(value) > 64:
        return f"<{type(value).__name__} {len(value)} bytes>"
    return repr(value)
