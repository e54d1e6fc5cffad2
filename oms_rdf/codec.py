"""Canonical OMS blobs: encode, decode, content_address, verify.

A blob is a 9-byte header followed by a canonical MessagePack map (spec §3-§4):
NFC text, no BOM, nulls omitted, keys sorted by their UTF-8 bytes, smallest
integers, float64 only. The stock ``msgpack`` packer writes smallest integers and
float64 and keeps dict order, so this module's job is everything around it: the
field map, key order, value kinds, ranges and the header. Decoding refuses any
payload that is not in canonical form, so a decoded blob always re-encodes to the
identical bytes.

>>> blob = encode({"type": "belief", "subject": "user", "relation": "prefers",
...                "object": "dark mode", "confidence": 1, "created_at": 1768471200000})
>>> decode(blob)["confidence"]
1.0
>>> verify(blob, content_address(blob))
"""

from __future__ import annotations

import hashlib
import hmac
import math
import unicodedata
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from typing import Any, NamedTuple

import msgpack

from .errors import (
    DecodeError,
    EncodeError,
    ErrorCode,
    IntegrityError,
    OmsError,
    SchemaError,
)
from .schema import (
    CORE_TABLE,
    INDEX_FIELDS,
    TRIGGER,
    Field,
    GrainType,
    Kind,
    Table,
    type_for_byte,
    type_for_name,
)

__all__ = [
    "DEFAULT_NAMESPACE",
    "MAX_DEPTH",
    "Header",
    "canonical_value",
    "content_address",
    "decode",
    "encode",
    "encode_fields",
    "read_header",
    "verify",
]

VERSION = 0x01
HEADER_SIZE = 9
MIN_BLOB = HEADER_SIZE + 1  # header + empty map
MAX_DEPTH = 32  # spec §4: the "extended" profile's nesting limit
DEFAULT_NAMESPACE = "shared"  # hashed into the header when `namespace` is absent
BOM = "\ufeff"
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
MS = timedelta(milliseconds=1)
_INT_MIN, _UINT_MAX = -(2**63), 2**64 - 1
_U32_MAX = 2**32 - 1
_TIME_LOW, _TIME_HIGH = 0, _U32_MAX * 1000  # epoch ms every time field may hold
_HEX = frozenset("0123456789abcdef")

FLAG_SIGNED = 0x01
FLAG_ENCRYPTED = 0x02
FLAG_COMPRESSED = 0x04
FLAG_CONTENT_REFS = 0x08
FLAG_EMBEDDING_REFS = 0x10
FLAG_CBOR = 0x20
_UNREADABLE = {
    FLAG_ENCRYPTED: "an encrypted payload (flag bit 1) needs the key; decrypt it first",
    FLAG_COMPRESSED: "a zstd-compressed payload (flag bit 2) is not supported",
    FLAG_CBOR: "a CBOR payload (flag bit 5) is not supported; only MessagePack",
}
# Tag prefix -> minimum sensitivity level in header bits 6-7 (spec §13).
_TAG_LEVELS = {"phi:": 3, "pii:": 2, "sec:": 2, "legal:": 2, "reg:": 1}
_SCHEMA_CODES = frozenset(
    {
        ErrorCode.SCHEMA,
        ErrorCode.EMPTY,
        ErrorCode.RANGE,
        ErrorCode.HASH_FORMAT,
        ErrorCode.HASH_LENGTH,
    }
)


class Header(NamedTuple):
    """The nine header bytes of a blob, unpacked."""

    version: int
    flags: int
    type_byte: int
    ns_hash: int
    created_sec: int

    @property
    def sensitivity(self) -> int:
        """The two-bit sensitivity level: 0 public, 1 internal, 2 PII, 3 PHI."""
        return (self.flags >> 6) & 3


def read_header(blob: bytes, /) -> Header:
    """Unpack the header of a blob, checking its length and version.

    Raises:
        DecodeError: ERR_TOO_SHORT under 10 bytes; ERR_VERSION if byte 0 is not 0x01.

    >>> read_header(bytes.fromhex("010001a4d26968baa080")).created_sec
    1768471200
    """
    if len(blob) < MIN_BLOB:
        raise DecodeError(
            f"blob has {len(blob)} bytes; a grain needs at least {MIN_BLOB} "
            "(9-byte header + payload map)",
            code=ErrorCode.TOO_SHORT,
        )
    if blob[0] != VERSION:
        raise DecodeError(
            f"blob version byte is 0x{blob[0]:02x}; this reader supports 0x01",
            code=ErrorCode.VERSION,
            path="header[0]",
        )
    return Header(
        blob[0], blob[1], blob[2], int.from_bytes(blob[3:5]), int.from_bytes(blob[5:9])
    )


