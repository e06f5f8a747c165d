"""Compiles specs into straight-line Python: one encoder and one decoder per (api, version, kind),
and per (data schema, version) for the `DataSpec`s that are not APIs.

Why generated source instead of a generic interpreter: a spec walk per message costs a dict
lookup and a branch per field; the generated function is what a careful human would write for
that exact version (runs of fixed-width fields packed with one precompiled `struct.Struct`,
nested loops inlined, no version checks left at run time). Each function is compiled once, on
first use, and cached by `zkafka.protocol.codec`.

Shapes of the generated functions::

    def encode(m, out, parts) -> bytearray   # appends m's body to out; see write_records
    def decode(buf, p) -> (message, p)        # buf: memoryview of the frame, p: body offset

The generated source is kept (`source_of`) and registered with `linecache` so tracebacks and
debuggers show real lines.
"""

from __future__ import annotations

import linecache
from collections.abc import Callable
from typing import Any

from zkafka.protocol.codegen.decoder import decode_struct
from zkafka.protocol.codegen.emitter import Emitter
from zkafka.protocol.codegen.encoder import encode_fields
from zkafka.protocol.message import Message
from zkafka.protocol.schema import MessageSpec

Encoder = Callable[[Message, bytearray, "list[object] | None"], bytearray]
Decoder = Callable[[memoryview, int], "tuple[Message, int]"]

_SOURCES: dict[str, str] = {}


def _compile(e: Emitter, direction: str, header: str) -> Callable[..., Any]:
    kind_name = e.spec.message_name(e.kind)
    filename = f"<zkafka-codec {kind_name} v{e.version} {direction}>"
    source = "\n".join([header, *e.lines]) + "\n"
    code = compile(source, filename, "exec")
    exec(code, e.ns)
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    _SOURCES[filename] = source
    fn = e.ns[direction]
    fn.__qualname__ = fn.__name__ = f"{direction}_{kind_name}_v{e.version}"
    return fn  # type: ignore[no-any-return]


def build_encoder(spec: MessageSpec, kind: str, version: int, message_cls: type[Message]) -> Encoder:
    e = Emitter(spec, kind, version, message_cls)
    encode_fields(e, spec.fields(kind), "m", message_cls.__name__, 1)
    e.emit(1, "return out")
    return _compile(e, "encode", "def encode(m, out, parts):")


def build_decoder(spec: MessageSpec, kind: str, version: int, message_cls: type[Message]) -> Decoder:
    e = Emitter(spec, kind, version, message_cls)
    e.emit(1, "L = len(buf)")
    decode_struct(e, spec.fields(kind), message_cls, "r", 1)
    e.emit(1, "return r, p")
    return _compile(e, "decode", "def decode(buf, p):")


def source_of(fn: Callable[..., Any]) -> str:
    """The generated source of a compiled codec function."""
    return _SOURCES[fn.__code__.co_filename]
