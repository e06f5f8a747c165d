"""Generates a version's decoder: ``def decode(buf, p) -> (message, p)``.

Every length or count read from the wire is checked against the bytes left before it is used,
so hostile input fails fast instead of allocating or looping (package rule 3).
"""

from __future__ import annotations

import struct

from zkafka.protocol import primitives as prim
from zkafka.protocol.codegen.emitter import BYTES_READERS, STRING_READERS, Emitter, default_expr
from zkafka.protocol.message import Message
from zkafka.protocol.schema import ArrayOf, Field, SpecError, Struct


def decode_struct(e: Emitter, fields: tuple[Field, ...], cls: type[Message], target: str, ind: int) -> None:
    kwargs: list[tuple[str, str]] = []
    run: list[tuple[str, str]] = []  # (struct format char, target variable)

    def flush() -> None:
        if not run:
            return
        unpacker = struct.Struct(">" + "".join(code for code, _ in run))
        targets = ", ".join(v for _, v in run) + ("," if len(run) == 1 else "")
        e.emit(ind, f"{targets} = {e.const(unpacker, 'S')}.unpack_from(buf, p)")
        e.emit(ind, f"p += {unpacker.size}")
        run.clear()

    for f in e.wire_fields(fields):
        v = e.var("v")
        kwargs.append((f.name, v))
        if not f.is_array and f.primitive in prim.FIXED:
            run.append((prim.FIXED[f.primitive or ""][0], v))
        elif f.is_array or f.type in ("string", "bytes", "records"):
            n = e.var("n")
            if e.flex:
                flush()
                # compact lengths are stored as N+1; one byte (N < 127) is the common case
                e.emit(ind, f"{n} = buf[p] - 1")
                e.emit(ind, f"if {n} < 127: p += 1")
                e.emit(ind, f"else: {n}, p = _read_compact_len(buf, p, L)")
            else:
                # the classic length/count prefix joins the fixed-width run before it
                run.append(("h" if f.type == "string" else "i", n))
                flush()
            _decode_classic_payload(e, f, n, v, ind)
        else:
            flush()
            _decode_value(e, f, v, ind)
    flush()
    if e.flex:
        kwargs += _decode_tags(e, fields, ind)
    # object.__new__ plus slot stores is about twice as fast as calling __init__ with keywords;
    # fields this version does not carry get their defaults here.
    values = dict(kwargs)
    e.emit(ind, f"{target} = _new({e.const(cls, 'C')})")
    for f in fields:
        e.emit(ind, f"{target}.{f.name} = {values.get(f.name) or default_expr(e, f)}")


def _decode_classic_payload(e: Emitter, f: Field, n: str, v: str, ind: int) -> None:
    """What follows an int16/int32 length or count `n` already read: checked before use."""
    e.emit(ind, f"if {n} >= 0:")
    if isinstance(f.type, ArrayOf):
        e.emit(ind + 1, f"if {n} * {e.element_min_size(f)} > L - p: raise _truncated('array')")
        _decode_items(e, f, n, v, ind + 1)
    else:
        q = e.var("q")
        e.emit(ind + 1, f"{q} = p + {n}")
        e.emit(ind + 1, f"if {q} > L: raise _truncated({f.type!r})")
        payload = {
            "string": "str(buf[p:{q}], 'utf-8')",
            "bytes": "buf[p:{q}].tobytes()",
            "records": "buf[p:{q}]",
        }[str(f.type)]
        e.emit(ind + 1, f"{v} = {payload.format(q=q)}")
        e.emit(ind + 1, f"p = {q}")
    if f.nullable_in(e.version):
        e.emit(ind, f"elif {n} == -1:")
        e.emit(ind + 1, f"{v} = None")
    e.emit(ind, "else:")
    e.emit(ind + 1, f"raise _bad_length({f.name!r}, {n})")


def _decode_items(e: Emitter, f: Field, n: str, v: str, ind: int) -> None:
    """`n` (already validated) elements of array field `f` into a new list `v`."""
    assert isinstance(f.type, ArrayOf)
    elem = f.type.element
    if isinstance(elem, Struct):
        el = e.var("el")
        e.emit(ind, f"{v} = []")
        e.emit(ind, f"for _ in range({n}):")
        decode_struct(e, elem.fields, e.struct_class(elem), el, ind + 1)
        e.emit(ind + 1, f"{v}.append({el})")
    elif elem in prim.FIXED:
        code, size = prim.FIXED[elem]
        e.emit(ind, f"{v}, p = _unpack_array({code!r}, {size}, buf, p, {n})")
    else:
        el = e.var("x")
        e.emit(ind, f"{v} = []")
        e.emit(ind, f"for _ in range({n}):")
        _decode_scalar(e, elem, el, False, ind + 1)
        e.emit(ind + 1, f"{v}.append({el})")