def content_address(blob: bytes, /) -> str:
    """Return the content address of a blob: lowercase hex SHA-256 of all its bytes.

    Raises:
        DecodeError: ERR_TOO_SHORT or ERR_VERSION when ``blob`` is no grain blob.

    >>> blob = bytes.fromhex("010001a4d26968baa080")
    >>> content_address(blob) == hashlib.sha256(blob).hexdigest()
    True
    """
    read_header(blob)
    return hashlib.sha256(blob).hexdigest()


def check_address(address: object, /, *, path: str = "address") -> str:
    """Return ``address`` if it is 64 lowercase hex digits, else raise.

    Raises:
        IntegrityError: ERR_HASH_LENGTH for a wrong length, ERR_HASH_FORMAT otherwise.
    """
    if not isinstance(address, str):
        raise IntegrityError(
            f"expected a content address string, found {type(address).__name__}",
            code=ErrorCode.HASH_FORMAT,
            path=path,
        )
    if len(address) != 64:
        raise IntegrityError(
            f"a content address has 64 hex digits; found {len(address)} in {address!r}",
            code=ErrorCode.HASH_LENGTH,
            path=path,
        )
    if not _HEX.issuperset(address):
        raise IntegrityError(
            f"a content address is lowercase hex; found {address!r}",
            code=ErrorCode.HASH_FORMAT,
            path=path,
        )
    return address


def verify(blob: bytes, address: str, /) -> None:
    """Check that ``address`` is the content address of ``blob`` (constant-time).

    Raises:
        IntegrityError: ERR_HASH_LENGTH / ERR_HASH_FORMAT for a malformed address,
            ERR_INTEGRITY when the blob does not hash to it.
        DecodeError: ERR_TOO_SHORT / ERR_VERSION when ``blob`` is no grain blob.
    """
    check_address(address)
    actual = content_address(blob)
    if not hmac.compare_digest(actual, address):
        raise IntegrityError(
            f"blob hashes to {actual}, expected {address}", code=ErrorCode.INTEGRITY
        )


# --- encoding -------------------------------------------------------------------


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
            envelope (:func:`oms_rdf.signing.sign`), and only so (spec §9.2).

    Returns:
        The blob: 9-byte header + canonical MessagePack payload.

    Raises:
        DecodeError: never. EncodeError: ERR_NO_TYPE, ERR_UNKNOWN_TYPE,
            ERR_FLOAT_INVALID, ERR_CORRUPT (BOM, nesting deeper than 32), or a
            value MessagePack cannot carry. SchemaError: ERR_SCHEMA, ERR_EMPTY,
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
    if not isinstance(grain, Mapping):
        raise EncodeError(f"expected a mapping of fields, found {type(grain).__name__}")
    gtype, byte = _encode_type(grain, type_byte)
    table = gtype.table if gtype is not None else CORE_TABLE
    for name in () if foreign else INDEX_FIELDS.keys() & grain.keys():
        if grain[name] is not None:
            raise SchemaError(
                f"{name!r} is an index-layer field, kept by the store beside the blob "
                f"and never written into it; use {INDEX_FIELDS[name]}",
                path=f"$.{name}",
            )
    if gtype is TRIGGER and grain.get("enabled") is None:
        # §6.14: `enabled` is always emitted, deliberately unlike other defaults.
        grain = {**grain, "enabled": True}
    fields = _Walk(encoding=True).map(grain, table, "$", 1)
    _check_grain(fields, gtype)
    wire = _compact(fields, table)
    try:
        payload: bytes = msgpack.packb(wire, use_bin_type=True)
    except (
        OverflowError,
        ValueError,
        TypeError,
    ) as exc:  # pragma: no cover - walk checks first
        raise EncodeError(f"MessagePack refused the payload: {exc}") from exc
    return header_for(fields, byte, signed=signed) + payload, fields


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
    gtype = type_for_name(unicodedata.normalize("NFC", name))
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


@lru_cache(maxsize=4096)
def _ns_hash(namespace: str) -> bytes:
    return hashlib.sha256(namespace.encode()).digest()[:2]


