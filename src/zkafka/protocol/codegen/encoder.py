"""Generates a version's encoder: ``def encode(m, out, parts) -> bytearray``."""

from __future__ import annotations

import struct

from zkafka.protocol import primitives as prim
from zkafka.protocol.codegen.emitter import BYTES_WRITERS, STRING_WRITERS, Emitter, default_expr
from zkafka.protocol.schema import ArrayOf, Field, SpecError, Struct

# Non-flexible versions: a length or count prefix joins the run of fixed-width fields before it,
# so e.g. (partition_index, error_code, high_watermark, ..., len(aborted_transactions)) is one
# `pack` call; the variable-length payload follows.


def encode_fields(e: Emitter, fields: tuple[Field, ...], obj: str, path: str, ind: int) -> None:
    run: list[tuple[str, str]] = []  # (struct format char, expression)

    def flush() -> None:
        if not run:
            return
        packer = e.const(struct.Struct(">" + "".join(code for code, _ in run)), "S")
        e.emit(ind, f"out += {packer}.pack({', '.join(expr for _, expr in run)})")
        run.clear()

    for f in e.wire_fields(fields):
        expr = f"{obj}.{f.name}"
        where = f"{path}.{f.name}"
        nullable = f.nullable_in(e.version)
        if not f.is_array and f.primitive in prim.FIXED:
            run.append((prim.FIXED[f.primitive or ""][0], expr))
        elif not e.flex and f.is_array:
            a = e.var("a")
            e.emit(ind, f"{a} = {expr}")
            run.append(("i", f"-1 if {a} is None else len({a})" if nullable else f"len({a})"))
            flush()
            if nullable:
                e.emit(ind, f"if {a} is not None:")
            _encode_items(e, f, a, where, ind + 1 if nullable else ind)
        elif e.flex and f.is_array:
            flush()
            a = e.var("a")
            e.emit(ind, f"{a} = {expr}")
            body = ind
            if nullable:
                e.emit(ind, f"if {a} is None: out.append(0)")
                e.emit(ind, "else:")
                body = ind + 1
            _emit_compact_len(e, f"len({a})", body)
            _encode_items(e, f, a, where, body)
        elif e.flex and f.type == "string":
            flush()
            b = e.var("b")
            body = ind
            if nullable:
                e.emit(ind, f"if {expr} is None: out.append(0)")
                e.emit(ind, "else:")
                body = ind + 1
            e.emit(body, f"{b} = {expr}.encode()")
            _emit_compact_len(e, f"len({b})", body)
            e.emit(body, f"out += {b}")
        elif not e.flex and f.type == "string":
            b = e.var("b")
            if nullable:
                e.emit(ind, f"{b} = None if {expr} is None else {expr}.encode()")
                run.append(("h", f"-1 if {b} is None else len({b})"))
            else:
                e.emit(ind, f"{b} = {expr}.encode()")
                run.append(("h", f"len({b})"))
            flush()
            e.emit(ind, f"if {b} is not None: out += {b}" if nullable else f"out += {b}")
        else:
            flush()
            _encode_value(e, f, expr, where, ind)
    flush()
    if e.flex:
        _encode_tags(e, fields, obj, path, ind)


def _emit_compact_len(e: Emitter, length: str, ind: int) -> None:
    """A compact length (stored as N+1), one byte in the common case."""
    e.emit(ind, f"if {length} < 127: out.append({length} + 1)")
    e.emit(ind, f"else: write_uvarint(out, {length} + 1)")


def _encode_items(e: Emitter, f: Field, a: str, path: str, ind: int) -> None:
    """The elements of array `a` (its count is already written)."""
    assert isinstance(f.type, ArrayOf)
    elem = f.type.element
    if isinstance(elem, Struct):
        el = e.var("el")
        e.emit(ind, f"for {el} in {a}:")
        encode_fields(e, elem.fields, el, f"{path}[]", ind + 1)
    elif elem in prim.FIXED:
        e.emit(ind, f"out += _pack_array({prim.FIXED[elem][0]!r}, {a})")
    else:
        el = e.var("x")
        e.emit(ind, f"for {el} in {a}:")
        _encode_scalar(e, elem, el, False, path, ind + 1)


