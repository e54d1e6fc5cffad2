"""Field values as literals that keep them exactly, and back.

Text is xsd:string, integers xsd:integer, floats xsd:double with Python's
round-tripping repr, booleans xsd:boolean, bytes xsd:base64Binary, maps and
arrays rdf:JSON (canonical MessagePack in base64 where they hold bytes), and
epoch milliseconds UTC xsd:dateTime with milliseconds (xsd:integer outside years
1-9999, so that nothing is lost). The same values are written as N-Triples text
for the store's bulk writes (:func:`nt_literal`, :data:`Row`).

>>> literal_value(value_literal(1.0)), literal_value(value_literal(1))
(1.0, 1)
"""

from __future__ import annotations

import base64
import json
import time
from datetime import datetime
from functools import lru_cache
from typing import Any

import msgpack
from pyoxigraph import Literal, NamedNode

from ..codec import EPOCH, MS
from ..errors import DecodeError, ErrorCode
from .vocab import OMS, RDF, XSD

__all__ = [
    "Row",
    "base64_bytes",
    "lexical",
    "literal_value",
    "millis_literal",
    "nt_literal",
    "time_nt",
    "time_read_back",
    "value_literal",
]

_EPOCH_NAIVE = datetime(1970, 1, 1)


def base64_bytes(text: str) -> bytes:
    """The bytes of base64 text as the store writes it: any character outside
    the alphabet, a space or line break too, raises ``binascii.Error`` (a
    ``ValueError``), never skipped, so that what is read is what is kept.

    >>> base64_bytes("QUJD")
    b'ABC'
    """
    return base64.b64decode(text, validate=True)


_YEAR_10000_MS = 253_402_300_800_000
_YEAR_1_MS = -62_135_596_800_000  # 0001-01-01: datetime's first day
_XSD_STRING = XSD.string.value
_XSD_BOOLEAN = XSD.boolean.value
_XSD_INTEGER = XSD.integer.value
_XSD_DOUBLE = XSD.double.value
_XSD_DATETIME = XSD.dateTime.value
_XSD_BASE64 = XSD.base64Binary.value


@lru_cache(maxsize=4096)
def time_nt(ms: int) -> str:
    """A time field as an N-Triples literal (the hot path of every grain's rows)."""
    if 0 <= ms < _YEAR_10000_MS:
        seconds, milli = divmod(ms, 1000)
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))
        return f'"{stamp}.{milli:03d}Z"^^<{_XSD_DATETIME}>'
    return nt_literal(*_lexical_time(ms))


def time_read_back(value: Any) -> int | None:
    """A time field's value as a time comparison reads its literal back: the
    same epoch ms where it is written as ``xsd:dateTime``, None where it is not
    (outside years 1-9999, or no integer), and no time to compare."""
    if type(value) is not int:
        return None
    return value if _YEAR_1_MS <= value < _YEAR_10000_MS else None


def _lexical_time(ms: int) -> tuple[str, str]:
    try:
        dt = _EPOCH_NAIVE + ms * MS
    except OverflowError:
        return str(ms), _XSD_INTEGER
    return dt.isoformat(timespec="milliseconds") + "Z", _XSD_DATETIME


@lru_cache(maxsize=1024)  # the times of one write, or of one question, repeat
def millis_literal(ms: int) -> Literal:
    """Return epoch milliseconds as UTC ``xsd:dateTime`` with millisecond precision.

    Values outside years 1-9999 stay ``xsd:integer`` so that nothing is lost.

    >>> millis_literal(1768471200000).value
    '2026-01-15T10:00:00.000Z'
    """
    return _literal(*_lexical_time(ms))


def _millis(lexical: str) -> int:
    dt = datetime.fromisoformat(lexical)
    return (dt - EPOCH) // MS


def _json(value: Any) -> str:
    # Sorted keys and Python's float repr: 1.0 stays "1.0", so int and float64
    # survive the trip (JCS would write "1" and lose the float64 kind).
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def _has_bytes(value: Any) -> bool:
    if isinstance(value, bytes):
        return True
    if isinstance(value, dict):
        return any(_has_bytes(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_bytes(v) for v in value)
    return False


def lexical(value: Any) -> tuple[str, str]:
    """Return the lexical form and datatype IRI that carry one field value exactly."""
    t = type(value)
    if t is str:
        return value, _XSD_STRING
    if t is bool:
        return ("true" if value else "false"), _XSD_BOOLEAN
    if t is int:
        return str(value), _XSD_INTEGER
    if t is float:
        return repr(value), _XSD_DOUBLE
    if t is bytes:
        return base64.b64encode(value).decode(), _XSD_BASE64
    if _has_bytes(value):
        # JSON has no bytes: such a map travels as its canonical MessagePack.
        packed = msgpack.packb(value, use_bin_type=True)
        return base64.b64encode(packed).decode(), OMS.msgpack.value
    return _json(value), RDF.JSON.value


def _literal(text: str, datatype: str) -> Literal:
    return Literal(text, datatype=NamedNode(datatype))


def value_literal(value: Any) -> Literal:
    """Return the literal that carries one field value exactly."""
    return _literal(*lexical(value))


def literal_value(lit: Literal) -> Any:
    """Return the field value a literal of :func:`value_literal` carries.

    Raises:
        DecodeError: ERR_CORRUPT for a datatype that carries no grain field.
    """
    dt = lit.datatype.value
    text = lit.value
    if dt == _XSD_STRING:
        return text
    if dt == _XSD_INTEGER:
        return int(text)
    if dt == _XSD_DOUBLE:
        return float(text)
    if dt == _XSD_BOOLEAN:
        return text == "true"
    if dt == _XSD_DATETIME:
        return _millis(text)
    if dt == _XSD_BASE64:
        return base64_bytes(text)
    if dt == RDF.JSON.value:
        return json.loads(text)
    if dt == OMS.msgpack.value:
        return msgpack.unpackb(base64_bytes(text), raw=False)
    raise DecodeError(
        f"literal of datatype <{dt}> carries no grain field", code=ErrorCode.CORRUPT
    )


# N-Quads text: the store loads grains as text, which is several times faster
# than building a pyoxigraph term object per triple. Terms are N-Triples strings.
Row = tuple[str, str, str, str]  # subject, predicate, object, graph ("" = default)
_ESCAPES = str.maketrans({"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r"})


def nt_literal(text: str, datatype: str = "") -> str:
    """Return a literal in N-Triples syntax (``datatype`` "" or xsd:string: plain)."""
    if '"' in text or "\\" in text or "\n" in text or "\r" in text:
        text = text.translate(_ESCAPES)
    if not datatype or datatype == _XSD_STRING:
        return f'"{text}"'
    return f'"{text}"^^<{datatype}>'
