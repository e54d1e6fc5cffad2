"""Encoding a grain given by full field names as a canonical blob."""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from typing import Any

from ..errors import (
    EncodeError,
    ErrorCode,
    SchemaError,
)
from .fast import pack, plan_for, run_plan
from .fieldmap import CORE_TABLE, INDEX_FIELDS, Kind, Table
from .header import HEADER_SIZE, MAX_BLOB, header_for
from .schema import TRIGGER, GrainType, type_for_name
from .walk import Walk, check_grain


def encode(
    grain: Mapping[str, Any], /, *, type_byte: int | None = None, signed: bool = False
) -> bytes:
    """Encode a grain given with full field names as a canonical blob.

    Args:
        grain: the grain's fields by full name; ``type`` is required. Unknown keys
            are kept as given. ``datetime`` values of time fields are converted
            to epoch milliseconds; ints given for float64 fields become floats.
        type_byte: the header type byte for a type string this codec does not know
            (0x0E-0xFF, application-defined); only core fields are compacted then.
        signed: set header flag bit 0: the blob will travel inside a COSE_Sign1
            envelope (:func:`oms_rdf.codec.signing.sign`), and only so (spec §9.2).

    Returns:
        The blob: 9-byte header + canonical MessagePack payload.

    Raises:
        DecodeError: never. EncodeError: ERR_NO_TYPE, ERR_UNKNOWN_TYPE,
            ERR_FLOAT_INVALID, ERR_CORRUPT (BOM, nesting deeper than 32), or a
            value MessagePack cannot carry; ERR_RANGE for a blob larger than
            :data:`~oms_rdf.codec.MAX_BLOB` (1 MiB). SchemaError: ERR_SCHEMA, ERR_EMPTY,
            ERR_RANGE, ERR_HASH_FORMAT, ERR_HASH_LENGTH for a field that breaks
            its type's rules, or an index-layer field.
    """
    return encode_fields(grain, type_byte=type_byte, signed=signed)[0]


def encode_fields(
    grain: Mapping[str, Any],
    /,
    *,
    type_byte: int | None = None,
    signed: bool = False,
    foreign: bool = False,
) -> tuple[bytes, dict[str, Any]]:
    """Encode like :func:`encode`; also return the canonical fields by full name.

    ``foreign=True`` re-encodes what another writer wrote: index-layer fields are
    then kept as the blob had them, instead of being refused.
    """
    if type(grain) is not dict and not isinstance(grain, Mapping):
        raise EncodeError(f"expected a mapping of fields, found {type(grain).__name__}")
    gtype, byte = _encode_type(grain, type_byte)
    table = gtype.table if gtype is not None else CORE_TABLE
    if gtype is TRIGGER and grain.get("enabled") is None:
        # §6.14: `enabled` is always emitted, deliberately unlike other defaults.
        grain = {**grain, "enabled": True}
    fast = _fast_path(gtype, grain)
    if fast is not None:
        wire, fields = fast
    else:
        for name in () if foreign else INDEX_FIELDS.keys() & grain.keys():
            if grain[name] is not None:
                raise SchemaError(
                    f"{name!r} is an index-layer field, kept by the store beside the "
                    f"blob and never written into it; use {INDEX_FIELDS[name]}",
                    path=f"$.{name}",
                )
        fields = Walk(encoding=True).map(grain, table, "$", 1)
        wire = _compact(fields, table)
    check_grain(fields, gtype)
    try:
        payload = pack(wire)
    except (
        OverflowError,
        ValueError,
        TypeError,
    ) as exc:  # pragma: no cover - walk checks first
        raise EncodeError(f"MessagePack refused the payload: {exc}") from exc
    if len(payload) + HEADER_SIZE > MAX_BLOB:
        raise EncodeError(
            f"the grain's blob would be {len(payload) + HEADER_SIZE} bytes; a blob may "
            f"be at most {MAX_BLOB} bytes (1 MiB, the spec's default device profile): "
            "keep large content outside the grain (content_refs)",
            code=ErrorCode.RANGE,
        )
    return header_for(fields, byte, signed=signed) + payload, fields


def _fast_path(
    gtype: GrainType | None, grain: Mapping[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """The wire map and fields of a flat grain given in canonical form, else None.

    Plans hold no index-layer keys, so a grain they take needs no check for them.
    """
    if gtype is None or type(grain) is not dict:
        return None
    if any(v is None for v in grain.values()):
        # Null entries are omitted (spec §4.5), as the walk drops them; a key that
        # is not text stays, so that the walk still refuses it.
        grain = {k: v for k, v in grain.items() if v is not None or type(k) is not str}
    plan = plan_for(gtype, tuple(grain), encoding=True)
    wire = None if plan is None else run_plan(plan, grain)
    if plan is None or wire is None:
        return None
    fields = dict(grain)  # every value was canonical as given
    for name, short in (*plan.lists, *plan.maps):
        fields[name] = wire[short]  # the grain's own copy, as from the walk
    return wire, fields


def _encode_type(
    grain: Mapping[str, Any], type_byte: int | None
) -> tuple[GrainType | None, int]:
    name = grain.get("type")
    if name is None:
        raise EncodeError(
            "a grain needs a 'type' field", code=ErrorCode.NO_TYPE, path="$.type"
        )
    if not isinstance(name, str):
        raise SchemaError(
            f"'type' must be text, found {type(name).__name__}", path="$.type"
        )
    gtype = type_for_name(
        name if name.isascii() else unicodedata.normalize("NFC", name)
    )
    if gtype is not None:
        if type_byte is not None and type_byte != gtype.byte:
            raise EncodeError(
                f"type {name!r} has type byte 0x{gtype.byte:02x}, not 0x{type_byte:02x}",
                code=ErrorCode.CORRUPT,
                path="$.type",
            )
        return gtype, gtype.byte
    if type_byte is None or not 0x0E <= type_byte <= 0xFF:
        raise EncodeError(
            f"unknown grain type {name!r}; known types are the OMS type strings, or "
            "pass type_byte=0x0E..0xFF for an application-defined type",
            code=ErrorCode.UNKNOWN_TYPE,
            path="$.type",
        )
    return None, type_byte


def _compact(fields: Mapping[str, Any], table: Table) -> dict[str, Any]:
    """Replace full names by short keys (recursing into nested field maps), sorted."""
    out: dict[str, Any] = {}
    by_full = table.by_full
    for key, value in fields.items():
        f = by_full.get(key)
        if f is None:
            out[key] = value  # unknown field: kept as given (already canonical)
            continue
        nested = f.nested
        if nested is not None:
            if f.kind is Kind.MAPS:
                value = [_compact(v, nested) for v in value]
            else:
                value = _compact(value, nested)
        out[f.short] = value
    return dict(sorted(out.items()))
