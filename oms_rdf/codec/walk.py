"""The walk that checks (and, when encoding, canonicalises) every value by its kind."""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from ..errors import (
    DecodeError,
    EncodeError,
    ErrorCode,
    IntegrityError,
    OmsError,
    SchemaError,
)
from .fieldmap import Field, Kind, Table
from .header import check_address
from .schema import GrainType

MAX_DEPTH = 32  # spec §4: the "extended" profile's nesting limit


BOM = "\ufeff"


EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


MS = timedelta(milliseconds=1)


INT_MIN, UINT_MAX = -(2**63), 2**64 - 1


_U32_MAX = 2**32 - 1


_TIME_LOW, TIME_HIGH = 0, _U32_MAX * 1000  # epoch ms every time field may hold


_SCHEMA_CODES = frozenset(
    {
        ErrorCode.SCHEMA,
        ErrorCode.EMPTY,
        ErrorCode.RANGE,
        ErrorCode.HASH_FORMAT,
        ErrorCode.HASH_LENGTH,
    }
)


def canonical_value(value: Any, /) -> Any:
    """Return a value in canonical form (NFC text, sorted maps, no null entries).

    Raises:
        EncodeError, SchemaError: as :func:`encode` for the same value in a field.
    """
    return Walk(encoding=True).value(value, "$", 1)