def _sensitivity(tags: Any) -> int:
    level = 0
    for tag in tags:
        if isinstance(tag, str):
            for prefix, tag_level in _TAG_LEVELS.items():
                if tag.startswith(prefix) and tag_level > level:
                    level = tag_level
    return level


def header_for(
    fields: Mapping[str, Any], type_byte: int, *, signed: bool = False
) -> bytes:
    """Return the header this encoder derives for canonical ``fields``."""
    flags = FLAG_SIGNED if signed else 0
    if fields.get("content_refs"):
        flags |= FLAG_CONTENT_REFS
    if fields.get("embedding_refs"):
        flags |= FLAG_EMBEDDING_REFS
    tags = fields.get("structural_tags")
    if tags:
        flags |= _sensitivity(tags) << 6
    namespace = fields.get("namespace", DEFAULT_NAMESPACE)
    ns = _ns_hash(namespace if isinstance(namespace, str) else DEFAULT_NAMESPACE)
    seconds: int = fields["created_at"] // 1000
    return bytes((VERSION, flags, type_byte)) + ns + seconds.to_bytes(4)


# --- decoding -------------------------------------------------------------------


def decode(blob: bytes, /) -> dict[str, Any]:
    """Decode a canonical blob into a dict of full field names.

    The checks run in a fixed order (design §2): length, version, well-formed
    MessagePack with no trailing bytes, a map, unique keys and canonical form,
    ``type`` present, header type byte matching the type string, sensitivity bits
    not below the tags, then the type's field rules. Index-layer fields in a
    foreign blob are tolerated. Unknown type bytes (0x0E-0xFF) decode as opaque
    maps with only the core fields expanded.

    Raises:
        DecodeError: ERR_TOO_SHORT, ERR_VERSION, ERR_CORRUPT, ERR_NOT_MAP,
            ERR_NO_TYPE, ERR_SENSITIVITY_MISMATCH, ERR_FLOAT_INVALID.
        SchemaError: ERR_SCHEMA, ERR_EMPTY, ERR_RANGE, ERR_HASH_FORMAT,
            ERR_HASH_LENGTH.
    """
    if not isinstance(blob, bytes | bytearray | memoryview):
        raise DecodeError(f"expected bytes, found {type(blob).__name__}")
    blob = bytes(blob)
    header = read_header(blob)
    for flag, why in _UNREADABLE.items():
        if header.flags & flag:
            raise DecodeError(why, path="header[1]")
    payload = blob[HEADER_SIZE:]
    wire = _unpack(payload)
    gtype = _decode_type(wire, header)
    fields = _Walk(encoding=False).map(
        wire, gtype.table if gtype else CORE_TABLE, "$", 1
    )
    required = _sensitivity(fields.get("structural_tags", ()))
    if header.sensitivity < required:
        raise DecodeError(
            f"header sensitivity bits are {header.sensitivity:02b} but the structural "
            f"tags require at least {required:02b}",
            code=ErrorCode.SENSITIVITY_MISMATCH,
            path="header[1]",
        )
    _check_grain(fields, gtype)
    return fields


def _unpack(payload: bytes) -> dict[str, Any]:
    try:
        wire = msgpack.unpackb(payload, raw=False, strict_map_key=False, use_list=True)
    except msgpack.ExtraData as exc:
        raise DecodeError(
            f"payload has {len(exc.extra)} trailing bytes after the map",
            path=f"payload[{len(payload) - len(exc.extra)}]",
        ) from exc
    except (ValueError, TypeError, msgpack.UnpackException) as exc:
        raise DecodeError(f"payload is not valid MessagePack: {exc}") from exc
    if not isinstance(wire, dict):
        raise DecodeError(
            f"payload must be a map, found {type(wire).__name__}",
            code=ErrorCode.NOT_MAP,
        )
    try:
        canonical = msgpack.packb(wire, use_bin_type=True) == payload
    except (TypeError, ValueError, OverflowError):
        canonical = False  # e.g. an ext type; _diagnose names it
    if not canonical:
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
    try:
        again = msgpack.packb(wire, use_bin_type=True)
    except (TypeError, ValueError) as exc:
        raise DecodeError(
            f"payload holds a value outside the OMS data model: {exc}"
        ) from exc
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
    if gtype is not by_byte:
        expected = f"0x{gtype.byte:02x}" if gtype else "0x0e-0xff"
        raise DecodeError(
            f"header type byte 0x{header.type_byte:02x} does not match type {name!r} "
            f"(expected {expected})",
            path="header[2]",
        )
    return gtype


