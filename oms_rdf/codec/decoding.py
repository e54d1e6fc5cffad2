"""Decoding a canonical blob, checks in the order of design §2."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import msgpack

from ..errors import (
    DecodeError,
    ErrorCode,
    SchemaError,
)
from .fast import pack, plan_for, run_plan
from .fieldmap import CORE_TABLE
from .header import (
    HEADER_SIZE,
    MIN_BLOB,
    UNREADABLE,
    VERSION,
    Header,
    blob_bytes,
    check_size,
    read_header,
    required_sensitivity,
)
from .schema import GrainType, type_for_byte, type_for_name
from .walk import Walk, check_grain

_UNREADABLE_FLAGS = sum(UNREADABLE)


_UNPARSED: Any = object()  # the payload was not parsed yet (None is a valid payload)


def decode(blob: bytes, /) -> dict[str, Any]:
    """Decode a canonical blob into a dict of full field names.

    The checks run in a fixed order (design §2): length, version, well-formed
    MessagePack with no trailing bytes, a map, unique keys and canonical form,
    ``type`` present, header type byte matching the type string, sensitivity bits
    not below the tags, then the type's field rules. Index-layer fields in a
    foreign blob are tolerated. Unknown type bytes (0x0E-0xFF) decode as opaque
    maps with only the core fields expanded.

    Raises:
        DecodeError: ERR_TOO_SHORT, ERR_RANGE (a blob larger than
            :data:`~oms_rdf.codec.MAX_BLOB`), ERR_VERSION, ERR_CORRUPT,
            ERR_NOT_MAP, ERR_NO_TYPE, ERR_SENSITIVITY_MISMATCH, ERR_FLOAT_INVALID.
        SchemaError: ERR_SCHEMA, ERR_EMPTY, ERR_RANGE, ERR_HASH_FORMAT,
            ERR_HASH_LENGTH.
    """
    blob = blob_bytes(blob)
    check_size(len(blob))  # before parsing: a length check, like ERR_TOO_SHORT
    wire: Any = _UNPARSED
    if len(blob) >= MIN_BLOB and blob[0] == VERSION and not blob[1] & _UNREADABLE_FLAGS:
        try:
            wire = _parse(blob[HEADER_SIZE:])
        except DecodeError:
            pass  # the full path reports it, in its place in the order of checks
        else:
            fields = _decode_flat(blob, wire)
            if fields is not None:
                return fields
    return _decode_full(blob, wire)


def _decode_full(blob: bytes, wire: Any = _UNPARSED) -> dict[str, Any]:
    """Decode with every check in the documented order; ``wire`` if already parsed."""
    header = read_header(blob)
    for flag, why in UNREADABLE.items():
        if header.flags & flag:
            raise DecodeError(why, path="header[1]")
    payload = blob[HEADER_SIZE:]
    wire = _check_wire(payload, _parse(payload) if wire is _UNPARSED else wire)
    gtype = _decode_type(wire, header)
    fields = Walk(encoding=False).map(
        wire, gtype.table if gtype else CORE_TABLE, "$", 1
    )
    required = required_sensitivity(fields.get("structural_tags", ()))
    if header.sensitivity < required:
        raise DecodeError(
            f"header sensitivity bits are {header.sensitivity:02b} but the structural "
            f"tags require at least {required:02b}",
            code=ErrorCode.SENSITIVITY_MISMATCH,
            path="header[1]",
        )
    check_grain(fields, gtype)
    return fields


def _decode_flat(blob: bytes, wire: Any) -> dict[str, Any] | None:
    """Decode a readable blob of a known type with flat, canonical values, or None.

    ``wire`` is its parsed payload. None sends the blob down the full path, which
    checks in the documented order and raises with the reason; this path only
    ever accepts (see :mod:`.fast`).
    """
    gtype = type_for_byte(blob[2])
    if gtype is None or type(wire) is not dict:
        return None
    payload = blob[HEADER_SIZE:]
    # A plan exists only for sorted known keys, none of them nested or index-layer.
    plan = plan_for(gtype, tuple(wire), encoding=False)
    if plan is None:
        return None
    fields = run_plan(plan, wire)
    if fields is None or type_for_name(fields.get("type", "")) is not gtype:
        return None
    if pack(wire) != payload:
        return None  # not canonical: smallest ints, float64, shortest lengths
    # No structural_tags on this path, so any sensitivity bits are high enough.
    check_grain(fields, gtype)
    return fields


def _parse(payload: bytes) -> Any:
    """Parse a payload as one MessagePack value with nothing after it."""
    try:
        return msgpack.unpackb(payload, raw=False, strict_map_key=False, use_list=True)
    except msgpack.ExtraData as exc:
        raise DecodeError(
            f"payload has {len(exc.extra)} trailing bytes after the map",
            path=f"payload[{len(payload) - len(exc.extra)}]",
        ) from exc
    except (ValueError, TypeError, msgpack.UnpackException) as exc:
        # msgpack names some faults by their type only ("unhashable type", or
        # nothing at all for a reserved byte or too deep a nesting).
        why = {
            "TypeError": "a map or array used as a map key",
            "StackError": "nesting deeper than the parser takes",
            "FormatError": "a byte that starts no MessagePack value (0xc1 is reserved)",
        }.get(type(exc).__name__, "")
        detail = str(exc) or why or type(exc).__name__
        raise DecodeError(
            f"payload is not valid MessagePack: {detail}"
            + (f" ({why})" if why and why not in detail else "")
        ) from exc


def _check_wire(payload: bytes, wire: Any) -> dict[str, Any]:
    """Check a parsed payload: a map, in canonical form, keys in order."""
    if not isinstance(wire, dict):
        raise DecodeError(
            f"payload must be a map, found {type(wire).__name__}",
            code=ErrorCode.NOT_MAP,
        )
    # Whatever msgpack parsed it can pack again (ext values too), so no try here.
    if pack(wire) != payload:
        _diagnose(payload, wire)
    keys = list(wire)
    if keys != sorted(keys, key=str):
        # Nested maps are checked by the walk; the top level is checked here so
        # that key order is reported before the type checks (design §2 order).
        raise DecodeError(f"payload keys not in canonical order: {keys} (spec §4.1)")
    return wire


def _diagnose(payload: bytes, wire: Any) -> None:
    """Explain why a payload is not canonical, or return if only NaN bits differ."""
    problems: list[tuple[str, str]] = []

    def pairs_hook(pairs: list[tuple[Any, Any]]) -> dict[Any, Any]:
        keys = [k for k, _ in pairs]
        if len(set(map(repr, keys))) != len(keys):
            dup = next(k for k in keys if keys.count(k) > 1)
            problems.append((f"duplicate map key {dup!r}", "dup"))
        elif all(isinstance(k, str) for k in keys) and keys != sorted(
            keys, key=lambda k: k.encode()
        ):
            problems.append((f"map keys not in canonical order: {keys}", "order"))
        return dict(pairs)

    msgpack.unpackb(
        payload, raw=False, strict_map_key=False, object_pairs_hook=pairs_hook
    )
    for message, kind in problems:
        if kind == "dup":
            raise DecodeError(message)
    if problems:
        raise DecodeError(
            problems[0][0] + " (keys sort by their UTF-8 bytes, spec §4.1)"
        )
    if _has_nan(wire):
        return  # NaN has many bit patterns; ERR_FLOAT_INVALID is reported later
    again = msgpack.packb(wire, use_bin_type=True)
    at = next(
        (i for i, (a, b) in enumerate(zip(payload, again, strict=False)) if a != b), 0
    )
    raise DecodeError(
        "payload is not canonical MessagePack: integers and lengths must take their "
        "smallest form and floats float64 (spec §4.2-4.3); re-encoding differs at "
        f"payload byte {at}",
        path=f"payload[{at}]",
    )


def _has_nan(value: Any) -> bool:
    if isinstance(value, float):
        return math.isnan(value)
    if isinstance(value, dict):
        return any(_has_nan(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_nan(v) for v in value)
    return False


def _decode_type(wire: Mapping[str, Any], header: Header) -> GrainType | None:
    if "t" not in wire:
        raise DecodeError(
            "payload has no type key 't'", code=ErrorCode.NO_TYPE, path="$.type"
        )
    name = wire["t"]
    if not isinstance(name, str):
        raise SchemaError(
            f"'type' must be text, found {type(name).__name__}", path="$.type"
        )
    gtype = type_for_name(name)
    by_byte = type_for_byte(header.type_byte)
    # An unknown type needs an application byte (0x0e-0xff): 0x00 is no type at all,
    # and a grain no encoder can write back would change its address on re-encoding.
    if gtype is not by_byte or (gtype is None and header.type_byte < 0x0E):
        expected = f"0x{gtype.byte:02x}" if gtype else "0x0e-0xff"
        raise DecodeError(
            f"header type byte 0x{header.type_byte:02x} does not match type {name!r} "
            f"(expected {expected})",
            path="header[2]",
        )
    return gtype