class Walk:
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
        # Encoding takes full names, decoding short keys; the other map catches a
        # key given in the wrong form.
        names = other = None
        if table is not None:
            names, other = (
                (table.by_full, table.by_short)
                if self.encoding
                else (table.by_short, table.by_full)
            )
        previous = ""
        for raw, value in src.items():
            key = self.key(raw, value, previous, names, out, path)
            if key is None:
                continue  # spec §4.5: null entries are omitted
            previous = key
            f: Field | None = None
            name = key
            if names is not None and other is not None:
                f = names.get(key)
                if f is None:
                    if key in other:
                        raise self._wrong_form(key, other[key], path)
                else:
                    name = f.full
            out[name] = self.entry(f, value, path, name, depth)
        if table is not None:
            self.table_rules(out, table, path)
        elif self.encoding:
            # Maps without a field map keep their keys; sort them here (code-point
            # order of str is the UTF-8 byte order the spec asks for).
            return dict(sorted(out.items()))
        return out

    def key(
        self,
        key: Any,
        value: Any,
        previous: str,
        names: Mapping[str, Field] | None,
        out: Mapping[str, Any],
        path: str,
    ) -> str | None:
        """Check one key of a map; return it (NFC), or None for a null to drop."""
        encoding = self.encoding
        if type(key) is not str:
            raise self.fail(
                f"map keys are text; found {type(key).__name__} "
                f"{_shown(key) if type(key) is int else repr(key)[:80]}",
                path,
                ErrorCode.SCHEMA if encoding else ErrorCode.CORRUPT,
            )
        if not encoding and key < previous:
            raise self.fail(
                f"map keys not in canonical order: {key!r} after {previous!r} "
                "(keys sort by their UTF-8 bytes, spec §4.1)",
                path,
                ErrorCode.CORRUPT,
            )
        if value is None:
            if encoding:
                return None
            raise self.fail(
                "null map value: canonical form omits nulls",
                f"{path}.{key}",
                ErrorCode.CORRUPT,
            )
        if not key.isascii():
            key = self.text(key, path)
            # Only NFC can make two keys one: the source's keys are distinct,
            # and the field map is a bijection.
            if key in out or (
                names is not None and key in names and names[key].full in out
            ):
                raise self.fail(  # a duplicate key, as in a blob or JSON (§2.1)
                    f"key {key!r} appears twice (after NFC normalisation)",
                    path,
                    ErrorCode.CORRUPT,
                )
        text: str = key
        return text

    def entry(
        self, f: Field | None, value: Any, path: str, name: str, depth: int
    ) -> Any:
        """Check (and when encoding, convert) the value of map entry ``name``."""
        # Fast paths for the common, valid cases; anything else takes the full
        # check, which builds the path and raises with it.
        t = type(value)
        if f is not None:
            kind = f.kind
            if kind is Kind.STR and t is str and value.isascii():
                return value
            if kind is Kind.UNIT and t is float and 0.0 <= value <= 1.0:
                return value
            if kind is Kind.TIME and t is int and _TIME_LOW <= value <= TIME_HIGH:
                return value  # within u32 seconds: valid for created_at too
            return self.kind(f, value, f"{path}.{name}", depth)
        if t is str and value.isascii():
            return value
        return self.value(value, f"{path}.{name}", depth)

    def _wrong_form(self, key: str, f: Field, path: str) -> OmsError:
        if self.encoding:
            return self.fail(
                f"{key!r} is the short key of {f.full!r}; give fields by full name",
                f"{path}.{key}",
            )
        return self.fail(
            f"full name {key!r} used as a key on the wire; expected its short key {f.short!r}",
            f"{path}.{key}",
            ErrorCode.CORRUPT,
        )

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
            return self.integer(value, path, INT_MIN, UINT_MAX)
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
                f"integer {_shown(value)} outside [{low}, {high}]",
                path,
                ErrorCode.RANGE,
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
                try:
                    return float(value)
                except OverflowError:  # past float64's largest: no float holds it
                    raise self.fail(
                        f"an integer of {value.bit_length()} bits is past the "
                        "largest float64 (about 1.8e308)",
                        path,
                        ErrorCode.RANGE,
                    ) from None
            raise self.fail(
                "a float64 field is stored as an integer; canonical form writes float64 "
                "(spec §4.3)",
                path,
                ErrorCode.CORRUPT,
            )
        raise self.fail(f"expected a number, found {t.__name__}", path)

    def kind(self, f: Field, value: Any, path: str, depth: int) -> Any:
        """Check (and when encoding, convert) a value of field ``f`` by its kind."""
        kind = f.kind
        t = type(value)
        if kind is Kind.STR:
            if t is not str:
                raise self.fail(f"expected text, found {t.__name__}", path)
            return self.text(value, path)
        if kind is Kind.UNIT or kind is Kind.FLOAT or kind is Kind.NONNEG:
            return self.float_kind(kind, value, path)
        if kind is Kind.TIME:
            return self.time(f, value, path)
        if kind is Kind.INT or kind is Kind.COUNT or kind is Kind.BYTE:
            return self.int_kind(kind, value, path)
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
        return self.array_kind(f, value, path, depth)

    def float_kind(self, kind: Kind, value: Any, path: str) -> float:
        """A float64 field: finite, and for UNIT in [0, 1], for NONNEG >= 0."""
        number = self.number(value, path)
        if kind is Kind.UNIT and not 0.0 <= number <= 1.0:
            raise self.fail(f"{number} outside [0.0, 1.0]", path, ErrorCode.RANGE)
        if kind is Kind.NONNEG and number < 0.0:
            raise self.fail(f"{number} is negative", path, ErrorCode.RANGE)
        return number

    def time(self, f: Field, value: Any, path: str) -> int:
        """A time field: epoch ms (an aware datetime is converted when encoding)."""
        if self.encoding and isinstance(value, datetime):
            if value.tzinfo is None:
                raise self.fail(
                    "a naive datetime has no time zone; give an aware one", path
                )
            value = (value - EPOCH) // MS
        elif type(value) is not int:
            raise self.fail(
                f"expected epoch milliseconds (int), found {type(value).__name__}", path
            )
        if f.full == "created_at" and not 0 <= value // 1000 <= _U32_MAX:
            raise self.fail(
                f"created_at {_shown(value)} (ms) is outside the header's u32 seconds "
                "(1970-2106)",
                path,
                ErrorCode.RANGE,
            )
        return self.integer(value, path, INT_MIN, UINT_MAX)

    def int_kind(self, kind: Kind, value: Any, path: str) -> int:
        """An integer field: COUNT is >= 0, BYTE in [0, 255], INT any int64/uint64."""
        if type(value) is not int:
            raise self.fail(f"expected an integer, found {type(value).__name__}", path)
        if kind is Kind.COUNT and value < 0:
            raise self.fail(f"count {_shown(value)} is negative", path, ErrorCode.RANGE)
        if kind is Kind.BYTE:
            return self.integer(value, path, 0, 255)
        return self.integer(value, path, INT_MIN, UINT_MAX)

    def array_kind(self, f: Field, value: Any, path: str, depth: int) -> list[Any]:
        """A field of one of the array kinds (STRS, ADDRS, BYTES_LIST, MAPS, LIST)."""
        t = type(value)
        if not (t is list or (self.encoding and t is tuple)):
            raise self.fail(f"expected an array, found {t.__name__}", path)
        # No depth check here: array fields sit in the top three levels of the
        # field maps, and LIST and MAPS elements check their own depth.
        element = _ELEMENT[f.kind]
        if element is None:  # LIST
            return self.array(value, path, depth)
        if f.kind is Kind.MAPS:
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


def check_grain(fields: Mapping[str, Any], gtype: GrainType | None) -> None:
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


def _shown(value: int) -> str:
    """An integer as a message shows it: whole, or its size when too long to
    print (Python refuses to write one of more than 4,300 digits)."""
    if -(10**30) < value < 10**30:
        return str(value)
    return f"{'-' if value < 0 else ''}2^{abs(value).bit_length() - 1} or beyond"