def _decode_value(e: Emitter, f: Field, v: str, ind: int) -> None:
    nullable = f.nullable_in(e.version)
    if isinstance(f.type, Struct):
        decode_struct(e, f.type.fields, e.struct_class(f.type), v, ind)
        return
    if isinstance(f.type, ArrayOf):
        n = e.var("n")
        e.emit(ind, f"{n}, p = read_array_len(buf, p, L, {e.flex}, {nullable}, {e.element_min_size(f)})")
        if nullable:
            e.emit(ind, f"if {n} < 0:")
            e.emit(ind + 1, f"{v} = None")
            e.emit(ind, "else:")
            _decode_items(e, f, n, v, ind + 1)
        else:
            _decode_items(e, f, n, v, ind)
        return
    _decode_scalar(e, f.type, v, nullable, ind)


def _decode_scalar(e: Emitter, primitive: str, v: str, nullable: bool, ind: int) -> None:
    if primitive in prim.FIXED:
        unpacker = struct.Struct(">" + prim.FIXED[primitive][0])
        e.emit(ind, f"{v}, = {e.const(unpacker, 'S')}.unpack_from(buf, p)")
        e.emit(ind, f"p += {unpacker.size}")
    elif primitive == "string":
        e.emit(ind, f"{v}, p = {STRING_READERS[(e.flex, nullable)]}(buf, p, L)")
    elif primitive == "bytes":
        e.emit(ind, f"{v}, p = {BYTES_READERS[(e.flex, nullable)]}(buf, p, L)")
    elif primitive == "records":
        reader = "read_compact_records" if e.flex else "read_records"
        e.emit(ind, f"{v}, p = {reader}(buf, p, L)")
        if not nullable:
            e.emit(ind, f"if {v} is None: raise WireFormatError('null records')")
    elif primitive == "uuid":
        e.emit(ind, f"{v}, p = read_uuid(buf, p, L)")
    else:  # pragma: no cover
        raise SpecError(f"unknown primitive {primitive}")


def _decode_tags(e: Emitter, fields: tuple[Field, ...], ind: int) -> list[tuple[str, str]]:
    """Read a tag section: known tags into locals, unknown tags skipped (forward compatible)."""
    tagged = e.tagged_fields(fields)
    kwargs: list[tuple[str, str]] = []
    for f in tagged:
        v = e.var("v")
        kwargs.append((f.name, v))
        e.emit(ind, f"{v} = {default_expr(e, f)}")
    count, tag, start, stop = e.var("nt"), e.var("tg"), e.var("ts"), e.var("te")
    e.emit(ind, "if buf[p] == 0:")  # almost every tag section is empty: one zero byte
    e.emit(ind + 1, "p += 1")
    e.emit(ind, "else:")
    ind += 1
    # a count the bytes left cannot hold fails here, not after looping over what is there
    e.emit(ind, f"{count}, p = read_tag_count(buf, p, L)")
    e.emit(ind, f"for _ in range({count}):")
    e.emit(ind + 1, f"{tag}, {start}, {stop} = skip_tagged_field(buf, p, L)")
    keyword = "if"
    for f, (_, v) in zip(tagged, kwargs, strict=True):
        outer = e.var("L")
        e.emit(ind + 1, f"{keyword} {tag} == {f.tag}:")
        e.emit(ind + 2, f"p = {start}")
        # the field's declared size bounds every length and count inside it, not the frame's end
        e.emit(ind + 2, f"{outer} = L")
        e.emit(ind + 2, f"L = {stop}")
        _decode_value(e, f, v, ind + 2)
        e.emit(ind + 2, f"if p != {stop}: raise WireFormatError('tagged field {f.name} has the wrong size')")
        e.emit(ind + 2, f"L = {outer}")
        keyword = "elif"
    e.emit(ind + 1, f"p = {stop}")
    return kwargs