def _encode_value(e: Emitter, f: Field, expr: str, path: str, ind: int) -> None:
    nullable = f.nullable_in(e.version)
    if isinstance(f.type, Struct):
        s = e.var("s")
        e.emit(ind, f"{s} = {expr}")
        encode_fields(e, f.type.fields, s, path, ind)
        return
    if isinstance(f.type, ArrayOf):
        a = e.var("a")
        e.emit(ind, f"{a} = {expr}")
        e.emit(ind, f"if {a} is None:")
        if nullable:
            e.emit(ind + 1, f"write_null_array(out, {e.flex})")
        else:
            e.emit(ind + 1, f"raise _null_error({path!r})")
        e.emit(ind, "else:")
        e.emit(ind + 1, f"write_array_len(out, len({a}), {e.flex})")
        _encode_items(e, f, a, path, ind + 1)
        return
    _encode_scalar(e, f.type, expr, nullable, path, ind)


def _encode_scalar(e: Emitter, primitive: str, expr: str, nullable: bool, path: str, ind: int) -> None:
    if primitive in prim.FIXED:
        packer = e.const(struct.Struct(">" + prim.FIXED[primitive][0]), "S")
        e.emit(ind, f"out += {packer}.pack({expr})")
    elif primitive == "string":
        if not nullable:
            e.emit(ind, f"if {expr} is None: raise _null_error({path!r})")
        e.emit(ind, f"{STRING_WRITERS[(e.flex, nullable)]}(out, {expr})")
    elif primitive == "bytes":
        if not nullable:
            e.emit(ind, f"if {expr} is None: raise _null_error({path!r})")
        e.emit(ind, f"{BYTES_WRITERS[(e.flex, nullable)]}(out, {expr})")
    elif primitive == "records":
        if not nullable:
            e.emit(ind, f"if {expr} is None: raise _null_error({path!r})")
        e.emit(ind, f"out = write_records(out, parts, {expr}, {e.flex})")
    elif primitive == "uuid":
        e.emit(ind, f"write_uuid(out, {expr})")
    else:  # pragma: no cover - the spec validator rejects unknown types
        raise SpecError(f"unknown primitive {primitive}")


def _tag_condition(e: Emitter, f: Field, v: str) -> str:
    """Kafka writes a tagged field only when it differs from its default."""
    return f"not {_is_default_check(e, f, v)}"


def _is_default_check(e: Emitter, f: Field, v: str) -> str:
    """An expression true when `v` holds `f`'s default (inlined: no __eq__ call per struct)."""
    if f.is_array:
        return f"{v} is None" if f.default_is_null else f"({v} is not None and len({v}) == 0)"
    if isinstance(f.type, Struct):
        checks = [_is_default_check(e, sub, f"{v}.{sub.name}") for sub in f.type.fields]
        return "(" + " and ".join(checks or ["True"]) + ")"
    return f"{v} == {default_expr(e, f)}"


def _encode_tags(e: Emitter, fields: tuple[Field, ...], obj: str, path: str, ind: int) -> None:
    tagged = e.tagged_fields(fields)
    if not tagged:
        e.emit(ind, "out.append(0)")
        return
    t = e.var("t")
    e.emit(ind, f"{t} = []")
    for f in tagged:
        v = e.var("v")
        saved = e.var("o")
        e.emit(ind, f"{v} = {obj}.{f.name}")
        e.emit(ind, f"if {_tag_condition(e, f, v)}:")
        e.emit(ind + 1, f"{saved} = out")
        e.emit(ind + 1, "out = bytearray()")
        _encode_value(e, f, v, f"{path}.{f.name}", ind + 1)
        e.emit(ind + 1, f"{t}.append(({f.tag}, out))")
        e.emit(ind + 1, f"out = {saved}")
    e.emit(ind, f"write_uvarint(out, len({t}))")
    tg, tb = e.var("tg"), e.var("tb")
    e.emit(ind, f"for {tg}, {tb} in {t}:")
    e.emit(ind + 1, f"write_uvarint(out, {tg})")
    e.emit(ind + 1, f"write_uvarint(out, len({tb}))")
    e.emit(ind + 1, f"out += {tb}")