def canonical_value(value: Any, /) -> Any:
    """Return a value in canonical form (NFC text, sorted maps, no null entries).

    Raises:
        EncodeError, SchemaError: as :func:`encode` for the same value in a field.
    """
    return _Walk(encoding=True).value(value, "$", 1)


# --- the shared walk: canonical values, kinds, ranges ----------------------------


class _Walk:
    """Walks a grain map in one direction, checking every value against its kind.

    Encoding converts (NFC, datetimes, ints for float64 fields, tuples) and drops
    nulls; decoding only checks, because the bytes were already proven canonical.
    """

    __slots__ = ("encoding",)

    def __init__(self, *, encoding: bool) -> None:
        self.encoding = encoding

    def fail(self, msg: str, path: str, code: ErrorCode = ErrorCode.SCHEMA) -> OmsError:
        if code in _SCHEMA_CODES:
            return SchemaError(msg, code=code, path=path)
        cls = EncodeError if self.encoding else DecodeError
        return cls(msg, code=code, path=path)

    def text(self, value: str, path: str) -> str:
        if value.isascii():
            return value
        if value.startswith(BOM):
            raise self.fail(
                "text starts with a byte-order mark (U+FEFF)", path, ErrorCode.CORRUPT
            )
        if self.encoding:
            try:
                value.encode()
            except UnicodeEncodeError:
                raise self.fail(
                    "text holds a lone surrogate and is not valid Unicode",
                    path,
                    ErrorCode.CORRUPT,
                ) from None
            return unicodedata.normalize("NFC", value)
        if not unicodedata.is_normalized("NFC", value):
            raise self.fail(
                "text is not NFC-normalised (spec §4.4)", path, ErrorCode.CORRUPT
            )
        return value

    def map(
        self, src: Mapping[Any, Any], table: Table | None, path: str, depth: int
    ) -> dict[str, Any]:
        """Return the full-name form of a map, every value checked by its kind."""
        if depth > MAX_DEPTH:
            raise self.fail(
                f"nesting deeper than {MAX_DEPTH} levels", path, ErrorCode.CORRUPT
            )
        out: dict[str, Any] = {}
        encoding = self.encoding
        previous = ""
        for key, value in src.items():
            if type(key) is not str:
                raise self.fail(
                    f"map keys are text; found {type(key).__name__} {key!r}",
                    path,
                    ErrorCode.SCHEMA if encoding else ErrorCode.CORRUPT,
                )
            if not encoding:
                if key < previous:
                    raise self.fail(
                        f"map keys not in canonical order: {key!r} after {previous!r} "
                        "(keys sort by their UTF-8 bytes, spec §4.1)",
                        path,
                        ErrorCode.CORRUPT,
                    )
                previous = key
            if value is None:
                if encoding:
                    continue  # spec §4.5: null entries are omitted
                raise self.fail(
                    "null map value: canonical form omits nulls",
                    f"{path}.{key}",
                    ErrorCode.CORRUPT,
                )
            if not key.isascii():
                key = self.text(key, path)
            f: Field | None = None
            name = key
            if table is not None:
                if encoding:
                    f = table.by_full.get(key)
                    if f is None and key in table.by_short:
                        full = table.by_short[key].full
                        raise self.fail(
                            f"{key!r} is the short key of {full!r}; give fields by full name",
                            f"{path}.{key}",
                        )
                else:
                    f = table.by_short.get(key)
                    if f is None and key in table.by_full:
                        raise self.fail(
                            f"full name {key!r} used as a key on the wire; expected its "
                            f"short key {table.by_full[key].short!r}",
                            f"{path}.{key}",
                            ErrorCode.CORRUPT,
                        )
                    if f is not None:
                        name = f.full
            if name in out:
                raise self.fail(
                    f"key {name!r} appears twice (after NFC normalisation)",
                    path,
                    ErrorCode.SCHEMA if encoding else ErrorCode.CORRUPT,
                )
            # Fast paths for the common, valid cases; anything else takes the full
            # check, which builds the path and raises with it.
            t = type(value)
            if f is not None:
                kind = f.kind
                if kind is Kind.STR and t is str and value.isascii():
                    out[name] = value
                    continue
                if kind is Kind.UNIT and t is float and 0.0 <= value <= 1.0:
                    out[name] = value
                    continue
                if kind is Kind.TIME and t is int and _TIME_LOW <= value <= _TIME_HIGH:
                    out[name] = value  # within u32 seconds: valid for created_at too
                    continue
                out[name] = self.kind(f, value, f"{path}.{name}", depth)
            elif t is str and value.isascii():
                out[name] = value
            else:
                out[name] = self.value(value, f"{path}.{name}", depth)
        if table is not None:
            self.table_rules(out, table, path)
        elif encoding:
            # Maps without a field map keep their keys; sort them here (code-point
            # order of str is the UTF-8 byte order the spec asks for).
            return dict(sorted(out.items()))
        return out

    def table_rules(self, out: Mapping[str, Any], table: Table, path: str) -> None:
        # A disclosed view (spec §10) may elide a required field: its hash stands in.
        elided = out.get("_elided")
        hidden = elided.keys() if isinstance(elided, Mapping) else ()
        for name in table.required:
            if name not in out:
                if name in hidden:
                    continue
                raise self.fail(f"missing required field {name!r}", f"{path}.{name}")
            if out[name] == "":
                raise self.fail(
                    f"required field {name!r} is empty",
                    f"{path}.{name}",
                    ErrorCode.EMPTY,
                )
        for name, allowed in table.enums.items():
            if name in out and out[name] not in allowed:
                raise self.fail(
                    f"{name} must be one of {sorted(allowed)}; found {out[name]!r}",
                    f"{path}.{name}",
                )
        if table.check is not None:
            table.check(out, path)

    def value(self, value: Any, path: str, depth: int) -> Any:
        """Check (and when encoding, convert) a value of no declared kind."""
        t = type(value)
        if t is str:
            return self.text(value, path)
        if t is bool:
            return value
        if t is int:
            return self.integer(value, path, _INT_MIN, _UINT_MAX)
        if t is float:
            return self.finite(value, path)
        if t is dict:
            return self.map(value, None, path, depth + 1)
        if t is list or (self.encoding and t is tuple):
            return self.array(value, path, depth)
        if t is bytes:
            return value
        if self.encoding:
            if t is bytearray or t is memoryview:
                return bytes(value)
            if value is None:
                return None  # null inside an array: kept, arrays are never reshaped
            if isinstance(value, Mapping):
                return self.map(value, None, path, depth + 1)
            if isinstance(value, datetime):
                raise self.fail(
                    "a datetime is converted only in time fields (created_at, valid_from, "
                    "...); give epoch milliseconds here",
                    path,
                )
            raise self.fail(
                f"cannot encode a {t.__name__} value; MessagePack carries text, numbers, "
                "booleans, bytes, arrays and maps",
                path,
            )
        if value is None:
            return None
        raise self.fail(
            f"{t.__name__} values are outside the OMS data model",
            path,
            ErrorCode.CORRUPT,
        )

    def array(self, value: Any, path: str, depth: int) -> list[Any]:
        if depth + 1 > MAX_DEPTH:
            raise self.fail(
                f"nesting deeper than {MAX_DEPTH} levels", path, ErrorCode.CORRUPT
            )
        return [self.value(v, f"{path}[{i}]", depth + 1) for i, v in enumerate(value)]

    def integer(self, value: int, path: str, low: int, high: int) -> int:
        if not low <= value <= high:
            raise self.fail(
                f"integer {value} outside [{low}, {high}]", path, ErrorCode.RANGE
            )
        return value

    def finite(self, value: float, path: str) -> float:
        if math.isnan(value) or math.isinf(value):
            raise self.fail(
                f"{value} is not allowed; floats must be finite",
                path,
                ErrorCode.FLOAT_INVALID,
            )
        return value

    def number(self, value: Any, path: str) -> float:
        t = type(value)
        if t is float:
            return self.finite(value, path)
        if t is int:
            if self.encoding:
                return float(value)
            raise self.fail(
                "a float64 field is stored as an integer; canonical form writes float64 "
                "(spec §4.3)",
                path,
                ErrorCode.CORRUPT,
            )
        raise self.fail(f"expected a number, found {t.__name__}", path)

    def kind(self, f: Field, value: Any, path: str, depth: int) -> Any:
        kind = f.kind
        t = type(value)
        if kind is Kind.STR:
            if t is not str:
                raise self.fail(f"expected text, found {t.__name__}", path)
            return self.text(value, path)
        if kind is Kind.UNIT or kind is Kind.FLOAT or kind is Kind.NONNEG:
            number = self.number(value, path)
            if kind is Kind.UNIT and not 0.0 <= number <= 1.0:
                raise self.fail(f"{number} outside [0.0, 1.0]", path, ErrorCode.RANGE)
            if kind is Kind.NONNEG and number < 0.0:
                raise self.fail(f"{number} is negative", path, ErrorCode.RANGE)
            return number
        if kind is Kind.TIME:
            if self.encoding and isinstance(value, datetime):
                if value.tzinfo is None:
                    raise self.fail(
                        "a naive datetime has no time zone; give an aware one", path
                    )
                value = (value - EPOCH) // MS
            elif t is not int:
                raise self.fail(
                    f"expected epoch milliseconds (int), found {t.__name__}", path
                )
            if f.full == "created_at" and not 0 <= value // 1000 <= _U32_MAX:
                raise self.fail(
                    f"created_at {value} ms is outside the header's u32 seconds (1970-2106)",
                    path,
                    ErrorCode.RANGE,
                )
            return self.integer(value, path, _INT_MIN, _UINT_MAX)
        if kind is Kind.INT or kind is Kind.COUNT or kind is Kind.BYTE:
            if t is not int:
                raise self.fail(f"expected an integer, found {t.__name__}", path)
            if kind is Kind.COUNT and value < 0:
                raise self.fail(f"count {value} is negative", path, ErrorCode.RANGE)
            if kind is Kind.BYTE:
                return self.integer(value, path, 0, 255)
            return self.integer(value, path, _INT_MIN, _UINT_MAX)
        if kind is Kind.BOOL:
            if t is not bool:
                raise self.fail(f"expected a boolean, found {t.__name__}", path)
            return value
        if kind is Kind.ADDR:
            if t is not str:
                raise self.fail(f"expected a content address, found {t.__name__}", path)
            try:
                return check_address(value, path=path)
            except IntegrityError as exc:
                raise self.fail(exc.message, path, exc.code) from None
        if kind is Kind.OBJECT:
            if t is str:
                return self.text(value, path)
            if t is dict or isinstance(value, Mapping):
                return self.map(value, None, path, depth + 1)
            raise self.fail(f"expected text or a map, found {t.__name__}", path)
        if kind is Kind.MAP:
            if not isinstance(value, Mapping):
                raise self.fail(f"expected a map, found {t.__name__}", path)
            return self.map(value, f.nested, path, depth + 1)
        if kind is Kind.ANY:
            return self.value(value, path, depth)
        # The array kinds.
        if not (t is list or (self.encoding and t is tuple)):
            raise self.fail(f"expected an array, found {t.__name__}", path)
        if depth + 1 > MAX_DEPTH:
            raise self.fail(
                f"nesting deeper than {MAX_DEPTH} levels", path, ErrorCode.CORRUPT
            )
        element = _ELEMENT[kind]
        if element is None:  # LIST
            return self.array(value, path, depth)
        if kind is Kind.MAPS:
            out = []
            for i, item in enumerate(value):
                if not isinstance(item, Mapping):
                    raise self.fail(
                        f"expected a map, found {type(item).__name__}", f"{path}[{i}]"
                    )
                out.append(self.map(item, f.nested, f"{path}[{i}]", depth + 2))
            return out
        item_field = Field(f.full, f.short, element)
        return [
            self.kind(item_field, v, f"{path}[{i}]", depth + 1)
            for i, v in enumerate(value)
        ]


_ELEMENT: Mapping[Kind, Kind | None] = {
    Kind.STRS: Kind.STR,
    Kind.ADDRS: Kind.ADDR,
    Kind.BYTES_LIST: Kind.BYTE,
    Kind.MAPS: Kind.MAP,
    Kind.LIST: None,
}


def _check_grain(fields: Mapping[str, Any], gtype: GrainType | None) -> None:
    """Cross-field rules of the grain as a whole."""
    if gtype is None:
        if "created_at" not in fields:
            raise SchemaError(
                "missing required field 'created_at'", path="$.created_at"
            )
        return
    start, end = fields.get("valid_from"), fields.get("valid_to")
    if start is not None and end is not None and end < start:
        raise SchemaError(
            f"valid_to {end} is before valid_from {start}; a valid interval is "
            "[valid_from, valid_to)",
            code=ErrorCode.RANGE,
            path="$.valid_to",
        )
    for rule in gtype.rules:
        rule(fields)
